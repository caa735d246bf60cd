// RDMA WRITE message tracking (SPEC §4), where the sender is attached
// (ingress port with role compute: the compute plane).
//
// A flow is (src, dst, dest QP). Its slot is hash-indexed in full mode and
// assigned by the controller's watchlist entry in polling mode. A message is
// FIRST..LAST or ONLY; when its last-PSN packet is first seen the switch
// emits one msg_digest_t. A packet is retransmitted when its PSN was already
// seen on the flow: the switch keeps which of the 256 PSNs up to the highest
// it has seen (serial arithmetic mod 2^24); a PSN older than that window
// counts as retransmitted. A late packet seen for the first time (reordered
// on the way) is not; it counts in its message if that message is still
// open, else in the flow's figures for the interval it arrives in.
// Packets of a message seen before its FIRST (overtaken on the way) are held
// until the FIRST comes and opens the message with them (FLOW_PENDING); a
// packet counted outside any message goes out at once in a flow-only digest
// (a msg_digest_t with packets and bytes 0), so that it counts in the
// interval it arrives in, also after the flow's last message. docs/spec.md
// §4 has the cases.
#ifndef __FLOW_TRACKER__
#define __FLOW_TRACKER__

#include "histograms.p4"

// The seen-PSN window: which of the PSN_WINDOW PSNs up to the flow's highest
// were seen. A packet displaced by a reordering path less than that many
// places behind is told from a resend; one further behind counts as resent.
const psn_t PSN_WINDOW = 256;
typedef bit<256> psn_window_t;

// Bits of the flow_state register.
const bit<8> FLOW_IN_USE = 0x01;
const bit<8> FLOW_MSG_OPEN = 0x02;
const bit<8> FLOW_PREV_VALID = 0x04;  // flow_prev_last_ts holds a message end
const bit<8> FLOW_PENDING = 0x10;     // packets wait for an overtaken FIRST in msg_packets..

control FlowTracker(in headers_t hdr, inout local_metadata_t meta) {
    REGISTER(ipv4_addr_t, FLOW_SLOTS, flow_src)
    REGISTER(ipv4_addr_t, FLOW_SLOTS, flow_dst)
    REGISTER(bit<32>, FLOW_SLOTS, flow_qp)          // dest QP
    REGISTER(bit<16>, FLOW_SLOTS, flow_slot_epoch)
    REGISTER(bit<8>, FLOW_SLOTS, flow_state)        // FLOW_*
    REGISTER(ts_t, FLOW_SLOTS, flow_last_ts)
    REGISTER(psn_t, FLOW_SLOTS, flow_max_psn)
    REGISTER(psn_window_t, FLOW_SLOTS, flow_seen)   // bit i: PSN flow_max_psn - i seen
    REGISTER(ts_t, FLOW_SLOTS, flow_prev_last_ts)
    REGISTER(ts_t, FLOW_SLOTS, msg_first_ts)
    REGISTER(psn_t, FLOW_SLOTS, msg_first_psn)
    REGISTER(bit<32>, FLOW_SLOTS, msg_bytes)
    REGISTER(bit<32>, FLOW_SLOTS, msg_packets)
    REGISTER(bit<32>, FLOW_SLOTS, msg_retransmitted)
    REGISTER(bit<32>, FLOW_SLOTS, msg_ecn_ce)
    REGISTER(ts_t, FLOW_SLOTS, msg_gap)
    REGISTER(bit<32>, FLOW_SLOTS, extra_packets)
    REGISTER(bit<32>, FLOW_SLOTS, extra_retransmitted)
    REGISTER(bit<32>, FLOW_SLOTS, extra_ecn_ce)
    REGISTER(bit<16>, FLOW_SLOTS, straddled)
    // CNPs per host pair, in the direction of the data (CNP dst -> CNP src),
    // with the pair they count for: a slot is taken over only while its count
    // is 0 (reported), so colliding pairs never add to each other's counts.
    REGISTER(ipv4_addr_t, PAIR_SLOTS, pair_cnp_src)
    REGISTER(ipv4_addr_t, PAIR_SLOTS, pair_cnp_dst)
    REGISTER(bit<32>, PAIR_SLOTS, pair_cnp)
    // Flows already reported by a learn digest (polling mode), with the epoch
    // they were reported in: a controller that takes over bumps it.
    REGISTER(ipv4_addr_t, LEARN_SLOTS, learned_src)
    REGISTER(ipv4_addr_t, LEARN_SLOTS, learned_dst)
    REGISTER(qpn_t, LEARN_SLOTS, learned_qp)
    REGISTER(bit<16>, LEARN_SLOTS, learned_epoch)

    FlowHistograms() histograms;

    bit<32> slot = 0;
    epoch_t epoch = 0;
    bool watched = false;
    bool msg_digests = true;

    action watch(slot_t flow_slot, epoch_t flow_epoch) {
        watched = true;
        slot = flow_slot;
        epoch = flow_epoch;
    }

    // Polling mode: the flows measured in this rotation period, each with the
    // slot and epoch the controller gave it.
    table flow_watchlist {
        key = {
            meta.src_key: exact @name("src");
            meta.dst_key: exact @name("dst");
            hdr.bth.dest_qp: exact @name("dest_qp");
        }
        actions = {
            watch;
            NoAction;
        }
        const default_action = NoAction();
        size = FLOW_WATCHLIST_SIZE;
    }

    apply {
        if (!meta.measured || meta.cfg.mode == MODE_OFF) {
            return;
        }
        bit<8> opcode = hdr.bth.opcode;
        if (opcode == OP_CNP) {
            bit<32> cidx;
            HASH_INDEX(cidx, PAIR_SLOTS, { meta.dst_key, meta.src_key });
            ipv4_addr_t c_src;
            ipv4_addr_t c_dst;
            bit<32> cnp;
            pair_cnp_src.read(c_src, cidx);
            pair_cnp_dst.read(c_dst, cidx);
            pair_cnp.read(cnp, cidx);
            meta.stat.cnp = true;
            if (c_src == meta.dst_key && c_dst == meta.src_key) {
                pair_cnp.write(cidx, cnp + 1);
            } else if (cnp == 0) {
                pair_cnp_src.write(cidx, meta.dst_key);
                pair_cnp_dst.write(cidx, meta.src_key);
                pair_cnp.write(cidx, 1);
            } else {
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

        // Full and summary modes track every flow in hash-indexed slots;
        // polling and summary modes send digests for the watchlist's flows
        // only (summary: every flow still counts in the histograms).
        bool full_tracking = meta.cfg.mode == MODE_FULL || meta.cfg.mode == MODE_SUMMARY;
        if (meta.cfg.mode != MODE_FULL) {
            flow_watchlist.apply();
            msg_digests = watched;
            if (!watched) {
                bit<32> lidx;
                HASH_INDEX(lidx, LEARN_SLOTS, { meta.src_key, meta.dst_key, hdr.bth.dest_qp });
                ipv4_addr_t seen_src;
                ipv4_addr_t seen_dst;
                qpn_t seen_qp;
                bit<16> seen_epoch;
                learned_src.read(seen_src, lidx);
                learned_dst.read(seen_dst, lidx);
                learned_qp.read(seen_qp, lidx);
                learned_epoch.read(seen_epoch, lidx);
                if (seen_src != meta.src_key || seen_dst != meta.dst_key || seen_qp != qp
                        || seen_epoch != meta.cfg.epoch) {
                    learned_src.write(lidx, meta.src_key);
                    learned_dst.write(lidx, meta.dst_key);
                    learned_qp.write(lidx, qp);
                    learned_epoch.write(lidx, meta.cfg.epoch);
                    meta.digest_kind = DIGEST_LEARN;
                    meta.learn_digest.kind = LEARN_FLOW;
                    meta.learn_digest.src = meta.src_key;
                    meta.learn_digest.dst = meta.dst_key;
                    meta.learn_digest.dest_qp = qp;
                    meta.stat.flow_learned = true;
                }
                if (meta.cfg.mode == MODE_POLLING) {
                    return;
                }
            }
        }

        if (full_tracking) {
            HASH_INDEX(slot, FLOW_SLOTS, { meta.src_key, meta.dst_key, hdr.bth.dest_qp });
            epoch = meta.cfg.epoch;
        }

        ipv4_addr_t slot_src;
        ipv4_addr_t slot_dst;
        bit<32> slot_qp;
        bit<16> slot_epoch;
        bit<8> state;
        ts_t last_ts;
        flow_src.read(slot_src, slot);
        flow_dst.read(slot_dst, slot);
        flow_qp.read(slot_qp, slot);
        flow_slot_epoch.read(slot_epoch, slot);
        flow_state.read(state, slot);
        flow_last_ts.read(last_ts, slot);
        bool same_flow = slot_src == meta.src_key && slot_dst == meta.dst_key && slot_qp == 8w0 ++ qp;
        bool live = (state & FLOW_IN_USE) != 0 && meta.now - last_ts <= meta.cfg.flow_timeout_ns;

        psn_t max_psn;
        psn_window_t seen;
        bit<32> x_packets;
        bit<32> x_retx;
        bit<32> x_ecn;
        bit<16> n_straddled;
        if (!same_flow && live && full_tracking) {
            // A collision never merges two flows: the newcomer is not tracked.
            meta.stat.untracked_flow = true;
            return;
        }
        if (!same_flow || slot_epoch != epoch) {
            // A new flow in this slot, or a new epoch (mode switch, rotation):
            // nothing of an earlier message is carried over.
            flow_src.write(slot, meta.src_key);
            flow_dst.write(slot, meta.dst_key);
            flow_qp.write(slot, 8w0 ++ qp);
            flow_slot_epoch.write(slot, epoch);
            state = FLOW_IN_USE;
            if (!same_flow && full_tracking) {
                // A flow new to the switch: nothing of it seen, the whole
                // window behind this PSN is open (a late FIRST opens its message).
                max_psn = psn - PSN_WINDOW;
                seen = 0;
            } else {
                // A new epoch (mode switch, rotation): what was seen before is
                // not known here, so every PSN behind counts as seen (a packet
                // behind is retransmitted and opens no message).
                max_psn = psn - 1;
                seen = ~(psn_window_t)0;
            }
            x_packets = 0;
            x_retx = 0;
            x_ecn = 0;
            n_straddled = 0;
        } else {
            flow_max_psn.read(max_psn, slot);
            flow_seen.read(seen, slot);
            extra_packets.read(x_packets, slot);
            extra_retransmitted.read(x_retx, slot);
            extra_ecn_ce.read(x_ecn, slot);
            straddled.read(n_straddled, slot);
        }

        psn_t ahead = psn - max_psn;
        psn_t behind = max_psn - psn;
        bool is_new = false;
        bool late = false;   // first seen after a higher PSN of the flow
        if (ahead != 0 && ahead[23:23] == 0) {
            is_new = true;
            if (ahead >= PSN_WINDOW) {
                seen = 1;
            } else {
                seen = (seen << (bit<8>)ahead) | 1;
            }
            max_psn = psn;
        } else if (behind < PSN_WINDOW) {
            psn_window_t bit_of = (psn_window_t)1 << (bit<8>)behind;
            if ((seen & bit_of) == 0) {
                is_new = true;
                late = true;
                seen = seen | bit_of;
            }
        }
        bit<32> retx = is_new ? 32w0 : 32w1;
        bit<32> ce = 0;
        if (meta.ecn == ECN_CE) {
            ce = 1;
            meta.stat.ecn_ce = true;
        }
        bool starts = opcode == OP_WRITE_FIRST || opcode == OP_WRITE_ONLY || opcode == OP_WRITE_ONLY_IMM;
        bool ends = opcode == OP_WRITE_LAST || opcode == OP_WRITE_LAST_IMM
            || opcode == OP_WRITE_ONLY || opcode == OP_WRITE_ONLY_IMM;
        bool open = (state & FLOW_MSG_OPEN) != 0;
        bool pending = (state & FLOW_PENDING) != 0;

        ts_t first_ts = 0;
        psn_t first_psn = 0;
        bit<32> bytes = 0;
        bit<32> packets = 0;
        bit<32> m_retx = 0;
        bit<32> m_ecn = 0;
        ts_t gap = 0;
        // While a message is open, msg_first_psn is its first PSN: a late
        // packet before it belongs to an earlier message (flow figures only).
        // While packets wait for an overtaken FIRST (FLOW_PENDING), it is the
        // lowest PSN that message can have (one after the highest PSN seen
        // when the first of them came): packets from there on are its.
        bool earlier = false;
        bool held = false;
        psn_t open_first = 0;
        if (open || pending) {
            msg_first_psn.read(open_first, slot);
            psn_t since_first = psn - open_first;
            earlier = open && late && since_first[23:23] == 1;
            held = pending && since_first[23:23] == 0;
        }
        bool in_order_start = starts && is_new && !late;
        // A FIRST first seen behind the highest PSN while packets of its
        // message wait for it: it opens the message with them (FCT from now).
        bool late_first = opcode == OP_WRITE_FIRST && is_new && late && held;
        bool keep = false;       // msg_packets.. hold the open or pending message after this packet
        bool outside = false;    // this packet (or the pending ones) went to the flow's figures only
        if (in_order_start || late_first) {
            if (open) {
                // The previous message never ended here: no record, its
                // packets count for the flow only (straddled).
                bit<32> o_packets;
                bit<32> o_retx;
                bit<32> o_ecn;
                msg_packets.read(o_packets, slot);
                msg_retransmitted.read(o_retx, slot);
                msg_ecn_ce.read(o_ecn, slot);
                x_packets = x_packets + o_packets;
                x_retx = x_retx + o_retx;
                x_ecn = x_ecn + o_ecn;
                n_straddled = n_straddled + 1;
                meta.stat.straddled = true;
                state = state & ~FLOW_PREV_VALID;
                outside = true;
            }
            if (pending) {
                msg_packets.read(packets, slot);
                msg_retransmitted.read(m_retx, slot);
                msg_ecn_ce.read(m_ecn, slot);
            }
            if (pending && !late_first) {
                // The held packets were of a message whose FIRST this switch
                // never saw: flow figures only, counted as straddled.
                x_packets = x_packets + packets;
                x_retx = x_retx + m_retx;
                x_ecn = x_ecn + m_ecn;
                n_straddled = n_straddled + 1;
                meta.stat.straddled = true;
                state = state & ~FLOW_PREV_VALID;
                outside = true;
                packets = 0;
                m_retx = 0;
                m_ecn = 0;
            }
            first_ts = meta.now;
            first_psn = psn;
            bytes = hdr.reth.dma_len;
            packets = packets + 1;
            m_ecn = m_ecn + ce;
            if ((state & FLOW_PREV_VALID) != 0) {
                ts_t prev_last_ts;
                flow_prev_last_ts.read(prev_last_ts, slot);
                gap = meta.now - prev_last_ts;
            }
            state = (state | FLOW_MSG_OPEN) & ~FLOW_PENDING;
            keep = true;
            msg_first_ts.write(slot, first_ts);
            msg_first_psn.write(slot, first_psn);
            msg_bytes.write(slot, bytes);
            msg_gap.write(slot, gap);
        } else if (open && !earlier) {
            msg_first_ts.read(first_ts, slot);
            first_psn = open_first;
            msg_bytes.read(bytes, slot);
            msg_gap.read(gap, slot);
            msg_packets.read(packets, slot);
            msg_retransmitted.read(m_retx, slot);
            msg_ecn_ce.read(m_ecn, slot);
            packets = packets + 1;
            m_retx = m_retx + retx;
            m_ecn = m_ecn + ce;
            keep = true;
        } else if (!open && !starts && (held || (!pending && is_new && !late))) {
            // No message open: a packet of a message whose FIRST has not been
            // seen (yet). It waits for that FIRST; when the message's end or
            // the next message's start comes first, the FIRST was never seen
            // here: the held packets count for the flow only (straddled).
            if (pending) {
                msg_packets.read(packets, slot);
                msg_retransmitted.read(m_retx, slot);
                msg_ecn_ce.read(m_ecn, slot);
            } else {
                // The lowest PSN its message can have: one after the highest
                // PSN seen before it, at most PSN_WINDOW - 1 behind it (the window).
                msg_first_psn.write(slot, ahead >= PSN_WINDOW ? psn - (PSN_WINDOW - 1) : psn - ahead + 1);
                state = state | FLOW_PENDING;
            }
            packets = packets + 1;
            m_retx = m_retx + retx;
            m_ecn = m_ecn + ce;
            keep = true;
            if (ends && is_new) {
                x_packets = x_packets + packets;
                x_retx = x_retx + m_retx;
                x_ecn = x_ecn + m_ecn;
                n_straddled = n_straddled + 1;
                meta.stat.straddled = true;
                state = state & ~(FLOW_PENDING | FLOW_PREV_VALID);
                keep = false;
                outside = true;
            }
        } else {
            // Outside any message: a retransmission after the last PSN, a
            // late packet of a message already ended, or a late start.
            x_packets = x_packets + 1;
            x_retx = x_retx + retx;
            x_ecn = x_ecn + ce;
            outside = true;
        }

        if (ends && is_new && !earlier && (state & FLOW_MSG_OPEN) != 0) {
            bit<32> cidx;
            HASH_INDEX(cidx, PAIR_SLOTS, { meta.src_key, meta.dst_key });
            ipv4_addr_t c_src;
            ipv4_addr_t c_dst;
            bit<32> cnp;
            pair_cnp_src.read(c_src, cidx);
            pair_cnp_dst.read(c_dst, cidx);
            pair_cnp.read(cnp, cidx);
            if (c_src == meta.src_key && c_dst == meta.dst_key) {
                pair_cnp.write(cidx, 0);
            } else {
                cnp = 0;  // the slot counts for another pair
            }

            meta.stat.message = true;
            if (msg_digests) {
                meta.digest_kind = DIGEST_MSG;
            }
#ifndef DIGESTS_COMPACT
            meta.msg_digest.mode = meta.cfg.mode;
#endif
            meta.msg_digest.flags = (dg_msg_flags_t)(((state & FLOW_PREV_VALID) != 0) ? MSG_FLAG_GAP_VALID : 8w0);
            meta.msg_digest.src = meta.src_key;
            meta.msg_digest.dst = meta.dst_key;
            meta.msg_digest.dest_qp = qp;
            meta.msg_digest.first_psn = first_psn;
            meta.msg_digest.last_psn = psn;
            meta.msg_digest.bytes = bytes;
            meta.msg_digest.packets = (dg_count_t)packets;
            meta.msg_digest.retransmitted = (dg_count_t)m_retx;
            meta.msg_digest.ecn_ce = (dg_count_t)m_ecn;
#ifndef DIGESTS_COMPACT
            meta.msg_digest.first_ts = first_ts;
#endif
            meta.msg_digest.fct_ns = (dg_ns_t)(meta.now - first_ts);
            bool unflowed;
            histograms.apply(meta.src_key, meta.dst_key, qp, meta.now - first_ts, unflowed);
            if (unflowed) {
                meta.msg_digest.flags = meta.msg_digest.flags | (dg_msg_flags_t)MSG_FLAG_HIST_UNFLOWED;
            }
            meta.msg_digest.gap_ns = (dg_ns_t)gap;
            meta.msg_digest.extra_packets = (dg_count_t)x_packets;
            meta.msg_digest.extra_retransmitted = (dg_count_t)x_retx;
#ifndef DIGESTS_COMPACT
            meta.msg_digest.extra_ecn_ce = x_ecn;
#endif
            meta.msg_digest.straddled = (dg_straddled_t)n_straddled;
            meta.msg_digest.cnp = (dg_count_t)cnp;
            state = (state & ~FLOW_MSG_OPEN) | FLOW_PREV_VALID;
            flow_prev_last_ts.write(slot, meta.now);
            x_packets = 0;
            x_retx = 0;
            x_ecn = 0;
            n_straddled = 0;
        } else {
            if (keep) {
                msg_packets.write(slot, packets);
                msg_retransmitted.write(slot, m_retx);
                msg_ecn_ce.write(slot, m_ecn);
            }
            if (outside && !msg_digests) {
                // Summary mode, a flow outside the watchlist: no record of it is made.
                x_packets = 0;
                x_retx = 0;
                x_ecn = 0;
                n_straddled = 0;
            } else if (outside && meta.digest_kind == DIGEST_NONE) {
                // Flow packets only, no message (packets and bytes 0, which
                // no message digest has): what went to the flow's figures is
                // reported now, in the interval it arrived in, not with the
                // flow's next message (there may be none). At most one per
                // packet counted outside a message; none on a path that keeps
                // order without loss. Where another digest took this packet,
                // the figures ride on the flow's next digest.
                meta.digest_kind = DIGEST_MSG;
#ifndef DIGESTS_COMPACT
                meta.msg_digest.mode = meta.cfg.mode;
#endif
                meta.msg_digest.flags = 0;
                meta.msg_digest.src = meta.src_key;
                meta.msg_digest.dst = meta.dst_key;
                meta.msg_digest.dest_qp = qp;
                meta.msg_digest.first_psn = psn;
                meta.msg_digest.last_psn = psn;
                meta.msg_digest.bytes = 0;
                meta.msg_digest.packets = 0;
                meta.msg_digest.retransmitted = 0;
                meta.msg_digest.ecn_ce = 0;
#ifndef DIGESTS_COMPACT
                meta.msg_digest.first_ts = meta.now;
#endif
                meta.msg_digest.fct_ns = 0;
                meta.msg_digest.gap_ns = 0;
                meta.msg_digest.extra_packets = (dg_count_t)x_packets;
                meta.msg_digest.extra_retransmitted = (dg_count_t)x_retx;
#ifndef DIGESTS_COMPACT
                meta.msg_digest.extra_ecn_ce = x_ecn;
#endif
                meta.msg_digest.straddled = (dg_straddled_t)n_straddled;
                meta.msg_digest.cnp = 0;
                x_packets = 0;
                x_retx = 0;
                x_ecn = 0;
                n_straddled = 0;
            }
        }

        flow_state.write(slot, state);
        flow_last_ts.write(slot, meta.now);
        flow_max_psn.write(slot, max_psn);
        flow_seen.write(slot, seen);
        extra_packets.write(slot, x_packets);
        extra_retransmitted.write(slot, x_retx);
        extra_ecn_ce.write(slot, x_ecn);
        straddled.write(slot, n_straddled);
    }
}

#endif
