// Varbit fields: a header whose last field is as long as its `len` field
// says (in bits), extracted, rewritten and emitted; the parser errors that
// a bad length gives (ParserInvalidArgument, HeaderTooShort,
// PacketTooShort) pick the output port.
#include <core.p4>
#include <v1model.p4>

header opt_t {
    bit<8>      len;
    bit<8>      tag;
    varbit<32>  data;
}

header copy_t {
    bit<8>      mark;
    varbit<32>  data;
}

struct headers_t {
    opt_t  opt;
    copy_t copy;
}

struct meta_t {}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.opt, (bit<32>) pkt.lookahead<bit<8>>());
        transition accept;
    }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.ParserInvalidArgument) {
            sm.egress_spec = 2;
        } else if (sm.parser_error == error.HeaderTooShort) {
            sm.egress_spec = 3;
        } else if (sm.parser_error == error.PacketTooShort) {
            sm.egress_spec = 4;
        } else {
            sm.egress_spec = 1;
            hdr.opt.tag = 0xaa;
            hdr.copy.setValid();
            hdr.copy.mark = 0xcc;
            hdr.copy.data = hdr.opt.data;
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }

control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.opt);
        pkt.emit(hdr.copy);
    }
}

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
