// Exercises the packet replication engine of v1model: multicast, clone
// (ingress and egress, with preserved field lists), resubmit and
// recirculate. The first header says what to do; egress reports what the
// copy saw in the second.
#include <core.p4>
#include <v1model.p4>

header op_t {
    bit<8>  op;       // 1 multicast, 2 clone I2E, 3 resubmit, 4 recirculate, 5 clone E2E,
                      // 6 recirculate forever, 7 resubmit forever, 8 drop but clone I2E,
                      // 9 clone E2E forever
    bit<8>  port;     // unicast egress port
    bit<16> arg;      // multicast group or clone session
    bit<8>  marker;   // set by ingress: 0xee (a clone of the ingress packet does not have it)
}

header report_t {
    bit<8>  itype;    // instance_type in egress
    bit<16> rid;      // egress_rid
    bit<16> eport;    // egress_port
    bit<16> iport;    // ingress_port as ingress saw it
    bit<8>  iitype;   // instance_type as ingress saw it
    bit<8>  kept;     // the preserved metadata field in egress
    bit<8>  lost;     // a metadata field no list preserves, in egress
    bit<8>  passes;   // ingress passes (preserved across resubmit and recirculate)
    bit<32> len;      // packet_length in egress
}

struct headers_t {
    op_t     op;
    report_t report;
}

struct meta_t {
    @field_list(1, 2, 3)
    bit<8> kept;
    bit<8> lost;
    @field_list(2, 3)
    bit<8> passes;
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.op);
        pkt.extract(h.report);
        transition accept;
    }
}

control VC(inout headers_t h, inout meta_t m) { apply { } }

control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        m.passes = m.passes + 1;
        h.report.iport = (bit<16>) sm.ingress_port;
        h.report.iitype = (bit<8>) sm.instance_type;
        h.report.passes = m.passes;
        h.op.marker = 0xee;
        sm.egress_spec = (bit<9>) h.op.port;
        if (h.op.op == 1) {
            sm.mcast_grp = h.op.arg;
        } else if (h.op.op == 2) {
            m.kept = 0xab;
            m.lost = 0xcd;
            clone_preserving_field_list(CloneType.I2E, (bit<32>) h.op.arg, 1);
        } else if (h.op.op == 3) {
            if (sm.instance_type == 0) {
                m.kept = 0x11;
                m.lost = 0x22;
                resubmit_preserving_field_list(2);
            }
        } else if (h.op.op == 7) {
            resubmit_preserving_field_list(2);
        } else if (h.op.op == 8) {
            mark_to_drop(sm);
            clone(CloneType.I2E, (bit<32>) h.op.arg);
        }
    }
}

control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.report.itype = (bit<8>) sm.instance_type;
        h.report.rid = sm.egress_rid;
        h.report.eport = (bit<16>) sm.egress_port;
        h.report.kept = m.kept;
        h.report.lost = m.lost;
        h.report.len = sm.packet_length;
        if (h.op.op == 4 && m.passes == 1) {
            m.kept = 0x33;
            m.lost = 0x44;
            h.op.port = h.op.port + 1;
            recirculate_preserving_field_list(3);
        } else if (h.op.op == 6) {
            recirculate_preserving_field_list(3);
        } else if (h.op.op == 9) {
            clone(CloneType.E2E, (bit<32>) h.op.arg);
        } else if (h.op.op == 5 && sm.instance_type == 0) {
            m.kept = 0x55;
            m.lost = 0x66;
            clone_preserving_field_list(CloneType.E2E, (bit<32>) h.op.arg, 1);
        }
    }
}

control CC(inout headers_t h, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t h) {
    apply {
        pkt.emit(h.op);
        pkt.emit(h.report);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
