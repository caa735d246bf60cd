// Counters the STF runner reads back (check_counter): an indirect counter
// indexed by a packet field, and a table's direct counter by entry.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> idx;
    bit<8> key;
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
    counter(4, CounterType.packets_and_bytes) per_index;
    direct_counter(CounterType.packets_and_bytes) per_entry;
    action forward(bit<9> port) {
        per_entry.count();
        sm.egress_spec = port;
    }
    action drop() {
        per_entry.count();
        mark_to_drop(sm);
    }
    table t {
        key = { hdr.h.key : exact; }
        actions = { forward; drop; }
        default_action = drop();
        counters = per_entry;
    }
    apply {
        if (hdr.h.idx < 4) {
            per_index.count((bit<32>) hdr.h.idx);
        }
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
