// RoCEv2 / NVMe-over-RoCE telemetry for Tofino (TNA), the same program as
// p4/v1model/main.p4: same controls, tables, actions, digests and counters
// (test/p4/p4info-parity.test.ts). Shared: define, header, size, parser and
// the table-only controls (config, forwarding, port roles); per architecture:
// the register-holding controls in p4/tna/include/control. See docs/tofino.md.
#include "include/define_tna.p4"
#include "../include/size.p4"
#include "../include/define.p4"
#include "../include/header.p4"
#include "../include/parser.p4"
#include "../include/control/config.p4"
#include "../include/control/forwarding.p4"
#include "../include/control/port_role.p4"
#include "include/control/io_tracker.p4"
#include "include/control/flow_tracker.p4"
#include "include/control/stats.p4"
#include "include/digest_overlay.p4"

struct egress_metadata_t {
}

parser TelemetryIngressParser(packet_in pkt, out headers_t hdr, out local_metadata_t meta,
                              out ingress_intrinsic_metadata_t ig_intr_md) {
    RoceParser() roce_parser;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        roce_parser.apply(pkt, hdr);
        transition accept;
    }
}

// Metadata is zero at the start of the pipeline (so that the PHV allocator
// may overlay values whose lives do not meet).
@pa_auto_init_metadata
DIGEST_OVERLAY
// A digest is one learn quantum of at most 48 bytes, counted in whole
// containers, the digest type's included: the type in an 8-bit container,
// each member in the fewest containers that hold it.
@pa_container_size("ingress", "ig_intr_md_for_dprsr.digest_type", 8)
@pa_container_size("ingress", "meta.io_digest.cmd_psn", 16)
@pa_container_size("ingress", "meta.io_digest.cid", 16)
@pa_container_size("ingress", "meta.msg_digest.dest_qp", 16, 8)
@pa_container_size("ingress", "meta.msg_digest.extra_retransmitted", 16)
control TelemetryIngress(inout headers_t hdr, inout local_metadata_t meta,
                         in ingress_intrinsic_metadata_t ig_intr_md,
                         in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                         inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                         inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    TelemetryConfig() config;
    Forwarding() forwarding;
    PortRole() ingress_port_role;
    PortRole() egress_port_role;
    IoTracker() io_tracker;
    FlowTracker() flow_tracker;
    Stats() stats;
    Register<bit<32>, bit<1>>(1, 0) digest_seq;
    RegisterAction<bit<32>, bit<1>, bit<32>>(digest_seq) next_seq = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = value + 1;
        }
    };

    // The clocks are taken through the hash units (identity): a plain copy
    // would leave them in the timestamp's 16-bit containers, and every
    // 32-bit subtraction from them would need more than two PHV sources.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) now_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) now_c_hash;
    // One hash result per action (an action takes 32 bits from the hash units).
    @hidden action take_now() { meta.now32 = now_hash.get({ ig_intr_md.ingress_mac_tstamp[31:0] }); }
    @hidden action take_now_c() { meta.now_c = now_c_hash.get({ COARSE(ig_intr_md.ingress_mac_tstamp) }); }

    apply {
        config.apply(meta);
        // The ingress MAC timestamp is in ns already (ts_scale is not used).
        take_now();
        take_now_c();
        forwarding.apply(hdr, meta);
        ingress_port_role.apply(ig_intr_md.ingress_port, meta.ingress_role);
        egress_port_role.apply(meta.egress_port, meta.egress_role);
        meta.stat.roce = hdr.bth.isValid();
        if (ig_prsr_md.parser_err != 0) {
            meta.stat.parser_error = true;
        }
        if (hdr.bth.isValid()) {
            bit<8> op = hdr.bth.opcode;
            bool known = false;
            if (op <= OP_RC_FETCH_ADD) {
                known = true;
            } else if (op == OP_SEND_LAST_INV || op == OP_SEND_ONLY_INV) {
                known = true;
            } else if (op >= OP_UC_SEND_FIRST && op <= OP_UC_WRITE_ONLY_IMM) {
                known = true;
            } else if (op == OP_UD_SEND_ONLY || op == OP_UD_SEND_ONLY_IMM) {
                known = true;
            } else if (op == OP_CNP) {
                known = true;
            }
            if (!known) {
                meta.stat.unknown_opcode = true;
            }
        }
        io_tracker.apply(hdr, meta);
        flow_tracker.apply(hdr, meta);

        // At most one digest per packet, packed by the deparser; every digest
        // carries the next sequence number of this switch.
        if (meta.digest_kind != DIGEST_NONE) {
            bit<32> seq = next_seq.execute(0);
            // Only the digest sent: the io and msg digests may share PHV.
            if (meta.digest_kind == DIGEST_IO) {
                meta.io_digest.seq = seq;
            } else if (meta.digest_kind == DIGEST_MSG) {
                meta.msg_digest.seq = seq;
            } else {
                meta.learn_digest.seq = seq;
            }
            ig_dprsr_md.digest_type = meta.digest_kind[2:0];
        }
        stats.apply(hdr, ig_intr_md.ingress_port, meta);

        if (meta.drop) {
            ig_dprsr_md.drop_ctl = 1;
        } else {
            ig_tm_md.ucast_egress_port = meta.egress_port;
        }
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
            msg_digest.pack(meta.msg_digest);
        } else if (ig_dprsr_md.digest_type == DIGEST_LEARN[2:0]) {
            learn_digest.pack(meta.learn_digest);
        }
        roce_deparser.apply(pkt, hdr);
    }
}

// Egress does nothing: the packet leaves as ingress deparsed it.
parser TelemetryEgressParser(packet_in pkt, out headers_t hdr, out egress_metadata_t meta,
                             out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition accept;
    }
}

control TelemetryEgress(inout headers_t hdr, inout egress_metadata_t meta,
                        in egress_intrinsic_metadata_t eg_intr_md,
                        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply { }
}

control TelemetryEgressDeparser(packet_out pkt, inout headers_t hdr, in egress_metadata_t meta,
                                in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { }
}

Pipeline(TelemetryIngressParser(), TelemetryIngress(), TelemetryIngressDeparser(),
         TelemetryEgressParser(), TelemetryEgress(), TelemetryEgressDeparser()) pipe;

Switch(pipe) main;
