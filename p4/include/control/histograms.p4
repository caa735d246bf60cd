// Latency histograms in the data plane (v1model build): every figure the
// switch computes is counted at line rate, in counter arrays the controller
// reads over P4Runtime, so that distributions cover every I/O and message
// whatever digests leave the switch.
//
// I/O figures, counted at the response (the moment the switch computes
// them, with exactly the conditions under which a record has them):
// e2e at C and at S, DAL at S, DPL at C. Message FCT, counted where the
// message's digest is made. Each array is indexed by
//   pair id (10 bits) ++ op (1 bit: write) ++ bucket (8 bits)   (I/O)
//   flow id (10 bits) ++ bucket (8 bits)                          (FCT)
// with the bucket from hist_bucket.p4's log-linear scale. Two activity
// arrays let the controller read only what moved: per pair and op (and per
// flow) everything counted, and per pair, op, figure and range of 32
// buckets (bucket[7:5]) what each range counted; it reads the first whole,
// the ranges of the pairs that moved, then the buckets of the ranges that
// moved (a figure's values in one interval span one or two ranges: about
// 100 cells read per pair and op that moved, of 4 x 256). Ids come from
// exact-match tables the controller fills; id 0 is the overflow: what has
// no id is counted there, never dropped, and the digest says so
// (IO_FLAG_HIST_UNPAIRED, MSG_FLAG_HIST_UNFLOWED).
#ifndef __HISTOGRAMS__
#define __HISTOGRAMS__

#include "hist_bucket.p4"

#define HIST_PAIRS 1024
#define HIST_IO_CELLS 524288    // HIST_PAIRS * 2 ops * 256 buckets
#define HIST_FLOWS 1024
#define HIST_FCT_CELLS 262144   // HIST_FLOWS * 256 buckets
#define HIST_IO_RANGES 65536    // HIST_PAIRS * 2 ops * 4 figures * 8 ranges
#define HIST_FCT_RANGES 8192    // HIST_FLOWS * 8 ranges
typedef bit<10> hist_pair_t;    // pair ids: 1,024 (HIST_PAIRS)
typedef bit<10> hist_flow_t;    // flow ids: 1,024 (HIST_FLOWS)

// Response digest: the I/O's pair had no id, its figures went to pair 0.
const bit<8> IO_FLAG_HIST_UNPAIRED = 0x10;
// Message digest: the flow had no id, its FCT went to flow 0.
const bit<8> MSG_FLAG_HIST_UNFLOWED = 0x02;
// Tracks every I/O and flow as full mode does and counts them in the
// histograms; digests only for the pairs and flows of the polling watchlists
// (and learn digests for new ones).
const mode_t MODE_SUMMARY = 3;

control IoHistograms(in endpoint_key_t host, in endpoint_key_t target, in bool write, in bit<8> vantage,
                     in ts_t e2e, in bool dal_valid, in ts_t dal, in bool dpl_valid, in ts_t dpl,
                     out bool unpaired) {
    PACKET_COUNTER(HIST_IO_CELLS, e2e_c)
    PACKET_COUNTER(HIST_IO_CELLS, e2e_s)
    PACKET_COUNTER(HIST_IO_CELLS, dal_s)
    PACKET_COUNTER(HIST_IO_CELLS, dpl_c)
    // I/Os counted per pair and op: what the controller reads every interval
    // to find the pairs whose histograms moved.
    PACKET_COUNTER(HIST_PAIRS * 2, pair_ios)
    // Figures counted per pair, op, figure (e2e_c 0, e2e_s 1, dal 2, dpl 3)
    // and range of 32 buckets: which bucket cells to read.
    PACKET_COUNTER(HIST_IO_RANGES, io_ranges)
    HistBucket() e2e_bucket;
    HistBucket() dal_bucket;
    HistBucket() dpl_bucket;

    hist_pair_t pair = 0;

    action set_pair(hist_pair_t id) {
        pair = id;
    }

    table io_pairs {
        key = {
            host: exact @name("host");
            target: exact @name("target");
        }
        actions = {
            set_pair;
            NoAction;
        }
        const default_action = NoAction();
        size = HIST_PAIRS;
    }

    apply {
        io_pairs.apply();
        unpaired = pair == 0;
        bit<1> op = write ? 1w1 : 1w0;
        bit<8> b;
        e2e_bucket.apply(e2e, b);
        if ((vantage & VANTAGE_C) != 0) {
            e2e_c.count((bit<32>)(pair ++ op ++ b));
            io_ranges.count((bit<32>)(pair ++ op ++ 2w0 ++ b[7:5]));
        }
        if ((vantage & VANTAGE_S) != 0) {
            e2e_s.count((bit<32>)(pair ++ op ++ b));
            io_ranges.count((bit<32>)(pair ++ op ++ 2w1 ++ b[7:5]));
        }
        if (dal_valid) {
            bit<8> db;
            dal_bucket.apply(dal, db);
            dal_s.count((bit<32>)(pair ++ op ++ db));
            io_ranges.count((bit<32>)(pair ++ op ++ 2w2 ++ db[7:5]));
        }
        if (dpl_valid) {
            bit<8> pb;
            dpl_bucket.apply(dpl, pb);
            dpl_c.count((bit<32>)(pair ++ op ++ pb));
            io_ranges.count((bit<32>)(pair ++ op ++ 2w3 ++ pb[7:5]));
        }
        pair_ios.count((bit<32>)(pair ++ op));
    }
}

control FlowHistograms(in endpoint_key_t src, in endpoint_key_t dst, in qpn_t qp, in ts_t fct_ns,
                       out bool unflowed) {
    PACKET_COUNTER(HIST_FCT_CELLS, fct)
    // Messages counted per flow (the flows whose histograms moved).
    PACKET_COUNTER(HIST_FLOWS, flow_messages)
    // Messages counted per flow and range of 32 buckets.
    PACKET_COUNTER(HIST_FCT_RANGES, fct_ranges)
    HistBucket() fct_bucket;

    hist_flow_t flow = 0;

    action set_flow(hist_flow_t id) {
        flow = id;
    }

    table flows {
        key = {
            src: exact @name("src");
            dst: exact @name("dst");
            qp: exact @name("dest_qp");
        }
        actions = {
            set_flow;
            NoAction;
        }
        const default_action = NoAction();
        size = HIST_FLOWS;
    }

    apply {
        flows.apply();
        unflowed = flow == 0;
        bit<8> b;
        fct_bucket.apply(fct_ns, b);
        fct.count((bit<32>)(flow ++ b));
        fct_ranges.count((bit<32>)(flow ++ b[7:5]));
        flow_messages.count((bit<32>)flow);
    }
}

#endif
