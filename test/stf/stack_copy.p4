// A whole header stack copied to another in the parser (validity, fields
// and the next index: the next extract into the copy lands after the
// copied elements), then one of the copy's elements changed.
#include <core.p4>
#include <v1model.p4>

header elem_t {
    bit<8> v;
}

header count_t {
    bit<8> n;
}

struct headers_t {
    count_t   cnt;
    elem_t[3] a;
    elem_t[3] b;
}

struct meta_t {}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.cnt);
        transition select(hdr.cnt.n) {
            0: copy;
            default: elem;
        }
    }
    state elem {
        pkt.extract(hdr.a.next);
        hdr.cnt.n = hdr.cnt.n - 1;
        transition select(hdr.cnt.n) {
            0: copy;
            default: elem;
        }
    }
    state copy {
        hdr.b = hdr.a;
        pkt.extract(hdr.b.next);
        transition accept;
    }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.b[0].isValid()) {
            hdr.b[0].v = 0xee;
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }

control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.cnt);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
