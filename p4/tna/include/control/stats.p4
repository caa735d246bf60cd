// Per-port and global statistics, TNA build: the same counters as v1model
// (p4/include/control/stats.p4), each counted once per packet at the index
// of the packet's set of events (stats_index.p4). port_packets and
// packet_events in ingress, packet_events last (the digest kind is part of
// its index, and the flow tracker's reports come back to the ingress to
// become digests); flow_events in egress, after the flow tracker.
#ifndef __STATS__
#define __STATS__

#include "../../../include/stats_index.p4"

control Stats(in bit<9> ingress_port, in bool report, in local_metadata_t meta) {
    Counter<bit<64>, bit<32>>(PORT_COUNT, CounterType_t.PACKETS_AND_BYTES) port_packets;
    Counter<bit<64>, bit<32>>(PACKET_EVENTS_SIZE, CounterType_t.PACKETS) packet_events;

    @hidden action count_port() {
        port_packets.count((bit<32>)ingress_port);
    }

    // Tables that always hit (Tofino 2 addresses a counter by hash only on a hit).
    @hidden table port_count {
        key = {
            ingress_port: ternary;
        }
        actions = {
            count_port;
        }
        const entries = {
            _: count_port();
        }
        size = 1;
    }

    @hidden action count_events() {
        packet_events.count(PACKET_EVENTS_INDEX(meta.stat, meta.digest_kind));
    }

    @hidden table packet_events_count {
        key = {
            meta.digest_kind: ternary;
        }
        actions = {
            count_events;
        }
        const entries = {
            _: count_events();
        }
        size = 1;
    }

    apply {
        if (!report) {
            port_count.apply();
        }
        packet_events_count.apply();
    }
}

control EgressStats(in local_metadata_t meta) {
    @name(".TelemetryIngress.stats.flow_events")
    Counter<bit<64>, bit<32>>(FLOW_EVENTS_SIZE, CounterType_t.PACKETS) flow_events;

    @hidden action count_events() {
        flow_events.count(FLOW_EVENTS_INDEX(meta.stat));
    }

    @hidden table flow_events_count {
        key = {
            meta.stat.message: ternary;
        }
        actions = {
            count_events;
        }
        const entries = {
            _: count_events();
        }
        size = 1;
    }

    apply {
        flow_events_count.apply();
    }
}

#endif
