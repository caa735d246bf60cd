// The parser skips bytes (packet_in.advance) and a header it extracts into
// a throwaway instance: neither is emitted again, and the program writes
// no header at all.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> v;
}

struct headers_t {
    h_t h;
}

struct meta_t {}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        transition select(pkt.lookahead<bit<8>>()) {
            1: skip_bytes;
            2: skip_header;
            default: accept;
        }
    }
    state skip_bytes {
        pkt.advance(16);
        pkt.extract(hdr.h);
        transition accept;
    }
    state skip_header {
        pkt.extract<h_t>(_);
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
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
