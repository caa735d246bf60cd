// Per-port and global statistics, TNA build. A Tofino counter is addressed
// once per packet, so telemetry_stats counts each packet once, under the
// first of its events in the order below (rare, diagnostic events first;
// a RoCEv2 packet with no other event counts as roce_packets). The v1model
// build counts every event of a packet. See docs/tofino.md.
#ifndef __STATS__
#define __STATS__

control Stats(in headers_t hdr, in bit<9> ingress_port, in local_metadata_t meta) {
    Counter<bit<64>, bit<32>>(PORT_COUNT, CounterType_t.PACKETS_AND_BYTES) port_packets;
    Counter<bit<64>, bit<32>>(STATS_SIZE, CounterType_t.PACKETS) telemetry_stats;

    bit<32> index;
    bool counted;

    apply {
        port_packets.count((bit<32>)ingress_port);
        counted = true;
        if (meta.stat.io_replaced) { index = STAT_IO_REPLACED; }
        else if (meta.stat.ioref_overwritten) { index = STAT_IOREF_OVERWRITTEN; }
        else if (meta.stat.io_unpaired_rsp) { index = STAT_IO_UNPAIRED_RESPONSES; }
        else if (meta.stat.io_unmatched_rsp) { index = STAT_IO_UNMATCHED_RESPONSES; }
        else if (meta.stat.untracked_io) { index = STAT_UNTRACKED_IOS; }
        else if (meta.stat.untracked_flow) { index = STAT_UNTRACKED_FLOWS; }
        else if (meta.stat.cnp_untracked) { index = STAT_CNP_UNTRACKED; }
        else if (meta.stat.straddled) { index = STAT_STRADDLED_MESSAGES; }
        else if (meta.stat.queue_pair_learned) { index = STAT_QUEUE_PAIRS_LEARNED; }
        else if (meta.stat.learned) { index = STAT_LEARNED; }
        else if (meta.stat.io_cmd) { index = STAT_IO_COMMANDS; }
        else if (meta.stat.io_rsp) { index = STAT_IO_RESPONSES; }
        else if (meta.stat.message) { index = STAT_MESSAGES; }
        else if (meta.stat.cnp) { index = STAT_CNP; }
        else if (meta.stat.ecn_ce) { index = STAT_ECN_CE; }
        else if (meta.stat.parser_error) { index = STAT_PARSER_ERRORS; }
        else if (meta.stat.unknown_opcode) { index = STAT_UNKNOWN_OPCODES; }
        else if (meta.stat.no_route) { index = STAT_NO_ROUTE; }
        else if (meta.stat.roce) { index = STAT_ROCE_PACKETS; }
        else { counted = false; }
        if (counted) {
            telemetry_stats.count(index);
        }
    }
}

#endif
