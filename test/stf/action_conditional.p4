// Conditionals inside actions (p4c writes them as jumps in the action's
// primitives): an action with its data compares, branches, and goes on.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
}

struct headers_t {
    h_t h;
}

struct meta_t {}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action classify(bit<8> limit, bit<9> port) {
        if (hdr.h.a > limit) {
            hdr.h.b = 1;
            if (hdr.h.a == 0xff) {
                hdr.h.b = 3;
            }
        } else {
            hdr.h.b = 2;
        }
        hdr.h.c = hdr.h.c + 1;
        sm.egress_spec = port;
    }
    table t {
        key = { hdr.h.c : exact; }
        actions = { classify; }
        default_action = classify(10, 1);
    }
    apply {
        t.apply();
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }

control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
