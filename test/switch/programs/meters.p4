// Meters of v1model: two indirect ones, by packets and by bytes, and a direct
// one on table `by_entry` (by packets). The first header names the cell (and
// the entry); ingress writes the colors into it.
#include <core.p4>
#include <v1model.p4>

header m_t {
    bit<8> index;
    bit<8> packets_color;
    bit<8> bytes_color;
    bit<8> entry_color;
}

struct headers_t { m_t m; }
struct meta_t { bit<32> color; }

parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(h.m); transition accept; }
}

control VC(inout headers_t h, inout meta_t meta) { apply { } }

control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    meter(4, MeterType.packets) by_packets;
    meter(4, MeterType.bytes) by_bytes;
    direct_meter<bit<8>>(MeterType.packets) per_entry;

    action mark() { per_entry.read(h.m.entry_color); }
    table by_entry {
        key = { h.m.index: exact; }
        actions = { mark; }
        meters = per_entry;
        size = 16;
    }

    apply {
        by_packets.execute_meter((bit<32>) h.m.index, h.m.packets_color);
        by_bytes.execute_meter((bit<32>) h.m.index, meta.color);
        h.m.bytes_color = (bit<8>) meta.color;
        h.m.entry_color = 0xff;
        by_entry.apply();
        sm.egress_spec = 1;
    }
}

control E(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.m); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
