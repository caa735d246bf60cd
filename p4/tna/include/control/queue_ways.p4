// Queue pairs, TNA build (included in the IoTracker control of
// io_tracker.p4, after its queue pair registers): the second way of each
// map on Tofino 2, the learn of way 0 on either chip.
//
// Tofino 1: one way. A learn writes its entry (newest wins) and says
// whether the entry held this pairing before (pair_new).
//
// Tofino 2: two ways per map, as in the v1model build (queue_pairs.p4).
// Way 0 is queue_by_host / queue_by_target, way 1 queue_by_host_1 /
// queue_by_target_1, QUEUE_SLOTS entries each, in stages after way 0.
// Way 1's index is a CRC-32 of the same fields as way 0's CRC-16: for keys
// that differ in one field (the QPs of one host and target), a CRC-16 of the
// fields in another order is way 0's remainder times a constant, so keys
// that collide in all 16 bits of way 0 would collide in way 1 too. An entry
// is (QP, peer QP | found), checked on its QP number as with one way.
//  - Learn: way 0 takes the pairing when its entry holds the same QP
//    (updated in place) or is empty; otherwise way 1 takes it, whatever it
//    holds (a collision: the pairing there goes). A pairing is new (its
//    digest, IO_EVENT_QUEUE_PAIR) when the entry that takes it did not hold
//    it before.
//  - Find: way 0, then way 1 when way 0 did not have the QP.
// Entries are never cleared by the data plane, so a QP held in way 1 finds
// way 0's entry taken by another whenever it is learned again, and is
// updated in way 1 in place.
#ifndef __QUEUE_WAYS__
#define __QUEUE_WAYS__

#if __TARGET_TOFINO__ == 2
// Way 0's learn answers the register's predicate (below), which way 1 reads.
#define BY_HOST_LEARN_0 host_way0 = by_host_learn0.execute(BY_HOST_IDX)
#define BY_TARGET_LEARN_0 target_way0 = by_target_learn0.execute(BY_TARGET_IDX)
// The PSN map leaves stage 4 to way 0 of both maps (their memories).
#define PSN_STAGE 5
#else
#define BY_HOST_LEARN_0 pair_new = by_host_learn.execute(BY_HOST_IDX)
#define BY_TARGET_LEARN_0 by_target_learn.execute(BY_TARGET_IDX)
#define PSN_STAGE 4
#endif

#if __TARGET_TOFINO__ == 2
    // Way 0's learn: predicate (this QP, empty, this peer), one-hot on
    // bit (this QP) + 2 (empty) + 4 (this peer); the entry is written when it
    // holds this QP or is empty.
    //   0x01, 0x10  another QP: way 1 learns;
    //   0x02, 0x04  new in way 0 (another peer, or empty);
    //   0x20        this very pairing: not new.
    bit<8> host_way0;
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<8>>(queue_by_host) by_host_learn0 = {
        void apply(inout pair_t value, out bit<8> rv) {
            rv = this.predicate(value.lo == (hqp & 0x00FFFFFF), value.lo == 0, value.hi == word);
            if (value.lo == (hqp & 0x00FFFFFF) || value.lo == 0) {
                value.lo = hqp & 0x00FFFFFF;
                value.hi = word;
            }
        }
    };
    // Predicate (this QP, empty): 0x1 another QP (way 1 learns), 0x2 this
    // QP, 0x4 empty.
    bit<4> target_way0;
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<4>>(queue_by_target) by_target_learn0 = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == (word & 0x00FFFFFF), value.lo == 0);
            if (value.lo == (word & 0x00FFFFFF) || value.lo == 0) {
                value.lo = word & 0x00FFFFFF;
                value.hi = hqp | WORD_FOUND;
            }
        }
    };

    // Way 1: the one-way learn (the entry is written; 1 when it did not
    // hold this pairing) and find.
    Hash<bit<32>>(HashAlgorithm_t.CRC32) by_host_idx1;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) by_target_idx1;
#define BY_HOST_IDX1 by_host_idx1.get({ meta.io_digest.host, meta.io_digest.target, hqp[23:0] })[QUEUE_SLOT_BITS-1:0]
#define BY_TARGET_IDX1 by_target_idx1.get({ meta.io_digest.host, meta.io_digest.target, word[23:0] })[QUEUE_SLOT_BITS-1:0]

    Register<pair_t, bit<QUEUE_SLOT_BITS>>(QUEUE_SLOTS, {0, 0}) queue_by_host_1;
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<1>>(queue_by_host_1) by_host_learn1 = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo == (hqp & 0x00FFFFFF) && value.hi == word) { rv = 0; } else { rv = 1; }
            value.lo = hqp & 0x00FFFFFF;
            value.hi = word;
        }
    };
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<32>>(queue_by_host_1) by_host_find1 = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == hqp) { rv = value.hi; } else { rv = 0; }
        }
    };
    Register<pair_t, bit<QUEUE_SLOT_BITS>>(QUEUE_SLOTS, {0, 0}) queue_by_target_1;
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<32>>(queue_by_target_1) by_target_learn1 = {
        void apply(inout pair_t value) {
            value.lo = word & 0x00FFFFFF;
            value.hi = hqp | WORD_FOUND;
        }
    };
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<32>>(queue_by_target_1) by_target_find1 = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == word) { rv = value.hi; } else { rv = 0; }
        }
    };

    // By host QP, way 1: a response that way 0 did not pair finds; a learn
    // that way 0 did not take learns; a learn way 0 took new is new.
    @hidden action by_host_find1_a() { pword_h = by_host_find1.execute(BY_HOST_IDX1); }
    @hidden action by_host_learn1_a() { pair_new = by_host_learn1.execute(BY_HOST_IDX1); }
    @hidden action by_host_new0() { pair_new = 1; }
    @stage(5)
    @hidden table queue_host1_tbl {
        key = {
            pkt_class: ternary;
            pword_h[30:30]: ternary @name("found");
            host_way0: ternary @name("way0");
        }
        actions = { by_host_find1_a; by_host_learn1_a; by_host_new0; NoAction; }
        const entries = {
            (IO_PKT_RSP, 0, _): by_host_find1_a();
            (_, _, 0x01 &&& 0x01): by_host_learn1_a();
            (_, _, 0x10 &&& 0x10): by_host_learn1_a();
            (_, _, 0x02 &&& 0x02): by_host_new0();
            (_, _, 0x04 &&& 0x04): by_host_new0();
            (_, _, 0x40 &&& 0x40): by_host_new0();
        }
        const default_action = NoAction();
        size = 8;
    }
    // By target QP, way 1: a command that way 0 did not pair finds; a learn
    // that way 0 did not take learns.
    @hidden action by_target_find1_a() { pword_t = by_target_find1.execute(BY_TARGET_IDX1); }
    @hidden action by_target_learn1_a() { by_target_learn1.execute(BY_TARGET_IDX1); }
    @stage(6)
    @hidden table queue_target1_tbl {
        key = {
            pkt_class: ternary;
            pword_t[30:30]: ternary @name("found");
            target_way0: ternary @name("way0");
        }
        actions = { by_target_find1_a; by_target_learn1_a; NoAction; }
        const entries = {
            (IO_PKT_CMD, 0, _): by_target_find1_a();
            (_, _, 0x1 &&& 0x1): by_target_learn1_a();
        }
        const default_action = NoAction();
        size = 2;
    }
#endif

#endif
