// Architecture-neutral parser and deparser for Ethernet / 802.1Q / IPv4 or IPv6 /
// UDP / RoCEv2 (BTH and its extension headers) / NVMe capsules.
// Anything short or unknown stops parsing; the packet is still forwarded.
#ifndef __PARSER__
#define __PARSER__

#include "header.p4"

parser RoceParser(packet_in pkt, out headers_t hdr) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    // An extension header chain (any next header but UDP that is one) is
    // forwarded but not measured, and counted (ipv6_ext_header).
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_UDP: parse_udp;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        // Options and fragments are forwarded but not measured.
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            ROCEV2_UDP_PORT: parse_bth;
            default: accept;
        }
    }

    state parse_bth {
        pkt.extract(hdr.bth);
        transition select(hdr.bth.opcode) {
            OP_SEND_FIRST: parse_send_payload;
            OP_SEND_ONLY: parse_send_payload;
            OP_SEND_ONLY_IMM: parse_send_imm;
            OP_SEND_ONLY_INV: parse_send_inv;
            OP_SEND_LAST_IMM: parse_immdt;
            OP_SEND_LAST_INV: parse_ieth;
            OP_WRITE_FIRST: parse_reth;
            OP_WRITE_ONLY: parse_reth;
            OP_WRITE_ONLY_IMM: parse_reth_immdt;
            OP_WRITE_LAST_IMM: parse_immdt;
            OP_READ_REQUEST: parse_reth;
            OP_READ_RESPONSE_FIRST: parse_aeth;
            OP_READ_RESPONSE_LAST: parse_aeth;
            OP_READ_RESPONSE_ONLY: parse_aeth;
            OP_ACK: parse_aeth;
            OP_UD_SEND_ONLY: parse_deth;
            default: accept;
        }
    }

    // RDMA CM: a MAD to QP 1.
    state parse_deth {
        pkt.extract(hdr.deth);
        transition select(hdr.bth.dest_qp) {
            QPN_GSI: parse_mad;
            default: accept;
        }
    }

    state parse_mad {
        pkt.extract(hdr.mad);
        transition select(hdr.mad.mgmt_class, hdr.mad.attr_id) {
            (MAD_CLASS_CM, CM_ATTR_REQ): parse_cm_req;
            (MAD_CLASS_CM, CM_ATTR_REP): parse_cm_rep;
            default: accept;
        }
    }

    state parse_cm_req {
        pkt.extract(hdr.cm_req);
        transition accept;
    }

    state parse_cm_rep {
        pkt.extract(hdr.cm_rep);
        transition accept;
    }

    state parse_reth {
        pkt.extract(hdr.reth);
        transition accept;
    }

    state parse_reth_immdt {
        pkt.extract(hdr.reth);
        transition parse_immdt;
    }

    state parse_immdt {
        pkt.extract(hdr.immdt);
        transition accept;
    }

    state parse_ieth {
        pkt.extract(hdr.ieth);
        transition accept;
    }

    state parse_aeth {
        pkt.extract(hdr.aeth);
        transition accept;
    }

    // A SEND that carries exactly 16 bytes is a response capsule (CQE);
    // a longer one may be a command capsule (SQE), checked in IoTracker.
    state parse_send_payload {
        transition select(hdr.udp.length) {
            UDP_LEN_CQE: parse_nvme_cqe;
            default: parse_nvme_sqe;
        }
    }

    state parse_send_imm {
        pkt.extract(hdr.immdt);
        transition select(hdr.udp.length) {
            UDP_LEN_CQE_EXT: parse_nvme_cqe;
            default: parse_nvme_sqe;
        }
    }

    state parse_send_inv {
        pkt.extract(hdr.ieth);
        transition select(hdr.udp.length) {
            UDP_LEN_CQE_EXT: parse_nvme_cqe;
            default: accept;
        }
    }

    // Fails with PacketTooShort on a short SEND: headers parsed so far stay
    // valid and the packet is forwarded as usual.
    state parse_nvme_sqe {
        pkt.extract(hdr.nvme_sqe);
        transition accept;
    }

    state parse_nvme_cqe {
        pkt.extract(hdr.nvme_cqe);
        transition accept;
    }
}

control RoceDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.bth);
        pkt.emit(hdr.reth);
        pkt.emit(hdr.aeth);
        pkt.emit(hdr.immdt);
        pkt.emit(hdr.ieth);
        pkt.emit(hdr.deth);
        pkt.emit(hdr.mad);
        pkt.emit(hdr.cm_req);
        pkt.emit(hdr.cm_rep);
        pkt.emit(hdr.nvme_sqe);
        pkt.emit(hdr.nvme_cqe);
    }
}

#endif
