// Per-port and global statistics, readable over P4Runtime. The events of a
// packet are counted in packet_events and flow_events, one access each at the
// index of the packet's set of events (stats_index.p4); the TNA build counts
// the same, the flow events in egress.
#ifndef __STATS__
#define __STATS__

#include "../stats_index.p4"

control Stats(in bit<9> ingress_port, in local_metadata_t meta) {
    PACKET_BYTE_COUNTER(PORT_COUNT, port_packets)
    PACKET_COUNTER(PACKET_EVENTS_SIZE, packet_events)
    PACKET_COUNTER(FLOW_EVENTS_SIZE, flow_events)

    apply {
        port_packets.count((bit<32>)ingress_port);
        packet_events.count(PACKET_EVENTS_INDEX(meta.stat, meta.digest_kind));
        flow_events.count(FLOW_EVENTS_INDEX(meta.stat));
    }
}

#endif
