// Architecture-neutral parser and deparser for Ethernet / 802.1Q / IPv4 or IPv6 /
// UDP / RoCEv2 (BTH and its extension headers) / NVMe capsules.
// Anything short or unknown stops parsing; the packet is still forwarded.
// An IPv4 address is its own endpoint key (docs/architecture.md): the
// parser sets an IPv4 packet's keys (and that they are known); an IPv6
// packet's come from the endpoint tables (control/endpoints.p4).
#ifndef __PARSER__
#define __PARSER__

#include "header.p4"

parser RoceParser(packet_in pkt, out headers_t hdr, inout local_metadata_t meta) {
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

    // An extension header chain is forwarded but not measured, and counted
    // (ipv6_ext_header). The keys come from the endpoint tables.
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_UDP: parse_udp;
            IP6_EXT_HOP_BY_HOP: ipv6_ext_header;
            IP6_EXT_ROUTING: ipv6_ext_header;
            IP6_EXT_FRAGMENT: ipv6_ext_header;
            IP6_EXT_ESP: ipv6_ext_header;
            IP6_EXT_AH: ipv6_ext_header;
            IP6_EXT_DEST_OPTS: ipv6_ext_header;
            IP6_EXT_MOBILITY: ipv6_ext_header;
            IP6_EXT_HIP: ipv6_ext_header;
            IP6_EXT_SHIM6: ipv6_ext_header;
            IP6_EXT_EXPERIMENT1: ipv6_ext_header;
            IP6_EXT_EXPERIMENT2: ipv6_ext_header;
            default: accept;
        }
    }

    state ipv6_ext_header {
        meta.stat.unmeasured = UNMEASURED_IPV6_EXT_HEADER;
        transition accept;
    }

    // An address in 240.0.0.0/4 (an IPv6 endpoint's key) is no IPv4 host:
    // such a packet is forwarded but not measured, and counted (reserved_address).
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        meta.src_key = hdr.ipv4.src_addr;
        meta.dst_key = hdr.ipv4.dst_addr;
        transition select(hdr.ipv4.src_addr[31:28], hdr.ipv4.dst_addr[31:28]) {
            (ENDPOINT_KEY_V6_PREFIX, _): ipv4_reserved;
            (_, ENDPOINT_KEY_V6_PREFIX): ipv4_reserved;
            default: ipv4_known;
        }
    }

    state ipv4_reserved {
        meta.stat.unmeasured = UNMEASURED_RESERVED_ADDRESS;
        transition ipv4_payload;
    }

    state ipv4_known {
        meta.src_known = true;
        meta.dst_known = true;
        transition ipv4_payload;
    }

    // Options and fragments are forwarded but not measured.
    state ipv4_payload {
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
