// RoCEv2 / NVMe-over-RoCE telemetry for Tofino (TNA), the same program as
// p4/v1model/main.p4: same controls, tables, actions, digests and counters
// (test/p4/p4info-parity.test.ts). Shared: define, header, size, parser and
// the table-only controls (config, forwarding, port roles); per architecture:
// the register-holding controls in p4/tna/include/control. See docs/tofino.md.
//
// Tofino 1 has 12 stages in ingress and 12 in egress, 4 stateful ALUs in
// each: the I/O tracker runs in ingress, the flow tracker and its
// statistics (flow_events) in egress. Digests leave from the ingress deparser only, so the
// flow tracker's message and learn reports are mirrored in egress to the
// recirculation port and become digests in ingress.
#include "include/define_tna.p4"
#include "../include/size.p4"
#include "../include/define.p4"
#include "../include/header.p4"
#include "../include/parser.p4"
#include "../include/control/config.p4"
#include "../include/control/forwarding.p4"
#include "../include/control/port_role.p4"
#include "include/control/endpoints.p4"
#include "include/control/io_tracker.p4"
#include "include/control/flow_tracker.p4"
#include "include/control/stats.p4"


struct egress_metadata_t {
    local_metadata_t m;      // the flow tracker's view (filled from the bridge)
    report_h report;         // the mirrored report
    MirrorId_t session;      // its mirror session (a PHV field, as Tofino needs)
}

parser TelemetryIngressParser(packet_in pkt, out headers_t hdr, out local_metadata_t meta,
                              out ingress_intrinsic_metadata_t ig_intr_md) {
    RoceParser() roce_parser;

    state start {
        pkt.extract(ig_intr_md);
        // The clocks, from the ingress MAC timestamp (ns): its low 32 bits,
        // and bits 47:16 (the coarse clock of liveness, see define_tna.p4).
        meta.now32 = ig_intr_md.ingress_mac_tstamp[31:0];
        meta.now_c = COARSE(ig_intr_md.ingress_mac_tstamp);
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port[6:0], pkt.lookahead<bit<8>>()) {
            (TNA_RECIRC_PORT, TNA_REPORT_MAGIC): parse_report;
            default: parse_packet;
        }
    }

    // A report of the egress flow tracker, back from the recirculation port.
    state parse_report {
        pkt.extract(hdr.report);
        transition accept;
    }

    state parse_packet {
        roce_parser.apply(pkt, hdr, meta);
        transition accept;
    }
}

// Metadata is zero at the start of the pipeline (so that the PHV allocator
// may overlay values whose lives do not meet).
@pa_auto_init_metadata
// A digest is one learn quantum of at most 48 bytes, counted in whole
// containers, the digest type's included: the type in an 8-bit container,
// each member in the fewest containers that hold it.
@pa_container_size("ingress", "ig_intr_md_for_dprsr.digest_type", 8)
// The bridge header is the ingress metadata it carries (no copies).
@pa_alias("ingress", "meta.now32", "hdr.bridge.now32")
@pa_alias("ingress", "meta.now_c", "hdr.bridge.now_c")
@pa_alias("ingress", "meta.cfg.flow_timeout_c", "hdr.bridge.flow_timeout_c")
@pa_alias("ingress", "meta.cfg.epoch", "hdr.bridge.epoch")
@pa_alias("ingress", "meta.cfg.mode", "hdr.bridge.mode")
@pa_alias("ingress", "meta.ingress_role", "hdr.bridge.ingress_role")
@pa_alias("ingress", "meta.stat.no_route", "hdr.bridge.no_route")
@pa_alias("ingress", "meta.measured", "hdr.bridge.measured")
@pa_container_size("ingress", "meta.io_digest.cmd_psn", 16)
// The endpoint learn filter writes its flag from a stateful ALU: a container
// of its own, so that no tracker table in its stage is held back.
@pa_solitary("ingress", "meta.stat.endpoint_learned")
@pa_container_size("ingress", "meta.io_digest.cid", 16)
control TelemetryIngress(inout headers_t hdr, inout local_metadata_t meta,
                         in ingress_intrinsic_metadata_t ig_intr_md,
                         in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                         inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                         inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    TelemetryConfig() config;
    Forwarding() forwarding;
    Endpoints() endpoints;
    PortRole() ingress_port_role;
    PortRole() egress_port_role;
    IoTracker() io_tracker;
    Stats() stats;
    Register<bit<32>, bit<1>>(1, 0) digest_seq;
    RegisterAction<bit<32>, bit<1>, bit<32>>(digest_seq) next_seq = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = value + 1;
        }
    };

    // io `evo`: event, vantage and op in one byte of the quantum
    // (p4/include/header.p4), concatenated by the hash unit.
    Hash<bit<8>>(HashAlgorithm_t.IDENTITY) evo_pack;

    // The sequence number goes in io_digest.seq, which every digest packs.
    @hidden action take_seq() {
        meta.io_digest.seq = next_seq.execute(0);
        ig_dprsr_md.digest_type = meta.digest_kind[2:0];
    }
    @hidden action pack_evo() {
        meta.io_digest.evo = evo_pack.get({ 2w0, meta.io_evo.op, meta.io_evo.vantage, meta.io_evo.event });
    }
    @stage(11)
    @hidden table evo_tbl {
        key = { meta.digest_kind: exact @name("kind"); }
        actions = { pack_evo; NoAction; }
        const entries = { DIGEST_IO: pack_evo(); }
        const default_action = NoAction();
        size = 1;
    }

    // A LEARN_ENDPOINT digest (endpoints.p4).
    @hidden action take_seq_endpoint() {
        meta.io_digest.seq = next_seq.execute(0);
        ig_dprsr_md.digest_type = DIGEST_LEARN[2:0];
        meta.learn_digest.kind = LEARN_ENDPOINT;
    }

    @stage(11)
    @hidden table seq_tbl {
        key = { meta.digest_kind: exact @name("kind"); meta.stat.endpoint_learned: exact @name("endpoint"); }
        actions = { take_seq; take_seq_endpoint; NoAction; }
        const entries = {
            (DIGEST_NONE, false): NoAction();
            (DIGEST_NONE, true): take_seq_endpoint();
        }
        const default_action = take_seq();
        size = 4;
    }

    @hidden action known_opcode() { }
    @hidden action unknown_opcode() { meta.stat.unknown_opcode = true; }
    @stage(1)
    @hidden table opcode_check {
        key = {
            hdr.bth.opcode: range;
        }
        actions = {
            known_opcode;
            unknown_opcode;
        }
        const entries = {
            OP_SEND_FIRST .. OP_RC_FETCH_ADD: known_opcode();
            OP_SEND_LAST_INV .. OP_SEND_ONLY_INV: known_opcode();
            OP_UC_SEND_FIRST .. OP_UC_WRITE_ONLY_IMM: known_opcode();
            OP_UD_SEND_ONLY .. OP_UD_SEND_ONLY_IMM: known_opcode();
            OP_CNP .. OP_CNP: known_opcode();
        }
        const default_action = unknown_opcode();
        size = 8;
    }

    apply {
        if (hdr.report.isValid()) {
            // A flow tracker report: sent as its digest, then dropped.
            meta.digest_kind = hdr.report.kind;
            meta.learn_digest.kind = LEARN_FLOW;
            meta.learn_digest.src = hdr.report.src;
            meta.learn_digest.dst = hdr.report.dst;
            meta.learn_digest.dest_qp = hdr.report.dest_qp;
            ig_dprsr_md.drop_ctl = 1;
        } else {
            config.apply(meta);
            forwarding.apply(hdr, meta);
            endpoints.apply(hdr, meta);
            ingress_port_role.apply(ig_intr_md.ingress_port, meta.ingress_role);
            egress_port_role.apply(meta.egress_port, meta.egress_role);
            if (ig_prsr_md.parser_err != 0) {
                meta.stat.parser_error = true;
            }
            if (hdr.bth.isValid()) {
                meta.stat.roce = true;
                opcode_check.apply();
            }
            io_tracker.apply(hdr, meta);

            // Everything the egress half needs, before the packet.
            hdr.bridge.setValid();
            hdr.bridge.magic = TNA_BRIDGE_MAGIC;
            hdr.bridge.now32 = meta.now32;
            hdr.bridge.now_c = meta.now_c;
            hdr.bridge.flow_timeout_c = meta.cfg.flow_timeout_c;
            hdr.bridge.epoch = meta.cfg.epoch;
            hdr.bridge.mode = meta.cfg.mode;
            hdr.bridge.ingress_role = meta.ingress_role;
            hdr.bridge.no_route = (bit<1>)meta.stat.no_route;
            hdr.bridge.pad = 0;
            hdr.bridge.src_key = meta.src_key;
            hdr.bridge.dst_key = meta.dst_key;
            if (meta.drop) {
                // Counted in egress (no_route), dropped there.
                ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
            } else {
                ig_tm_md.ucast_egress_port = meta.egress_port;
            }
        }

        // At most one digest per packet, packed by the deparser; every digest
        // carries the next sequence number of this switch.
        seq_tbl.apply();
        evo_tbl.apply();
        stats.apply(ig_intr_md.ingress_port, hdr.report.isValid(), meta);
    }
}

control TelemetryIngressDeparser(packet_out pkt, inout headers_t hdr, in local_metadata_t meta,
                                 in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    @name(".io_digest_t") Digest<io_digest_t>() io_digest;
    @name(".msg_digest_t") Digest<msg_digest_t>() msg_digest;
    @name(".learn_digest_t") Digest<learn_digest_t>() learn_digest;
    RoceDeparser() roce_deparser;

    apply {
        if (ig_dprsr_md.digest_type == DIGEST_IO[2:0]) {
            io_digest.pack(meta.io_digest);
        } else if (ig_dprsr_md.digest_type == DIGEST_MSG[2:0]) {
            msg_digest.pack({ meta.io_digest.seq, hdr.report.flags[0:0], hdr.report.src, hdr.report.dst,
                hdr.report.dest_qp, hdr.report.first_psn, hdr.report.last_psn, hdr.report.bytes,
                hdr.report.packets, hdr.report.retransmitted, hdr.report.ecn_ce, hdr.report.fct_ns,
                hdr.report.gap_ns, hdr.report.extra_packets, hdr.report.extra_retransmitted,
                hdr.report.straddled, hdr.report.cnp });
        } else if (ig_dprsr_md.digest_type == DIGEST_LEARN[2:0]) {
            learn_digest.pack({ meta.io_digest.seq, meta.learn_digest.kind, meta.learn_digest.src,
                meta.learn_digest.dst, meta.learn_digest.dest_qp, meta.learn_digest.addr });
        }
        pkt.emit(hdr.bridge);
        roce_deparser.apply(pkt, hdr);
    }
}

// Egress: the bridge header and the headers the flow tracker reads; or, on a
// mirrored copy, the report alone (the rest of the packet is its payload).
parser TelemetryEgressParser(packet_in pkt, out headers_t hdr, out egress_metadata_t meta,
                             out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition select(pkt.lookahead<bit<8>>()) {
            TNA_BRIDGE_MAGIC: parse_bridge;
            TNA_REPORT_MAGIC: parse_report;
            default: accept;
        }
    }

    state parse_report {
        pkt.extract(hdr.report);
        transition accept;
    }

    state parse_bridge {
        pkt.extract(hdr.bridge);
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

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_UDP: parse_udp;
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
            OP_WRITE_FIRST: parse_reth;
            OP_WRITE_ONLY: parse_reth;
            OP_WRITE_ONLY_IMM: parse_reth;
            default: accept;
        }
    }

    state parse_reth {
        pkt.extract(hdr.reth);
        transition accept;
    }
}

@pa_auto_init_metadata
#if __TARGET_TOFINO__ == 2
// The flow tracker's predicates live until the counts, after the seen-PSN
// window (stage 16): kept apart, as the allocator overlays them wrongly.
@pa_no_overlay("egress", "flow_tracker_owner", "flow_tracker_cnp_p", "flow_tracker_track")
// The flow histogram's id and bucket: overlaid with the window's words, they
// would wait for the window (stage 16), and the FCT array, whose stage must
// have map RAM that the I/O histograms leave free, would need a 21st stage.
@pa_no_overlay("egress", "flow_tracker_histograms_flow")
@pa_no_overlay("egress", "flow_tracker_histograms_b")
#endif
control TelemetryEgress(inout headers_t hdr, inout egress_metadata_t meta,
                        in egress_intrinsic_metadata_t eg_intr_md,
                        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    FlowTracker() flow_tracker;
    EgressStats() stats;

    apply {
        if (hdr.bridge.isValid()) {
            meta.m.now32 = hdr.bridge.now32;
            meta.m.now_c = hdr.bridge.now_c;
            meta.m.cfg.flow_timeout_c = hdr.bridge.flow_timeout_c;
            meta.m.cfg.epoch = hdr.bridge.epoch;
            meta.m.cfg.mode = hdr.bridge.mode;
            meta.m.ingress_role = hdr.bridge.ingress_role;

            flow_tracker.apply(hdr, meta.m, meta.report);
            if (meta.report.isValid()) {
                meta.report.magic = TNA_REPORT_MAGIC;
                eg_dprsr_md.mirror_type = TNA_MIRROR_REPORT;
                meta.session = TNA_REPORT_SESSION;
            }
            stats.apply(meta.m);
            if (hdr.bridge.no_route == 1) {
                eg_dprsr_md.drop_ctl = 1;
            }
            hdr.bridge.setInvalid();
        }
    }
}

control TelemetryEgressDeparser(packet_out pkt, inout headers_t hdr, in egress_metadata_t meta,
                                in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Mirror() mirror;
    RoceDeparser() roce_deparser;

    apply {
        if (eg_dprsr_md.mirror_type == TNA_MIRROR_REPORT) {
            mirror.emit<report_h>(meta.session, meta.report);
        }
        pkt.emit(hdr.report);
        roce_deparser.apply(pkt, hdr);
    }
}

Pipeline(TelemetryIngressParser(), TelemetryIngress(), TelemetryIngressDeparser(),
         TelemetryEgressParser(), TelemetryEgress(), TelemetryEgressDeparser()) pipe;

Switch(pipe) main;
