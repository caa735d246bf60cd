// RDMA WRITE message tracking (SPEC §4), TNA build: the algorithm of
// p4/include/control/flow_tracker.p4 in stateful ALUs, one access per
// register per packet, in the order the pipeline runs them:
//   owner (flow fingerprint, last-seen time) -> epoch -> highest PSN ->
//   message open -> orphan, previous-end valid -> per-message state.
// Where a register's next value depends on another register, the other is
// earlier in this order; that is why the flow state byte of the v1model
// build is three registers here (open, orphan, previous end valid).
#ifndef __FLOW_TRACKER__
#define __FLOW_TRACKER__

control FlowTracker(in headers_t hdr, inout local_metadata_t meta) {
    // Control-scope values the register actions read.
    bit<32> fp;          // flow fingerprint (never 0)
    bit<32> thr_c;       // meta.now_c - flow timeout, clamped at 0
    bit<32> epoch32;
    bit<32> psn8;        // PSN << 8: serial arithmetic mod 2^24 in 32-bit compares
    bit<32> inc;         // packets << 16 | retransmitted, added per packet
    bit<32> ce32;
    bit<8> open_n0;     // next "message open" when it was closed
    bit<8> open_n1;     // ... when it was open
    bit<8> orphan_n;
    bit<32> strad_inc;
    bit<32> pair_fp;

    bit<FLOW_SLOT_BITS> slot;
    epoch_t epoch;
    bool watched;

    Hash<bit<16>>(HashAlgorithm_t.CRC16) slot_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) fp_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) pair_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) pair_fp_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) learn_hash;
    // The digests' QP number and PSNs through the hash units (identity), as
    // in IoTracker: a copy would split every field they flow into.
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) learn_qp_copy;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) msg_qp_copy;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) first_psn_copy;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) last_psn_copy;

    action watch(slot_t flow_slot, epoch_t flow_epoch) {
        watched = true;
        slot = flow_slot[FLOW_SLOT_BITS-1:0];
        epoch = flow_epoch;
    }

    table flow_watchlist {
        key = {
            hdr.ipv4.src_addr: exact @name("src");
            hdr.ipv4.dst_addr: exact @name("dst");
            hdr.bth.dest_qp: exact @name("dest_qp");
        }
        actions = {
            watch;
            NoAction;
        }
        const default_action = NoAction();
        size = FLOW_WATCHLIST_SIZE;
    }

    // Owner: (fingerprint, coarse last-seen time).
    @hidden action msg_digest_qp() { meta.msg_digest.dest_qp = msg_qp_copy.get({ hdr.bth.dest_qp }); }
    @hidden action msg_digest_last_psn() { meta.msg_digest.last_psn = last_psn_copy.get({ hdr.bth.psn }); }

    REGPAIR(flow_owner, FLOW_SLOTS, FLOW_SLOT_BITS)
    // Full mode: the owner's fingerprint while a live flow holds the slot
    // (this flow's or another's), else 0 and the slot is taken.
    RegisterAction<pair_t, bit<FLOW_SLOT_BITS>, bit<32>>(flow_owner) owner_claim = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == fp) {
                rv = value.lo;
                value.hi = meta.now_c;
            } else if ((int<32>)(value.hi - thr_c) > 0) {
                rv = value.lo;
            } else {
                rv = 0;
                value.lo = fp;
                value.hi = meta.now_c;
            }
        }
    };
    // Polling mode: the controller gave the slot; the old fingerprint.
    RegisterAction<pair_t, bit<FLOW_SLOT_BITS>, bit<32>>(flow_owner) owner_take = {
        void apply(inout pair_t value, out bit<32> rv) {
            rv = value.lo;
            value.lo = fp;
            value.hi = meta.now_c;
        }
    };
    REG32(flow_slot_epoch, FLOW_SLOTS, FLOW_SLOT_BITS)
    // 1 when the slot's epoch was another.
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<1>>(flow_slot_epoch) epoch_swap = {
        void apply(inout bit<32> value, out bit<1> rv) {
            if (value != epoch32) { rv = 1; } else { rv = 0; }
            value = epoch32;
        }
    };

    REG32(flow_max_psn, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_WRITE(flow_max_psn, FLOW_SLOT_BITS, max_psn_reset, psn8)
    // 1 when the PSN is after the highest seen (and becomes it), else 0.
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<1>>(flow_max_psn) max_psn_update = {
        void apply(inout bit<32> value, out bit<1> rv) {
            if ((int<32>)(psn8 - value) > 0) {
                rv = 1;
                value = psn8;
            } else {
                rv = 0;
            }
        }
    };

    // Message open (0/1): returns the old value, writes the next.
    REG8(flow_msg_open, FLOW_SLOTS, FLOW_SLOT_BITS)
    RegisterAction<bit<8>, bit<FLOW_SLOT_BITS>, bit<8>>(flow_msg_open) open_update = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            if (value == 0) { value = open_n0; } else { value = open_n1; }
        }
    };
    // Inside a message whose start was not seen (0/1).
    REG8(flow_orphan, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_SWAP8(flow_orphan, FLOW_SLOT_BITS, orphan_swap, orphan_n)
    RA_READ8(flow_orphan, FLOW_SLOT_BITS, orphan_read)
    // flow_prev_last_ts holds a message end (0/1).
    REG8(flow_prev_valid, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_SWAP8(flow_prev_valid, FLOW_SLOT_BITS, prev_valid_set, 1)
    RA_SWAP8(flow_prev_valid, FLOW_SLOT_BITS, prev_valid_clear, 0)
    RA_READ8(flow_prev_valid, FLOW_SLOT_BITS, prev_valid_read)

    REG32(flow_prev_last_ts, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_SWAP(flow_prev_last_ts, FLOW_SLOT_BITS, prev_last_swap, meta.now32)
    RA_READ(flow_prev_last_ts, FLOW_SLOT_BITS, prev_last_read)

    REG32(msg_first_ts, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_WRITE(msg_first_ts, FLOW_SLOT_BITS, first_ts_write, meta.now32)
    RA_READ(msg_first_ts, FLOW_SLOT_BITS, first_ts_read)
    REG32(msg_first_psn, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_WRITE(msg_first_psn, FLOW_SLOT_BITS, first_psn_write, (bit<32>)hdr.bth.psn)
    RA_READ(msg_first_psn, FLOW_SLOT_BITS, first_psn_read)
    REG32(msg_bytes, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_WRITE(msg_bytes, FLOW_SLOT_BITS, bytes_write, hdr.reth.dma_len)
    RA_READ(msg_bytes, FLOW_SLOT_BITS, bytes_read)
    REG32(msg_gap, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_WRITE(msg_gap, FLOW_SLOT_BITS, gap_write, meta.msg_digest.gap_ns)
    RA_READ(msg_gap, FLOW_SLOT_BITS, gap_read)
    // packets << 16 | retransmitted, of the open message.
    REG32(msg_counts, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_WRITE(msg_counts, FLOW_SLOT_BITS, counts_start, 32w0x10000)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(msg_counts) counts_add = {
        void apply(inout bit<32> value, out bit<32> rv) { value = value + inc; rv = value; }
    };
    REG32(msg_ecn_ce, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_WRITE(msg_ecn_ce, FLOW_SLOT_BITS, ecn_start, ce32)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(msg_ecn_ce) ecn_add = {
        void apply(inout bit<32> value, out bit<32> rv) { value = value + ce32; rv = value; }
    };
    // Packets outside any message since the last message digest: packets << 16 | retransmitted.
    REG32(extra_counts, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_WRITE(extra_counts, FLOW_SLOT_BITS, extra_set, inc)
    RA_WRITE(extra_counts, FLOW_SLOT_BITS, extra_clear, 0)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(extra_counts) extra_add = {
        void apply(inout bit<32> value) { value = value + inc; }
    };
    RA_SWAP(extra_counts, FLOW_SLOT_BITS, extra_take, 0)
    REG32(straddled, FLOW_SLOTS, FLOW_SLOT_BITS)
    RA_WRITE(straddled, FLOW_SLOT_BITS, strad_set, strad_inc)
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(straddled) strad_add = {
        void apply(inout bit<32> value) { value = value + strad_inc; }
    };
    RegisterAction<bit<32>, bit<FLOW_SLOT_BITS>, bit<32>>(straddled) strad_take = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value + strad_inc; value = 0; }
    };

    // CNPs per host pair (fingerprint, count): a slot is taken over only at count 0.
    REGPAIR(pair_cnp, PAIR_SLOTS, PAIR_SLOT_BITS)
    // 0 counted, 1 held by another pair (untracked).
    RegisterAction<pair_t, bit<PAIR_SLOT_BITS>, bit<1>>(pair_cnp) cnp_add = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo == pair_fp) {
                rv = 0;
                value.hi = value.hi + 1;
            } else if (value.hi == 0) {
                rv = 0;
                value.lo = pair_fp;
                value.hi = 1;
            } else {
                rv = 1;
            }
        }
    };
    // The pair's count, reset; 0 when the slot counts for another pair.
    RegisterAction<pair_t, bit<PAIR_SLOT_BITS>, bit<16>>(pair_cnp) cnp_take = {
        void apply(inout pair_t value, out bit<16> rv) {
            if (value.lo == pair_fp) {
                rv = (bit<16>)value.hi;
                value.hi = 0;
            } else {
                rv = 0;
            }
        }
    };

    // Flows already reported by a learn digest: (fingerprint, epoch).
    REGPAIR(learned_flow, LEARN_SLOTS, LEARN_SLOT_BITS)
    RA_PAIR_SWAP(learned_flow, LEARN_SLOT_BITS, learned_swap, fp, epoch32)

    apply {
        if (!hdr.bth.isValid() || meta.cfg.mode == MODE_OFF) {
            return;
        }
        bit<8> opcode = hdr.bth.opcode;
        // The host pair in the direction of the data: CNP dst -> CNP src.
        ipv4_addr_t pair_src = hdr.ipv4.src_addr;
        ipv4_addr_t pair_dst = hdr.ipv4.dst_addr;
        if (opcode == OP_CNP) {
            pair_src = hdr.ipv4.dst_addr;
            pair_dst = hdr.ipv4.src_addr;
        }
        bit<PAIR_SLOT_BITS> cidx = pair_hash.get({ pair_src, pair_dst })[PAIR_SLOT_BITS-1:0];
        pair_fp = pair_fp_hash.get({ pair_src, pair_dst }) | 1;
        if (opcode == OP_CNP) {
            meta.stat.cnp = true;
            if (cnp_add.execute(cidx) != 0) {
                meta.stat.cnp_untracked = true;
            }
            return;
        }
        if (opcode < OP_WRITE_FIRST || opcode > OP_WRITE_ONLY_IMM) {
            return;
        }
        if (meta.ingress_role != ROLE_COMPUTE) {
            return;
        }
        qpn_t qp = hdr.bth.dest_qp;
        psn_t psn = hdr.bth.psn;
        fp = fp_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp }) | 1;

        if (meta.cfg.mode == MODE_FULL) {
            slot = slot_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp })[FLOW_SLOT_BITS-1:0];
            epoch = meta.cfg.epoch;
        } else {
            watched = false;
            flow_watchlist.apply();
            if (!watched) {
                bit<LEARN_SLOT_BITS> lidx = learn_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp })[LEARN_SLOT_BITS-1:0];
                epoch32 = (bit<32>)meta.cfg.epoch;
                if (learned_swap.execute(lidx) != 0) {
                    meta.digest_kind = DIGEST_LEARN;
                    meta.learn_digest.kind = LEARN_FLOW;
                    meta.learn_digest.src = hdr.ipv4.src_addr;
                    meta.learn_digest.dst = hdr.ipv4.dst_addr;
                    meta.learn_digest.dest_qp = learn_qp_copy.get({ hdr.bth.dest_qp });
                    meta.stat.learned = true;
                }
                return;
            }
        }
        epoch32 = (bit<32>)epoch;

        // Owner and epoch: reset when the slot is taken or the epoch moved.
        bit<32> timeout_c = meta.cfg.flow_timeout_c;
        thr_c = meta.now_c |-| timeout_c;  // saturating: 0 until the clock passes the timeout
        bit<32> holder;
        if (meta.cfg.mode == MODE_FULL) {
            holder = owner_claim.execute(slot);
        } else {
            holder = owner_take.execute(slot);
        }
        bit<2> owner = 0;                  // 0 taken, 1 this flow, 2 another live flow
        if (holder == fp) {
            owner = 1;
        } else if (holder != 0 && meta.cfg.mode == MODE_FULL) {
            owner = 2;
        }
        if (owner == 2) {
            // A collision never merges two flows: the newcomer is not tracked.
            meta.stat.untracked_flow = true;
            return;
        }
        bit<1> epoch_moved = epoch_swap.execute(slot);
        bool reset = false;
        if (owner == 0) {
            reset = true;
        } else if (epoch_moved == 1) {
            reset = true;
        }

        // Highest PSN.
        psn8 = psn ++ 8w0;
        bool is_new;
        if (reset) {
            max_psn_reset.execute(slot);
            is_new = true;
        } else {
            is_new = false;
            if (max_psn_update.execute(slot) == 1) {
                is_new = true;
            }
        }
        bit<32> retx = 1;
        if (is_new) {
            retx = 0;
        }
        inc = 32w0x10000 | retx;
        ce32 = 0;
        if (hdr.ipv4.ecn == ECN_CE) {
            ce32 = 1;
            meta.stat.ecn_ce = true;
        }
        bool starts_new = false;
        bool ends_new = false;
        if (is_new) {
            if (opcode == OP_WRITE_FIRST) {
                starts_new = true;
            } else if (opcode == OP_WRITE_LAST || opcode == OP_WRITE_LAST_IMM) {
                ends_new = true;
            } else if (opcode == OP_WRITE_ONLY || opcode == OP_WRITE_ONLY_IMM) {
                starts_new = true;
                ends_new = true;
            }
        }

        // Message open: next value whichever it was.
        open_n0 = 0;
        if (starts_new) {
            if (!ends_new) {
                open_n0 = 1;
            }
        }
        if (reset) {
            open_n1 = open_n0;
        } else if (ends_new) {
            open_n1 = 0;
        } else {
            open_n1 = 1;
        }
        bit<8> old_open = open_update.execute(slot);
        bool was_open = false;
        if (!reset) {
            if (old_open != 0) {
                was_open = true;
            }
        }
        bool outside = true;
        if (starts_new) {
            outside = false;
        } else if (was_open) {
            outside = false;
        }
        bool msg_end = false;
        if (ends_new) {
            if (!outside) {
                msg_end = true;
            }
        }
        bool outside_new = false;
        if (outside) {
            if (is_new) {
                outside_new = true;
            }
        }

        // Orphan and previous-end-valid.
        orphan_n = 0;
        if (outside_new) {
            if (!ends_new) {
                orphan_n = 1;
            }
        }
        bit<8> old_orphan;
        if (starts_new) {
            old_orphan = orphan_swap.execute(slot);
        } else if (outside_new) {
            old_orphan = orphan_swap.execute(slot);
        } else {
            old_orphan = orphan_read.execute(slot);
        }
        bool was_orphan = false;
        if (!reset) {
            if (old_orphan != 0) {
                was_orphan = true;
            }
        }
        strad_inc = 0;
        if (starts_new) {
            if (was_open) {
                strad_inc = 1;  // the previous message never ended here
                meta.stat.straddled = true;
            }
        }
        bool orphan_starts = false;
        if (outside_new) {
            if (!was_orphan) {
                orphan_starts = true;
                strad_inc = 1;
                meta.stat.straddled = true;
            }
        }
        bit<8> old_prev_valid;
        if (msg_end) {
            old_prev_valid = prev_valid_set.execute(slot);
        } else if (orphan_starts) {
            old_prev_valid = prev_valid_clear.execute(slot);
        } else if (reset) {
            old_prev_valid = prev_valid_clear.execute(slot);
        } else {
            old_prev_valid = prev_valid_read.execute(slot);
        }
        bool prev_valid = false;
        if (!reset) {
            if (old_prev_valid != 0) {
                prev_valid = true;
            }
        }

        // Previous message end: the gap at a start, this end for the next.
        bit<32> prev_last = 0;
        if (msg_end) {
            prev_last = prev_last_swap.execute(slot);
        } else if (starts_new) {
            prev_last = prev_last_read.execute(slot);
        }

        // The message's own state, read into the digest's fields.
        bit<32> counts = 32w0x10000;
        bit<32> ecn = ce32;
        meta.msg_digest.fct_ns = meta.now32;
        meta.msg_digest.first_psn = first_psn_copy.get({ hdr.bth.psn });
        meta.msg_digest.bytes = hdr.reth.dma_len;
        if (starts_new) {
            meta.msg_digest.gap_ns = 0;
            if (prev_valid) {
                meta.msg_digest.gap_ns = meta.now32 - prev_last;
            }
            first_ts_write.execute(slot);
            first_psn_write.execute(slot);
            bytes_write.execute(slot);
            gap_write.execute(slot);
            counts_start.execute(slot);
            ecn_start.execute(slot);
        } else if (was_open) {
            meta.msg_digest.fct_ns = first_ts_read.execute(slot);
            meta.msg_digest.first_psn = first_psn_read.execute(slot)[23:0];
            meta.msg_digest.bytes = bytes_read.execute(slot);
            meta.msg_digest.gap_ns = gap_read.execute(slot);
            counts = counts_add.execute(slot);
            ecn = ecn_add.execute(slot);
        }

        bit<32> extra = 0;
        if (outside) {
            if (reset) { extra_set.execute(slot); } else { extra_add.execute(slot); }
        } else if (msg_end) {
            if (!reset) { extra = extra_take.execute(slot); }
        } else if (reset) {
            extra_clear.execute(slot);
        }
        bit<32> n_straddled = strad_inc;
        if (msg_end) {
            if (!reset) { n_straddled = strad_take.execute(slot); }
        } else if (reset) {
            strad_set.execute(slot);
        } else {
            strad_add.execute(slot);
        }

        if (msg_end) {

            meta.stat.message = true;
            meta.digest_kind = DIGEST_MSG;
            meta.msg_digest.flags = 0;
            if (prev_valid) {
                meta.msg_digest.flags = (bit<1>)MSG_FLAG_GAP_VALID;
            }
            meta.msg_digest.src = hdr.ipv4.src_addr;
            meta.msg_digest.dst = hdr.ipv4.dst_addr;
            // One hash result per action (32 bits of immediate each).
            msg_digest_qp();
            msg_digest_last_psn();
            meta.msg_digest.packets = counts[31:16];
            meta.msg_digest.retransmitted = counts[15:0];
            meta.msg_digest.ecn_ce = ecn[15:0];
            meta.msg_digest.fct_ns = meta.now32 - meta.msg_digest.fct_ns;
            meta.msg_digest.extra_packets = extra[31:16];
            meta.msg_digest.extra_retransmitted = extra[15:0];
            meta.msg_digest.straddled = n_straddled[7:0];
            meta.msg_digest.cnp = cnp_take.execute(cidx);
        }
    }
}

#endif
