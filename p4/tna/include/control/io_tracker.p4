// NVMe-over-RoCE I/O tracking (SPEC §3), TNA build: the algorithm of
// p4/include/control/io_tracker.p4 laid out for Tofino 1's 12 ingress
// stages, 4 stateful ALUs each, shared with egress. Each register is
// accessed by exactly one table, keyed on the packet's class and on what the
// registers before it answered (their predicates), so that one logical
// table, one stateful ALU and one stage serve every kind of packet:
//
//   stage 0-2  classification (one const table), NVMe byte swaps, slot and
//              fingerprints (hash units), vantage (one const table on the
//              port roles), watchlist
//   stage 3    R_Key map (and RDMA CM entries) and its references; slot time
//   stage 4    queue pairs (by host QP, by target QP); PSN map (Tofino 2: queue_ways.p4)
//   stage 5    QP map; a response's slot from its queue pair
//   stage 6    owner
//   stage 7    check (the command's reference and PSN)
//   stage 8    info and length; command time
//   stage 9    data times (the last one's: whether it ends its message)
//   stage 10-  durations, digest
//
// An I/O is (host, target, target QP, CID) as in the v1model build. Its slot
// is a hash of that key. A command's reference is (a 16-bit fingerprint of
// its command: host, target, target QP, PSN[15:0]) ++ (its slot); the maps
// carry references, so that a data packet addresses the slot registers
// with the reference it finds and checks it against the slot's (no hash on
// the data path). Slot owners are 32-bit fingerprints of their keys (the
// v1model build compares whole keys; the results differ only on a
// fingerprint collision). R_Key and PSN map entries carry a "data pending"
// bit, cleared by the first data packet that finds them: a command (READ
// REQUEST) that replaces a pending entry of another key counts
// ioref_overwritten, as in the v1model build.
//
// Queues pair (SPEC §3) from their first keyed transfer, or from the RDMA
// CM exchange that set them up: a CM REQ records its communication ID and
// the host's QP in the R_Key map (the ID in the key's place), the REP that
// answers it finds the host's QP and names the target's.
#ifndef __IO_TRACKER__
#define __IO_TRACKER__

#ifdef TNA_HISTOGRAMS
#include "histograms.p4"
#endif

#if IO_SLOT_BITS > 14
#error "a reference keeps the slot in bits 13:0 (bit 15 is the PSN map's pending bit)"
#endif

// The info word of a slot: info (31:24) ++ the command's SGL length as on
// the wire (23:0, little-endian). Info bits 1:0 are the command's vantage.
const bit<8> IO_INFO_DATA_SEEN = 0x04;
const bit<8> IO_INFO_RR_SEEN = 0x08;
const bit<8> IO_INFO_IN_CAPSULE = 0x10;
const bit<8> IO_INFO_WRITE = 0x40;
const bit<8> IO_INFO_VALID = 0x80;

// An R_Key map word: pending (bit 31) ++ the I/O's target QP (23:0); an
// RDMA CM entry's is the host's QP, never pending. QP
// numbers of reliable connections are never 0 (QP 0 and 1 are the
// management QPs), so a word of 0 is "not found", and a QP number is its own
// key (an empty entry holds 0 and answers 0). A queue pair word is the peer QP.
const bit<32> IOREF_PENDING = 0x80000000;
// Bit 30 of a stored R_Key map word and of a queue pair word: found (a
// table then tests one bit, not a whole word against 0).
const bit<32> WORD_FOUND = 0x40000000;
// A reference: fingerprint (31:16) ++ slot (15:0, IO_SLOT_BITS of them); in
// the PSN map, bit 15 is its "data pending" bit. 0 is "not found".
const bit<32> REF_PENDING = 0x8000;
// Bit 14 of a data packet's reference, as the R_Key map finds it and the
// PSN and QP maps carry it: the message is not the I/O's last
// RDMA operation (its RETH's address and length end before the command's
// SGL does; nvmet moves a large I/O in several operations). Taken off
// before the slot's check: the packet's end is then not the I/O's last
// data time.
const bit<32> REF_MORE = 0x4000;

const bit<8> IO_PKT_NONE = 0;
const bit<8> IO_PKT_CMD = 1;
const bit<8> IO_PKT_RSP = 2;
const bit<8> IO_PKT_WRITE_DATA = 3;
const bit<8> IO_PKT_READ_REQ = 4;
const bit<8> IO_PKT_READ_RESP = 5;
const bit<8> IO_PKT_CM_REQ = 6;   // RDMA CM REQ: host -> target, names the host's QP
const bit<8> IO_PKT_CM_REP = 7;   // RDMA CM REP: target -> host, names the target's
const bit<8> IO_PKT_OTHER_CMD = 8;  // a command not measured (Flush, Write Zeroes, Dataset Management, ...): it takes its CID
const bit<8> IO_PKT_OTHER_IO = 9;   // a read or write in another SGL form (a descriptor list): an I/O not measured, counted

// Register predicates (the stateful ALU's condition outputs, one-hot): for
// this.predicate(a, b), bit 0 = neither, 1 = a only, 2 = b only, 3 = both.
// Owner (a = this key, b = held by a live I/O): free or stale, taken now
// (bits 0-1); this I/O's key, still open (bit 3); another live I/O (bit 2).
// (Taken is two entries, bit 0 or bit 1: a mask on bits 3:2 alone would
// also match 0, a command that never claimed.)
#define OWNER_TAKEN_NEW 4w0b0001 &&& 4w0b0001
#define OWNER_TAKEN_OLD 4w0b0010 &&& 4w0b0010
#define OWNER_SAME 4w0b1000 &&& 4w0b1000
#define OWNER_OTHER 4w0b0100 &&& 4w0b0100
// One condition (a): bit 1 when it held, bit 0 when not.
#define PRED_TRUE 4w0b0010 &&& 4w0b0010
#define PRED_FALSE 4w0b0001 &&& 4w0b0001
// Two conditions (a, b): both held.
#define PRED_BOTH 4w0b1000 &&& 4w0b1000

control IoTracker(in headers_t hdr, inout local_metadata_t meta) {
    // Set by the classification and the steps before the registers. The
    // metadata starts at zero (@pa_auto_init_metadata), which is every
    // value's "none".
    bit<8> pkt_class;
    bool in_capsule;
    bool starts_message;  // a data packet that opens a QP map entry
    bit<8> info_w;        // info a command writes, or the bit a data packet sets
    bit<32> nowx;         // a data packet: its time when it ends its message (LAST or ONLY), else 0
    bit<4> cmd_flags;     // a command's digest flags known from its capsule
    bit<32> info_cmd;     // a command's info word (info_w | vantage ++ length)
    bit<32> info_set;     // a data packet's info bit, in 31:24
    bool watched;
    cid_t cid;
    rkey_t sgl_key;
    bit<32> sgl_end;      // command: the SGL's address + length; keyed data: the RETH's (low 32 bits)
    bit<32> sgl_len;      // command: the SGL's length
    bit<32> thr_c;        // meta.now_c - io timeout, clamped at 0
    bit<32> cref;         // the I/O's reference (command: its own; data: found)
    bit<32> fp;           // fingerprint of the I/O's key
    bit<32> qp_fp;        // data packet: fingerprint of its message's (src, dst, QP)

    // Register outputs, each tested by a later stage.
    // The I/O's target QP: a command's and a READ RESPONSE's own (their
    // BTH), found in the R_Key map by a keyed transfer (0 when not found);
    // a CM REP's; a CM REQ's is the host's QP, for the map.
    bit<32> word;
    // The I/O's host QP: a response's and a target's data packet's own
    // (their BTH), the one a CM REQ named (found by its REP; 0 when not).
    bit<32> hqp;
    bit<32> pword_t;      // command: the queue's host QP, 0 when unknown
    bit<32> pword_h;      // response: the queue's target QP, 0 when unknown
    bit<32> live;         // command: 1 when the slot's time is live, 2 when stale
    bit<4> owner;         // command: owner predicate
    bit<4> closed;        // response: owner predicate (bit 1: the slot held this I/O)
    bit<4> check;         // command: the slot holds this very command; data: its command
    bit<1> overwritten;
    bit<1> pair_new;
    bit<32> infow;        // the slot's info word before this packet
    bit<32> first_age;    // response: the ages (now - time) of the data times
    bit<32> rr_first_age;
    bit<32> last_ts;      // response: the last data packet's time, 0 when it did not end its message
    bool last_lost;       // response: its I/O's own last data packet was not seen
#ifdef TNA_HISTOGRAMS
    bool hist_rsp;        // response: its figures are counted in the histograms
    bit<32> dal;          // response: DAL (in-capsule: e2e; else to + from the data)
    IoHistograms() histograms;
#endif

    // Byte swaps of the little-endian NVMe fields, in the hash units
    // (identity): an action cannot gather a field's bytes in reverse order.
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) cmd_cid_swap;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) rsp_cid_swap;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) sgl_key_swap;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) cmd_len_swap;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) rsp_len_swap;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) status_swap;
    // The digests' QP numbers through the hash units (identity): a 24-bit
    // digest member is packed in 8- and 16-bit containers, and a plain copy
    // would impose that split on every value it flows into.
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) cmd_host_qp_copy;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) rsp_target_qp_copy;

    // Fingerprints of the I/O's key (CRC-32) and of its command (CRC-16),
    // slots and indexes (CRC-16).
    Hash<bit<32>>(HashAlgorithm_t.CRC32) fp_cmd_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) fp_rsp_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) fpc_hash;
    Hash<bit<IO_SLOT_BITS>>(HashAlgorithm_t.CRC16) slot_cmd;
    Hash<bit<IO_SLOT_BITS>>(HashAlgorithm_t.CRC16) slot_rsp;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) learn_idx;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) rkey_idx;
#ifdef TNA_RKEY_FP
    Hash<bit<32>>(HashAlgorithm_t.CRC32) rkey_fp_hash;
#endif
    Hash<bit<16>>(HashAlgorithm_t.CRC16) psn_idx;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) qp_idx;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) qp_fp_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) by_host_idx;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) by_target_idx;

    // Indexes, hashed in the stage of the register they address (a local
    // variable would cost a stage of its own).
#define RKEY_IDX rkey_idx.get({ meta.io_digest.host, meta.io_digest.target, sgl_key })[IOREF_SLOT_BITS-1:0]
#define PSN_IDX psn_idx.get({ meta.io_digest.host, meta.io_digest.target, word[23:0], hdr.bth.psn })[IOREF_SLOT_BITS-1:0]
#define BY_TARGET_IDX by_target_idx.get({ meta.io_digest.host, meta.io_digest.target, word[23:0] })[QUEUE_SLOT_BITS-1:0]
#define QP_IDX qp_idx.get({ meta.src_key, meta.dst_key, hdr.bth.dest_qp })[IOREF_SLOT_BITS-1:0]
#define BY_HOST_IDX by_host_idx.get({ meta.io_digest.host, meta.io_digest.target, hqp[23:0] })[QUEUE_SLOT_BITS-1:0]
#define SLOT cref[IO_SLOT_BITS-1:0]

    // Host-target pairs already reported by a learn digest in this epoch:
    // (host, target), indexed by (host, target, epoch).
    Register<pair_t, bit<LEARN_SLOT_BITS>>(LEARN_SLOTS, {0, 0}) learned_pair;
    RegisterAction<pair_t, bit<LEARN_SLOT_BITS>, bit<1>>(learned_pair) learned_swap = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo == meta.io_digest.host && value.hi == meta.io_digest.target) { rv = 0; } else { rv = 1; }
            value.lo = meta.io_digest.host;
            value.hi = meta.io_digest.target;
        }
    };

    // R_Key map: (R_Key, word); indexed by (host, target, R_Key). With
    // TNA_RKEY_FP the key is the fingerprint of (R_Key, host, target).
    Register<pair_t, bit<IOREF_SLOT_BITS>>(IOREF_SLOTS, {0, 0}) rkey_map;
    // Command: 1 when it replaces a pending entry of another key.
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<1>>(rkey_map) rkey_claim = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo != sgl_key && (int<32>)value.hi < 0) { rv = 1; } else { rv = 0; }
            value.lo = sgl_key;
            value.hi = word | (IOREF_PENDING | WORD_FOUND);
        }
    };
    // RDMA CM REQ: its communication ID and the host's QP (not pending: a
    // REQ that nobody answers is no lost data).
    // A REQ never takes a pending entry (an I/O whose data is still to come).
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(rkey_map) cm_claim = {
        void apply(inout pair_t value) {
            if ((int<32>)value.hi >= 0) {
                value.lo = sgl_key;
                value.hi = word | WORD_FOUND;
            }
        }
    };
    // Data: the word (no longer pending) when the entry holds this key, else 0.
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(rkey_map) rkey_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            rv = 0;
            if (value.lo == sgl_key) {
                value.hi = value.hi & ~IOREF_PENDING;
                rv = value.hi;
            }
        }
    };
    // The R_Key's I/O reference: (the SGL's end, reference), beside the
    // map and written with it by every command: the map's key check (the
    // word's found bit) says whether the reference is this R_Key's. A
    // keyed transfer whose RETH ends before the SGL's end gets it with
    // REF_MORE. (The stored bit is set again by every transfer: the ALU
    // gives a computed value only when it writes it.)
    Register<pair_t, bit<IOREF_SLOT_BITS>>(IOREF_SLOTS, {0, 0}) rkey_map_ref;
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(rkey_map_ref) rkey_ref_claim = {
        void apply(inout pair_t value) {
            value.lo = sgl_end;
            value.hi = cref;
        }
    };
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(rkey_map_ref) rkey_ref_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == sgl_end) {
                value.hi = value.hi & ~REF_MORE;
            } else {
                value.hi = value.hi | REF_MORE;
            }
            rv = value.hi;
        }
    };
    // The SGL's end: its address's low 32 bits + its length, both
    // little-endian, byte-swapped by the stateful ALUs of two one-entry
    // registers (a register's input crossbar takes bytes in any order; the
    // early stages' hash units are taken), run by the capsule's and the
    // class's tables (the early stages' logical tables are taken too), and
    // summed with the fingerprint.
    Register<bit<32>, bit<1>>(1, 0) sgl_addr_swap;
    RegisterAction<bit<32>, bit<1>, bit<32>>(sgl_addr_swap) sgl_addr_calc = {
        void apply(inout bit<32> value, out bit<32> rv) {
            value = hdr.nvme_sqe.sgl_addr[39:32] ++ hdr.nvme_sqe.sgl_addr[47:40]
                ++ hdr.nvme_sqe.sgl_addr[55:48] ++ hdr.nvme_sqe.sgl_addr[63:56];
            rv = value;
        }
    };
    Register<bit<32>, bit<1>>(1, 0) sgl_len_swap;
    RegisterAction<bit<32>, bit<1>, bit<32>>(sgl_len_swap) sgl_len_calc = {
        void apply(inout bit<32> value, out bit<32> rv) {
            value = 8w0 ++ hdr.nvme_sqe.sgl_len_le[7:0] ++ hdr.nvme_sqe.sgl_len_le[15:8] ++ hdr.nvme_sqe.sgl_len_le[23:16];
            rv = value;
        }
    };

    // PSN map (READ REQUEST -> first READ RESPONSE): (PSN, reference with
    // the pending bit); indexed by (host, target, target QP, PSN).
    Register<pair_t, bit<IOREF_SLOT_BITS>>(IOREF_SLOTS, {0, 0}) psn_map;
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<1>>(psn_map) psn_claim = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo != (bit<32>)hdr.bth.psn && (value.hi & REF_PENDING) != 0) { rv = 1; } else { rv = 0; }
            value.lo = (bit<32>)hdr.bth.psn;
            value.hi = cref | REF_PENDING;
        }
    };
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(psn_map) psn_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            rv = 0;
            if (value.lo == (bit<32>)hdr.bth.psn) {
                value.hi = value.hi & ~REF_PENDING;
                rv = value.hi;
            }
        }
    };

    // QP map (a message's first packet -> the rest): (fingerprint of (src,
    // dst, QP), reference, 0 when the first packet found no I/O); indexed
    // by (src, dst, QP). The whole key's fingerprint, not the QP number: a
    // packet of another message that shares the index and the QP number
    // would be counted as this I/O's data.
    Register<pair_t, bit<IOREF_SLOT_BITS>>(IOREF_SLOTS, {0, 0}) qp_map;
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(qp_map) qp_write = {
        void apply(inout pair_t value) {
            value.lo = qp_fp;
            value.hi = cref;
        }
    };
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(qp_map) qp_none = {
        void apply(inout pair_t value) {
            value.lo = qp_fp;
            value.hi = 0;
        }
    };
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(qp_map) qp_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == qp_fp) { rv = value.hi; } else { rv = 0; }
        }
    };
    // Queue pairs (SPEC §3), indexed by (host, target, QP): by host QP (its
    // tag; the target QP's), by target QP (its tag; the host QP's); way 0 (way 1: queue_ways.p4).
    Register<pair_t, bit<QUEUE_SLOT_BITS>>(QUEUE_SLOTS, {0, 0}) queue_by_host;
    // Learn: 1 when the entry did not hold this pairing (the host QP with
    // this target QP) before.
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<1>>(queue_by_host) by_host_learn = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo == (hqp & 0x00FFFFFF) && value.hi == word) { rv = 0; } else { rv = 1; }
            value.lo = hqp & 0x00FFFFFF;
            value.hi = word;
        }
    };
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<32>>(queue_by_host) by_host_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == hqp) { rv = value.hi; } else { rv = 0; }
        }
    };
    Register<pair_t, bit<QUEUE_SLOT_BITS>>(QUEUE_SLOTS, {0, 0}) queue_by_target;
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<32>>(queue_by_target) by_target_learn = {
        void apply(inout pair_t value) {
            value.lo = word & 0x00FFFFFF;
            value.hi = hqp | WORD_FOUND;
        }
    };
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<32>>(queue_by_target) by_target_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == word) { rv = value.hi; } else { rv = 0; }
        }
    };
#include "queue_ways.p4"
    // The I/O slots. The time of the last command in the slot (coarse
    // clock): 1 when within the timeout, else 2.
    Register<bit<32>, bit<IO_SLOT_BITS>>(IO_SLOTS, 0) io_time;
    RegisterAction<bit<32>, bit<IO_SLOT_BITS>, bit<32>>(io_time) time_touch = {
        void apply(inout bit<32> value, out bit<32> rv) {
            if ((int<32>)(value - thr_c) > 0) { rv = 1; } else { rv = 2; }
            value = meta.now_c;
        }
    };
    // Owner: (fingerprint of the key, 2 while an I/O holds the slot).
    Register<pair_t, bit<IO_SLOT_BITS>>(IO_SLOTS, {0, 0}) io_owner;
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<4>>(io_owner) owner_claim = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == fp, (int<32>)(value.hi - live) > 0);
            if (!((int<32>)(value.hi - live) > 0)) {
                value.lo = fp;
                value.hi = 2;
            }
        }
    };
    // Response: the slot freed when it holds this I/O (predicate bit 1).
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<4>>(io_owner) owner_close = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == fp);
            if (value.lo == fp) {
                value.lo = 0;
                value.hi = 0;
            }
        }
    };
    // Check: (the command's reference, its PSN).
    Register<pair_t, bit<IO_SLOT_BITS>>(IO_SLOTS, {0, 0}) io_check;
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<4>>(io_check) check_cmd = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == cref);
            value.lo = cref;
            value.hi = (bit<32>)hdr.bth.psn;
        }
    };
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<16>>(io_check) check_psn = {
        void apply(inout pair_t value, out bit<16> rv) { rv = (bit<16>)value.hi; }
    };
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<4>>(io_check) check_data = {
        void apply(inout pair_t value, out bit<4> rv) { rv = this.predicate(value.lo == cref, cref != 0); }
    };
    // Info word: written by a command, taken (and cleared) by its response,
    // OR-ed by data packets; each returns the word before.
    REG32(io_info, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_info, IO_SLOT_BITS, info_write, info_cmd)
    RA_SWAP(io_info, IO_SLOT_BITS, info_take, 0)
    RegisterAction<bit<32>, bit<IO_SLOT_BITS>, bit<32>>(io_info) info_or = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = value | info_set; }
    };
    REG32(io_cmd_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_cmd_ts, IO_SLOT_BITS, cmd_ts_write, meta.now32)
    RA_AGE(io_cmd_ts, IO_SLOT_BITS, cmd_ts_age, meta.now32)
    REG32(io_data_first_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_data_first_ts, IO_SLOT_BITS, first_ts_write, meta.now32)
    RA_AGE(io_data_first_ts, IO_SLOT_BITS, first_ts_age, meta.now32)
    // The last data packet: (its time when it ends its message, LAST or
    // ONLY, else 0; its PSN). A message's first packet writes it; a later
    // one only when its PSN is the next: one that overtook an earlier
    // packet of its message, or that came before its own message's first
    // on a reordered path (found through the QP map entry of the QP's
    // previous message), or a resent one, is not the I/O's last (nor,
    // rarely, the one after PSN 2^24 - 1). A FIRST or MIDDLE recorded last
    // (the rest of its message not found or out of order) leaves the I/O
    // without its own last data packet: its response reads 0 instead of
    // the time, and DAL is absent (IO_FLAG_LAST_LOST), as in the v1model
    // build. (A pair register returns no difference: the age is taken in
    // the response's next stage.)
    Register<pair_t, bit<IO_SLOT_BITS>>(IO_SLOTS, {0, 0}) io_data_last_ts;
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<32>>(io_data_last_ts) last_ts_write = {
        void apply(inout pair_t value) { value.lo = nowx; value.hi = (bit<32>)hdr.bth.psn; } };
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<32>>(io_data_last_ts) last_ts_next = {
        void apply(inout pair_t value) {
            if ((bit<32>)hdr.bth.psn - value.hi == 1) {
                value.lo = nowx;
                value.hi = (bit<32>)hdr.bth.psn;
            }
        }
    };
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<32>>(io_data_last_ts) last_ts_read = {
        void apply(inout pair_t value, out bit<32> rv) { rv = value.lo; } };
    REG32(io_rr_first_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_rr_first_ts, IO_SLOT_BITS, rr_first_ts_write, meta.now32)
    RA_AGE(io_rr_first_ts, IO_SLOT_BITS, rr_first_ts_age, meta.now32)

    // ---- Classification: the packet's class, direction and what it
    // writes, from its headers in one lookup. ----
    @hidden action cmd(bit<8> o, bit<8> i, bool capsule, bit<4> flags) {
        pkt_class = IO_PKT_CMD;
        info_w = i;
        in_capsule = capsule;
        cmd_flags = flags;
        word = (bit<32>)hdr.bth.dest_qp;
        meta.io_digest.host = meta.src_key;
        meta.io_digest.target = meta.dst_key;
        meta.io_evo.op = o[1:0];
        sgl_end = sgl_addr_calc.execute(0);
    }
    @hidden action other_cmd(bit<8> c) {
        pkt_class = c;
        meta.io_digest.host = meta.src_key;
        meta.io_digest.target = meta.dst_key;
    }
    @hidden action rsp() {
        pkt_class = IO_PKT_RSP;
        hqp = (bit<32>)hdr.bth.dest_qp;
        meta.io_digest.host = meta.dst_key;
        meta.io_digest.target = meta.src_key;
    }
    // Data towards the host (WRITE: read data; READ REQUEST from the target).
    @hidden action to_host(bit<8> c, bit<32> i, bool starts) {
        pkt_class = c;
        info_set = i;
        starts_message = starts;
        hqp = (bit<32>)hdr.bth.dest_qp;
        meta.io_digest.host = meta.dst_key;
        meta.io_digest.target = meta.src_key;
    }
    // READ RESPONSE (write data from the host).
    @hidden action to_target(bool starts) {
        pkt_class = IO_PKT_READ_RESP;
        info_set = IO_INFO_RR_SEEN ++ 24w0;
        word = (bit<32>)hdr.bth.dest_qp;
        starts_message = starts;
        meta.io_digest.host = meta.src_key;
        meta.io_digest.target = meta.dst_key;
    }
    // A data packet that ends its message (LAST, ONLY): its time for the last data time.
    @hidden action to_host_end(bit<8> c, bit<32> i, bool starts) {
        to_host(c, i, starts);
        nowx = meta.now32;
    }
    @hidden action to_target_end(bool starts) {
        to_target(starts);
        nowx = meta.now32;
    }
    @hidden action cm_req() {
        pkt_class = IO_PKT_CM_REQ;
        watched = true;  // RDMA CM pairs queues whatever the watchlist and the vantage
        word = (bit<32>)hdr.cm_req.local_qpn;
        meta.io_digest.host = meta.src_key;
        meta.io_digest.target = meta.dst_key;
    }
    @hidden action cm_rep() {
        pkt_class = IO_PKT_CM_REP;
        watched = true;
        word = (bit<32>)hdr.cm_rep.local_qpn | WORD_FOUND;
        meta.io_digest.host = meta.dst_key;
        meta.io_digest.target = meta.src_key;
    }
    @stage(1)  // after the endpoint keys (endpoints.p4)
    @hidden table io_class {
        key = {
            hdr.cm_req.isValid(): ternary;
            hdr.cm_rep.isValid(): ternary;
            hdr.bth.opcode: ternary;
            hdr.nvme_sqe.isValid(): ternary;
            hdr.nvme_sqe.opc: ternary;
            hdr.nvme_sqe.sgl_type: ternary;
            hdr.nvme_cqe.isValid(): ternary;
            hdr.nvme_sqe.nsid: ternary;
        }
        actions = {
            cmd;
            other_cmd;
            rsp;
            to_host;
            to_host_end;
            to_target;
            to_target_end;
            cm_req;
            cm_rep;
            @defaultonly NoAction;
        }
        const entries = {
            (true, _, _, _, _, _, _, _): cm_req();
            (_, true, _, _, _, _, _, _): cm_rep();
            // A Read or Write names a namespace: NSID 0 or FFFFFFFFh is an
            // admin command's (Get Log Page is opcode 02h on the admin queue).
            (_, _, _, true, _, _, _, 0): other_cmd(IO_PKT_OTHER_CMD);
            (_, _, _, true, _, _, _, NVME_NSID_ALL): other_cmd(IO_PKT_OTHER_CMD);
            (_, _, _, true, NVME_OPC_READ, NVME_SGL_TYPE_KEYED, _, _): cmd(IO_OP_READ, IO_INFO_VALID, false, 0);
            (_, _, _, true, NVME_OPC_WRITE, NVME_SGL_TYPE_KEYED, _, _): cmd(IO_OP_WRITE, IO_INFO_VALID | IO_INFO_WRITE, false, 0);
            (_, _, _, true, NVME_OPC_WRITE, NVME_SGL_TYPE_DATA_BLOCK, _, _):
                cmd(IO_OP_WRITE, IO_INFO_VALID | IO_INFO_WRITE | IO_INFO_IN_CAPSULE, true, IO_FLAG_IN_CAPSULE[3:0]);
            (_, _, _, true, NVME_OPC_READ, _, _, _): other_cmd(IO_PKT_OTHER_IO);
            (_, _, _, true, NVME_OPC_WRITE, _, _, _): other_cmd(IO_PKT_OTHER_IO);
            (_, _, _, true, _, _, _, _): other_cmd(IO_PKT_OTHER_CMD);
            (_, _, _, _, _, _, true, _): rsp();
            (_, _, OP_WRITE_FIRST, _, _, _, _, _): to_host(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN ++ 24w0, true);
            (_, _, OP_WRITE_MIDDLE, _, _, _, _, _): to_host(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN ++ 24w0, false);
            (_, _, OP_WRITE_LAST, _, _, _, _, _): to_host_end(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN ++ 24w0, false);
            (_, _, OP_WRITE_LAST_IMM, _, _, _, _, _): to_host_end(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN ++ 24w0, false);
            (_, _, OP_WRITE_ONLY, _, _, _, _, _): to_host_end(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN ++ 24w0, true);
            (_, _, OP_WRITE_ONLY_IMM, _, _, _, _, _): to_host_end(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN ++ 24w0, true);
            (_, _, OP_READ_REQUEST, _, _, _, _, _): to_host(IO_PKT_READ_REQ, IO_INFO_DATA_SEEN ++ 24w0, false);
            (_, _, OP_READ_RESPONSE_FIRST, _, _, _, _, _): to_target(true);
            (_, _, OP_READ_RESPONSE_MIDDLE, _, _, _, _, _): to_target(false);
            (_, _, OP_READ_RESPONSE_LAST, _, _, _, _, _): to_target_end(false);
            (_, _, OP_READ_RESPONSE_ONLY, _, _, _, _, _): to_target_end(true);
        }
        const default_action = NoAction();
        size = 32;
    }

    // Vantage (SPEC §1): the compute side (the host's port) and the storage
    // side (the target's port) by the direction and the two ports' roles.
    @hidden action set_vantage(bit<8> v) {
        meta.io_evo.vantage = v[1:0];
        info_cmd[31:24] = info_w | v;
    }
    @stage(2)
    @hidden table io_vantage {
        key = {
            pkt_class: ternary;
            meta.ingress_role: ternary;
            meta.egress_role: ternary;
        }
        actions = {
            set_vantage;
            @defaultonly NoAction;
        }
        const entries = {
            // RDMA CM: whatever the ports (it gives no digest).
            (IO_PKT_CM_REQ, _, _): set_vantage(VANTAGE_C | VANTAGE_S);
            (IO_PKT_CM_REP, _, _): set_vantage(VANTAGE_C | VANTAGE_S);
            // From the host: commands and READ RESPONSEs.
            (IO_PKT_CMD, ROLE_COMPUTE, ROLE_STORAGE): set_vantage(VANTAGE_C | VANTAGE_S);
            (IO_PKT_CMD, ROLE_COMPUTE, _): set_vantage(VANTAGE_C);
            (IO_PKT_CMD, _, ROLE_STORAGE): set_vantage(VANTAGE_S);
            // Commands not measured (IO_PKT_OTHER_CMD and IO_PKT_OTHER_IO).
            (IO_PKT_OTHER_CMD &&& 0xfe, ROLE_COMPUTE, ROLE_STORAGE): set_vantage(VANTAGE_C | VANTAGE_S);
            (IO_PKT_OTHER_CMD &&& 0xfe, ROLE_COMPUTE, _): set_vantage(VANTAGE_C);
            (IO_PKT_OTHER_CMD &&& 0xfe, _, ROLE_STORAGE): set_vantage(VANTAGE_S);
            (IO_PKT_READ_RESP, ROLE_COMPUTE, ROLE_STORAGE): set_vantage(VANTAGE_C | VANTAGE_S);
            (IO_PKT_READ_RESP, ROLE_COMPUTE, _): set_vantage(VANTAGE_C);
            (IO_PKT_READ_RESP, _, ROLE_STORAGE): set_vantage(VANTAGE_S);
            // From the target: responses, read data, READ REQUESTs.
            (_, ROLE_STORAGE, ROLE_COMPUTE): set_vantage(VANTAGE_C | VANTAGE_S);
            (_, _, ROLE_COMPUTE): set_vantage(VANTAGE_C);
            (_, ROLE_STORAGE, _): set_vantage(VANTAGE_S);
        }
        const default_action = NoAction();
        size = 16;
    }

    // `gen`: the pair's window occurrence, a new value (never 0) each time a
    // rotation puts the pair back into the window.
    action watch(bit<8> gen) {
        watched = true;
        meta.io_digest.gen = gen;
    }

    table io_watchlist {
        key = {
            meta.io_digest.host: exact @name("host");
            meta.io_digest.target: exact @name("target");
        }
        actions = {
            watch;
            NoAction;
        }
        const default_action = NoAction();
        size = IO_WATCHLIST_SIZE;
    }

    // ---- Values from the headers (one hash result per action: an action
    // takes at most 32 bits from the hash units). ----
    // A command: its CID as on the wire (it keys the I/O), the digest
    // members its capsule gives, the length part of its info word.
    @hidden action take_cmd() {
        cid = hdr.nvme_sqe.cid_le;
        info_cmd[23:0] = hdr.nvme_sqe.sgl_len_le;
        meta.io_evo.event = (bit<2>)(IO_EVENT_CMD);
        meta.io_digest.target_qp = hdr.bth.dest_qp;
        meta.io_digest.cmd_psn = hdr.bth.psn[15:0];
        sgl_len = sgl_len_calc.execute(0);
    }
    @hidden action take_rsp() {
        cid = hdr.nvme_cqe.cid_le;
        meta.io_digest.host_qp = hdr.bth.dest_qp;
    }
    @hidden action cmd_digest_cid() {
        meta.io_digest.cid = cmd_cid_swap.get({ hdr.nvme_sqe.cid_le[7:0], hdr.nvme_sqe.cid_le[15:8] });
    }
    @hidden action rsp_digest_cid() {
        meta.io_digest.cid = rsp_cid_swap.get({ hdr.nvme_cqe.cid_le[7:0], hdr.nvme_cqe.cid_le[15:8] });
    }
    // CQE status, byte-swapped, the phase bit (bit 0 once swapped) cleared.
    @hidden action rsp_digest_status() {
        meta.io_digest.status = status_swap.get({ hdr.nvme_cqe.status_le[7:0], hdr.nvme_cqe.status_le[15:9], 1w0 });
    }
    @hidden action take_sgl_key() {
        sgl_key = sgl_key_swap.get({ hdr.nvme_sqe.sgl_key_le[7:0], hdr.nvme_sqe.sgl_key_le[15:8],
            hdr.nvme_sqe.sgl_key_le[23:16], hdr.nvme_sqe.sgl_key_le[31:24] });
    }
    // The SGL length as on the wire (little-endian, the low 3 bytes of an
    // in-capsule length): the register keeps it so, the digests get it swapped.
    @hidden action cmd_digest_bytes() {
        meta.io_digest.bytes = cmd_len_swap.get({ hdr.nvme_sqe.sgl_len_le[7:0], hdr.nvme_sqe.sgl_len_le[15:8],
            hdr.nvme_sqe.sgl_len_le[23:16] });
    }
#ifdef TNA_RKEY_FP
    // The R_Key map's key (TNA_RKEY_FP): a fingerprint of the R_Key (or the
    // communication ID) with the host and the target, so that two pairs
    // whose R_Keys are equal (identical hosts number their memory regions
    // alike) and whose entries share an index are not confused.
    @hidden action take_key_fp() { sgl_key = rkey_fp_hash.get({ sgl_key, meta.io_digest.host, meta.io_digest.target }); }
#endif
#ifdef TNA_RKEY_MIX
    // The R_Key map's key (TNA_RKEY_MIX): the R_Key (or the communication
    // ID) XOR the host's endpoint key (a command's and an RDMA CM REQ's
    // source, a keyed transfer's and a REP's destination), in stage 1, so
    // that two hosts' equal R_Keys (identical hosts number their memory
    // regions alike) differ in the map. A command's R_Key is byte-swapped
    // and mixed by one XOR32 hash (the same hash distribution as the plain
    // swap), the others by an ALU XOR; the index hashes the mixed key.
    Hash<bit<32>>(HashAlgorithm_t.XOR32) sgl_key_mix;
    @hidden action mix_cmd() {
        sgl_key = sgl_key_mix.get({ hdr.nvme_sqe.sgl_key_le[7:0], hdr.nvme_sqe.sgl_key_le[15:8],
            hdr.nvme_sqe.sgl_key_le[23:16], hdr.nvme_sqe.sgl_key_le[31:24], meta.src_key });
    }
    @hidden action mix_rkey() { sgl_key = hdr.reth.rkey ^ meta.dst_key; }
    @hidden action mix_cm_req() { sgl_key = hdr.cm_req.local_comm_id ^ meta.src_key; }
    @hidden action mix_cm_rep() { sgl_key = hdr.cm_rep.remote_comm_id ^ meta.dst_key; }
    @hidden table key_tbl {
        key = {
            hdr.nvme_sqe.isValid(): ternary;
            hdr.reth.isValid(): ternary;
            hdr.cm_req.isValid(): ternary;
            hdr.cm_rep.isValid(): ternary;
        }
        actions = { mix_cmd; mix_rkey; mix_cm_req; mix_cm_rep; @defaultonly NoAction; }
        const entries = {
            (true, _, _, _): mix_cmd();
            (false, true, _, _): mix_rkey();
            (false, false, true, _): mix_cm_req();
            (false, false, false, true): mix_cm_rep();
        }
        const default_action = NoAction();
        size = 4;
    }
    @hidden action take_rkey() { sgl_end = hdr.reth.va[31:0] + hdr.reth.dma_len; }
    @hidden action take_cm_req() { }
    @hidden action take_cm_rep() { }
#else
    @hidden action take_rkey() {
        sgl_key = hdr.reth.rkey;
        sgl_end = hdr.reth.va[31:0] + hdr.reth.dma_len;
    }
    // The R_Key map keeps RDMA CM entries too, keyed by the communication ID.
    @hidden action take_cm_req() { sgl_key = hdr.cm_req.local_comm_id; }
    @hidden action take_cm_rep() { sgl_key = hdr.cm_rep.remote_comm_id; }
#endif
    // The capsule's, the R_Key's or the RDMA CM message's fields, one
    // table (in the order of the header checks): stage 0's logical tables
    // are shared with the egress flow tracker's first tables.
    @hidden table take_tbl {
        key = {
            hdr.nvme_sqe.isValid(): ternary;
            hdr.nvme_cqe.isValid(): ternary;
            hdr.reth.isValid(): ternary;
            hdr.cm_req.isValid(): ternary;
            hdr.cm_rep.isValid(): ternary;
        }
        actions = { take_cmd; take_rsp; take_rkey; take_cm_req; take_cm_rep; @defaultonly NoAction; }
        const entries = {
            (true, _, _, _, _): take_cmd();
            (false, true, _, _, _): take_rsp();
            (false, false, true, _, _): take_rkey();
            (false, false, false, true, _): take_cm_req();
            (false, false, false, false, true): take_cm_rep();
        }
        const default_action = NoAction();
        size = 8;
    }
    // A command's reference and key fingerprint (its host and target are the
    // packet's source and destination, read before the class is known); a
    // response's slot and fingerprint.
    @hidden action take_slot_cmd() {
        cref[15:0] = (bit<16>)slot_cmd.get({ meta.src_key, meta.dst_key, hdr.bth.dest_qp, cid });
        thr_c = meta.now_c |-| meta.cfg.io_timeout_c;  // saturating: 0 until the clock passes the timeout
    }
    @hidden action take_fpc_cmd() {
        cref[31:16] = fpc_hash.get({ meta.src_key, meta.dst_key, hdr.bth.dest_qp, hdr.bth.psn[15:0] });
    }
    @hidden action take_fp_cmd() {
        fp = fp_cmd_hash.get({ meta.src_key, meta.dst_key, hdr.bth.dest_qp, cid });
        sgl_end = sgl_end + sgl_len;  // every packet: sgl_len is 0 but for a command
    }
    @hidden action take_slot_rsp() {
        cref[15:0] = (bit<16>)slot_rsp.get({ meta.io_digest.host, meta.io_digest.target, pword_h[23:0], cid });
    }
    @hidden action take_fp_rsp() { fp = fp_rsp_hash.get({ meta.io_digest.host, meta.io_digest.target, pword_h[23:0], cid }); }
    @hidden action cmd_digest_host_qp() { meta.io_digest.host_qp = cmd_host_qp_copy.get({ pword_t[23:0] }); }
    @hidden action rsp_digest_target_qp() { meta.io_digest.target_qp = rsp_target_qp_copy.get({ pword_h[23:0] }); }

    // ---- One table per register, keyed on the class and the answers
    // before it. ----

    // R_Key map and references: commands claim, WRITE FIRST / ONLY and READ
    // REQUEST find (the key names the I/O).
    @hidden action rkey_claim_a() { overwritten = rkey_claim.execute(RKEY_IDX); }
    @hidden action rkey_find_a() { word = rkey_find.execute(RKEY_IDX); }
    @hidden action cm_claim_a() { cm_claim.execute(RKEY_IDX); }
    // A CM REP finds its REQ's host QP (the queue pairs in the next stage).
    @hidden action cm_find_a() { hqp = rkey_find.execute(RKEY_IDX); }
    @stage(3)
    @hidden table rkey_tbl {
        key = { pkt_class: ternary; in_capsule: ternary; hdr.reth.isValid(): ternary; }
        actions = { rkey_claim_a; rkey_find_a; cm_claim_a; cm_find_a; NoAction; }
        const entries = {
            (IO_PKT_CMD, false, _): rkey_claim_a();
            (IO_PKT_CM_REQ, _, _): cm_claim_a();
            (IO_PKT_CM_REP, _, _): cm_find_a();
            (IO_PKT_WRITE_DATA, _, true): rkey_find_a();
            (IO_PKT_READ_REQ, _, true): rkey_find_a();
        }
        const default_action = NoAction();
        size = 8;
    }
    @hidden action rkey_ref_claim_a() { rkey_ref_claim.execute(RKEY_IDX); }
    @hidden action rkey_ref_find_a() { cref = rkey_ref_find.execute(RKEY_IDX); }
    @hidden action no_ref() { cref = 0; }
    @stage(3)
    @hidden table rkey_ref_tbl {
        key = { pkt_class: ternary; in_capsule: ternary; hdr.reth.isValid(): ternary; }
        actions = { rkey_ref_claim_a; rkey_ref_find_a; no_ref; NoAction; }
        const entries = {
            (IO_PKT_CMD, false, _): rkey_ref_claim_a();
            (IO_PKT_WRITE_DATA, _, true): rkey_ref_find_a();
            (IO_PKT_READ_REQ, _, true): rkey_ref_find_a();
            // A data packet without its RETH (cut short) finds nothing.
            (IO_PKT_WRITE_DATA, _, false): no_ref();
            (IO_PKT_READ_REQ, _, false): no_ref();
        }
        const default_action = NoAction();
        size = 4;
    }

    // Queue pairs: commands find the host QP, responses the target QP; a
    // keyed transfer from the target (its QP, the host's) pairs with its
    // command's (the target's).
    @hidden action by_target_find_a() {
        pword_t = by_target_find.execute(BY_TARGET_IDX);
    }
    // A learn also names the host's QP for the pairing's digest (below).
    @hidden action by_target_learn_a() {
        BY_TARGET_LEARN_0;
        pword_t = hqp;
    }
    @stage(4)
    @hidden table queue_target_tbl {
        key = { pkt_class: ternary; hdr.reth.isValid(): ternary; word[30:30]: ternary @name("found"); hqp[30:30]: ternary @name("cm_found"); }
        actions = { by_target_find_a; by_target_learn_a; NoAction; }
        const entries = {
            (IO_PKT_CMD, _, _, _): by_target_find_a();
            (IO_PKT_CM_REP, _, _, 1): by_target_learn_a();
            (IO_PKT_WRITE_DATA, true, 0, _): NoAction();
            (IO_PKT_READ_REQ, true, 0, _): NoAction();
            (IO_PKT_WRITE_DATA, true, _, _): by_target_learn_a();
            (IO_PKT_READ_REQ, true, _, _): by_target_learn_a();
        }
        const default_action = NoAction();
        size = 8;
    }
    @hidden action by_host_find_a() { pword_h = by_host_find.execute(BY_HOST_IDX); }
    // A learn also names the target's QP for the pairing's digest (below).
    @hidden action by_host_learn_a() {
        BY_HOST_LEARN_0;
        pword_h = word;
    }
    @stage(4)
    @hidden table queue_host_tbl {
        key = { pkt_class: ternary; hdr.reth.isValid(): ternary; word[30:30]: ternary @name("found"); hqp[30:30]: ternary @name("cm_found"); }
        actions = { by_host_find_a; by_host_learn_a; NoAction; }
        const entries = {
            (IO_PKT_RSP, _, _, _): by_host_find_a();
            (IO_PKT_CM_REP, _, _, 1): by_host_learn_a();
            (IO_PKT_WRITE_DATA, true, 0, _): NoAction();
            (IO_PKT_READ_REQ, true, 0, _): NoAction();
            (IO_PKT_WRITE_DATA, true, _, _): by_host_learn_a();
            (IO_PKT_READ_REQ, true, _, _): by_host_learn_a();
        }
        const default_action = NoAction();
        size = 8;
    }

    // PSN map: a READ REQUEST of a found I/O claims, the first READ RESPONSE finds.
    @hidden action psn_claim_a() { overwritten = psn_claim.execute(PSN_IDX); }
    @hidden action psn_find_a() { cref = psn_find.execute(PSN_IDX); }
    @stage(PSN_STAGE)
    @hidden table psn_tbl {
        key = { pkt_class: ternary; starts_message: ternary; word[30:30]: ternary @name("found"); }
        actions = { psn_claim_a; psn_find_a; NoAction; }
        const entries = {
            (IO_PKT_READ_REQ, _, 0): NoAction();
            (IO_PKT_READ_REQ, _, _): psn_claim_a();
            (IO_PKT_READ_RESP, true, _): psn_find_a();
        }
        const default_action = NoAction();
        size = 4;
    }

    // The QP map entry's fingerprint, in the stage before it (the early
    // stages' hash distribution is taken).
    @hidden action take_qp_fp() {
        qp_fp = qp_fp_hash.get({ meta.src_key, meta.dst_key, hdr.bth.dest_qp });
    }
    @stage(4)
    @hidden table qp_fp_tbl {
        actions = { take_qp_fp; }
        const default_action = take_qp_fp();
        size = 1;
    }
    // QP map: a message's first packet writes the reference it found (0 when
    // none), the others find it.
    @hidden action qp_write_a() { qp_write.execute(QP_IDX); }
    @hidden action qp_none_a() { qp_none.execute(QP_IDX); }
    @hidden action qp_find_a() { cref = qp_find.execute(QP_IDX); }
    // One table with the response's slot: both write the reference, and
    // only one table may write a field in a stage.
    @stage(5)
    @hidden table qp_tbl {
        key = { pkt_class: ternary; starts_message: ternary; word[30:30]: ternary @name("found"); }
        actions = { qp_write_a; qp_none_a; qp_find_a; take_slot_rsp; NoAction; }
        const entries = {
            (IO_PKT_RSP, _, _): take_slot_rsp();
            // A first packet whose R_Key the map does not hold: no reference.
            (IO_PKT_WRITE_DATA, true, 0): qp_none_a();
            (IO_PKT_WRITE_DATA, true, _): qp_write_a();
            (IO_PKT_READ_RESP, true, _): qp_write_a();
            (IO_PKT_WRITE_DATA, false, _): qp_find_a();
            (IO_PKT_READ_RESP, false, _): qp_find_a();
        }
        const default_action = NoAction();
        size = 8;
    }


    // A keyed transfer whose R_Key the map does not hold has no reference;
    // a message that is not its I/O's last operation (REF_MORE) is its
    // I/O's data, but its end is not the I/O's last data time.
    @hidden action ref_none() { cref = 0; }
    @hidden action ref_more() {
        cref = cref & ~REF_MORE;
        nowx = 0;
    }
    @hidden table ref_tbl {
        key = { pkt_class: ternary; hdr.reth.isValid(): ternary; word[30:30]: ternary @name("found"); cref[14:14]: ternary @name("more"); }
        actions = { ref_none; ref_more; NoAction; }
        const entries = {
            (IO_PKT_WRITE_DATA, true, 0, _): ref_none();
            (IO_PKT_READ_REQ, true, 0, _): ref_none();
            (IO_PKT_WRITE_DATA, _, _, 1): ref_more();
            (IO_PKT_READ_REQ, _, _, 1): ref_more();
            (IO_PKT_READ_RESP, _, _, 1): ref_more();
        }
        const default_action = NoAction();
        size = 8;
    }

    // Owner: a command claims the slot (unless its in-capsule data has no
    // queue pairing), a response of a paired queue closes it. A command not
    // measured closes it too when an I/O of its key holds it: NVMe reuses a
    // CID only after its completion, so that I/O lost its response, and this
    // command's completion must not close it.
    @hidden action owner_claim_a() { owner = owner_claim.execute(SLOT); }
    @hidden action owner_close_a() { closed = owner_close.execute(SLOT); }
    @hidden action untracked_capsule() { meta.stat.io_outcome = IO_OUTCOME_UNTRACKED; }
    @hidden action unpaired_rsp() {
        meta.stat.io_outcome = IO_OUTCOME_UNPAIRED;
        meta.digest_kind = DIGEST_IO;
        meta.io_evo.event = (bit<2>)(IO_EVENT_UNPAIRED_RSP);
    }
    @stage(6)
    @hidden table owner_tbl {
        key = {
            pkt_class: ternary;
            in_capsule: ternary;
            pword_t[30:30]: ternary @name("host_qp_found");
            pword_h[30:30]: ternary @name("target_qp_found");
        }
        actions = { owner_claim_a; owner_close_a; untracked_capsule; unpaired_rsp; NoAction; }
        const entries = {
            // In-capsule data needs the queue's pairing (SPEC §3).
            (IO_PKT_CMD, true, 0, _): untracked_capsule();
            (IO_PKT_CMD, _, _, _): owner_claim_a();
            (IO_PKT_RSP, _, _, 0): unpaired_rsp();
            (IO_PKT_RSP, _, _, _): owner_close_a();
            (IO_PKT_OTHER_CMD &&& 0xfe, _, _, _): owner_close_a();
        }
        const default_action = NoAction();
        size = 8;
    }

    // Check: a command that owns the slot records itself (and learns
    // whether it is a retransmission); a response that closed it reads the
    // command's PSN; a data packet checks that its command still holds it.
    @hidden action check_cmd_a() { check = check_cmd.execute(SLOT); }
    @hidden action check_rsp_a() {
        meta.io_digest.cmd_psn = check_psn.execute(SLOT);
        meta.stat.io_outcome = IO_OUTCOME_RSP;
        meta.digest_kind = DIGEST_IO;
        meta.io_evo.event = (bit<2>)(IO_EVENT_RSP);
    }
    @hidden action check_data_a() { check = check_data.execute(SLOT); }
    @hidden action untracked_cmd() { meta.stat.io_outcome = IO_OUTCOME_UNTRACKED; }
    @hidden action unmatched_rsp() { meta.stat.io_outcome = IO_OUTCOME_UNMATCHED; }
    @hidden action closed_other() { meta.stat.io_outcome = IO_OUTCOME_CLOSED; }
    @stage(7)
    @hidden table check_tbl {
        key = { pkt_class: ternary; owner: ternary; closed: ternary; }
        actions = { check_cmd_a; check_rsp_a; check_data_a; untracked_cmd; unmatched_rsp; closed_other; NoAction; }
        const entries = {
            (IO_PKT_CMD, OWNER_OTHER, _): untracked_cmd();
            (IO_PKT_CMD, OWNER_TAKEN_NEW, _): check_cmd_a();
            (IO_PKT_CMD, OWNER_TAKEN_OLD, _): check_cmd_a();
            (IO_PKT_CMD, OWNER_SAME, _): check_cmd_a();
            (IO_PKT_RSP, _, PRED_TRUE): check_rsp_a();
            (IO_PKT_RSP, _, PRED_FALSE): unmatched_rsp();
            (IO_PKT_OTHER_IO, _, _): untracked_cmd();
            (IO_PKT_OTHER_CMD, _, PRED_TRUE): closed_other();
            (IO_PKT_WRITE_DATA, _, _): check_data_a();
            (IO_PKT_READ_REQ, _, _): check_data_a();
            (IO_PKT_READ_RESP, _, _): check_data_a();
        }
        const default_action = NoAction();
        size = 16;
    }

    // Info: a command counts unless it retransmits the slot's command (the
    // first capsule counts); a response takes the word; a data packet of
    // the slot's command sets its bit.
    @hidden action info_new() {
        info_write.execute(SLOT);
        meta.stat.io_outcome = IO_OUTCOME_CMD;
        meta.digest_kind = DIGEST_IO;
        meta.io_digest.flags = cmd_flags;
    }
    @hidden action info_replaced() {
        info_write.execute(SLOT);
        meta.stat.io_outcome = IO_OUTCOME_REPLACED;
        meta.digest_kind = DIGEST_IO;
        meta.io_digest.flags = cmd_flags | IO_FLAG_REPLACED[3:0];
    }
    @hidden action info_take_a() { infow = info_take.execute(SLOT); }
    @hidden action info_or_a() { infow = info_or.execute(SLOT); }
    @stage(8)
    @hidden table info_tbl {
        key = { pkt_class: ternary; owner: ternary; check: ternary; closed: ternary; }
        actions = { info_new; info_replaced; info_take_a; info_or_a; NoAction; }
        const entries = {
            (IO_PKT_CMD, OWNER_TAKEN_NEW, _, _): info_new();
            (IO_PKT_CMD, OWNER_TAKEN_OLD, _, _): info_new();
            (IO_PKT_CMD, OWNER_SAME, PRED_FALSE, _): info_replaced();
            (IO_PKT_RSP, _, _, PRED_TRUE): info_take_a();
            (IO_PKT_WRITE_DATA, _, PRED_BOTH, _): info_or_a();
            (IO_PKT_READ_REQ, _, PRED_BOTH, _): info_or_a();
            (IO_PKT_READ_RESP, _, PRED_BOTH, _): info_or_a();
        }
        const default_action = NoAction();
        size = 8;
    }
    @hidden action cmd_ts_write_a() { cmd_ts_write.execute(SLOT); }
    @hidden action cmd_ts_age_a() { meta.io_digest.e2e_ns = cmd_ts_age.execute(SLOT); }
    @stage(8)
    @hidden table cmd_ts_tbl {
        key = { pkt_class: ternary; owner: ternary; check: ternary; closed: ternary; }
        actions = { cmd_ts_write_a; cmd_ts_age_a; NoAction; }
        const entries = {
            (IO_PKT_CMD, OWNER_TAKEN_NEW, _, _): cmd_ts_write_a();
            (IO_PKT_CMD, OWNER_TAKEN_OLD, _, _): cmd_ts_write_a();
            (IO_PKT_CMD, OWNER_SAME, PRED_FALSE, _): cmd_ts_write_a();
            (IO_PKT_RSP, _, _, PRED_TRUE): cmd_ts_age_a();
        }
        const default_action = NoAction();
        size = 4;
    }

    // Data times, by the info the slot had before the packet (bits 31:24:
    // VALID 0x80, WRITE 0x40, RR_SEEN 0x08, DATA_SEEN 0x04); a response of
    // the slot reads their ages.
    @hidden action first_write_a() { first_ts_write.execute(SLOT); }
    @hidden action first_age_a() { first_age = first_ts_age.execute(SLOT); }
    @stage(9)
    @hidden table first_ts_tbl {
        key = { pkt_class: ternary; check: ternary; closed: ternary; infow[31:24]: ternary @name("info"); }
        actions = { first_write_a; first_age_a; NoAction; }
        const entries = {
            (IO_PKT_RSP, _, PRED_TRUE, _): first_age_a();
            // Read data: the first packet of a read.
            (IO_PKT_WRITE_DATA, PRED_BOTH, _, 0x80 &&& 0xC4): first_write_a();
            // READ REQUEST: the first of a write.
            (IO_PKT_READ_REQ, PRED_BOTH, _, 0xC0 &&& 0xC4): first_write_a();
        }
        const default_action = NoAction();
        size = 4;
    }
    @hidden action last_write_a() { last_ts_write.execute(SLOT); }
    @hidden action last_next_a() { last_ts_next.execute(SLOT); }
    @hidden action last_read_a() { last_ts = last_ts_read.execute(SLOT); }
    @stage(9)
    @hidden table last_ts_tbl {
        key = { pkt_class: ternary; check: ternary; closed: ternary; infow[31:24]: ternary @name("info"); starts_message: ternary; }
        actions = { last_write_a; last_next_a; last_read_a; NoAction; }
        const entries = {
            // From the last data packet: read data (read), READ RESPONSE (write).
            (IO_PKT_RSP, _, PRED_TRUE, 0x48 &&& 0x48, _): last_read_a();
            (IO_PKT_RSP, _, PRED_TRUE, 0x04 &&& 0x44, _): last_read_a();
            (IO_PKT_WRITE_DATA, PRED_BOTH, _, 0x80 &&& 0xC0, true): last_write_a();
            (IO_PKT_WRITE_DATA, PRED_BOTH, _, 0x80 &&& 0xC0, false): last_next_a();
            (IO_PKT_READ_RESP, PRED_BOTH, _, 0xC0 &&& 0xC0, true): last_write_a();
            (IO_PKT_READ_RESP, PRED_BOTH, _, 0xC0 &&& 0xC0, false): last_next_a();
        }
        const default_action = NoAction();
        size = 8;
    }
    @hidden action rr_first_write_a() { rr_first_ts_write.execute(SLOT); }
    @hidden action rr_first_age_a() { rr_first_age = rr_first_ts_age.execute(SLOT); }
    @stage(9)
    @hidden table rr_first_ts_tbl {
        key = { pkt_class: ternary; check: ternary; closed: ternary; infow[31:24]: ternary @name("info"); }
        actions = { rr_first_write_a; rr_first_age_a; NoAction; }
        const entries = {
            (IO_PKT_RSP, _, PRED_TRUE, _): rr_first_age_a();
            (IO_PKT_READ_RESP, PRED_BOTH, _, 0xC0 &&& 0xC8): rr_first_write_a();
        }
        const default_action = NoAction();
        size = 2;
    }

    // A response's digest members from the slot's info (one entry per
    // info value: the members are constants of the entry), and its durations
    // (differences of the ages): to the first data packet when one was seen;
    // DPL (write: rr_first - rreq) when both were.
    @hidden action rsp_done(bit<4> f, bit<2> v, bit<2> o) {
        meta.io_digest.flags = f;
        meta.io_evo.vantage = v;
        meta.io_evo.op = o;
#ifdef TNA_HISTOGRAMS
        hist_rsp = true;
#endif
    }
    @hidden action rsp_done_data(bit<4> f, bit<2> v, bit<2> o) {
        rsp_done(f, v, o);
        meta.io_digest.to_data_ns = meta.io_digest.e2e_ns - first_age;
    }
    @hidden action rsp_done_dpl(bit<4> f, bit<2> v, bit<2> o) {
        rsp_done_data(f, v, o);
        meta.io_digest.host_prep_ns = first_age - rr_first_age;
    }
    // Info: VALID 0x80, WRITE 0x40, IN_CAPSULE 0x10, RR_SEEN 0x08,
    // DATA_SEEN 0x04, vantage 0x03; flags: IN_CAPSULE 4, RR_SEEN 2, DATA_SEEN 1.
    @stage(10)
    @hidden table rsp_done_tbl {
        key = { closed: ternary; infow[31:24]: ternary @name("info"); }
        actions = { rsp_done; rsp_done_data; rsp_done_dpl; NoAction; }
        const entries = {
            (PRED_TRUE, 0xC1 &&& 0xDF): rsp_done(4w0, 2w1, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xC2 &&& 0xDF): rsp_done(4w0, 2w2, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xC3 &&& 0xDF): rsp_done(4w0, 2w3, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xC5 &&& 0xDF): rsp_done_data(4w1, 2w1, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xC6 &&& 0xDF): rsp_done_data(4w1, 2w2, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xC7 &&& 0xDF): rsp_done_data(4w1, 2w3, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xC9 &&& 0xDF): rsp_done(4w2, 2w1, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xCA &&& 0xDF): rsp_done(4w2, 2w2, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xCB &&& 0xDF): rsp_done(4w2, 2w3, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xCD &&& 0xDF): rsp_done_dpl(4w3, 2w1, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xCE &&& 0xDF): rsp_done_dpl(4w3, 2w2, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xCF &&& 0xDF): rsp_done_dpl(4w3, 2w3, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xD1 &&& 0xDF): rsp_done(4w4, 2w1, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xD2 &&& 0xDF): rsp_done(4w4, 2w2, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xD3 &&& 0xDF): rsp_done(4w4, 2w3, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xD5 &&& 0xDF): rsp_done_data(4w5, 2w1, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xD6 &&& 0xDF): rsp_done_data(4w5, 2w2, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xD7 &&& 0xDF): rsp_done_data(4w5, 2w3, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xD9 &&& 0xDF): rsp_done(4w6, 2w1, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xDA &&& 0xDF): rsp_done(4w6, 2w2, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xDB &&& 0xDF): rsp_done(4w6, 2w3, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xDD &&& 0xDF): rsp_done_dpl(4w7, 2w1, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xDE &&& 0xDF): rsp_done_dpl(4w7, 2w2, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0xDF &&& 0xDF): rsp_done_dpl(4w7, 2w3, IO_OP_WRITE[1:0]);
            (PRED_TRUE, 0x81 &&& 0xDF): rsp_done(4w0, 2w1, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x82 &&& 0xDF): rsp_done(4w0, 2w2, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x83 &&& 0xDF): rsp_done(4w0, 2w3, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x85 &&& 0xDF): rsp_done_data(4w1, 2w1, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x86 &&& 0xDF): rsp_done_data(4w1, 2w2, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x87 &&& 0xDF): rsp_done_data(4w1, 2w3, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x89 &&& 0xDF): rsp_done(4w2, 2w1, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x8A &&& 0xDF): rsp_done(4w2, 2w2, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x8B &&& 0xDF): rsp_done(4w2, 2w3, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x8D &&& 0xDF): rsp_done_data(4w3, 2w1, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x8E &&& 0xDF): rsp_done_data(4w3, 2w2, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x8F &&& 0xDF): rsp_done_data(4w3, 2w3, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x91 &&& 0xDF): rsp_done(4w4, 2w1, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x92 &&& 0xDF): rsp_done(4w4, 2w2, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x93 &&& 0xDF): rsp_done(4w4, 2w3, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x95 &&& 0xDF): rsp_done_data(4w5, 2w1, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x96 &&& 0xDF): rsp_done_data(4w5, 2w2, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x97 &&& 0xDF): rsp_done_data(4w5, 2w3, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x99 &&& 0xDF): rsp_done(4w6, 2w1, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x9A &&& 0xDF): rsp_done(4w6, 2w2, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x9B &&& 0xDF): rsp_done(4w6, 2w3, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x9D &&& 0xDF): rsp_done_data(4w7, 2w1, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x9E &&& 0xDF): rsp_done_data(4w7, 2w2, IO_OP_READ[1:0]);
            (PRED_TRUE, 0x9F &&& 0xDF): rsp_done_data(4w7, 2w3, IO_OP_READ[1:0]);
        }
        const default_action = NoAction();
        size = 64;
    }
    // From the last data packet (read data, READ RESPONSE) when it ends its
    // message; else (its time read as 0) no from_data_ns (DAL absent),
    // IO_FLAG_LAST_LOST, counted as ioref_overwritten (as in the v1model
    // build).
    @hidden action rsp_from_data() {
        meta.io_digest.from_data_ns = meta.now32 - last_ts;
    }
    @hidden action rsp_last_lost() {
        meta.stat.ioref_overwritten = true;
        last_lost = true;
    }
    @stage(10)
    @hidden table rsp_last_tbl {
        key = { closed: ternary; infow[31:24]: ternary @name("info"); last_ts: ternary; }
        actions = { rsp_from_data; rsp_last_lost; NoAction; }
        const entries = {
            // Read with data seen, write with READ RESPONSEs seen.
            (PRED_TRUE, 0x04 &&& 0x44, 0): rsp_last_lost();
            (PRED_TRUE, 0x48 &&& 0x48, 0): rsp_last_lost();
            (PRED_TRUE, 0x04 &&& 0x44, _): rsp_from_data();
            (PRED_TRUE, 0x48 &&& 0x48, _): rsp_from_data();
        }
        const default_action = NoAction();
        size = 4;
    }
    @hidden action rsp_flag_last_lost() {
        meta.io_digest.flags = meta.io_digest.flags | IO_FLAG_LAST_LOST[3:0];
    }
#ifdef TNA_HISTOGRAMS
    // A response's DAL, for the histograms (its record has DAL exactly when
    // the histogram counts it: docs/histograms.md).
    @hidden action dal_capsule() { dal = meta.io_digest.e2e_ns; }
    @hidden action dal_data() { dal = meta.io_digest.to_data_ns + meta.io_digest.from_data_ns; }
    @hidden table dal_tbl {
        key = { meta.io_digest.flags: ternary @name("flags"); }
        actions = { dal_capsule; dal_data; }
        const entries = {
            IO_FLAG_IN_CAPSULE[3:0] &&& IO_FLAG_IN_CAPSULE[3:0]: dal_capsule();
        }
        const default_action = dal_data();
        size = 1;
    }
#endif
    @hidden action rsp_digest_bytes() {
        meta.io_digest.bytes = rsp_len_swap.get({ infow[7:0], infow[15:8], infow[23:16] });
    }

    // The learn filter and the slot time, in tables of their own (pinned).
    bit<1> learned;
    @hidden action learn_a() {
        learned = learned_swap.execute(learn_idx.get({ meta.io_digest.host, meta.io_digest.target, meta.cfg.epoch })[LEARN_SLOT_BITS-1:0]);
    }
#ifndef TNA_HISTOGRAMS
    @stage(7)
#endif
    @hidden table learn_tbl {
        actions = { learn_a; }
        const default_action = learn_a();
        size = 1;
    }
    // The slot's time, for every command (before its pairing is known); it
    // reads the command's reference before the maps rewrite it for data
    // packets (so it comes first in the block).
    @hidden action time_a() {
        live = time_touch.execute(SLOT);
    }
    @stage(3)
    @hidden table time_tbl {
        actions = { time_a; }
        const default_action = time_a();
        size = 1;
    }

#ifdef TNA_HISTOGRAMS
    // Summary mode, not watched: the digests that remain (docs/histograms.md).
    @hidden action summary_no_digest() { meta.digest_kind = DIGEST_NONE; }
    @hidden table summary_digest_tbl {
        key = {
            meta.digest_kind: exact @name("kind");
            meta.io_evo.event: ternary @name("event");
        }
        actions = { summary_no_digest; NoAction; }
        const entries = {
            (DIGEST_IO, (bit<2>)IO_EVENT_QUEUE_PAIR): NoAction();
            (DIGEST_IO, _): summary_no_digest();
        }
        const default_action = NoAction();
        size = 2;
    }
#endif

    // The digest members swapped from the capsule, off the trackers' path.
#ifdef TNA_RKEY_MIX
    // Left to the compiler, on Tofino 1 with the mixed R_Key, its hash takes
    // stage 1's and moves the flow tracker's into stage 2, where the I/O
    // slot's is then put off a stage.
    @stage(3)
#endif
    @hidden table digest_cid_tbl {
        key = { hdr.nvme_sqe.isValid(): exact; hdr.nvme_cqe.isValid(): exact; }
        actions = { cmd_digest_cid; rsp_digest_cid; @defaultonly NoAction; }
        const entries = {
            (true, false): cmd_digest_cid();
            (false, true): rsp_digest_cid();
        }
        const default_action = NoAction();
        size = 2;
    }
    @hidden table digest_bytes_tbl {
        key = { hdr.nvme_sqe.isValid(): exact; }
        actions = { cmd_digest_bytes; @defaultonly NoAction; }
        const entries = {
            true: cmd_digest_bytes();
        }
        const default_action = NoAction();
        size = 1;
    }
    @hidden table digest_status_tbl {
        key = { hdr.nvme_cqe.isValid(): exact; }
        actions = { rsp_digest_status; @defaultonly NoAction; }
        const entries = {
            true: rsp_digest_status();
        }
        const default_action = NoAction();
        size = 1;
    }

    // The map and queue statistics, late: the statistics bits share
    // containers, and two tables writing one container need two stages.
    @hidden action stat_refs() {
        meta.stat.ioref_overwritten = (bool)overwritten;
        meta.stat.queue_pair_learned = (bool)pair_new;
    }
    // A queue pairing learned (new in its entry) is sent to the exporter as
    // an IO_EVENT_QUEUE_PAIR digest (host, target, both QPs; event 0), on
    // the packet that learned it (a keyed transfer or a CM REP, which send
    // no other digest): the queue pair maps have one or two ways here, and an
    // entry keeps no addresses to report the pairing a colliding one takes,
    // so the exporter keeps every pairing, and attributes the responses of
    // a queue whose pairing the switch lost (IO_EVENT_UNPAIRED_RSP).
    @hidden action stat_refs_pair() {
        stat_refs();
        meta.digest_kind = DIGEST_IO;
    }
    @stage(9)
    @hidden table stat_refs_tbl {
        key = { pair_new: exact; }
        actions = { stat_refs; stat_refs_pair; }
        const entries = {
            1: stat_refs_pair();
        }
        const default_action = stat_refs();
        size = 2;
    }

    // The digest's QP from the queue pair, late (its crossbar bytes are
    // short in the owner's stage, and the data times' stage needs its hash
    // distribution for their indexes); one table each (24 bits of hash each).
    @stage(8)
    @hidden table digest_host_qp_tbl {
        key = { pkt_class: exact; }
        actions = { cmd_digest_host_qp; @defaultonly NoAction; }
        const entries = {
            IO_PKT_CMD: cmd_digest_host_qp();
            // A queue pairing learned (its digest).
            IO_PKT_WRITE_DATA: cmd_digest_host_qp();
            IO_PKT_READ_REQ: cmd_digest_host_qp();
            IO_PKT_CM_REP: cmd_digest_host_qp();
        }
        const default_action = NoAction();
        size = 4;
    }
    @stage(8)
    @hidden table digest_target_qp_tbl {
        key = { pkt_class: exact; }
        actions = { rsp_digest_target_qp; @defaultonly NoAction; }
        const entries = {
            IO_PKT_RSP: rsp_digest_target_qp();
            IO_PKT_WRITE_DATA: rsp_digest_target_qp();
            IO_PKT_READ_REQ: rsp_digest_target_qp();
            IO_PKT_CM_REP: rsp_digest_target_qp();
        }
        const default_action = NoAction();
        size = 4;
    }

    // No `return` in this block: a return becomes a flag that every later
    // step waits for (a stage each).

    apply {
        // Stage 0-1, for every packet: values taken from the headers through
        // the hash units, the class, the fingerprints.
        // The R_Key map's inputs are the same for every packet.
        take_tbl.apply();
#ifdef TNA_RKEY_MIX
        key_tbl.apply();
#else
        if (hdr.nvme_sqe.isValid()) {
            take_sgl_key();
        }
#endif
        if (hdr.bth.isValid() && meta.src_known && meta.dst_known) {  // measured (endpoints.p4)
            io_class.apply();
        }
        take_fp_cmd();
        take_fpc_cmd();
        digest_cid_tbl.apply();
        digest_bytes_tbl.apply();
        digest_status_tbl.apply();
        take_slot_cmd();

        // Stage 2: the vantage; the watchlist.
#ifdef TNA_RKEY_FP
        take_key_fp();
#endif
        if (pkt_class != IO_PKT_NONE && meta.cfg.mode != MODE_OFF) {
            io_vantage.apply();
        }
#ifdef TNA_HISTOGRAMS
        if (meta.cfg.mode == MODE_POLLING || meta.cfg.mode == MODE_SUMMARY) {
#else
        if (meta.cfg.mode == MODE_POLLING) {
#endif
            io_watchlist.apply();
        }

        if (meta.io_evo.vantage != 0 && meta.cfg.mode == MODE_POLLING && !watched) {
#ifndef TNA_HISTOGRAMS
            // Polling, not watched: report the host-target pair once per epoch.
            if (pkt_class == IO_PKT_CMD) {
                learn_tbl.apply();
                if (learned == 1) {
                    meta.digest_kind = DIGEST_LEARN;
                    meta.learn_digest.kind = LEARN_IO_PAIR;
                    meta.learn_digest.src = meta.io_digest.host;
                    meta.learn_digest.dst = meta.io_digest.target;
                    meta.learn_digest.dest_qp = 0;
                    meta.stat.learned = true;
                }
            }
#endif
            // (Tofino 2: the learn digest below, after the tracker.)
        } else if (meta.io_evo.vantage != 0) {  // full (and summary) mode, or watched (and RDMA CM)
            if (pkt_class == IO_PKT_CMD) {
                time_tbl.apply();  // before the maps rewrite the reference
            }
            rkey_tbl.apply();
            rkey_ref_tbl.apply();
            queue_target_tbl.apply();
            queue_host_tbl.apply();
#if __TARGET_TOFINO__ == 2
            queue_host1_tbl.apply();  // way 1 (queue_ways.p4)
            queue_target1_tbl.apply();
#endif
            if (pkt_class == IO_PKT_RSP) {
                take_fp_rsp();
            }
            psn_tbl.apply();
            qp_fp_tbl.apply();
            qp_tbl.apply();  // and a response's slot
            owner_tbl.apply();
            ref_tbl.apply();  // after the owner, which reads a command's reference
            check_tbl.apply();
            info_tbl.apply();
            cmd_ts_tbl.apply();
            digest_host_qp_tbl.apply();
            digest_target_qp_tbl.apply();
            first_ts_tbl.apply();
            last_ts_tbl.apply();
            rr_first_ts_tbl.apply();
            // Late, in stage order (a table after another in a block is
            // not placed before it).
            stat_refs_tbl.apply();
            if (pkt_class == IO_PKT_RSP) {
                rsp_done_tbl.apply();
                rsp_digest_bytes();
                rsp_last_tbl.apply();
                if (last_lost) {
                    rsp_flag_last_lost();
                }
#ifdef TNA_HISTOGRAMS
                // The histograms: each figure exactly when the record has it.
                if (hist_rsp) {
                    dal_tbl.apply();
                    histograms.apply(meta.io_digest.host, meta.io_digest.target, infow[30:30],
                                     meta.io_evo.vantage, meta.io_digest.flags, meta.io_digest.e2e_ns,
                                     dal, meta.io_digest.host_prep_ns);
                }
#endif
            }
#ifdef TNA_HISTOGRAMS
            // Summary mode, not watched: no I/O digests (commands, responses,
            // unpaired responses), but the queue pairings (and the pair's
            // learn digest, below).
            if (meta.cfg.mode == MODE_SUMMARY && !watched) {
                summary_digest_tbl.apply();
            }
#endif
        }
#ifdef TNA_HISTOGRAMS
        // Polling and summary, not watched: report the host-target pair
        // once per epoch (after the tracker, which summary mode runs too:
        // the learn digest takes the command's place).
        if (meta.io_evo.vantage != 0 && meta.cfg.mode != MODE_FULL && !watched) {
            if (pkt_class == IO_PKT_CMD) {
                learn_tbl.apply();
                if (learned == 1) {
                    meta.digest_kind = DIGEST_LEARN;
                    meta.learn_digest.kind = LEARN_IO_PAIR;
                    meta.learn_digest.src = meta.io_digest.host;
                    meta.learn_digest.dst = meta.io_digest.target;
                    meta.learn_digest.dest_qp = 0;
                    meta.stat.learned = true;
                }
            }
        }
#endif
    }
}

#endif
