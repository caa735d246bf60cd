// NVMe-over-RoCE I/O tracking (SPEC §3), TNA build: the algorithm of
// p4/include/control/io_tracker.p4 laid out for Tofino 1's 12 ingress
// stages, 4 stateful ALUs each. One access per register per packet; every
// map and slot is addressed and keyed by hashes computed in the stage that
// uses them, and register actions return what the next stage tests (0 for
// "not found"), so that no step waits for an action to compute a flag:
//
//   stage 0-2  classification (one const table), NVMe byte swaps, vantage
//              (one const table on the port roles), watchlist, learn filter
//   stage 3    R_Key map
//   stage 4    PSN map, queue pairs (by host QP, by target QP)
//   stage 5    QP map, I/O owner
//   stage 6    I/O check (the command's fingerprint and PSN)
//   stage 7    I/O info, length
//   stage 8    I/O times
//   stage 9-   durations, digest
//
// An I/O is (host, target, target QP, CID) as in the v1model build. Its slot
// is a hash of that key; maps hold a reference (CID << 16 | command PSN[15:0])
// from which a data packet recomputes the slot. Map entries and slot owners
// are 32-bit fingerprints of their keys (the v1model build compares whole
// keys; the results differ only on a fingerprint collision, about 1 in 2^32
// per lookup). R_Key and PSN map entries carry a "data pending" bit, cleared
// by the first data packet that finds them: a command (READ REQUEST) that
// replaces a pending entry of another key counts ioref_overwritten, as in
// the v1model build.
#ifndef __IO_TRACKER__
#define __IO_TRACKER__

// Info bits 1:0 are the command's vantage.
const bit<8> IO_INFO_DATA_SEEN = 0x04;
const bit<8> IO_INFO_RR_SEEN = 0x08;
const bit<8> IO_INFO_IN_CAPSULE = 0x10;
const bit<8> IO_INFO_WRITE = 0x40;
const bit<8> IO_INFO_VALID = 0x80;

// A map word: pending (bit 31) ++ the I/O's target QP (23:0). QP numbers
// of reliable connections are never 0 (QP 0 and 1 are the management QPs),
// so a word of 0 is "not found", and a QP number or PSN is its own key (an
// empty entry holds 0 and answers 0). A queue pair word is the peer QP.
const bit<32> IOREF_PENDING = 0x80000000;

const bit<8> IO_PKT_NONE = 0;
const bit<8> IO_PKT_CMD = 1;
const bit<8> IO_PKT_RSP = 2;
const bit<8> IO_PKT_WRITE_DATA = 3;
const bit<8> IO_PKT_READ_REQ = 4;
const bit<8> IO_PKT_READ_RESP = 5;

// I/O owner answers, returned as the stateful ALU's predicate (an enum):
// free or stale, now this I/O's; this I/O's key, still open; another live I/O.
enum owner_e { TAKEN, SAME, OTHER }

control IoTracker(in headers_t hdr, inout local_metadata_t meta) {
    // Set by the classification and the steps before the registers.
    bit<8> pkt_class;
    bool in_capsule;
    bool starts_message; // a data packet that opens a QP map entry
    ipv4_addr_t host;
    ipv4_addr_t target;
    bit<8> vantage;
    bit<8> op;
    bit<8> info_w;      // info written by a command, or the bit a data packet sets
    bit<4> cmd_flags;   // a command's digest flags known from its capsule
    bit<8> info_cmd;    // a command's info: info_w and its vantage
    bool watched;
    cid_t cid;
    rkey_t sgl_key;
    bit<32> blen;        // response: the I/O's SGL length (little-endian)
    bit<32> k_ref;       // a command's reference: CID << 16 | PSN[15:0]
    bit<32> thr_c;       // meta.now_c - io timeout, clamped at 0

    // Register outputs, each tested by a later stage.
    bit<32> word;        // the I/O's map word, 0 when not found
    bit<32> ref;         // the I/O's reference
    bit<32> pword;       // the queue's peer QP, 0 when unknown
    owner_e owner;       // command
    owner_e closed;      // response: SAME when the slot held this I/O
    bit<1> same_cmd;     // command: the slot holds this very command (retransmitted)
    bit<1> live_ref;     // data: the slot still holds the referenced command
    bit<1> overwritten;
    bit<1> pair_new;
    bit<8> info;
    bit<IO_SLOT_BITS> slot;
    bit<32> first_age;   // response: the ages (now - time) of the data times
    bit<32> rr_first_age;

    // Byte swaps of the little-endian NVMe fields, in the hash units
    // (identity): an action cannot gather a field's bytes in reverse order.
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) cmd_cid_swap;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) rsp_cid_swap;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) sgl_key_swap;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) cmd_len_swap;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) rsp_len_swap;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) ref_make;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) status_swap;
    // The digests' QP numbers and PSNs through the hash units (identity): a
    // 24-bit digest member is packed in 8- and 16-bit containers, and a
    // plain copy would impose that split on every value it flows into.
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) cmd_host_qp_copy;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) rsp_target_qp_copy;

    // Fingerprints (CRC-32) of the I/O's key, of its command, of the host
    // pair; indexes (CRC-16) are computed where they are used.
    Hash<bit<32>>(HashAlgorithm_t.CRC32) fp_cmd_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) fp_rsp_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) fpc_cmd_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) fpc_data_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) learn_idx;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) rkey_idx;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) psn_idx_req;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) psn_idx_rsp;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) qp_idx;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) by_host_idx;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) by_target_idx;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) by_target_idx_l;
    // The I/O's slot, from the command, the response or a data packet's
    // reference: the same function of the same key. Taken into `slot` once,
    // so that the slot registers share one index.
    Hash<bit<16>>(HashAlgorithm_t.CRC16) slot_cmd;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) slot_rsp;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) slot_data;

    // Indexes, hashed in the stage of the register they address (a local
    // variable would cost a stage of its own).
#define RKEY_IDX rkey_idx.get({ host, target, sgl_key })[IOREF_SLOT_BITS-1:0]
#define PSN_IDX_REQ psn_idx_req.get({ host, target, word[23:0], hdr.bth.psn })[IOREF_SLOT_BITS-1:0]
#define PSN_IDX_RSP psn_idx_rsp.get({ host, target, hdr.bth.dest_qp, hdr.bth.psn })[IOREF_SLOT_BITS-1:0]
#define QP_IDX qp_idx.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp })[IOREF_SLOT_BITS-1:0]

    bit<32> fp;          // the I/O's key (host, target, target QP, CID)
    bit<32> fpc;         // the I/O's command (host, target, target QP, PSN[15:0])
    bit<32> live;        // command: 1 when the slot's time is live, 2 when stale

    // Host-target pairs already reported by a learn digest in this epoch:
    // (host, target), indexed by (host, target, epoch).
    Register<pair_t, bit<LEARN_SLOT_BITS>>(LEARN_SLOTS, {0, 0}) learned_pair;
    RegisterAction<pair_t, bit<LEARN_SLOT_BITS>, bit<1>>(learned_pair) learned_swap = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo == host && value.hi == target) { rv = 0; } else { rv = 1; }
            value.lo = host;
            value.hi = target;
        }
    };

    // R_Key map: (R_Key, word), reference; indexed by (host, target, R_Key).
    Register<pair_t, bit<IOREF_SLOT_BITS>>(IOREF_SLOTS, {0, 0}) rkey_map;
    // Command: 1 when it replaces a pending entry of another key.
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<1>>(rkey_map) rkey_claim = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo != sgl_key && (int<32>)value.hi < 0) { rv = 1; } else { rv = 0; }
            value.lo = sgl_key;
            value.hi = (bit<32>)hdr.bth.dest_qp | IOREF_PENDING;
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
    Register<bit<32>, bit<IOREF_SLOT_BITS>>(IOREF_SLOTS, 0) rkey_map_ref;
    RA_WRITE(rkey_map_ref, IOREF_SLOT_BITS, rkey_ref_write, k_ref)
    RA_READ(rkey_map_ref, IOREF_SLOT_BITS, rkey_ref_read)

    // PSN map (READ REQUEST -> first READ RESPONSE): (PSN tag, word),
    // reference; indexed by (host, target, target QP, PSN).
    Register<pair_t, bit<IOREF_SLOT_BITS>>(IOREF_SLOTS, {0, 0}) psn_map;
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<1>>(psn_map) psn_claim = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo != (bit<32>)hdr.bth.psn && (int<32>)value.hi < 0) { rv = 1; } else { rv = 0; }
            value.lo = (bit<32>)hdr.bth.psn;
            value.hi = word | IOREF_PENDING;
        }
    };
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(psn_map) psn_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            rv = 0;
            if (value.lo == (bit<32>)hdr.bth.psn) {
                value.hi = value.hi & ~IOREF_PENDING;
                rv = value.hi;
            }
        }
    };
    Register<bit<32>, bit<IOREF_SLOT_BITS>>(IOREF_SLOTS, 0) psn_map_ref;
    RA_WRITE(psn_map_ref, IOREF_SLOT_BITS, psn_ref_write, ref)
    RA_READ(psn_map_ref, IOREF_SLOT_BITS, psn_ref_read)

    // QP map (a message's first packet -> the rest): (QP tag, word, 0 when
    // the first packet found no I/O), reference; indexed by (src, dst, QP).
    Register<pair_t, bit<IOREF_SLOT_BITS>>(IOREF_SLOTS, {0, 0}) qp_map;
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(qp_map) qp_write = {
        void apply(inout pair_t value) {
            value.lo = (bit<32>)hdr.bth.dest_qp;
            value.hi = word;
        }
    };
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(qp_map) qp_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == (bit<32>)hdr.bth.dest_qp) { rv = value.hi; } else { rv = 0; }
        }
    };
    Register<bit<32>, bit<IOREF_SLOT_BITS>>(IOREF_SLOTS, 0) qp_map_ref;
    RA_WRITE(qp_map_ref, IOREF_SLOT_BITS, qp_ref_write, ref)
    RA_READ(qp_map_ref, IOREF_SLOT_BITS, qp_ref_read)

    // Queue pairs (SPEC §3), indexed by (host, target, QP): by host QP (its
    // tag; the target QP's), by target QP (its tag; the host QP's).
    Register<pair_t, bit<QUEUE_SLOT_BITS>>(QUEUE_SLOTS, {0, 0}) queue_by_host;
    // Learn: 1 when the host QP was not paired here before.
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<1>>(queue_by_host) by_host_learn = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo == (bit<32>)hdr.bth.dest_qp) { rv = 0; } else { rv = 1; }
            value.lo = (bit<32>)hdr.bth.dest_qp;
            value.hi = word;
        }
    };
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<32>>(queue_by_host) by_host_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == (bit<32>)hdr.bth.dest_qp) { rv = value.hi; } else { rv = 0; }
        }
    };
    Register<pair_t, bit<QUEUE_SLOT_BITS>>(QUEUE_SLOTS, {0, 0}) queue_by_target;
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<32>>(queue_by_target) by_target_learn = {
        void apply(inout pair_t value) {
            value.lo = word;
            value.hi = (bit<32>)hdr.bth.dest_qp;
        }
    };
    RegisterAction<pair_t, bit<QUEUE_SLOT_BITS>, bit<32>>(queue_by_target) by_target_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == (bit<32>)hdr.bth.dest_qp) { rv = value.hi; } else { rv = 0; }
        }
    };

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
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, owner_e>(io_owner) owner_claim = {
        void apply(inout pair_t value, out owner_e rv) {
            if ((int<32>)(value.hi - live) > 0) {
                if (value.lo == fp) { rv = owner_e.SAME; } else { rv = owner_e.OTHER; }
            } else {
                rv = owner_e.TAKEN;
                value.lo = fp;
                value.hi = 2;
            }
        }
    };
    // Response: owner_e.SAME, and the slot freed, when it holds this I/O; else owner_e.OTHER.
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, owner_e>(io_owner) owner_close = {
        void apply(inout pair_t value, out owner_e rv) {
            if (value.lo == fp) {
                rv = owner_e.SAME;
                value.lo = 0;
                value.hi = 0;
            } else {
                rv = owner_e.OTHER;
            }
        }
    };
    // Check: (the command's fingerprint, its PSN).
    Register<pair_t, bit<IO_SLOT_BITS>>(IO_SLOTS, {0, 0}) io_check;
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<1>>(io_check) check_cmd = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo == fpc) { rv = 1; } else { rv = 0; }
            value.lo = fpc;
            value.hi = (bit<32>)hdr.bth.psn;
        }
    };
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<16>>(io_check) check_psn = {
        void apply(inout pair_t value, out bit<16> rv) { rv = (bit<16>)value.hi; }
    };
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<1>>(io_check) check_data = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo == fpc) { rv = 1; } else { rv = 0; }
        }
    };
    REG8(io_info, IO_SLOTS, IO_SLOT_BITS)
    RegisterAction<bit<8>, bit<IO_SLOT_BITS>, bit<8>>(io_info) info_write = {
        void apply(inout bit<8> value) { value = info_cmd; }
    };
    RA_SWAP8(io_info, IO_SLOT_BITS, info_take, 0)
    RegisterAction<bit<8>, bit<IO_SLOT_BITS>, bit<8>>(io_info) info_set = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; value = value | info_w; }
    };
    REG32(io_bytes, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_bytes, IO_SLOT_BITS, bytes_write, (bit<32>)hdr.nvme_sqe.sgl_len_le)
    RA_READ(io_bytes, IO_SLOT_BITS, bytes_read)
    REG32(io_cmd_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_cmd_ts, IO_SLOT_BITS, cmd_ts_write, meta.now32)
    RA_AGE(io_cmd_ts, IO_SLOT_BITS, cmd_ts_age, meta.now32)
    REG32(io_data_first_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_data_first_ts, IO_SLOT_BITS, first_ts_write, meta.now32)
    RA_AGE(io_data_first_ts, IO_SLOT_BITS, first_ts_age, meta.now32)
    REG32(io_data_last_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_data_last_ts, IO_SLOT_BITS, last_ts_write, meta.now32)
    RA_AGE(io_data_last_ts, IO_SLOT_BITS, last_ts_age, meta.now32)
    REG32(io_rr_first_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_rr_first_ts, IO_SLOT_BITS, rr_first_ts_write, meta.now32)
    RA_AGE(io_rr_first_ts, IO_SLOT_BITS, rr_first_ts_age, meta.now32)

    // Classification: the packet's class, direction and what it writes, from
    // its headers in one lookup (a chain of conditions would take a stage each).
    @hidden action cmd(bit<8> o, bit<8> i, bool capsule, bit<4> flags) {
        pkt_class = IO_PKT_CMD;
        op = o;
        info_w = i;
        in_capsule = capsule;
        cmd_flags = flags;
        host = hdr.ipv4.src_addr;
        target = hdr.ipv4.dst_addr;
    }
    @hidden action rsp() {
        pkt_class = IO_PKT_RSP;
        host = hdr.ipv4.dst_addr;
        target = hdr.ipv4.src_addr;
    }
    // Data towards the host (WRITE: read data; READ REQUEST from the target).
    @hidden action to_host(bit<8> c, bit<8> i, bool starts) {
        pkt_class = c;
        info_w = i;
        starts_message = starts;
        host = hdr.ipv4.dst_addr;
        target = hdr.ipv4.src_addr;
    }
    // READ RESPONSE (write data from the host).
    @hidden action to_target(bool starts) {
        pkt_class = IO_PKT_READ_RESP;
        info_w = IO_INFO_RR_SEEN;
        starts_message = starts;
        host = hdr.ipv4.src_addr;
        target = hdr.ipv4.dst_addr;
    }
    @hidden table io_class {
        key = {
            hdr.bth.opcode: ternary;
            hdr.nvme_sqe.isValid(): ternary;
            hdr.nvme_sqe.opc: ternary;
            hdr.nvme_sqe.sgl_type: ternary;
            hdr.nvme_cqe.isValid(): ternary;
        }
        actions = {
            cmd;
            rsp;
            to_host;
            to_target;
            @defaultonly NoAction;
        }
        const entries = {
            (_, true, NVME_OPC_READ, NVME_SGL_TYPE_KEYED, _): cmd(IO_OP_READ, IO_INFO_VALID, false, 0);
            (_, true, NVME_OPC_WRITE, NVME_SGL_TYPE_KEYED, _): cmd(IO_OP_WRITE, IO_INFO_VALID | IO_INFO_WRITE, false, 0);
            (_, true, NVME_OPC_WRITE, NVME_SGL_TYPE_DATA_BLOCK, _):
                cmd(IO_OP_WRITE, IO_INFO_VALID | IO_INFO_WRITE | IO_INFO_IN_CAPSULE, true, IO_FLAG_IN_CAPSULE[3:0]);
            (_, _, _, _, true): rsp();
            (OP_WRITE_FIRST, _, _, _, _): to_host(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN, true);
            (OP_WRITE_MIDDLE, _, _, _, _): to_host(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN, false);
            (OP_WRITE_LAST, _, _, _, _): to_host(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN, false);
            (OP_WRITE_LAST_IMM, _, _, _, _): to_host(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN, false);
            (OP_WRITE_ONLY, _, _, _, _): to_host(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN, true);
            (OP_WRITE_ONLY_IMM, _, _, _, _): to_host(IO_PKT_WRITE_DATA, IO_INFO_DATA_SEEN, true);
            (OP_READ_REQUEST, _, _, _, _): to_host(IO_PKT_READ_REQ, IO_INFO_DATA_SEEN, false);
            (OP_READ_RESPONSE_FIRST, _, _, _, _): to_target(true);
            (OP_READ_RESPONSE_MIDDLE, _, _, _, _): to_target(false);
            (OP_READ_RESPONSE_LAST, _, _, _, _): to_target(false);
            (OP_READ_RESPONSE_ONLY, _, _, _, _): to_target(true);
        }
        const default_action = NoAction();
        size = 16;
    }

    // Vantage (SPEC §1): the compute side (the host's port) and the storage
    // side (the target's port) by the direction and the two ports' roles.
    @hidden action set_vantage(bit<8> v) {
        vantage = v;
        info_cmd = info_w | v;
    }
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
            // From the host: commands and READ RESPONSEs.
            (IO_PKT_CMD, ROLE_COMPUTE, ROLE_STORAGE): set_vantage(VANTAGE_C | VANTAGE_S);
            (IO_PKT_CMD, ROLE_COMPUTE, _): set_vantage(VANTAGE_C);
            (IO_PKT_CMD, _, ROLE_STORAGE): set_vantage(VANTAGE_S);
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

    action watch() {
        watched = true;
    }

    table io_watchlist {
        key = {
            host: exact @name("host");
            target: exact @name("target");
        }
        actions = {
            watch;
            NoAction;
        }
        const default_action = NoAction();
        size = IO_WATCHLIST_SIZE;
    }

    // One hash result per action: an action takes at most 32 bits from the
    // hash units (its immediate pathway).
    // The CID as on the wire (little-endian) keys the I/O; the digests get it swapped.
    @hidden action take_cmd_cid() { cid = hdr.nvme_sqe.cid_le; }
    @hidden action take_rsp_cid() { cid = hdr.nvme_cqe.cid_le; }
    @hidden action cmd_digest_cid() { meta.io_digest.cid = cmd_cid_swap.get({ cid[7:0], cid[15:8] }); }
    @hidden action rsp_digest_cid() { meta.io_digest.cid = rsp_cid_swap.get({ cid[7:0], cid[15:8] }); }
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
    @hidden action rsp_digest_bytes() { meta.io_digest.bytes = rsp_len_swap.get({ blen[7:0], blen[15:8], blen[23:16] }); }
    @hidden action take_rkey() { sgl_key = hdr.reth.rkey; }
    @hidden action take_ref() {
        k_ref = ref_make.get({ hdr.nvme_sqe.cid_le, hdr.bth.psn[15:0] });
    }
    @hidden action take_slot_cmd() { slot = slot_cmd.get({ host, target, hdr.bth.dest_qp, cid })[IO_SLOT_BITS-1:0]; }
    @hidden action take_slot_rsp() { slot = slot_rsp.get({ host, target, pword[23:0], cid })[IO_SLOT_BITS-1:0]; }
    @hidden action take_slot_data() { slot = slot_data.get({ host, target, word[23:0], ref[31:16] })[IO_SLOT_BITS-1:0]; }
    @hidden action take_fp_cmd() { fp = fp_cmd_hash.get({ host, target, hdr.bth.dest_qp, cid }); }
    @hidden action take_fp_rsp() { fp = fp_rsp_hash.get({ host, target, pword[23:0], cid }); }
    @hidden action take_fpc_cmd() { fpc = fpc_cmd_hash.get({ host, target, hdr.bth.dest_qp, hdr.bth.psn[15:0] }); }
    @hidden action take_fpc_data() { fpc = fpc_data_hash.get({ host, target, word[23:0], ref[15:0] }); }
    @hidden action cmd_digest_host_qp() { meta.io_digest.host_qp = cmd_host_qp_copy.get({ pword[23:0] }); }
    @hidden action cmd_digest_target_qp() { meta.io_digest.target_qp = hdr.bth.dest_qp; }
    @hidden action cmd_digest_psn() { meta.io_digest.cmd_psn = hdr.bth.psn[15:0]; }
    @hidden action rsp_digest_host_qp() { meta.io_digest.host_qp = hdr.bth.dest_qp; }
    @hidden action rsp_digest_target_qp() { meta.io_digest.target_qp = rsp_target_qp_copy.get({ pword[23:0] }); }
    // CQE status, byte-swapped, the phase bit (bit 0 once swapped) cleared.
    @hidden action rsp_digest_status() {
        meta.io_digest.status = status_swap.get({ hdr.nvme_cqe.status_le[7:0], hdr.nvme_cqe.status_le[15:9], 1w0 });
    }

    // No `return` in this block: a return becomes a flag that every later
    // step waits for (a stage each); the branches are nested instead.
    apply {
        // Stage 0-1, for every packet: values taken from the headers through
        // the hash units, the class, the fingerprints.
        if (hdr.nvme_sqe.isValid()) {
            take_cmd_cid();
            take_sgl_key();
            take_ref();
        } else if (hdr.nvme_cqe.isValid()) {
            take_rsp_cid();
        } else if (hdr.reth.isValid()) {
            take_rkey();  // the R_Key map's inputs are the same for every packet
        }
        pkt_class = IO_PKT_NONE;
        if (hdr.bth.isValid()) {
            io_class.apply();
        }
        take_fp_cmd();
        take_fpc_cmd();
        take_slot_cmd();
        thr_c = meta.now_c |-| meta.cfg.io_timeout_c;  // saturating: 0 until the clock passes the timeout

        // Stage 2: the vantage; the watchlist.
        vantage = 0;
        if (pkt_class != IO_PKT_NONE && meta.cfg.mode != MODE_OFF) {
            io_vantage.apply();
        }
        watched = false;
        if (meta.cfg.mode == MODE_POLLING) {
            io_watchlist.apply();
        } else {
            watched = true;
        }

        if (vantage != 0 && !watched) {
            // Polling, not watched: report the host-target pair once per epoch.
            if (pkt_class == IO_PKT_CMD) {
                if (learned_swap.execute(learn_idx.get({ host, target, meta.cfg.epoch })[LEARN_SLOT_BITS-1:0]) == 1) {
                    meta.digest_kind = DIGEST_LEARN;
                    meta.learn_digest.kind = LEARN_IO_PAIR;
                    meta.learn_digest.src = host;
                    meta.learn_digest.dst = target;
                    meta.learn_digest.dest_qp = 0;
                    meta.stat.learned = true;
                }
            }
        } else if (vantage != 0) {
            // Stage 3: the R_Key map.
            word = 0;
            ref = 0;
            overwritten = 0;
            if (pkt_class == IO_PKT_CMD) {
                if (!in_capsule) {
                    overwritten = rkey_claim.execute(RKEY_IDX);
                    rkey_ref_write.execute(RKEY_IDX);
                }
            } else if (hdr.reth.isValid()) {
                // WRITE FIRST / ONLY and READ REQUEST: the key names the I/O.
                word = rkey_find.execute(RKEY_IDX);
                ref = rkey_ref_read.execute(RKEY_IDX);
            }

            // Stage 4: the queue pairs (before the PSN map in this block, so
            // that the learn reads the R_Key map's word, not the PSN map's).
            pword = 0;
            pair_new = 0;
            if (pkt_class == IO_PKT_CMD) {
                pword = by_target_find.execute(by_target_idx.get({ host, target, hdr.bth.dest_qp })[QUEUE_SLOT_BITS-1:0]);
            } else if (pkt_class == IO_PKT_RSP) {
                pword = by_host_find.execute(by_host_idx.get({ host, target, hdr.bth.dest_qp })[QUEUE_SLOT_BITS-1:0]);
            } else if (pkt_class != IO_PKT_READ_RESP && hdr.reth.isValid() && word != 0) {
                // A keyed transfer from the target: its QP (host) and the
                // command's (target) are a queue pair.
                pair_new = by_host_learn.execute(by_host_idx.get({ host, target, hdr.bth.dest_qp })[QUEUE_SLOT_BITS-1:0]);
                by_target_learn.execute(by_target_idx_l.get({ host, target, word[23:0] })[QUEUE_SLOT_BITS-1:0]);
            }

            // Stage 4: the PSN map.
            if (pkt_class == IO_PKT_READ_REQ) {
                if (word != 0) {
                    overwritten = psn_claim.execute(PSN_IDX_REQ);
                    psn_ref_write.execute(PSN_IDX_REQ);
                }
            } else if (pkt_class == IO_PKT_READ_RESP && starts_message) {
                word = psn_find.execute(PSN_IDX_RSP);
                ref = psn_ref_read.execute(PSN_IDX_RSP);
            }
            if (overwritten == 1) {
                meta.stat.ioref_overwritten = true;
            }
            if (pair_new == 1) {
                meta.stat.queue_pair_learned = true;
            }

            // Stage 5: the QP map (data).
            if (pkt_class == IO_PKT_WRITE_DATA || pkt_class == IO_PKT_READ_RESP) {
                if (starts_message) {
                    qp_write.execute(QP_IDX);
                    qp_ref_write.execute(QP_IDX);
                } else {
                    word = qp_find.execute(QP_IDX);
                    ref = qp_ref_read.execute(QP_IDX);
                }
            }

            if (pkt_class == IO_PKT_CMD) {
                if (in_capsule && pword == 0) {
                    // In-capsule data needs the queue's pairing (SPEC §3).
                    meta.stat.untracked_io = true;
                } else {
                    // Stage 5-8: time, owner, check; info, length, command time.
                    live = time_touch.execute(slot);
                    owner = owner_claim.execute(slot);
                    if (owner == owner_e.OTHER) {
                        meta.stat.untracked_io = true;
                    } else {
                        same_cmd = check_cmd.execute(slot);
                        // A retransmitted command capsule: the first one counts.
                        if (owner == owner_e.TAKEN || same_cmd == 0) {
                            info_write.execute(slot);
                            bytes_write.execute(slot);
                            cmd_ts_write.execute(slot);
                            meta.stat.io_cmd = true;
                            meta.digest_kind = DIGEST_IO;
                            if (owner == owner_e.SAME) {
                                meta.io_digest.flags = cmd_flags | IO_FLAG_REPLACED[3:0];
                                meta.stat.io_replaced = true;
                            } else {
                                meta.io_digest.flags = cmd_flags;
                            }
                            meta.io_digest.event = (bit<2>)(IO_EVENT_CMD);
                            meta.io_digest.vantage = vantage[1:0];
                            meta.io_digest.op = op[1:0];
                            meta.io_digest.host = host;
                            meta.io_digest.target = target;
                            cmd_digest_host_qp();
                            cmd_digest_target_qp();
                            cmd_digest_psn();
                            cmd_digest_cid();
                            meta.io_digest.status = 0;
                            cmd_digest_bytes();
                            meta.io_digest.e2e_ns = 0;
                            meta.io_digest.to_data_ns = 0;
                            meta.io_digest.from_data_ns = 0;
                            meta.io_digest.host_prep_ns = 0;
                        }
                    }
                }
            } else if (pkt_class == IO_PKT_RSP) {
                meta.io_digest.host = host;
                meta.io_digest.target = target;
                rsp_digest_host_qp();
                rsp_digest_cid();
                rsp_digest_status();
                if (pword == 0) {
                    meta.io_digest.to_data_ns = 0;
                    meta.io_digest.from_data_ns = 0;
                    meta.io_digest.host_prep_ns = 0;
                    meta.stat.io_unpaired_rsp = true;
                    meta.digest_kind = DIGEST_IO;
                    meta.io_digest.event = (bit<2>)(IO_EVENT_UNPAIRED_RSP);
                    meta.io_digest.vantage = vantage[1:0];
                    meta.io_digest.op = 0;
                    meta.io_digest.flags = 0;
                    meta.io_digest.target_qp = 0;
                    meta.io_digest.cmd_psn = 0;
                    meta.io_digest.bytes = 0;
                    meta.io_digest.e2e_ns = 0;
                } else {
                    take_fp_rsp();
                    take_slot_rsp();
                    closed = owner_close.execute(slot);
                    if (closed != owner_e.SAME) {
                        meta.stat.io_unmatched_rsp = true;
                    } else {
                        meta.io_digest.cmd_psn = check_psn.execute(slot);
                        info = info_take.execute(slot);
                        blen = bytes_read.execute(slot);
                        rsp_digest_bytes();
                        // The registers give the ages of the slot's times
                        // (now - time); durations are differences of ages.
                        meta.io_digest.e2e_ns = cmd_ts_age.execute(slot);
                        first_age = first_ts_age.execute(slot);
                        rr_first_age = rr_first_ts_age.execute(slot);
                        // From the last data packet: read data (read), READ RESPONSE (write).
                        if ((info & (IO_INFO_WRITE | IO_INFO_RR_SEEN)) == (IO_INFO_WRITE | IO_INFO_RR_SEEN)
                                || (info & (IO_INFO_WRITE | IO_INFO_DATA_SEEN)) == IO_INFO_DATA_SEEN) {
                            meta.io_digest.from_data_ns = last_ts_age.execute(slot);
                        } else {
                            meta.io_digest.from_data_ns = 0;
                        }
                        // DPL (write): rr_first - rreq.
                        if ((info & (IO_INFO_WRITE | IO_INFO_DATA_SEEN | IO_INFO_RR_SEEN)) == (IO_INFO_WRITE | IO_INFO_DATA_SEEN | IO_INFO_RR_SEEN)) {
                            meta.io_digest.host_prep_ns = first_age - rr_first_age;
                        } else {
                            meta.io_digest.host_prep_ns = 0;
                        }
                        if ((info & IO_INFO_DATA_SEEN) != 0) {
                            meta.io_digest.to_data_ns = meta.io_digest.e2e_ns - first_age;
                        } else {
                            meta.io_digest.to_data_ns = 0;
                        }
                        meta.stat.io_rsp = true;
                        meta.digest_kind = DIGEST_IO;
                        meta.io_digest.event = (bit<2>)(IO_EVENT_RSP);
                        // IO_INFO_DATA_SEEN, _RR_SEEN, _IN_CAPSULE are info
                        // bits 2-4, in the order of IO_FLAG_DATA_SEEN, _RR_SEEN, _IN_CAPSULE.
                        meta.io_digest.flags = 1w0 ++ info[4:2];
                        meta.io_digest.vantage = info[1:0];
                        if ((info & IO_INFO_WRITE) != 0) {
                            meta.io_digest.op = IO_OP_WRITE[1:0];
                        } else {
                            meta.io_digest.op = IO_OP_READ[1:0];
                        }
                        rsp_digest_target_qp();
                    }
                }
            } else if (word != 0) {
                // Stage 6-9: data packets, for the I/O their reference names,
                // if its command still holds the slot.
                take_fpc_data();
                take_slot_data();
                live_ref = check_data.execute(slot);
                if (live_ref == 1) {
                    info = info_set.execute(slot);
                    if ((info & IO_INFO_VALID) != 0) {
                        if (pkt_class == IO_PKT_WRITE_DATA) {
                            if ((info & IO_INFO_WRITE) == 0) {
                                if ((info & IO_INFO_DATA_SEEN) == 0) {
                                    first_ts_write.execute(slot);
                                }
                                last_ts_write.execute(slot);
                            }
                        } else if (pkt_class == IO_PKT_READ_REQ) {
                            if ((info & (IO_INFO_WRITE | IO_INFO_DATA_SEEN)) == IO_INFO_WRITE) {
                                first_ts_write.execute(slot);
                            }
                        } else if ((info & IO_INFO_WRITE) != 0) {
                            // READ RESPONSE of a write.
                            if ((info & IO_INFO_RR_SEEN) == 0) {
                                rr_first_ts_write.execute(slot);
                            }
                            last_ts_write.execute(slot);
                        }
                    }
                }
            }
        }
    }
}

#endif
