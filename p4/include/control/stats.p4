// Per-port and global statistics, readable over P4Runtime.
#ifndef __STATS__
#define __STATS__

control Stats(in headers_t hdr, in bit<9> ingress_port, in local_metadata_t meta) {
    PACKET_BYTE_COUNTER(PORT_COUNT, port_packets)
    PACKET_COUNTER(STATS_SIZE, telemetry_stats)

    apply {
        port_packets.count((bit<32>)ingress_port);
        if (meta.stat.roce) { telemetry_stats.count(STAT_ROCE_PACKETS); }
        if (meta.stat.untracked_flow) { telemetry_stats.count(STAT_UNTRACKED_FLOWS); }
        if (meta.stat.untracked_io) { telemetry_stats.count(STAT_UNTRACKED_IOS); }
        if (meta.stat.io_cmd) { telemetry_stats.count(STAT_IO_COMMANDS); }
        if (meta.stat.io_rsp) { telemetry_stats.count(STAT_IO_RESPONSES); }
        if (meta.stat.io_unmatched_rsp) { telemetry_stats.count(STAT_IO_UNMATCHED_RESPONSES); }
        if (meta.stat.message) { telemetry_stats.count(STAT_MESSAGES); }
        if (meta.stat.straddled) { telemetry_stats.count(STAT_STRADDLED_MESSAGES); }
        if (meta.stat.learned) { telemetry_stats.count(STAT_LEARNED); }
        if (meta.digest_kind != DIGEST_NONE) { telemetry_stats.count(STAT_DIGESTS); }
        if (meta.stat.cnp) { telemetry_stats.count(STAT_CNP); }
        if (meta.stat.ecn_ce) { telemetry_stats.count(STAT_ECN_CE); }
        if (meta.stat.parser_error) { telemetry_stats.count(STAT_PARSER_ERRORS); }
        if (meta.stat.no_route) { telemetry_stats.count(STAT_NO_ROUTE); }
        if (meta.stat.ioref_overwritten) { telemetry_stats.count(STAT_IOREF_OVERWRITTEN); }
        if (meta.stat.unknown_opcode) { telemetry_stats.count(STAT_UNKNOWN_OPCODES); }
        if (meta.stat.io_replaced) { telemetry_stats.count(STAT_IO_REPLACED); }
        if (meta.stat.io_unpaired_rsp) { telemetry_stats.count(STAT_IO_UNPAIRED_RESPONSES); }
        if (meta.stat.queue_pair_learned) { telemetry_stats.count(STAT_QUEUE_PAIRS_LEARNED); }
        if (meta.stat.cnp_untracked) { telemetry_stats.count(STAT_CNP_UNTRACKED); }
    }
}

#endif
