// Latency histograms in the data plane, TNA build (Tofino 2; see
// docs/histograms.md and docs/tofino.md): the counter arrays, id tables and
// bucket scale of the v1model build (p4/include/control/histograms.p4), with
// the same P4Runtime names and cell layouts, fewer ids:
//   I/O figures  pair << 9 | op << 8 | bucket
//   io_ranges    pair << 6 | op << 5 | figure << 3 | range
//   pair_ios     pair << 1 | op
//   fct          flow << 8 | bucket
//   fct_ranges   flow << 3 | range
//   flow_messages flow
// Counters are packets-only and 32 bits wide (four cells in a 128-bit word,
// 4,096 in an SRAM block). Each counter is addressed once per packet (one
// statistics ALU): io_ranges counts one cell per response, its e2e figure's
// range (e2e_c, or e2e_s at a switch that is not the I/O's C), not one per
// figure as on BMv2. Each counter is counted by a table of its own that
// always hits (Tofino 2 addresses a counter by hash only on a hit).
#ifndef __TNA_HISTOGRAMS__
#define __TNA_HISTOGRAMS__

#include "../../../include/control/hist_bucket.p4"

#define HIST_PAIRS 256
#define HIST_PAIR_BITS 8
#define HIST_IO_CELLS 131072    // HIST_PAIRS * 2 ops * 256 buckets
#define HIST_IO_RANGES 16384    // HIST_PAIRS * 2 ops * 4 figures * 8 ranges
#define HIST_FLOWS 512
#define HIST_FLOW_BITS 9
#define HIST_FCT_CELLS 131072   // HIST_FLOWS * 256 buckets
#define HIST_FCT_RANGES 4096    // HIST_FLOWS * 8 ranges
// Ids as on BMv2 (10 bits); the tables hold HIST_PAIRS and HIST_FLOWS.
typedef bit<10> hist_pair_t;
typedef bit<10> hist_flow_t;

// Tracks every I/O and flow as full mode does and counts them in the
// histograms; digests only for the pairs and flows of the polling watchlists
// (and learn digests for new ones).
const mode_t MODE_SUMMARY = 3;

#define HIST_COUNTER(SIZE, NAME) Counter<bit<32>, bit<32>>(SIZE, CounterType_t.PACKETS) NAME;

// A response's figures: e2e, and DAL and DPL with whether the record has
// them (flags: DATA_SEEN 1, RR_SEEN 2, IN_CAPSULE 4, LAST_LOST 8; vantage:
// C 1, S 2; write: the I/O is a write).
control IoHistograms(in endpoint_key_t host, in endpoint_key_t target, in bit<1> write,
                     in bit<2> vantage, in bit<4> flags, in bit<32> e2e, in bit<32> dal,
                     in bit<32> dpl) {
    HIST_COUNTER(HIST_IO_CELLS, e2e_c)
    HIST_COUNTER(HIST_IO_CELLS, e2e_s)
    HIST_COUNTER(HIST_IO_CELLS, dal_s)
    HIST_COUNTER(HIST_IO_CELLS, dpl_c)
    HIST_COUNTER(HIST_PAIRS * 2, pair_ios)
    HIST_COUNTER(HIST_IO_RANGES, io_ranges)
    HistBucket() e2e_bucket;
    HistBucket() dal_bucket;
    HistBucket() dpl_bucket;

    hist_pair_t pair;
    bit<8> b_e2e;
    bit<8> b_dal;
    bit<8> b_dpl;

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

#define IO_CELL(B) ((bit<32>)(pair[HIST_PAIR_BITS-1:0] ++ write ++ (B)))
    @hidden action count_e2e_c() { e2e_c.count(IO_CELL(b_e2e)); }
    @hidden action count_e2e_s() { e2e_s.count(IO_CELL(b_e2e)); }
    @hidden action count_dal() { dal_s.count(IO_CELL(b_dal)); }
    @hidden action count_dpl() { dpl_c.count(IO_CELL(b_dpl)); }
    @hidden action count_pair() { pair_ios.count((bit<32>)(pair[HIST_PAIR_BITS-1:0] ++ write)); }
    // The e2e figure io_ranges counts: e2e_c (0) at C, else e2e_s (1).
    bit<1> e2e_fig;
    @hidden action count_range() { io_ranges.count((bit<32>)(pair[HIST_PAIR_BITS-1:0] ++ write ++ 1w0 ++ e2e_fig ++ b_e2e[7:5])); }

    @hidden table e2e_c_tbl {
        key = { vantage: ternary; }
        actions = { count_e2e_c; @defaultonly NoAction; }
        const entries = { 2w1 &&& 2w1: count_e2e_c(); }
        const default_action = NoAction();
        size = 1;
    }
    @hidden table e2e_s_tbl {
        key = { vantage: ternary; }
        actions = { count_e2e_s; @defaultonly NoAction; }
        const entries = { 2w2 &&& 2w2: count_e2e_s(); }
        const default_action = NoAction();
        size = 1;
    }
    // DAL at S: in-capsule (DAL is e2e), or the data and its own last
    // packet seen (read: data; write: READ RESPONSEs).
    @hidden table dal_tbl {
        key = { vantage: ternary; write: ternary; flags: ternary; }
        actions = { count_dal; @defaultonly NoAction; }
        const entries = {
            (2w2 &&& 2w2, _, 4w0b0100 &&& 4w0b0100): count_dal();
            (2w2 &&& 2w2, 0, 4w0b0001 &&& 4w0b1001): count_dal();
            (2w2 &&& 2w2, 1, 4w0b0011 &&& 4w0b1011): count_dal();
        }
        const default_action = NoAction();
        size = 4;
    }
    // DPL at C: a write, not in-capsule, its READ REQUEST and RESPONSE seen.
    @hidden table dpl_tbl {
        key = { vantage: ternary; write: ternary; flags: ternary; }
        actions = { count_dpl; @defaultonly NoAction; }
        const entries = {
            (2w1 &&& 2w1, 1, 4w0b0011 &&& 4w0b0111): count_dpl();
        }
        const default_action = NoAction();
        size = 1;
    }
    @hidden table pair_tbl {
        key = { write: ternary; }
        actions = { count_pair; }
        const entries = { _: count_pair(); }
        size = 1;
    }
    @hidden table range_tbl {
        key = { e2e_fig: ternary; }
        actions = { count_range; }
        const entries = { _: count_range(); }
        size = 1;
    }

    apply {
        e2e_fig = ~vantage[0:0];
        io_pairs.apply();
        e2e_bucket.apply((bit<48>)e2e, b_e2e);
        dal_bucket.apply((bit<48>)dal, b_dal);
        dpl_bucket.apply((bit<48>)dpl, b_dpl);
        e2e_c_tbl.apply();
        e2e_s_tbl.apply();
        dal_tbl.apply();
        dpl_tbl.apply();
        pair_tbl.apply();
        range_tbl.apply();
    }
}

// Message FCT, in egress where the flow tracker makes a message report;
// its entities keep the v1model names (TelemetryIngress.flow_tracker.*).
control FlowHistograms(in endpoint_key_t src, in endpoint_key_t dst, in qpn_t qp, in bit<32> fct_ns) {
    @name(".TelemetryIngress.flow_tracker.histograms.fct")
    HIST_COUNTER(HIST_FCT_CELLS, fct)
    @name(".TelemetryIngress.flow_tracker.histograms.flow_messages")
    HIST_COUNTER(HIST_FLOWS, flow_messages)
    @name(".TelemetryIngress.flow_tracker.histograms.fct_ranges")
    HIST_COUNTER(HIST_FCT_RANGES, fct_ranges)
    @name(".TelemetryIngress.flow_tracker.histograms.fct_bucket")
    HistBucket() fct_bucket;

    hist_flow_t flow;
    bit<8> b;

    @name(".TelemetryIngress.flow_tracker.histograms.set_flow")
    action set_flow(hist_flow_t id) {
        flow = id;
    }

    @name(".TelemetryIngress.flow_tracker.histograms.flows")
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

    @hidden action count_fct() { fct.count((bit<32>)(flow[HIST_FLOW_BITS-1:0] ++ b)); }
    @hidden action count_fct_range() { fct_ranges.count((bit<32>)(flow[HIST_FLOW_BITS-1:0] ++ b[7:5])); }
    @hidden action count_flow() { flow_messages.count((bit<32>)flow[HIST_FLOW_BITS-1:0]); }
    @hidden table fct_tbl {
        key = { b: ternary; }
        actions = { count_fct; }
        const entries = { _: count_fct(); }
        size = 1;
    }
    @hidden table fct_range_tbl {
        key = { b: ternary; }
        actions = { count_fct_range; }
        const entries = { _: count_fct_range(); }
        size = 1;
    }
    @hidden table flow_tbl {
        key = { flow: ternary; }
        actions = { count_flow; }
        const entries = { _: count_flow(); }
        size = 1;
    }

    apply {
        flows.apply();
        fct_bucket.apply((bit<48>)fct_ns, b);
        fct_tbl.apply();
        fct_range_tbl.apply();
        flow_tbl.apply();
    }
}

#endif
