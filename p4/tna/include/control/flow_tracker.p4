// RDMA WRITE message tracking (SPEC §4), TNA build, run in the egress pipe:
// the algorithm of p4/include/control/flow_tracker.p4 in stateful ALUs.
// Tofino 1 allows one access per register per packet, all of a register's
// accesses in one stage, two 32-bit PHV inputs per stateful ALU and one
// output (a value, or the 4-bit predicate of its two conditions). The
// registers run in this order, each decided by const tables keyed on the
// earlier registers' outputs (no chains of ifs):
//   last-seen time -> owner fingerprint -> highest PSN + epoch -> message
//   state -> message and per-flow counters -> CNP pair.
// The flow state byte of the v1model build (in use, open, previous end
// valid, orphan) is one register holding one of five states. The gap is
// computed at the message end, from the message's first timestamp and the
// previous end (only a message end moves it): the same value as v1model's.
// The decision tables' entries follow v1model's transitions for every
// (reset, new PSN, opcode, state); test/p4/tna-flow-tracker-model.test.ts
// runs them on one flow's packets.
//
// Differences from the v1model build (Tofino constraints):
// - Flows (slot owner, learned flows) and CNP host pairs are identified by a
//   32-bit CRC fingerprint instead of the full (src, dst, dest QP) or
//   (src, dst): two keys with the same fingerprint in one slot count as one.
// - Liveness is judged in the coarse clock (65.536 us units, right for idle
//   times under 39 hours), and the last-seen time is refreshed before the
//   owner is known: a packet of a colliding, untracked flow also keeps the
//   slot's owner alive.
// - Durations are 32-bit ns (fct and gap wrap after 4.29 s); per-message
//   packets, retransmissions and ECN CE are 16-bit counts (more than 65535
//   retransmissions in one message carry into the packet count); the
//   message's first_ts and extra_ecn_ce are not kept (not in the TNA digest).
// - Retransmitted: on Tofino 2, a PSN seen before or 64 or more behind the
//   highest (the seen-PSN window below), as in v1model, except after a new
//   epoch: a PSN behind the epoch's first is counted by what was seen of
//   it in this epoch (v1model: retransmitted). On Tofino 1 (no stage left
//   for the window), every PSN not after the highest.
// - A message whose FIRST is overtaken (reordering) is not held for it:
//   its packets count for the flow only, as straddled. Packets outside
//   messages go out in flow-only digests as in v1model (packets, bytes
//   and FCT 0): a packet after its message's end, at once; an open
//   message's when the flow's next message starts before its LAST was
//   seen (no record, straddled, the next message without a gap); those of
//   a message whose FIRST was not seen, at its LAST (or the next FIRST).
#ifndef __FLOW_TRACKER__
#define __FLOW_TRACKER__

#ifdef TNA_HISTOGRAMS
#include "histograms.p4"
#endif

// Message state codes (register flow_msg_state), chosen so that every
// transition is one stateful-ALU instruction; the open states are > 3:
//   0 idle, 1 orphan (inside a message whose start was not seen),
//   2 idle after a message end (gap measurable), 6 open with a previous
//   end, 14 open without one.

control FlowTracker(in headers_t hdr, inout local_metadata_t meta, inout report_h report) {
    // Stateful ALU inputs and outputs (PHV).
    bit<32> fp;          // flow fingerprint
    bit<32> thr_c;       // meta.now_c - flow timeout, clamped at 0
    bit<32> epoch32;
    bit<32> psn8;        // PSN << 8: serial arithmetic mod 2^24 in 32-bit compares
    bit<32> psn32;
    bit<32> inc;         // packets << 16 | retransmitted of this packet, for the extra
                         // counts; at a start, the counts it replaced (an open message's)
    bit<32> ce32;
    bit<8> st_a;         // message state: mask when open (per opcode)
    bit<8> st_b;         // message state: next when closed, or after a reset
    bit<32> strad_k;     // straddled count after a reset (per opcode)
    bit<32> pair_fp;
    bit<4> live;         // 1 live, 2 expired (predicate of the time register)
    bit<4> owner;        // predicate: 1 taken, 2/8 this flow, 4 another live flow
    bit<4> mcode;        // predicate: 1 old PSN, 4 new PSN, 2/8 epoch moved
    bit<8> old_st;
    bit<32> first_ts;
    bit<32> prev_end;
    bit<4> cnp_p;        // predicate: 1 slot held by another pair
    bool msg_end;
    bool gap_valid;
    bool strad_plus;
    bool flow_only;      // a flow-only report: no message, its members zeroed
    bool track;
#ifdef TNA_HISTOGRAMS
    FlowHistograms() histograms;
#endif

    bit<FLOW_SLOT_BITS> slot;
    bit<PAIR_SLOT_BITS> cidx;
    bit<LEARN_SLOT_BITS> lidx;

    Hash<bit<16>>(HashAlgorithm_t.CRC16) slot_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) fp_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) pair_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) cnp_pair_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) pair_fp_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) cnp_pair_fp_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) learn_hash;
    // The digests' QP number and PSN through the hash units (identity): a
    // copy would split every field they flow into.
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) learn_qp_copy;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) msg_qp_copy;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) last_psn_copy;

    // Named as in the v1model build (FlowTracker runs in egress here).
    @name(".TelemetryIngress.flow_tracker.watch")
    action watch(slot_t flow_slot, epoch_t flow_epoch) {
        track = true;
        slot = flow_slot[FLOW_SLOT_BITS-1:0];
        epoch32 = (bit<32>)flow_epoch;
    }

    // Polling mode: the flows measured in this rotation period, each with the
    // slot and epoch the controller gave it.
    @name(".TelemetryIngress.flow_tracker.flow_watchlist")
    table flow_watchlist {
        key = {
            hdr.bridge.src_key: exact @name("src");
            hdr.bridge.dst_key: exact @name("dst");
            hdr.bth.dest_qp: exact @name("dest_qp");
        }
        actions = {
            watch;
            NoAction;
        }
        const default_action = NoAction();
        size = FLOW_WATCHLIST_SIZE;
    }

    // One hash result per action.
    @hidden action take_slot() { slot = slot_hash.get({ hdr.bridge.src_key, hdr.bridge.dst_key, hdr.bth.dest_qp })[FLOW_SLOT_BITS-1:0]; }
    @hidden action take_fp() { fp = fp_hash.get({ hdr.bridge.src_key, hdr.bridge.dst_key, hdr.bth.dest_qp }); }
    @hidden action take_lidx() { lidx = learn_hash.get({ hdr.bridge.src_key, hdr.bridge.dst_key, hdr.bth.dest_qp })[LEARN_SLOT_BITS-1:0]; }
    // The host pair in the direction of the data: CNP dst -> CNP src.
    @hidden action take_cidx() { cidx = pair_hash.get({ hdr.bridge.src_key, hdr.bridge.dst_key })[PAIR_SLOT_BITS-1:0]; }
    @hidden action take_pair_fp() { pair_fp = pair_fp_hash.get({ hdr.bridge.src_key, hdr.bridge.dst_key }); }
    @hidden action take_cnp_cidx() { cidx = cnp_pair_hash.get({ hdr.bridge.dst_key, hdr.bridge.src_key })[PAIR_SLOT_BITS-1:0]; }
    @hidden action take_cnp_pair_fp() { pair_fp = cnp_pair_fp_hash.get({ hdr.bridge.dst_key, hdr.bridge.src_key }); }
    @hidden action msg_digest_qp() { report.dest_qp = msg_qp_copy.get({ hdr.bth.dest_qp }); }
    @hidden action msg_digest_last_psn() { report.last_psn = last_psn_copy.get({ hdr.bth.psn }); }
    @hidden action learn_digest_qp() { report.dest_qp = learn_qp_copy.get({ hdr.bth.dest_qp }); }

    // Per-opcode inputs of the message state and straddle registers.
    @hidden action op_param(bit<8> a, bit<8> b, bit<32> k) {
        st_a = a;
        st_b = b;
        strad_k = k;
    }
    @stage(0)
    @hidden table op_params {
        key = {
            hdr.bth.opcode: exact;
        }
        actions = {
            op_param;
            @defaultonly NoAction;
        }
        const entries = {
            OP_WRITE_FIRST: op_param(0xFF, 14, 0);
            OP_WRITE_MIDDLE: op_param(0xFF, 1, 1);
            OP_WRITE_LAST: op_param(2, 0, 1);
            OP_WRITE_LAST_IMM: op_param(2, 0, 1);
            OP_WRITE_ONLY: op_param(0xFF, 2, 0);
            OP_WRITE_ONLY_IMM: op_param(0xFF, 2, 0);
        }
        const default_action = NoAction();
        size = 8;
    }

    // Last-seen time (coarse clock), written by every tracked packet.
    REG32(flow_seen, FLOW_SLOTS, FLOW_SLOT_BITS)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<4>>(flow_seen) seen_touch = {
        void apply(inout bit<32> value, out bit<4> rv) {
            rv = this.predicate((int<32>)(value - thr_c) <= 0);
            value = meta.now_c;
        }
    };

    // Owner: (fingerprint, 2 once held). Held by a live flow when hi - live > 0.
    REGPAIR(flow_owner, FLOW_SLOTS, FLOW_SLOT_BITS)
    // Full mode: taken when no live flow holds it.
    RegisterAction<pair_t, bit<FLOW_SLOT_BITS>, bit<4>>(flow_owner) owner_claim = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == fp, (int<32>)(value.hi - (bit<32>)live) > 0);
            if (!((int<32>)(value.hi - (bit<32>)live) > 0)) {
                value.lo = fp;
                value.hi = 2;
            }
        }
    };
    // Polling mode: the controller gave the slot.
    RegisterAction<pair_t, bit<FLOW_SLOT_BITS>, bit<4>>(flow_owner) owner_take = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == fp);
            value.lo = fp;
            value.hi = 2;
        }
    };

    // (highest PSN << 8, epoch).
    REGPAIR(flow_psn_epoch, FLOW_SLOTS, FLOW_SLOT_BITS)
#ifdef TNA_PSN_WINDOW
    // Also the highest PSN before this packet, for the seen-PSN window.
    RegisterAction<pair_t, bit<FLOW_SLOT_BITS>, bit<32>>(flow_psn_epoch) psn_update = {
        void apply(inout pair_t value, out bit<32> rv, out bit<32> rv2) {
            rv2 = value.lo;
#else
    RegisterAction<pair_t, bit<FLOW_SLOT_BITS>, bit<4>>(flow_psn_epoch) psn_update = {
        void apply(inout pair_t value, out bit<4> rv) {
#endif
            rv = this.predicate(value.hi != epoch32, (int<32>)(psn8 - value.lo) > 0);
            if (value.hi != epoch32 || (int<32>)(psn8 - value.lo) > 0) {
                value.lo = psn8;
            }
            value.hi = epoch32;
        }
    };
    RegisterAction<pair_t, bit<FLOW_SLOT_BITS>, bit<4>>(flow_psn_epoch) psn_reset = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.hi != epoch32);
            value.lo = psn8;
            value.hi = epoch32;
        }
    };

    // Message state (codes above); every action returns the old state.
    REG8(flow_msg_state, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_READ8(flow_msg_state, FLOW_SLOT_BITS, st_read_ra)
    RegisterAction<bit<8>, bit<FLOW_SLOT_BITS>, bit<8>>(flow_msg_state) st_first_ra = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            if (value == 2) { value = 6; } else { value = 14; }
        }
    };
    RegisterAction<bit<8>, bit<FLOW_SLOT_BITS>, bit<8>>(flow_msg_state) st_lm_ra = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            if (value > 3) { value = value & st_a; } else { value = st_b; }
        }
    };
    RA_SWAP8(flow_msg_state, FLOW_SLOT_BITS, st_const_ra, st_b)

    // The open message's first timestamp, first PSN and length (the write
    // returns the value written).
    REG32(msg_first_ts, FLOW_SLOTS, FLOW_SLOT_BITS)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(msg_first_ts) first_ts_write = {
        void apply(inout bit<32> value, out bit<32> rv) { value = meta.now32; rv = value; } };
    RA_READ(msg_first_ts, FLOW_SLOT_BITS, first_ts_read)
    REG32(msg_first_psn, FLOW_SLOTS, FLOW_SLOT_BITS)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(msg_first_psn) first_psn_write = {
        void apply(inout bit<32> value, out bit<32> rv) { value = psn32; rv = value; } };
    RA_READ(msg_first_psn, FLOW_SLOT_BITS, first_psn_read)
    REG32(msg_bytes, FLOW_SLOTS, FLOW_SLOT_BITS)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(msg_bytes) bytes_write = {
        void apply(inout bit<32> value, out bit<32> rv) { value = hdr.reth.dma_len; rv = value; } };
    RA_READ(msg_bytes, FLOW_SLOT_BITS, bytes_read)
    // The last message end (ns); written at every new LAST/ONLY (outside a
    // message that also clears "previous end valid", so no reader sees it).
    REG32(flow_prev_last_ts, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_SWAP(flow_prev_last_ts, FLOW_SLOT_BITS, prev_last_swap, meta.now32)

    // packets << 16 | retransmitted, and ECN CE, of the open message
    // (counted on every packet, restarted at a start). The counts are in
    // the stage of the message state, before the retransmitted bit is in
    // PHV: a new and a retransmitted packet add constants. A start returns
    // the counts it replaces: an open message's, which then go to the
    // extra counts (a message whose LAST was never seen).
    REG32(msg_counts, FLOW_SLOTS, FLOW_SLOT_BITS)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(msg_counts) counts_restart = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = 32w0x10000; } };
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(msg_counts) counts_add = {
        void apply(inout bit<32> value, out bit<32> rv) { value = value + 32w0x10000; rv = value; } };
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(msg_counts) counts_add_retx = {
        void apply(inout bit<32> value, out bit<32> rv) { value = value + 32w0x10001; rv = value; } };
    REG32(msg_ecn_ce, FLOW_SLOTS, FLOW_SLOT_BITS)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(msg_ecn_ce) ecn_start = {
        void apply(inout bit<32> value, out bit<32> rv) { value = ce32; rv = value; } };
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(msg_ecn_ce) ecn_add = {
        void apply(inout bit<32> value, out bit<32> rv) { value = value + ce32; rv = value; } };
    // Packets outside any message since the last message digest (with
    // those of a message whose LAST was not seen): packets << 16 |
    // retransmitted.
    REG32(extra_counts, FLOW_SLOTS, FLOW_SLOT_BITS)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(extra_counts) extra_add = {
        void apply(inout bit<32> value) { value = value + inc; } };
    RA_WRITE(extra_counts, FLOW_SLOT_BITS, extra_set, inc)
    RA_SWAP(extra_counts, FLOW_SLOT_BITS, extra_take, 0)
    // An ONLY while a message was open takes them with that message's
    // counts added (a FIRST adds those with extra_add). Four actions at
    // most per register: a clear is a take whose answer is not used.
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(extra_counts) extra_take_open = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value + inc; value = 0; } };
    // Straddled messages since the last message digest.
    REG32(straddled, FLOW_SLOTS, FLOW_SLOT_BITS)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(straddled) strad_add = {
        void apply(inout bit<32> value) { value = value + 1; } };
    RA_SWAP(straddled, FLOW_SLOT_BITS, strad_take, 0)
    RA_WRITE(straddled, FLOW_SLOT_BITS, strad_set, strad_k)

    // CNPs per host pair (fingerprint, count): a slot is taken over only at
    // count 0, so colliding pairs never add to each other's counts.
    REGPAIR(pair_cnp, PAIR_SLOTS, PAIR_SLOT_BITS)
    // Predicate 1 (neither this pair's nor free): untracked.
    RegisterAction<pair_t, bit<PAIR_SLOT_BITS>, bit<4>>(pair_cnp) cnp_add = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == pair_fp, value.hi == 0);
            if (value.lo == pair_fp || value.hi == 0) {
                value.lo = pair_fp;
                value.hi = value.hi + 1;
            }
        }
    };
    // The pair's count, reset; 0 when the slot counts for another pair.
    RegisterAction<pair_t, bit<PAIR_SLOT_BITS>, bit<16>>(pair_cnp) cnp_take = {
        void apply(inout pair_t value, out bit<16> rv) {
            rv = 0;
            if (value.lo == pair_fp) {
                rv = (bit<16>)value.hi;
                value.hi = 0;
            }
        }
    };

    // Flows already reported by a learn digest: (fingerprint, epoch).
    REGPAIR(learned_flow, LEARN_SLOTS, LEARN_SLOT_BITS)
    RegisterAction<pair_t, bit<LEARN_SLOT_BITS>, bit<4>>(learned_flow) learned_swap = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == fp, value.hi == epoch32);
            value.lo = fp;
            value.hi = epoch32;
        }
    };

#ifdef TNA_PSN_WINDOW
// Tofino 2's stages, the least each table may take: the window past the
// ingress registers, where a stateful ALU and 4 Mbit of memory are free, the
// counts after it. The compiler places the window in stages 14-15 (split by
// index), the counts in 17 and 18 (p4/build/t2na/resources.json). The
// tracker's first register from stage 4: in stage 3 it takes what the
// ingress's queue pair maps need to have both way 0s in stage 4.
#define FLOW_SEEN_STAGE 4
#define WIN_STAGE 13
#define WIN_SEEN_STAGE 14
#define MSG_COUNTS_STAGE 15
#define MSG_EXTRA_STAGE 16
    // Seen-PSN window (SPEC §4): which of the 64 PSNs up to the highest
    // seen were seen, so that a late first sighting (reordering) is not
    // counted as retransmitted. The PSN register answers how far behind
    // the highest a packet is: 64 or more is retransmitted. Otherwise the
    // window answers: a flow's PSNs are a ring of 128 in four blocks of 32,
    // one register entry each (index: the flow's slot and PSN bits 6:5),
    // holding the block's bitmap (bit = PSN bits 4:0) and its tag, a 16-bit
    // identity of the flow and epoch over PSN bits 22:7 (the lap). A block
    // whose tag is the packet's gets the packet's bit (the answer: the old
    // bitmap); any other block (an earlier lap, another flow or epoch) starts
    // again with the packet's bit alone: nothing of it seen. A PSN less
    // than 64 behind the highest finds its block on its own lap or an
    // earlier one (a later lap would need a PSN 97 past it), so the answer
    // is exact up to the identity (16 bits, as a fingerprint).
    bit<32> win_tag;
    bit<32> win_bit;
    bit<32> win_old;
    bit<32> win_p;       // predicate: 2 the block is on this lap; 64 too far behind
    bit<32> win_h8;      // the highest PSN before this packet, << 8
    bit<32> win_behind;  // (highest - PSN) << 8
    bit<16> win_id;
    bit<16> win_lap;
    bit<1> win_seen;
    bit<FLOW_SLOT_BITS_W> widx;
    Register<pair_t, bit<FLOW_SLOT_BITS_W>>(FLOW_SLOTS_W, {0, 0}) flow_win;
    RegisterAction<pair_t, bit<FLOW_SLOT_BITS_W>, bit<32>>(flow_win) win_touch = {
        void apply(inout pair_t value, out bit<32> rv1, out bit<32> rv2) {
            rv1 = value.lo;
            rv2 = this.predicate(value.hi == win_tag);
            if (value.hi == win_tag) {
                value.lo = value.lo | win_bit;
            } else {
                value.lo = win_bit;
                value.hi = win_tag;
            }
        }
    };
    @hidden action win_bit_a(bit<32> b) { win_bit = b; }
    @hidden table win_bit_tbl {
        key = { hdr.bth.psn[4:0]: exact @name("psn_bits"); }
        actions = { win_bit_a; }
        const entries = {
            0: win_bit_a(32w0x00000001);
            1: win_bit_a(32w0x00000002);
            2: win_bit_a(32w0x00000004);
            3: win_bit_a(32w0x00000008);
            4: win_bit_a(32w0x00000010);
            5: win_bit_a(32w0x00000020);
            6: win_bit_a(32w0x00000040);
            7: win_bit_a(32w0x00000080);
            8: win_bit_a(32w0x00000100);
            9: win_bit_a(32w0x00000200);
            10: win_bit_a(32w0x00000400);
            11: win_bit_a(32w0x00000800);
            12: win_bit_a(32w0x00001000);
            13: win_bit_a(32w0x00002000);
            14: win_bit_a(32w0x00004000);
            15: win_bit_a(32w0x00008000);
            16: win_bit_a(32w0x00010000);
            17: win_bit_a(32w0x00020000);
            18: win_bit_a(32w0x00040000);
            19: win_bit_a(32w0x00080000);
            20: win_bit_a(32w0x00100000);
            21: win_bit_a(32w0x00200000);
            22: win_bit_a(32w0x00400000);
            23: win_bit_a(32w0x00800000);
            24: win_bit_a(32w0x01000000);
            25: win_bit_a(32w0x02000000);
            26: win_bit_a(32w0x04000000);
            27: win_bit_a(32w0x08000000);
            28: win_bit_a(32w0x10000000);
            29: win_bit_a(32w0x20000000);
            30: win_bit_a(32w0x40000000);
            31: win_bit_a(32w0x80000000);
        }
        const default_action = win_bit_a(0);
        size = 32;
    }
    @hidden action win_id_a() {
        win_id = fp[15:0] ^ epoch32[15:0];
        win_lap = (bit<16>)(hdr.bth.psn >> 7);
        widx = slot ++ hdr.bth.psn[6:5];
    }
    @hidden action win_tag_a() { win_tag = win_id ++ win_lap; }
    @hidden action win_behind_a() { win_behind = win_h8 - psn8; }
    @hidden action win_a() { win_old = win_touch.execute(widx, win_p); }
    @hidden action win_far() { win_p = 64; }
    // A slot taken (the flow's first packet here), a new PSN or a new epoch
    // (m_old 0), or an old PSN less than 64 behind: the window; 64 or more
    // behind: retransmitted.
    @stage(WIN_STAGE)
    @hidden table win_tbl {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            win_behind[31:14]: ternary @name("behind");
        }
        actions = { win_a; win_far; }
        const entries = {
            (1, _, _): win_a();
            (0, 0, _): win_a();
            (0, 1, 0): win_a();
        }
        const default_action = win_far();
        size = 4;
    }
    @hidden action win_seen_a() { win_seen = 1; }
    @stage(WIN_SEEN_STAGE)
    @hidden table win_seen_tbl {
        key = {
            win_p: ternary @name("block");
            win_old: ternary @name("bitmap");
            hdr.bth.psn[4:0]: ternary @name("psn_bits");
        }
        actions = { win_seen_a; NoAction; }
        const entries = {
            (64, _, _): win_seen_a();
            (2, 32w0x00000001 &&& 32w0x00000001, 0): win_seen_a();
            (2, 32w0x00000002 &&& 32w0x00000002, 1): win_seen_a();
            (2, 32w0x00000004 &&& 32w0x00000004, 2): win_seen_a();
            (2, 32w0x00000008 &&& 32w0x00000008, 3): win_seen_a();
            (2, 32w0x00000010 &&& 32w0x00000010, 4): win_seen_a();
            (2, 32w0x00000020 &&& 32w0x00000020, 5): win_seen_a();
            (2, 32w0x00000040 &&& 32w0x00000040, 6): win_seen_a();
            (2, 32w0x00000080 &&& 32w0x00000080, 7): win_seen_a();
            (2, 32w0x00000100 &&& 32w0x00000100, 8): win_seen_a();
            (2, 32w0x00000200 &&& 32w0x00000200, 9): win_seen_a();
            (2, 32w0x00000400 &&& 32w0x00000400, 10): win_seen_a();
            (2, 32w0x00000800 &&& 32w0x00000800, 11): win_seen_a();
            (2, 32w0x00001000 &&& 32w0x00001000, 12): win_seen_a();
            (2, 32w0x00002000 &&& 32w0x00002000, 13): win_seen_a();
            (2, 32w0x00004000 &&& 32w0x00004000, 14): win_seen_a();
            (2, 32w0x00008000 &&& 32w0x00008000, 15): win_seen_a();
            (2, 32w0x00010000 &&& 32w0x00010000, 16): win_seen_a();
            (2, 32w0x00020000 &&& 32w0x00020000, 17): win_seen_a();
            (2, 32w0x00040000 &&& 32w0x00040000, 18): win_seen_a();
            (2, 32w0x00080000 &&& 32w0x00080000, 19): win_seen_a();
            (2, 32w0x00100000 &&& 32w0x00100000, 20): win_seen_a();
            (2, 32w0x00200000 &&& 32w0x00200000, 21): win_seen_a();
            (2, 32w0x00400000 &&& 32w0x00400000, 22): win_seen_a();
            (2, 32w0x00800000 &&& 32w0x00800000, 23): win_seen_a();
            (2, 32w0x01000000 &&& 32w0x01000000, 24): win_seen_a();
            (2, 32w0x02000000 &&& 32w0x02000000, 25): win_seen_a();
            (2, 32w0x04000000 &&& 32w0x04000000, 26): win_seen_a();
            (2, 32w0x08000000 &&& 32w0x08000000, 27): win_seen_a();
            (2, 32w0x10000000 &&& 32w0x10000000, 28): win_seen_a();
            (2, 32w0x20000000 &&& 32w0x20000000, 29): win_seen_a();
            (2, 32w0x40000000 &&& 32w0x40000000, 30): win_seen_a();
            (2, 32w0x80000000 &&& 32w0x80000000, 31): win_seen_a();
        }
        const default_action = NoAction();
        size = 40;
    }
#define WIN_SEEN_KEY win_seen: ternary @name("seen");
#define WIN_SEEN(X) , X
#else
#define WIN_SEEN_KEY
#define WIN_SEEN(X)
#define FLOW_SEEN_STAGE 3
#define MSG_COUNTS_STAGE 6
#define MSG_EXTRA_STAGE 7
#endif

    // ---- Decisions: const tables keyed on the register outputs. ----
    // Keys: taken = owner[0:0] (slot taken: a new flow), m_old = mcode[0:0]
    // (PSN not after the highest, same epoch), m_new = mcode[2:2] (new PSN,
    // same epoch); neither (after a psn_update) = the epoch moved. A taken
    // slot or a moved epoch resets the flow (nothing of an earlier message
    // carried over); a reset packet counts as new.
    @hidden action st_read() { old_st = st_read_ra.execute(slot); }
    @hidden action st_first() { old_st = st_first_ra.execute(slot); }
    @hidden action st_lm() { old_st = st_lm_ra.execute(slot); }
    @hidden action st_const() { old_st = st_const_ra.execute(slot); }
    @stage(6)
    @hidden table msg_state {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            mcode[2:2]: ternary @name("m_new");
            hdr.bth.opcode: ternary @name("opcode");
        }
        actions = { st_read; st_first; st_lm; st_const; @defaultonly NoAction; }
        const entries = {
            (1, _, _, 0x06): st_const();
            (1, _, _, 0x07): st_const();
            (1, _, _, 0x08): st_const();
            (1, _, _, 0x09): st_const();
            (1, _, _, 0x0A): st_const();
            (1, _, _, 0x0B): st_const();
            (0, 0, 1, 0x06): st_first();
            (0, 0, 1, 0x07): st_lm();
            (0, 0, 1, 0x08): st_lm();
            (0, 0, 1, 0x09): st_lm();
            (0, 0, 1, 0x0A): st_const();
            (0, 0, 1, 0x0B): st_const();
            (0, 0, 0, 0x06): st_const();
            (0, 0, 0, 0x07): st_const();
            (0, 0, 0, 0x08): st_const();
            (0, 0, 0, 0x09): st_const();
            (0, 0, 0, 0x0A): st_const();
            (0, 0, 0, 0x0B): st_const();
            (0, 1, 0, 0x06): st_read();
            (0, 1, 0, 0x07): st_read();
            (0, 1, 0, 0x08): st_read();
            (0, 1, 0, 0x09): st_read();
            (0, 1, 0, 0x0A): st_read();
            (0, 1, 0, 0x0B): st_read();
            (_, _, _, _): st_read();
        }
        const default_action = NoAction();
        size = 32;
    }

    // A message starts (a new FIRST or ONLY): its first timestamp, first
    // PSN, length and counts written, else read (one stateful ALU output
    // per action, so one table each).
    @hidden action ts_start() { first_ts = first_ts_write.execute(slot); }
    @hidden action ts_cont() { first_ts = first_ts_read.execute(slot); }
    @stage(6)
    @hidden table msg_first_ts_tbl {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            mcode[2:2]: ternary @name("m_new");
            hdr.bth.opcode: ternary @name("opcode");
        }
        actions = { ts_start; ts_cont; @defaultonly NoAction; }
        const entries = {
            (1, _, _, 0x06): ts_start();
            (1, _, _, 0x0A): ts_start();
            (1, _, _, 0x0B): ts_start();
            (0, 0, 1, 0x06): ts_start();
            (0, 0, 1, 0x0A): ts_start();
            (0, 0, 1, 0x0B): ts_start();
            (0, 0, 0, 0x06): ts_start();
            (0, 0, 0, 0x0A): ts_start();
            (0, 0, 0, 0x0B): ts_start();
            (_, _, _, _): ts_cont();
        }
        const default_action = NoAction();
        size = 16;
    }
    @hidden action bytes_start() { report.bytes = bytes_write.execute(slot); }
    @hidden action bytes_cont() { report.bytes = bytes_read.execute(slot); }
    @stage(10)
    @hidden table msg_bytes_tbl {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            mcode[2:2]: ternary @name("m_new");
            hdr.bth.opcode: ternary @name("opcode");
        }
        actions = { bytes_start; bytes_cont; @defaultonly NoAction; }
        const entries = {
            (1, _, _, 0x06): bytes_start();
            (1, _, _, 0x0A): bytes_start();
            (1, _, _, 0x0B): bytes_start();
            (0, 0, 1, 0x06): bytes_start();
            (0, 0, 1, 0x0A): bytes_start();
            (0, 0, 1, 0x0B): bytes_start();
            (0, 0, 0, 0x06): bytes_start();
            (0, 0, 0, 0x0A): bytes_start();
            (0, 0, 0, 0x0B): bytes_start();
            (_, _, _, _): bytes_cont();
        }
        const default_action = NoAction();
        size = 16;
    }
    @hidden action psn_start() { report.first_psn = first_psn_write.execute(slot)[23:0]; }
    @hidden action psn_cont() { report.first_psn = first_psn_read.execute(slot)[23:0]; }
    @stage(8)
    @hidden table msg_first_psn_tbl {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            mcode[2:2]: ternary @name("m_new");
            hdr.bth.opcode: ternary @name("opcode");
        }
        actions = { psn_start; psn_cont; @defaultonly NoAction; }
        const entries = {
            (1, _, _, 0x06): psn_start();
            (1, _, _, 0x0A): psn_start();
            (1, _, _, 0x0B): psn_start();
            (0, 0, 1, 0x06): psn_start();
            (0, 0, 1, 0x0A): psn_start();
            (0, 0, 1, 0x0B): psn_start();
            (0, 0, 0, 0x06): psn_start();
            (0, 0, 0, 0x0A): psn_start();
            (0, 0, 0, 0x0B): psn_start();
            (_, _, _, _): psn_cont();
        }
        const default_action = NoAction();
        size = 16;
    }
    // A start: one packet, new (what an ONLY reports), and the counts it
    // replaced in inc (added to the extra counts where a message was open).
    // Else this packet's counts in inc, for the extra counts.
    @hidden action cnt_start() {
        inc = counts_restart.execute(slot);
        report.packets = 1;
        report.retransmitted = 0;
    }
    @hidden action cnt_add() {
        bit<32> c = counts_add.execute(slot);
        report.packets = c[31:16];
        report.retransmitted = c[15:0];
        inc = 32w0x10000;
    }
    // Retransmitted: not new and not reset.
    @hidden action cnt_add_retx() {
        bit<32> c = counts_add_retx.execute(slot);
        report.packets = c[31:16];
        report.retransmitted = c[15:0];
        inc = 32w0x10001;
    }
    @stage(MSG_COUNTS_STAGE)
    @hidden table msg_counts_tbl {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            mcode[2:2]: ternary @name("m_new");
            hdr.bth.opcode: ternary @name("opcode");
            WIN_SEEN_KEY
        }
        actions = { cnt_start; cnt_add; cnt_add_retx; @defaultonly NoAction; }
        const entries = {
            (1, _, _, 0x06 WIN_SEEN(_)): cnt_start();
            (1, _, _, 0x0A WIN_SEEN(_)): cnt_start();
            (1, _, _, 0x0B WIN_SEEN(_)): cnt_start();
            (0, 0, 1, 0x06 WIN_SEEN(_)): cnt_start();
            (0, 0, 1, 0x0A WIN_SEEN(_)): cnt_start();
            (0, 0, 1, 0x0B WIN_SEEN(_)): cnt_start();
            (0, 0, 0, 0x06 WIN_SEEN(_)): cnt_start();
            (0, 0, 0, 0x0A WIN_SEEN(_)): cnt_start();
            (0, 0, 0, 0x0B WIN_SEEN(_)): cnt_start();
            // An old PSN: retransmitted when seen (without the window: always).
#ifdef TNA_PSN_WINDOW
            (0, 1, _, _, 0): cnt_add();
#endif
            (0, 1, _, _ WIN_SEEN(_)): cnt_add_retx();
            (_, _, _, _ WIN_SEEN(_)): cnt_add();
        }
        const default_action = NoAction();
        size = 16;
    }
    @hidden action ecn_st() { report.ecn_ce = ecn_start.execute(slot)[15:0]; }
    @hidden action ecn_cont() { report.ecn_ce = ecn_add.execute(slot)[15:0]; }
    @stage(10)
    @hidden table msg_ecn_tbl {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            mcode[2:2]: ternary @name("m_new");
            hdr.bth.opcode: ternary @name("opcode");
        }
        actions = { ecn_st; ecn_cont; @defaultonly NoAction; }
        const entries = {
            (1, _, _, 0x06): ecn_st();
            (1, _, _, 0x0A): ecn_st();
            (1, _, _, 0x0B): ecn_st();
            (0, 0, 1, 0x06): ecn_st();
            (0, 0, 1, 0x0A): ecn_st();
            (0, 0, 1, 0x0B): ecn_st();
            (0, 0, 0, 0x06): ecn_st();
            (0, 0, 0, 0x0A): ecn_st();
            (0, 0, 0, 0x0B): ecn_st();
            (_, _, _, _): ecn_cont();
        }
        const default_action = NoAction();
        size = 16;
    }
    // A new LAST or ONLY: this end for the next message, the previous for the gap.
    @hidden action prev_swap() { prev_end = prev_last_swap.execute(slot); }
    @stage(7)
    @hidden table msg_prev {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            mcode[2:2]: ternary @name("m_new");
            hdr.bth.opcode: ternary @name("opcode");
        }
        actions = { prev_swap; @defaultonly NoAction; }
        const entries = {
            (1, _, _, 0x08): prev_swap();
            (1, _, _, 0x09): prev_swap();
            (1, _, _, 0x0A): prev_swap();
            (1, _, _, 0x0B): prev_swap();
            (0, 0, 1, 0x08): prev_swap();
            (0, 0, 1, 0x09): prev_swap();
            (0, 0, 1, 0x0A): prev_swap();
            (0, 0, 1, 0x0B): prev_swap();
            (0, 0, 0, 0x08): prev_swap();
            (0, 0, 0, 0x09): prev_swap();
            (0, 0, 0, 0x0A): prev_swap();
            (0, 0, 0, 0x0B): prev_swap();
        }
        const default_action = NoAction();
        size = 16;
    }

    // Per old state: extra and straddle counters, message end (one table
    // per register: a table addresses each of its registers in every action).
    @hidden action x_add() { extra_add.execute(slot); }
    @hidden action x_set() { extra_set.execute(slot); }
    @hidden action x_clear() { extra_take.execute(slot); }
    @hidden action x_take() {
        bit<32> x = extra_take.execute(slot);
        report.extra_packets = x[31:16];
        report.extra_retransmitted = x[15:0];
    }
    @hidden action x_take_open() {
        bit<32> x = extra_take_open.execute(slot);
        report.extra_packets = x[31:16];
        report.extra_retransmitted = x[15:0];
    }
    // A reset (new flow or epoch) at a LAST: the earlier counts dropped,
    // this packet's reported.
    @hidden action x_take_reset() {
        extra_take.execute(slot);
        report.extra_packets = inc[31:16];
        report.extra_retransmitted = inc[15:0];
    }
    @stage(MSG_EXTRA_STAGE)
    @hidden table msg_extra {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            mcode[2:2]: ternary @name("m_new");
            hdr.bth.opcode: ternary @name("opcode");
            old_st: ternary @name("state");
        }
        actions = { x_add; x_set; x_clear; x_take; x_take_open; x_take_reset; @defaultonly NoAction; }
        const entries = {
            (1, _, _, 0x06, _): x_clear();
            (1, _, _, 0x07, _): x_set();
            (1, _, _, 0x08, _): x_take_reset();
            (1, _, _, 0x09, _): x_take_reset();
            (1, _, _, 0x0A, _): x_clear();
            (1, _, _, 0x0B, _): x_clear();
            // A FIRST while a message was open: that one's counts (straddled)
            // with the extra ones; while packets of a message whose FIRST was
            // not seen were collected (state 1): those.
            (0, 0, 1, 0x06, 1): x_take();
            (0, 0, 1, 0x06, 6): x_take_open();
            (0, 0, 1, 0x06, 14): x_take_open();
            (0, 0, 1, 0x07, 0): x_add();
            (0, 0, 1, 0x07, 1): x_add();
            (0, 0, 1, 0x07, 2): x_add();
            (0, 0, 1, 0x08, 0): x_take_open();
            (0, 0, 1, 0x08, 1): x_take_open();
            (0, 0, 1, 0x08, 2): x_take_open();
            (0, 0, 1, 0x08, 6): x_take();
            (0, 0, 1, 0x08, 14): x_take();
            (0, 0, 1, 0x09, 0): x_take_open();
            (0, 0, 1, 0x09, 1): x_take_open();
            (0, 0, 1, 0x09, 2): x_take_open();
            (0, 0, 1, 0x09, 6): x_take();
            (0, 0, 1, 0x09, 14): x_take();
            (0, 0, 1, 0x0A, 0): x_take();
            (0, 0, 1, 0x0A, 1): x_take();
            (0, 0, 1, 0x0A, 2): x_take();
            (0, 0, 1, 0x0A, 6): x_take_open();
            (0, 0, 1, 0x0A, 14): x_take_open();
            (0, 0, 1, 0x0B, 0): x_take();
            (0, 0, 1, 0x0B, 1): x_take();
            (0, 0, 1, 0x0B, 2): x_take();
            (0, 0, 1, 0x0B, 6): x_take_open();
            (0, 0, 1, 0x0B, 14): x_take_open();
            (0, 0, 0, 0x06, _): x_clear();
            (0, 0, 0, 0x07, _): x_set();
            (0, 0, 0, 0x08, _): x_take_reset();
            (0, 0, 0, 0x09, _): x_take_reset();
            (0, 0, 0, 0x0A, _): x_clear();
            (0, 0, 0, 0x0B, _): x_clear();
            // An old PSN outside a message (states 0, 1, 2): reported at once.
            (0, 1, 0, _, 8w0 &&& 8w0xFC): x_take_open();
        }
        const default_action = NoAction();
        size = 64;
    }
    @hidden action s_add() {
        strad_add.execute(slot);
        meta.stat.straddled = true;
    }
    @hidden action s_msg(bit<8> flags) {
        report.setValid();
        report.kind = DIGEST_MSG;
        report.straddled = strad_take.execute(slot)[7:0];
        report.flags = flags;
        gap_valid = (bool)flags[0:0];
        msg_end = true;
        meta.stat.message = true;
    }
    // An ONLY while a message was open: that one straddled.
    @hidden action s_msg_strad(bit<8> flags) {
        report.setValid();
        report.kind = DIGEST_MSG;
        report.straddled = strad_take.execute(slot)[7:0];
        report.flags = flags;
        gap_valid = (bool)flags[0:0];
        strad_plus = true;
        msg_end = true;
        meta.stat.straddled = true;
        meta.stat.message = true;
    }
    @hidden action s_r_start() { strad_set.execute(slot); }
    @hidden action s_r_only() {
        report.setValid();
        report.kind = DIGEST_MSG;
        strad_set.execute(slot);
        report.flags = 0;
        msg_end = true;
        meta.stat.message = true;
    }
    @hidden action s_r_outside() {
        strad_set.execute(slot);
        meta.stat.straddled = true;
    }
    // Flow-only reports (packets outside any message, SPEC §4): no message,
    // the straddled count taken; at a reset, only this LAST's message.
    @hidden action s_flow() {
        report.setValid();
        report.kind = DIGEST_MSG;
        report.straddled = strad_take.execute(slot)[7:0];
        report.flags = 0;
        flow_only = true;
    }
    @hidden action s_flow_strad() {
        report.setValid();
        report.kind = DIGEST_MSG;
        report.straddled = strad_take.execute(slot)[7:0];
        report.flags = 0;
        strad_plus = true;
        flow_only = true;
        meta.stat.straddled = true;
    }
    @hidden action s_r_flow() {
        report.setValid();
        report.kind = DIGEST_MSG;
        strad_take.execute(slot);
        report.flags = 0;
        strad_plus = true;
        flow_only = true;
        meta.stat.straddled = true;
    }
    @stage(8)
    @hidden table msg_decode {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            mcode[2:2]: ternary @name("m_new");
            hdr.bth.opcode: ternary @name("opcode");
            old_st: ternary @name("state");
        }
        actions = { s_add; s_msg; s_msg_strad; s_r_start; s_r_only; s_r_outside; s_flow; s_flow_strad; s_r_flow; @defaultonly NoAction; }
        const entries = {
            (1, _, _, 0x06, _): s_r_start();
            (1, _, _, 0x07, _): s_r_outside();
            (1, _, _, 0x08, _): s_r_flow();
            (1, _, _, 0x09, _): s_r_flow();
            (1, _, _, 0x0A, _): s_r_only();
            (1, _, _, 0x0B, _): s_r_only();
            (0, 0, 1, 0x06, 1): s_flow();
            (0, 0, 1, 0x06, 6): s_flow_strad();
            (0, 0, 1, 0x06, 14): s_flow_strad();
            (0, 0, 1, 0x07, 0): s_add();
            (0, 0, 1, 0x07, 2): s_add();
            (0, 0, 1, 0x08, 0): s_flow_strad();
            (0, 0, 1, 0x08, 1): s_flow();
            (0, 0, 1, 0x08, 2): s_flow_strad();
            (0, 0, 1, 0x08, 6): s_msg(8w1);
            (0, 0, 1, 0x08, 14): s_msg(8w0);
            (0, 0, 1, 0x09, 0): s_flow_strad();
            (0, 0, 1, 0x09, 1): s_flow();
            (0, 0, 1, 0x09, 2): s_flow_strad();
            (0, 0, 1, 0x09, 6): s_msg(8w1);
            (0, 0, 1, 0x09, 14): s_msg(8w0);
            (0, 0, 1, 0x0A, 0): s_msg(8w0);
            (0, 0, 1, 0x0A, 1): s_msg(8w0);
            (0, 0, 1, 0x0A, 2): s_msg(8w1);
            (0, 0, 1, 0x0A, 6): s_msg_strad(8w0);
            (0, 0, 1, 0x0A, 14): s_msg_strad(8w0);
            (0, 0, 1, 0x0B, 0): s_msg(8w0);
            (0, 0, 1, 0x0B, 1): s_msg(8w0);
            (0, 0, 1, 0x0B, 2): s_msg(8w1);
            (0, 0, 1, 0x0B, 6): s_msg_strad(8w0);
            (0, 0, 1, 0x0B, 14): s_msg_strad(8w0);
            (0, 0, 0, 0x06, _): s_r_start();
            (0, 0, 0, 0x07, _): s_r_outside();
            (0, 0, 0, 0x08, _): s_r_flow();
            (0, 0, 0, 0x09, _): s_r_flow();
            (0, 0, 0, 0x0A, _): s_r_only();
            (0, 0, 0, 0x0B, _): s_r_only();
            (0, 1, 0, _, 8w0 &&& 8w0xFC): s_flow();
        }
        const default_action = NoAction();
        size = 64;
    }

    // CNP pair: counted on a CNP, taken at a message end (one table: all
    // accesses of a register in one stage).
    @hidden action pair_add() { cnp_p = cnp_add.execute(cidx); }
    @hidden action pair_take() { report.cnp = cnp_take.execute(cidx); }
    // A CNP counts (one table per branch: the CNP's and the RDMA WRITE's;
    // both in one stage, as a register's accesses must be).
    @stage(9)
    @hidden table pair_add_tbl {
        actions = { pair_add; }
        const default_action = pair_add();
        size = 1;
    }
    // A message end takes the pair's count.
    @stage(9)
    @hidden table pair_take_tbl {
        key = {
            owner[0:0]: ternary @name("taken");
            mcode[0:0]: ternary @name("m_old");
            mcode[2:2]: ternary @name("m_new");
            hdr.bth.opcode: ternary @name("opcode");
            old_st: ternary @name("state");
        }
        actions = { pair_take; @defaultonly NoAction; }
        const entries = {
            (1, _, _, 0x0A, _): pair_take();
            (1, _, _, 0x0B, _): pair_take();
            (0, 0, 1, 0x08, 6): pair_take();
            (0, 0, 1, 0x08, 14): pair_take();
            (0, 0, 1, 0x09, 6): pair_take();
            (0, 0, 1, 0x09, 14): pair_take();
            (0, 0, 1, 0x0A, 0): pair_take();
            (0, 0, 1, 0x0A, 1): pair_take();
            (0, 0, 1, 0x0A, 2): pair_take();
            (0, 0, 1, 0x0A, 6): pair_take();
            (0, 0, 1, 0x0A, 14): pair_take();
            (0, 0, 1, 0x0B, 0): pair_take();
            (0, 0, 1, 0x0B, 1): pair_take();
            (0, 0, 1, 0x0B, 2): pair_take();
            (0, 0, 1, 0x0B, 6): pair_take();
            (0, 0, 1, 0x0B, 14): pair_take();
            (0, 0, 0, 0x0A, _): pair_take();
            (0, 0, 0, 0x0B, _): pair_take();
        }
        const default_action = NoAction();
        size = 32;
    }

    // A tracked packet's PSN (shifted for the PSN register, plain for the
    // first PSN) and the flow timeout threshold (0 until the clock passes it).
    @hidden action take_fields() {
        psn8 = hdr.bth.psn ++ 8w0;
        psn32 = (bit<32>)hdr.bth.psn;
        thr_c = meta.now_c |-| meta.cfg.flow_timeout_c;
    }

    // The first registers, each in a table of its own (pinned to its stage).
    @hidden action seen_a() { live = seen_touch.execute(slot); }
    @stage(FLOW_SEEN_STAGE)
    @hidden table seen_tbl {
        actions = { seen_a; }
        const default_action = seen_a();
        size = 1;
    }
    @hidden action owner_claim_a() { owner = owner_claim.execute(slot); }
    @hidden action owner_take_a() { owner = owner_take.execute(slot); }
    @stage(4)
    @hidden table owner_tbl {
        key = { meta.cfg.mode: exact @name("mode"); }
        actions = { owner_claim_a; owner_take_a; @defaultonly NoAction; }
        const entries = {
            MODE_FULL: owner_claim_a();
            MODE_POLLING: owner_take_a();
#ifdef TNA_HISTOGRAMS
            MODE_SUMMARY: owner_claim_a();
#endif
        }
        const default_action = NoAction();
        size = 3;
    }
    @hidden action psn_reset_a() { mcode = psn_reset.execute(slot); }
#ifdef TNA_PSN_WINDOW
    @hidden action psn_update_a() { mcode = (bit<4>)psn_update.execute(slot, win_h8); }
#else
    @hidden action psn_update_a() { mcode = psn_update.execute(slot); }
#endif
    @stage(5)
    @hidden table psn_tbl {
        key = { owner[0:0]: exact @name("taken"); }
        actions = { psn_reset_a; psn_update_a; @defaultonly NoAction; }
        const entries = {
            1: psn_reset_a();
            0: psn_update_a();
        }
        const default_action = NoAction();
        size = 2;
    }
    bit<4> learned;
    @hidden action learn_a() { learned = learned_swap.execute(lidx); }
    @stage(5)
    @hidden table learn_tbl {
        actions = { learn_a; }
        const default_action = learn_a();
        size = 1;
    }

#ifdef TNA_HISTOGRAMS
    // Summary mode, a flow not watched: its message ends make no report;
    // its learn report (a flow new in this epoch) stays.
    bool quiet;
    @hidden action summary_learn_report() { report.kind = DIGEST_LEARN; }
    @hidden action summary_no_report() { report.setInvalid(); }
    @hidden table summary_report_tbl {
        key = { report.kind: exact @name("kind"); learned: ternary; }
        actions = { summary_learn_report; summary_no_report; NoAction; }
        const entries = {
            (DIGEST_MSG, 8): summary_no_report();
            (DIGEST_MSG, _): summary_learn_report();
        }
        const default_action = NoAction();
        size = 2;
    }
#endif

    apply {
        if (hdr.bridge.measured == 1 && hdr.bridge.mode != MODE_OFF) {  // the bridge's endpoint keys (endpoints.p4)
            if (hdr.bth.opcode == OP_CNP) {
                meta.stat.cnp = true;
                // A CNP's (dst, src) is the pair of the flows it slows.
                take_cnp_cidx();
                take_cnp_pair_fp();
                pair_add_tbl.apply();
                if (cnp_p == 1) {
                    meta.stat.cnp_untracked = true;
                }
            } else if (op_params.apply().hit) {  // an RDMA WRITE opcode
              if (meta.ingress_role == ROLE_COMPUTE) {
                take_fp();
                take_slot();
                take_fields();
                if ((hdr.ipv4.isValid() && hdr.ipv4.ecn == ECN_CE) || (hdr.ipv6.isValid() && hdr.ipv6.ecn == ECN_CE)) {
                    ce32 = 1;
                }
                if (meta.cfg.mode == MODE_FULL) {
                    track = true;
                    epoch32 = (bit<32>)meta.cfg.epoch;
                } else {
                    flow_watchlist.apply();
                    if (!track) {
                        take_lidx();
                        epoch32 = (bit<32>)meta.cfg.epoch;
#ifdef TNA_HISTOGRAMS
                        if (meta.cfg.mode == MODE_SUMMARY) {
                            quiet = true;
                        }
#endif
                    }
#ifdef TNA_HISTOGRAMS
                    if (meta.cfg.mode == MODE_SUMMARY) {
                        // Summary: every flow tracked as in full mode (hashed
                        // slot, the current epoch); reports only for the
                        // watchlist's flows, learn reports for the others.
                        track = true;
                        take_slot();
                        epoch32 = (bit<32>)meta.cfg.epoch;
                    }
#endif
                }
#ifdef TNA_HISTOGRAMS
                if (!track || quiet) {
                    learn_tbl.apply();
                    if (learned != 8) {
                        report.setValid();
                        report.kind = DIGEST_LEARN;
                        report.src = hdr.bridge.src_key;
                        report.dst = hdr.bridge.dst_key;
                        learn_digest_qp();
                        meta.stat.flow_learned = true;
                    }
                }
#endif
                if (track) {
#ifdef TNA_PSN_WINDOW
                    win_bit_tbl.apply();
                    win_id_a();
                    win_tag_a();
#endif
                    seen_tbl.apply();
                    owner_tbl.apply();
                    if (owner[2:2] == 1) {
                        // A collision never merges two flows: the newcomer is not tracked.
                        meta.stat.untracked_flow = true;
                    } else {
                        psn_tbl.apply();
#ifdef TNA_PSN_WINDOW
                        win_behind_a();
                        win_tbl.apply();
                        win_seen_tbl.apply();
#endif
                        if (ce32 == 1) {
                            meta.stat.ecn_ce = true;
                        }
                        msg_state.apply();
                        msg_first_ts_tbl.apply();
                        msg_bytes_tbl.apply();
                        msg_first_psn_tbl.apply();
                        msg_prev.apply();
                        msg_counts_tbl.apply();
                        msg_ecn_tbl.apply();
                        msg_extra.apply();
                        msg_decode.apply();
                        report.fct_ns = meta.now32 - first_ts;
                        report.gap_ns = first_ts - prev_end;
#ifdef TNA_HISTOGRAMS
                        // The message's FCT, where its report is made.
                        if (msg_end) {
                            histograms.apply(hdr.bridge.src_key, hdr.bridge.dst_key, hdr.bth.dest_qp, report.fct_ns);
                        }
#endif
                        report.src = hdr.bridge.src_key;
                        report.dst = hdr.bridge.dst_key;
                        // One hash result per action (32 bits of immediate each).
                        msg_digest_qp();
                        msg_digest_last_psn();
                        if (!gap_valid) {
                            report.gap_ns = 0;
                        }
                        if (strad_plus) {
                            report.straddled = report.straddled + 1;
                        }
                        // A flow-only report: packets and bytes 0 mark it (no
                        // message has both); no FCT or counts of a message.
                        if (flow_only) {
                            report.packets = 0;
                            report.retransmitted = 0;
                            report.ecn_ce = 0;
                            report.bytes = 0;
                            report.fct_ns = 0;
                        }
                        take_cidx();
                        take_pair_fp();
                        pair_take_tbl.apply();
                    }
                }
#ifdef TNA_HISTOGRAMS
                if (quiet) {
                    summary_report_tbl.apply();
                }
#else
                else {
                    learn_tbl.apply();
                    if (learned != 8) {
                        report.setValid();
                        report.kind = DIGEST_LEARN;
                        report.src = hdr.bridge.src_key;
                        report.dst = hdr.bridge.dst_key;
                        learn_digest_qp();
                        meta.stat.flow_learned = true;
                    }
                }
#endif
              }
            }

        }
    }
}

#endif
