// Per-port and global statistics, TNA build. port_packets counts in ingress;
// telemetry_stats in egress, after the flow tracker (the ingress's events
// come in the bridge header; a packet without a route is counted there and
// then dropped). A Tofino counter is addressed once per packet, so
// telemetry_stats counts each packet once, under the first of its events in
// the order below (rare, diagnostic events first; a RoCEv2 packet with no
// other event counts as roce_packets). The v1model build counts every event
// of a packet. See docs/tofino.md.
#ifndef __STATS__
#define __STATS__

control Stats(in bit<9> ingress_port) {
    Counter<bit<64>, bit<32>>(PORT_COUNT, CounterType_t.PACKETS_AND_BYTES) port_packets;

    @hidden action count_port() {
        port_packets.count((bit<32>)ingress_port);
    }

    // A table that always hits (Tofino 2 addresses a counter by hash only on a hit).
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

    apply {
        port_count.apply();
    }
}

// The ingress's events come in the bridge header, the flow tracker's in meta.stat.
control EgressStats(in bridge_h bridge, in local_metadata_t meta) {
    @name(".TelemetryIngress.stats.telemetry_stats")
    Counter<bit<64>, bit<32>>(STATS_SIZE, CounterType_t.PACKETS) telemetry_stats;

    @hidden action count(bit<32> index) {
        telemetry_stats.count(index);
    }

    // The first event of the packet, by priority: one ternary lookup.
    @hidden table first_event {
        key = {
            bridge.io_replaced: ternary;
            bridge.ioref_overwritten: ternary;
            bridge.io_unpaired_rsp: ternary;
            bridge.io_unmatched_rsp: ternary;
            bridge.untracked_io: ternary;
            meta.stat.untracked_flow: ternary;
            meta.stat.cnp_untracked: ternary;
            meta.stat.straddled: ternary;
            bridge.queue_pair_learned: ternary;
            bridge.learned: ternary;
            meta.stat.learned: ternary;
            bridge.io_cmd: ternary;
            bridge.io_rsp: ternary;
            meta.stat.message: ternary;
            meta.stat.cnp: ternary;
            meta.stat.ecn_ce: ternary;
            bridge.parser_error: ternary;
            bridge.unknown_opcode: ternary;
            bridge.no_route: ternary;
            bridge.roce: ternary;
        }
        actions = {
            count;
            @defaultonly NoAction;
        }
        const entries = {
            (1, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _): count(STAT_IO_REPLACED);
            (_, 1, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _): count(STAT_IOREF_OVERWRITTEN);
            (_, _, 1, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _): count(STAT_IO_UNPAIRED_RESPONSES);
            (_, _, _, 1, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _): count(STAT_IO_UNMATCHED_RESPONSES);
            (_, _, _, _, 1, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _): count(STAT_UNTRACKED_IOS);
            (_, _, _, _, _, true, _, _, _, _, _, _, _, _, _, _, _, _, _, _): count(STAT_UNTRACKED_FLOWS);
            (_, _, _, _, _, _, true, _, _, _, _, _, _, _, _, _, _, _, _, _): count(STAT_CNP_UNTRACKED);
            (_, _, _, _, _, _, _, true, _, _, _, _, _, _, _, _, _, _, _, _): count(STAT_STRADDLED_MESSAGES);
            (_, _, _, _, _, _, _, _, 1, _, _, _, _, _, _, _, _, _, _, _): count(STAT_QUEUE_PAIRS_LEARNED);
            (_, _, _, _, _, _, _, _, _, 1, _, _, _, _, _, _, _, _, _, _): count(STAT_LEARNED);
            (_, _, _, _, _, _, _, _, _, _, true, _, _, _, _, _, _, _, _, _): count(STAT_LEARNED);
            (_, _, _, _, _, _, _, _, _, _, _, 1, _, _, _, _, _, _, _, _): count(STAT_IO_COMMANDS);
            (_, _, _, _, _, _, _, _, _, _, _, _, 1, _, _, _, _, _, _, _): count(STAT_IO_RESPONSES);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, true, _, _, _, _, _, _): count(STAT_MESSAGES);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, true, _, _, _, _, _): count(STAT_CNP);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, true, _, _, _, _): count(STAT_ECN_CE);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, 1, _, _, _): count(STAT_PARSER_ERRORS);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, 1, _, _): count(STAT_UNKNOWN_OPCODES);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, 1, _): count(STAT_NO_ROUTE);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, 1): count(STAT_ROCE_PACKETS);
        }
        const default_action = NoAction();
        size = 32;
    }

    apply {
        first_event.apply();
    }
}

#endif
