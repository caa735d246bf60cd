// RoCEv2 / NVMe-over-RoCE telemetry for BMv2 simple_switch_grpc (v1model).
// -DDIGESTS_COMPACT: the digests in the Tofino build's compact layout (p4/build/compact/).
#include "include/define_v1model.p4"
#include "../include/size.p4"
#include "../include/define.p4"
#include "../include/header.p4"
#include "../include/parser.p4"
#include "../include/control/config.p4"
#include "../include/control/forwarding.p4"
#include "../include/control/endpoints.p4"
#include "../include/control/port_role.p4"
#include "../include/control/io_tracker.p4"
#include "../include/control/flow_tracker.p4"
#include "../include/control/stats.p4"

parser TelemetryParser(packet_in pkt, out headers_t hdr, inout local_metadata_t meta,
                       inout standard_metadata_t std_meta) {
    RoceParser() roce_parser;

    state start {
        roce_parser.apply(pkt, hdr, meta);
        transition accept;
    }
}

control TelemetryVerifyChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply { }
}

control TelemetryIngress(inout headers_t hdr, inout local_metadata_t meta,
                         inout standard_metadata_t std_meta) {
    TelemetryConfig() config;
    Forwarding() forwarding;
    Endpoints() endpoints;
    PortRole() ingress_port_role;
    PortRole() egress_port_role;
    IoTracker() io_tracker;
    FlowTracker() flow_tracker;
    Stats() stats;
    REGISTER(bit<32>, 1, digest_seq)

    apply {
        config.apply(meta);
        // BMv2 timestamps are microseconds; the software switch's are ns.
        meta.now = std_meta.ingress_global_timestamp * meta.cfg.ts_scale;
        forwarding.apply(hdr, meta);
        endpoints.apply(hdr, meta);
        ingress_port_role.apply(std_meta.ingress_port, meta.ingress_role);
        egress_port_role.apply(meta.egress_port, meta.egress_role);
        meta.stat.roce = hdr.bth.isValid();
        meta.stat.parser_error = std_meta.parser_error != error.NoError;
        if (hdr.bth.isValid()) {
            bit<8> op = hdr.bth.opcode;
            meta.stat.unknown_opcode = !(op <= OP_RC_FETCH_ADD || op == OP_SEND_LAST_INV || op == OP_SEND_ONLY_INV
                || (op >= OP_UC_SEND_FIRST && op <= OP_UC_WRITE_ONLY_IMM) || op == OP_UD_SEND_ONLY || op == OP_UD_SEND_ONLY_IMM
                || op == OP_CNP);
        }
        io_tracker.apply(hdr, meta);
        flow_tracker.apply(hdr, meta);

        // At most one digest per packet; every digest carries the next
        // sequence number of this switch.
        if (meta.digest_kind != DIGEST_NONE) {
            bit<32> seq;
            digest_seq.read(seq, 0);
            digest_seq.write(0, seq + 1);
            if (meta.digest_kind == DIGEST_IO) {
                meta.io_digest.seq = seq;
#ifdef IO_META_T
                digest<io_digest_t>(1, { seq, 2w0 ++ meta.io_digest.op ++ meta.io_digest.vantage ++ meta.io_digest.event,
                    meta.io_digest.flags, meta.io_digest.host, meta.io_digest.target, meta.io_digest.host_qp,
                    meta.io_digest.target_qp, meta.io_digest.cmd_psn, meta.io_digest.cid, meta.io_digest.status,
                    meta.io_digest.bytes, meta.io_digest.e2e_ns, meta.io_digest.to_data_ns,
                    meta.io_digest.from_data_ns, meta.io_digest.host_prep_ns, meta.io_digest.gen });
#else
                digest<io_digest_t>(1, meta.io_digest);
#endif
            } else if (meta.digest_kind == DIGEST_MSG) {
                meta.msg_digest.seq = seq;
                digest<msg_digest_t>(1, meta.msg_digest);
            } else {
                meta.learn_digest.seq = seq;
                digest<learn_digest_t>(1, meta.learn_digest);
            }
        }
        stats.apply(std_meta.ingress_port, meta);

        if (meta.drop) {
            mark_to_drop(std_meta);
        } else {
            std_meta.egress_spec = meta.egress_port;
        }
    }
}

control TelemetryEgress(inout headers_t hdr, inout local_metadata_t meta,
                        inout standard_metadata_t std_meta) {
    apply { }
}

control TelemetryComputeChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply { }
}

control TelemetryDeparser(packet_out pkt, in headers_t hdr) {
    RoceDeparser() roce_deparser;

    apply {
        roce_deparser.apply(pkt, hdr);
    }
}

V1Switch(TelemetryParser(), TelemetryVerifyChecksum(), TelemetryIngress(), TelemetryEgress(),
         TelemetryComputeChecksum(), TelemetryDeparser()) main;
