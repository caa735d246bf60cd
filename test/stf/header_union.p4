// Header unions: at most one member valid. The parser extracts one member
// of a union (by a type byte) and members of a union stack; setting the
// other member valid invalidates the first; isValid() of a union.
#include <core.p4>
#include <v1model.p4>

header type_t {
    bit<8> t;
}

header short_t {
    bit<8> a;
}

header long_t {
    bit<16> b;
}

header_union u_t {
    short_t s;
    long_t  l;
}

header flag_t {
    bit<8> v;
}

struct headers_t {
    type_t   ty;
    u_t      u;
    u_t[2]   us;
    flag_t   flag;
}

struct meta_t {}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ty);
        transition select(hdr.ty.t) {
            1: one_short;
            2: one_long;
            3: stack;
            default: accept;
        }
    }
    state one_short {
        pkt.extract(hdr.u.s);
        transition accept;
    }
    state one_long {
        pkt.extract(hdr.u.l);
        transition accept;
    }
    state stack {
        pkt.extract(hdr.us.next.s);
        pkt.extract(hdr.us.next.l);
        transition accept;
    }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.flag.setValid();
        hdr.flag.v = hdr.u.isValid() ? 8w1 : 8w0;
        if (hdr.u.s.isValid()) {
            // The long member becomes the valid one: the short one is invalid from here.
            hdr.u.l.setValid();
            hdr.u.l.b = 16w0xBEEF;
        }
        if (hdr.u.s.isValid()) {
            hdr.flag.v = 0xee;
        }
        if (hdr.us[0].s.isValid() && hdr.us[1].l.isValid()) {
            hdr.flag.v = 0x22;
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }

control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ty);
        pkt.emit(hdr.u);
        pkt.emit(hdr.us);
        pkt.emit(hdr.flag);
    }
}

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
