// Header stack elements chosen at run time: a field written and read at
// an index that a packet field gives.
#include <core.p4>
#include <v1model.p4>

header idx_t {
    bit<8> w;
    bit<8> r;
    bit<8> got;
}

header elem_t {
    bit<8> v;
}

struct headers_t {
    idx_t     idx;
    elem_t[4] s;
}

struct meta_t {}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.idx);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action write_read() {
        hdr.s[hdr.idx.w].v = hdr.s[hdr.idx.w].v + 0x10;
        hdr.idx.got = hdr.s[hdr.idx.r].v;
    }
    table t {
        actions = { write_read; }
        default_action = write_read();
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.idx.w < 4 && hdr.idx.r < 4) {
            t.apply();
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }

control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.idx);
        pkt.emit(hdr.s);
    }
}

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
