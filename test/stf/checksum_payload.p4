// A checksum over a header field and the packet's payload (the bytes the
// parser left), computed before the packet leaves.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> csum;
    bit<16> v;
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
    apply {
        sm.egress_spec = 1;
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }

control ComputeImpl(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum_with_payload(hdr.h.isValid(), { hdr.h.v }, hdr.h.csum, HashAlgorithm.csum16);
    }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
