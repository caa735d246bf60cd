// The indices of the packet_events and flow_events counters: a packet's
// statistics events (stat_flags_t) as one number per counter, each field at
// its offset in define.p4 (PKT_EV_*, FLOW_EV_*), the highest first. Both
// builds count with these, so that both count the same.
#ifndef __STATS_INDEX__
#define __STATS_INDEX__

#define PACKET_EVENTS_SIZE 32768  // 2^PKT_EV_BITS
#define FLOW_EVENTS_SIZE 128     // 2^FLOW_EV_BITS

#define PACKET_EVENTS_INDEX(s, digest_kind) ((bit<32>)( \
    (bit<1>)(s).endpoint_learned ++ (s).unmeasured ++ (bit<1>)(s).learned ++ (bit<1>)(s).queue_pair_learned ++ (bit<1>)(s).ioref_overwritten ++ \
    (s).io_outcome ++ (digest_kind)[1:0] ++ (bit<1>)(s).no_route ++ (bit<1>)(s).unknown_opcode ++ \
    (bit<1>)(s).parser_error ++ (bit<1>)(s).roce))

#define FLOW_EVENTS_INDEX(s) ((bit<32>)( \
    (bit<1>)(s).flow_learned ++ (bit<1>)(s).ecn_ce ++ (bit<1>)(s).untracked_flow ++ \
    (bit<1>)(s).cnp_untracked ++ (bit<1>)(s).cnp ++ (bit<1>)(s).straddled ++ (bit<1>)(s).message))

#endif
