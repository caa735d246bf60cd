// A table whose entries point to the members of an action profile: the
// first header is the key; the member's action writes a value and picks the
// port.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> key;
    bit<8> value;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}

control VC(inout headers_t h, inout meta_t m) { apply { } }

control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<8> value, bit<9> port) {
        h.h.value = value;
        sm.egress_spec = port;
    }
    action_profile(4) members;
    table by_key {
        key = { h.h.key: exact; }
        actions = { set; }
        implementation = members;
    }
    apply {
        sm.egress_spec = 2;
        h.h.value = 0xee;
        by_key.apply();
    }
}

control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
