// NVMe-over-RoCE I/O tracking (SPEC §3), TNA build: the algorithm of
// p4/include/control/io_tracker.p4 in stateful ALUs, one access per register
// per packet, in the order the pipeline runs them:
//   RDMA CM map -> R_Key map -> PSN map -> QP map -> queue pairs ->
//   I/O owner -> I/O check -> I/O info -> I/O times and length.
// Where the v1model build reads a register, decides, then writes it, the
// decision here is made inside the register's own action or by a register
// earlier in the order:
//   - the slot's owner is (fingerprint of host, target, target QP, CID;
//     coarse command time): one action tells a retransmission, a live
//     collision and a free or stale slot apart, and takes the slot;
//   - the check word (fingerprint of host, target, target QP, PSN[15:0];
//     PSN) tells a retransmitted command from a new one, and a data packet's
//     reference from a stale one;
//   - R_Key and PSN map entries carry a "data pending" bit, cleared by the
//     first data packet that finds them: a command (READ REQUEST) that
//     replaces a pending entry of another key (PSN) counts
//     ioref_overwritten; the v1model build does the same (it used to read
//     the older I/O's slot, a second access to it).
#ifndef __IO_TRACKER__
#define __IO_TRACKER__

#include "queue_pairs.p4"

const bit<8> IO_INFO_VANTAGE = 0x03;
const bit<8> IO_INFO_DATA_SEEN = 0x04;
const bit<8> IO_INFO_RR_SEEN = 0x08;
const bit<8> IO_INFO_IN_CAPSULE = 0x10;
const bit<8> IO_INFO_WRITE = 0x40;
const bit<8> IO_INFO_VALID = 0x80;

// Bits of an R_Key entry's target QP word.
const bit<32> IOREF_VALID = 0x80000000;
const bit<32> IOREF_PENDING = 0x40000000;

const bit<8> IO_PKT_NONE = 0;
const bit<8> IO_PKT_CMD = 1;
const bit<8> IO_PKT_RSP = 2;
const bit<8> IO_PKT_WRITE_DATA = 3;
const bit<8> IO_PKT_READ_REQ = 4;
const bit<8> IO_PKT_READ_RESP = 5;

control IoTracker(in headers_t hdr, inout local_metadata_t meta) {
    // Control-scope values the register actions read.
    ipv4_addr_t host;    // the I/O's host and target (for RDMA CM: REQ source and destination)
    ipv4_addr_t target;
    bit<32> k_id;        // CM communication id, R_Key, or PSN tag
    bit<32> k_tag;       // the value word written beside the key
    bit<32> k_ref;
    bit<32> fp;          // I/O fingerprint (never 0)
    bit<32> fpc;         // command check fingerprint (never 0)
    bit<8> info_w;      // info written by a command, or bits a data packet sets
    bit<32> thr_c;
    bit<32> sgl_len;
    bit<32> epoch32;

    Hash<bit<16>>(HashAlgorithm_t.CRC16) cm_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) rkey_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) psn_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) qp_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) cmd_slot_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) rsp_slot_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) fp_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) fpc_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) learn_hash;
    // Byte swaps of the little-endian NVMe fields, in the hash units
    // (identity): an action cannot gather a field's bytes in reverse order
    // from one container.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) sgl_key_swap;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) sgl_len_swap;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) data_len_swap;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) cmd_cid_swap;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) rsp_cid_swap;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) status_swap;
    // QP numbers and PSNs reach the digest through the hash units (identity)
    // too: a 24-bit digest member is packed in 8- and 16-bit containers, and
    // a plain copy would impose that split on every value the QP number or
    // PSN flows into.
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) cmd_host_qp_copy;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) cmd_target_qp_copy;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) cmd_psn_copy;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) rsp_host_qp_copy;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) rsp_target_qp_copy;

#ifdef TNA_RDMA_CM
    // RDMA CM exchanges in flight: (host, target), (comm id, valid ++ host QP).
    REGPAIR(cm_key, CM_SLOTS, CM_SLOT_BITS)
    REGPAIR(cm_id_qp, CM_SLOTS, CM_SLOT_BITS)
    RA_PAIR_WRITE(cm_key, CM_SLOT_BITS, cm_key_write, host, target)
    RA_PAIR_MATCH(cm_key, CM_SLOT_BITS, cm_key_match, host, target)
    RA_PAIR_WRITE(cm_id_qp, CM_SLOT_BITS, cm_id_qp_write, k_id, k_tag)
    RA_PAIR_FIND(cm_id_qp, CM_SLOT_BITS, cm_id_qp_find, k_id)

#endif
    // R_Key map: (host, target), (R_Key, valid ++ pending ++ target QP), reference.
    REGPAIR(rkey_map_key, IOREF_SLOTS, IOREF_SLOT_BITS)
    REGPAIR(rkey_map_rkey, IOREF_SLOTS, IOREF_SLOT_BITS)
    REG32(rkey_map_ref, IOREF_SLOTS, IOREF_SLOT_BITS)
    RA_PAIR_WRITE(rkey_map_key, IOREF_SLOT_BITS, rkey_key_write, host, target)
    RA_PAIR_MATCH(rkey_map_key, IOREF_SLOT_BITS, rkey_key_match, host, target)
    // Command: the replaced entry's word when it held another key, else 0.
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(rkey_map_rkey) rkey_claim = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo != k_id) { rv = value.hi; } else { rv = 0; }
            value.lo = k_id;
            value.hi = k_tag;
        }
    };
    // Data: the entry's word when it holds this key (no longer pending), else 0.
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(rkey_map_rkey) rkey_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == k_id) {
                rv = value.hi;
                value.hi = value.hi & ~IOREF_PENDING;
            } else {
                rv = 0;
            }
        }
    };
    RA_WRITE(rkey_map_ref, IOREF_SLOT_BITS, rkey_ref_write, k_ref)
    RA_READ(rkey_map_ref, IOREF_SLOT_BITS, rkey_ref_read)

    // PSN map: (host, target), (valid ++ PSN, valid ++ pending ++ target QP), reference.
    REGPAIR(psn_map_key, IOREF_SLOTS, IOREF_SLOT_BITS)
    REGPAIR(psn_map_psn, IOREF_SLOTS, IOREF_SLOT_BITS)
    REG32(psn_map_ref, IOREF_SLOTS, IOREF_SLOT_BITS)
    RA_PAIR_WRITE(psn_map_key, IOREF_SLOT_BITS, psn_key_write, host, target)
    RA_PAIR_MATCH(psn_map_key, IOREF_SLOT_BITS, psn_key_match, host, target)
    // READ REQUEST: the replaced entry's word when it held another PSN, else 0.
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(psn_map_psn) psn_claim = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo != k_id) { rv = value.hi; } else { rv = 0; }
            value.lo = k_id;
            value.hi = k_tag;
        }
    };
    // READ RESPONSE: the entry's word when it holds this PSN (no longer pending), else 0.
    RegisterAction<pair_t, bit<IOREF_SLOT_BITS>, bit<32>>(psn_map_psn) psn_find = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == k_id) {
                rv = value.hi;
                value.hi = value.hi & ~IOREF_PENDING;
            } else {
                rv = 0;
            }
        }
    };
    RA_WRITE(psn_map_ref, IOREF_SLOT_BITS, psn_ref_write, k_ref)
    RA_READ(psn_map_ref, IOREF_SLOT_BITS, psn_ref_read)

    // QP map: (src, dst), (valid ++ QP or 0, valid ++ target QP), reference.
    REGPAIR(qp_map_key, IOREF_SLOTS, IOREF_SLOT_BITS)
    REGPAIR(qp_map_qpn, IOREF_SLOTS, IOREF_SLOT_BITS)
    REG32(qp_map_ref, IOREF_SLOTS, IOREF_SLOT_BITS)
    RA_PAIR_WRITE(qp_map_key, IOREF_SLOT_BITS, qp_key_write, hdr.ipv4.src_addr, hdr.ipv4.dst_addr)
    RA_PAIR_MATCH(qp_map_key, IOREF_SLOT_BITS, qp_key_match, hdr.ipv4.src_addr, hdr.ipv4.dst_addr)
    RA_PAIR_WRITE(qp_map_qpn, IOREF_SLOT_BITS, qp_qpn_write, k_id, k_tag)
    RA_PAIR_FIND(qp_map_qpn, IOREF_SLOT_BITS, qp_qpn_find, k_id)
    RA_WRITE(qp_map_ref, IOREF_SLOT_BITS, qp_ref_write, k_ref)
    RA_READ(qp_map_ref, IOREF_SLOT_BITS, qp_ref_read)

    // The I/O slots.
    REGPAIR(io_owner, IO_SLOTS, IO_SLOT_BITS)
    // Command: the owner's fingerprint while a command holds the slot (this
    // I/O's key or another's), else 0 and the slot is taken.
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<32>>(io_owner) owner_claim = {
        void apply(inout pair_t value, out bit<32> rv) {
            if ((int<32>)(value.hi - thr_c) > 0) {
                rv = value.lo;
                if (value.lo == fp) { value.hi = meta.now_c; }
            } else {
                rv = 0;
                value.lo = fp;
                value.hi = meta.now_c;
            }
        }
    };
    // Response: the fingerprint, and closes the slot, when it holds this I/O; else 0.
    RegisterAction<pair_t, bit<IO_SLOT_BITS>, bit<32>>(io_owner) owner_close = {
        void apply(inout pair_t value, out bit<32> rv) {
            if (value.lo == fp) {
                rv = value.lo;
                value.lo = 0;
                value.hi = 0;
            } else {
                rv = 0;
            }
        }
    };
    REGPAIR(io_check, IO_SLOTS, IO_SLOT_BITS)
    // Command: 1 when the same command (PSN) is in the slot; writes this one.
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
        void apply(inout bit<8> value) { value = info_w; }
    };
    RA_SWAP8(io_info, IO_SLOT_BITS, info_take, 0)
    RegisterAction<bit<8>, bit<IO_SLOT_BITS>, bit<8>>(io_info) info_set = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; value = value | info_w; }
    };
    REG32(io_bytes, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_bytes, IO_SLOT_BITS, bytes_write, sgl_len)
    RA_READ(io_bytes, IO_SLOT_BITS, bytes_read)
    REG32(io_cmd_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_cmd_ts, IO_SLOT_BITS, cmd_ts_write, meta.now32)
    RA_READ(io_cmd_ts, IO_SLOT_BITS, cmd_ts_read)
    REG32(io_data_first_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_data_first_ts, IO_SLOT_BITS, first_ts_write, meta.now32)
    RA_READ(io_data_first_ts, IO_SLOT_BITS, first_ts_read)
    REG32(io_data_last_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_data_last_ts, IO_SLOT_BITS, last_ts_write, meta.now32)
    RA_READ(io_data_last_ts, IO_SLOT_BITS, last_ts_read)
    REG32(io_rr_first_ts, IO_SLOTS, IO_SLOT_BITS)
    RA_WRITE(io_rr_first_ts, IO_SLOT_BITS, rr_first_ts_write, meta.now32)
    RA_READ(io_rr_first_ts, IO_SLOT_BITS, rr_first_ts_read)

    // Host-target pairs already reported by a learn digest: (host, target), epoch.
    REGPAIR(learned_pair, LEARN_SLOTS, LEARN_SLOT_BITS)
    REG32(learned_epoch, LEARN_SLOTS, LEARN_SLOT_BITS)
    RA_PAIR_SWAP(learned_pair, LEARN_SLOT_BITS, learned_pair_swap, host, target)
    RegisterAction<bit<32>, bit<LEARN_SLOT_BITS>, bit<1>>(learned_epoch) learned_epoch_swap = {
        void apply(inout bit<32> value, out bit<1> rv) {
            if (value != epoch32) { rv = 1; } else { rv = 0; }
            value = epoch32;
        }
    };

    QueuePairs() queue_pairs;

    bit<8> pkt_class;
    bit<8> vantage;
    bool watched;

    action watch() {
        watched = true;
    }

    // Values the hash actions below read or write (control scope, so that
    // actions see them).
    cid_t cid;
    rkey_t sgl_key;
    bit<IO_SLOT_BITS> cmd_slot;
    qpn_t peer_qp;
    qpn_t fp_tqp;
    qpn_t fpc_tqp;
    bit<16> fpc_psn;

    // One hash result per action: an action takes at most 32 bits from the
    // hash units (its immediate pathway).
    @hidden action take_cmd_cid() { cid = cmd_cid_swap.get({ hdr.nvme_sqe.cid_le[7:0], hdr.nvme_sqe.cid_le[15:8] }); }
    @hidden action take_rsp_cid() { cid = rsp_cid_swap.get({ hdr.nvme_cqe.cid_le[7:0], hdr.nvme_cqe.cid_le[15:8] }); }
    @hidden action take_sgl_key() {
        sgl_key = sgl_key_swap.get({ hdr.nvme_sqe.sgl_key_le[7:0], hdr.nvme_sqe.sgl_key_le[15:8],
            hdr.nvme_sqe.sgl_key_le[23:16], hdr.nvme_sqe.sgl_key_le[31:24] });
    }
    @hidden action take_data_len() {
        sgl_len = data_len_swap.get({ hdr.nvme_sqe.sgl_key_le[31:24], hdr.nvme_sqe.sgl_len_le[7:0],
            hdr.nvme_sqe.sgl_len_le[15:8], hdr.nvme_sqe.sgl_len_le[23:16] });
    }
    @hidden action take_sgl_len() {
        sgl_len = sgl_len_swap.get({ 8w0, hdr.nvme_sqe.sgl_len_le[7:0],
            hdr.nvme_sqe.sgl_len_le[15:8], hdr.nvme_sqe.sgl_len_le[23:16] });
    }
    @hidden action take_cmd_slot() { cmd_slot = cmd_slot_hash.get({ host, target, hdr.bth.dest_qp, cid })[IO_SLOT_BITS-1:0]; }
    @hidden action take_fp() { fp = fp_hash.get({ host, target, fp_tqp, cid }); }
    @hidden action take_fpc() { fpc = fpc_hash.get({ host, target, fpc_tqp, fpc_psn }); }
    @hidden action cmd_digest_host_qp() { meta.io_digest.host_qp = cmd_host_qp_copy.get({ peer_qp }); }
    @hidden action cmd_digest_target_qp() { meta.io_digest.target_qp = cmd_target_qp_copy.get({ hdr.bth.dest_qp }); }
    @hidden action cmd_digest_psn() { meta.io_digest.cmd_psn = cmd_psn_copy.get({ hdr.bth.psn[15:0] }); }
    @hidden action rsp_digest_host_qp() { meta.io_digest.host_qp = rsp_host_qp_copy.get({ hdr.bth.dest_qp }); }
    @hidden action rsp_digest_target_qp() { meta.io_digest.target_qp = rsp_target_qp_copy.get({ peer_qp }); }
    // CQE status, byte-swapped, the phase bit (bit 0 once swapped) cleared.
    @hidden action rsp_digest_status() {
        meta.io_digest.status = status_swap.get({ hdr.nvme_cqe.status_le[7:0], hdr.nvme_cqe.status_le[15:9], 1w0 });
    }

    // The data packets' classes by opcode. A table, not conditions: range
    // compares beside the conditions around them overflow a gateway's input.
    @hidden action classify(bit<8> c) {
        pkt_class = c;
    }
    @hidden table opcode_class {
        key = {
            hdr.bth.opcode: exact;
        }
        actions = {
            classify;
            @defaultonly NoAction;
        }
        const entries = {
            OP_WRITE_FIRST: classify(IO_PKT_WRITE_DATA);
            OP_WRITE_MIDDLE: classify(IO_PKT_WRITE_DATA);
            OP_WRITE_LAST: classify(IO_PKT_WRITE_DATA);
            OP_WRITE_LAST_IMM: classify(IO_PKT_WRITE_DATA);
            OP_WRITE_ONLY: classify(IO_PKT_WRITE_DATA);
            OP_WRITE_ONLY_IMM: classify(IO_PKT_WRITE_DATA);
            OP_READ_REQUEST: classify(IO_PKT_READ_REQ);
            OP_READ_RESPONSE_FIRST: classify(IO_PKT_READ_RESP);
            OP_READ_RESPONSE_MIDDLE: classify(IO_PKT_READ_RESP);
            OP_READ_RESPONSE_LAST: classify(IO_PKT_READ_RESP);
            OP_READ_RESPONSE_ONLY: classify(IO_PKT_READ_RESP);
        }
        const default_action = NoAction();
        size = 16;
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

    apply {
        if (!hdr.bth.isValid() || meta.cfg.mode == MODE_OFF) {
            return;
        }
        bit<8> opcode = hdr.bth.opcode;
        pkt_class = IO_PKT_NONE;
        vantage = 0;

        bit<8> qp_op = 0;
        qpn_t qp_host_qp = 0;
        qpn_t qp_target_qp = 0;

        // RDMA CM.
        bool is_cm_rep = hdr.cm_rep.isValid();
#ifdef TNA_RDMA_CM
        if (hdr.cm_req.isValid()) {
            host = hdr.ipv4.src_addr;
            target = hdr.ipv4.dst_addr;
            k_id = hdr.cm_req.local_comm_id;
            k_tag = 1w1 ++ 7w0 ++ hdr.cm_req.local_qpn;
        } else {
            host = hdr.ipv4.dst_addr;
            target = hdr.ipv4.src_addr;
            k_id = hdr.cm_rep.remote_comm_id;
        }
        bit<CM_SLOT_BITS> cidx = cm_hash.get({ host, target, k_id })[CM_SLOT_BITS-1:0];
        if (hdr.cm_req.isValid()) {
            cm_key_write.execute(cidx);
            cm_id_qp_write.execute(cidx);
            return;
        }
        if (is_cm_rep) {
            bit<1> m = cm_key_match.execute(cidx);
            bit<32> c_qp = cm_id_qp_find.execute(cidx);
            if (m == 1 && c_qp[31:31] == 1) {
                qp_op = QP_LEARN;
                qp_host_qp = c_qp[23:0];
                qp_target_qp = hdr.cm_rep.local_qpn;
            }
        }

#else
        if (hdr.cm_req.isValid() || is_cm_rep) {
            return;
        }
#endif
        cid = 0;
        qpn_t ref_tqp = 0;
        bit<32> ref = 0;
        bool found = false;
        bool in_capsule = false;
        cmd_slot = 0;
        if (!is_cm_rep) {
            // Capsules come in SENDs only, so the opcode classes and the
            // capsule classes never meet: separate steps, each small enough
            // for one gateway (an else-if chain is one condition).
            opcode_class.apply();
            if (hdr.nvme_cqe.isValid()) {
                pkt_class = IO_PKT_RSP;
            }
            if (hdr.nvme_sqe.isValid()) {
                if ((hdr.nvme_sqe.opc == NVME_OPC_READ || hdr.nvme_sqe.opc == NVME_OPC_WRITE)
                        && hdr.nvme_sqe.sgl_type == NVME_SGL_TYPE_KEYED) {
                    pkt_class = IO_PKT_CMD;
                } else if (hdr.nvme_sqe.opc == NVME_OPC_WRITE && hdr.nvme_sqe.sgl_type == NVME_SGL_TYPE_DATA_BLOCK) {
                    pkt_class = IO_PKT_CMD;
                    in_capsule = true;
                }
            }
            if (pkt_class == IO_PKT_NONE) {
                return;
            }
            if (pkt_class == IO_PKT_CMD || pkt_class == IO_PKT_READ_RESP) {
                host = hdr.ipv4.src_addr;
                target = hdr.ipv4.dst_addr;
                if (meta.ingress_role == ROLE_COMPUTE) { vantage = vantage | VANTAGE_C; }
                if (meta.egress_role == ROLE_STORAGE) { vantage = vantage | VANTAGE_S; }
            } else {
                host = hdr.ipv4.dst_addr;
                target = hdr.ipv4.src_addr;
                if (meta.egress_role == ROLE_COMPUTE) { vantage = vantage | VANTAGE_C; }
                if (meta.ingress_role == ROLE_STORAGE) { vantage = vantage | VANTAGE_S; }
            }
            if (vantage == 0) {
                return;
            }

            if (meta.cfg.mode == MODE_POLLING) {
                watched = false;
                io_watchlist.apply();
                if (!watched) {
                    if (pkt_class == IO_PKT_CMD) {
                        bit<LEARN_SLOT_BITS> lidx = learn_hash.get({ host, target })[LEARN_SLOT_BITS-1:0];
                        epoch32 = (bit<32>)meta.cfg.epoch;
                        bit<1> pair_changed = learned_pair_swap.execute(lidx);
                        bit<1> epoch_changed = learned_epoch_swap.execute(lidx);
                        if (pair_changed != 0 || epoch_changed != 0) {
                            meta.digest_kind = DIGEST_LEARN;
                            meta.learn_digest.kind = LEARN_IO_PAIR;
                            meta.learn_digest.src = host;
                            meta.learn_digest.dst = target;
                            meta.learn_digest.dest_qp = 0;
                            meta.stat.learned = true;
                        }
                    }
                    return;
                }
            }

            sgl_key = 0;
            if (pkt_class == IO_PKT_CMD) {
                take_cmd_cid();
                take_sgl_key();
                if (in_capsule) {
                    take_data_len();
                } else {
                    take_sgl_len();
                }
                take_cmd_slot();
            } else if (pkt_class == IO_PKT_RSP) {
                take_rsp_cid();
            } else if (hdr.reth.isValid()) {
                sgl_key = hdr.reth.rkey;
            }

            // R_Key map.
            if ((pkt_class == IO_PKT_CMD && !in_capsule)
                    || ((pkt_class == IO_PKT_WRITE_DATA || pkt_class == IO_PKT_READ_REQ) && hdr.reth.isValid())) {
                k_id = sgl_key;
                bit<IOREF_SLOT_BITS> ridx = rkey_hash.get({ host, target, sgl_key })[IOREF_SLOT_BITS-1:0];
                if (pkt_class == IO_PKT_CMD) {
                    k_tag = IOREF_VALID | IOREF_PENDING | (8w0 ++ hdr.bth.dest_qp);
                    k_ref = (bit<16>)cmd_slot ++ hdr.bth.psn[15:0];
                    rkey_key_write.execute(ridx);
                    bit<32> prev = rkey_claim.execute(ridx);
                    rkey_ref_write.execute(ridx);
                    if ((prev & IOREF_PENDING) != 0) {
                        meta.stat.ioref_overwritten = true;
                    }
                } else {
                    bit<1> m = rkey_key_match.execute(ridx);
                    bit<32> word = rkey_find.execute(ridx);
                    ref = rkey_ref_read.execute(ridx);
                    ref_tqp = word[23:0];
                    if (m == 1 && word[31:31] == 1) {
                        found = true;
                    }
                }
            }

            // PSN map.
            bit<32> psn_tag = 1w1 ++ 7w0 ++ hdr.bth.psn;
            if ((pkt_class == IO_PKT_READ_REQ && found) || opcode == OP_READ_RESPONSE_FIRST || opcode == OP_READ_RESPONSE_ONLY) {
                qpn_t ptqp = hdr.bth.dest_qp;
                if (pkt_class == IO_PKT_READ_REQ) {
                    ptqp = ref_tqp;
                }
                bit<IOREF_SLOT_BITS> pidx = psn_hash.get({ host, target, ptqp, hdr.bth.psn })[IOREF_SLOT_BITS-1:0];
                k_id = psn_tag;
                k_tag = IOREF_VALID | IOREF_PENDING | (8w0 ++ ptqp);
                if (pkt_class == IO_PKT_READ_REQ) {
                    k_ref = ref;
                    psn_key_write.execute(pidx);
                    bit<32> prev = psn_claim.execute(pidx);
                    psn_ref_write.execute(pidx);
                    if ((prev & IOREF_PENDING) != 0) {
                        meta.stat.ioref_overwritten = true;
                    }
                } else {
                    bit<1> m = psn_key_match.execute(pidx);
                    bit<32> word = psn_find.execute(pidx);
                    ref = psn_ref_read.execute(pidx);
                    ref_tqp = word[23:0];
                    if (m == 1 && word[31:31] == 1 && word[23:0] == hdr.bth.dest_qp) {
                        found = true;
                    }
                }
            }

            // QP map.
            bool starts_message = (pkt_class == IO_PKT_WRITE_DATA && hdr.reth.isValid())
                || opcode == OP_READ_RESPONSE_FIRST || opcode == OP_READ_RESPONSE_ONLY;
            if (pkt_class == IO_PKT_WRITE_DATA || pkt_class == IO_PKT_READ_RESP) {
                bit<IOREF_SLOT_BITS> qidx = qp_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp })[IOREF_SLOT_BITS-1:0];
                bit<32> qpn_tag = 1w1 ++ 7w0 ++ hdr.bth.dest_qp;
                if (starts_message) {
                    k_id = 0;
                    if (found) {
                        k_id = qpn_tag;
                    }
                    k_tag = 1w1 ++ 7w0 ++ ref_tqp;
                    k_ref = ref;
                    qp_key_write.execute(qidx);
                    qp_qpn_write.execute(qidx);
                    qp_ref_write.execute(qidx);
                } else {
                    k_id = qpn_tag;
                    bit<1> m = qp_key_match.execute(qidx);
                    bit<32> t = qp_qpn_find.execute(qidx);
                    ref = qp_ref_read.execute(qidx);
                    ref_tqp = t[23:0];
                    if (m == 1 && t[31:31] == 1) {
                        found = true;
                    }
                }
            }

            if (pkt_class == IO_PKT_CMD) {
                qp_op = QP_FIND_BY_TARGET;
                qp_target_qp = hdr.bth.dest_qp;
            } else if (pkt_class == IO_PKT_RSP) {
                qp_op = QP_FIND_BY_HOST;
                qp_host_qp = hdr.bth.dest_qp;
            } else if ((pkt_class == IO_PKT_WRITE_DATA || pkt_class == IO_PKT_READ_REQ) && hdr.reth.isValid() && found) {
                qp_op = QP_LEARN;
                qp_host_qp = hdr.bth.dest_qp;
                qp_target_qp = ref_tqp;
            }
        }

        bool paired;
        peer_qp = 0;
        queue_pairs.apply(qp_op, host, target, qp_host_qp, qp_target_qp, paired, peer_qp, meta);
        if (is_cm_rep) {
            return;
        }

        bit<32> timeout_c = meta.cfg.io_timeout_c;
        thr_c = meta.now_c |-| timeout_c;  // saturating: 0 until the clock passes the timeout

        // Fingerprints: of the I/O's key (command, response) and of its
        // command (command, data packets), one hash call each.
        fp_tqp = hdr.bth.dest_qp;
        fpc_tqp = hdr.bth.dest_qp;
        fpc_psn = hdr.bth.psn[15:0];
        if (pkt_class == IO_PKT_RSP) {
            fp_tqp = peer_qp;
        } else if (pkt_class != IO_PKT_CMD) {
            fpc_tqp = ref_tqp;
            fpc_psn = ref[15:0];
        }
        take_fp();
        take_fpc();
        // Never 0 (an empty slot), in an action of their own: an action
        // cannot both take a hash result and compute on it.
        fp = fp | 1;
        fpc = fpc | 1;

        if (pkt_class == IO_PKT_CMD) {
            if (in_capsule && !paired) {
                meta.stat.untracked_io = true;
                return;
            }
            bit<32> holder = owner_claim.execute(cmd_slot);
            bit<2> owner = 0;              // 0 free or stale, 1 this key, 2 another live I/O
            if (holder == fp) {
                owner = 1;
            } else if (holder != 0) {
                owner = 2;
            }
            if (owner == 2) {
                meta.stat.untracked_io = true;
                return;
            }
            bit<1> same_cmd = check_cmd.execute(cmd_slot);
            if (owner == 1 && same_cmd == 1) {
                return;  // a retransmitted command capsule: the first one counts
            }
            bit<8> flags = 0;
            if (owner == 1) {
                flags = IO_FLAG_REPLACED;
                meta.stat.io_replaced = true;
            }
            info_w = IO_INFO_VALID | vantage;
            if (hdr.nvme_sqe.opc == NVME_OPC_WRITE) {
                info_w = info_w | IO_INFO_WRITE;
            }
            if (in_capsule) {
                info_w = info_w | IO_INFO_IN_CAPSULE;
                flags = flags | IO_FLAG_IN_CAPSULE;
            }
            info_write.execute(cmd_slot);
            bytes_write.execute(cmd_slot);
            cmd_ts_write.execute(cmd_slot);

            meta.stat.io_cmd = true;
            meta.digest_kind = DIGEST_IO;
            meta.io_digest.event = (bit<2>)(IO_EVENT_CMD);
            meta.io_digest.vantage = (bit<2>)(vantage);
            meta.io_digest.op = (bit<2>)(IO_OP_READ);
            if (hdr.nvme_sqe.opc == NVME_OPC_WRITE) {
                meta.io_digest.op = (bit<2>)(IO_OP_WRITE);
            }
            meta.io_digest.flags = flags[3:0];
            meta.io_digest.host = host;
            meta.io_digest.target = target;
            cmd_digest_host_qp();
            cmd_digest_target_qp();
            cmd_digest_psn();
            meta.io_digest.cid = cid;
            meta.io_digest.status = 0;
            meta.io_digest.bytes = sgl_len[23:0];
            meta.io_digest.e2e_ns = 0;
            meta.io_digest.to_data_ns = 0;
            meta.io_digest.from_data_ns = 0;
            meta.io_digest.host_prep_ns = 0;
            return;
        }

        if (pkt_class == IO_PKT_RSP) {
            meta.io_digest.host = host;
            meta.io_digest.target = target;
            rsp_digest_host_qp();
            meta.io_digest.cid = cid;
            rsp_digest_status();
            if (!paired) {
                meta.io_digest.to_data_ns = 0;
                meta.io_digest.from_data_ns = 0;
                meta.io_digest.host_prep_ns = 0;
                meta.stat.io_unpaired_rsp = true;
                meta.digest_kind = DIGEST_IO;
                meta.io_digest.event = (bit<2>)(IO_EVENT_UNPAIRED_RSP);
                meta.io_digest.vantage = (bit<2>)(vantage);
                meta.io_digest.op = 0;
                meta.io_digest.flags = 0;
                meta.io_digest.target_qp = 0;
                meta.io_digest.cmd_psn = 0;
                meta.io_digest.bytes = 0;
                meta.io_digest.e2e_ns = 0;
                return;
            }
            bit<IO_SLOT_BITS> slot = rsp_slot_hash.get({ host, target, peer_qp, cid })[IO_SLOT_BITS-1:0];
            if (owner_close.execute(slot) == 0) {
                meta.stat.io_unmatched_rsp = true;
                return;
            }
            meta.io_digest.cmd_psn = check_psn.execute(slot);
            bit<8> info = info_take.execute(slot);
            // The slot's times are read into the digest's duration fields,
            // then turned into durations (fewer live 32-bit values).
            meta.io_digest.e2e_ns = cmd_ts_read.execute(slot);
            meta.io_digest.to_data_ns = first_ts_read.execute(slot);
            meta.io_digest.from_data_ns = last_ts_read.execute(slot);
            meta.io_digest.host_prep_ns = rr_first_ts_read.execute(slot);
            meta.io_digest.bytes = bytes_read.execute(slot)[23:0];

            bool is_write = false;
            if ((info & IO_INFO_WRITE) != 0) {
                is_write = true;
            }
            bool data_seen = false;
            if ((info & IO_INFO_DATA_SEEN) != 0) {
                data_seen = true;
            }
            bool rr_seen = false;
            if ((info & IO_INFO_RR_SEEN) != 0) {
                rr_seen = true;
            }
            bit<8> flags = 0;
            if (data_seen) {
                flags = flags | IO_FLAG_DATA_SEEN;
            }
            if (rr_seen) {
                flags = flags | IO_FLAG_RR_SEEN;
            }
            if ((info & IO_INFO_IN_CAPSULE) != 0) {
                flags = flags | IO_FLAG_IN_CAPSULE;
            }
            // DPL (write): rr_first - rreq.
            bool dpl = false;
            if (is_write) {
                if (data_seen) {
                    if (rr_seen) {
                        dpl = true;
                    }
                }
            }
            if (dpl) {
                meta.io_digest.host_prep_ns = meta.io_digest.host_prep_ns - meta.io_digest.to_data_ns;
            } else {
                meta.io_digest.host_prep_ns = 0;
            }
            if (data_seen) {
                meta.io_digest.to_data_ns = meta.io_digest.to_data_ns - meta.io_digest.e2e_ns;
            } else {
                meta.io_digest.to_data_ns = 0;
            }
            // From the last data packet: read data (read), READ RESPONSE (write).
            bool last_seen = false;
            if (is_write) {
                if (rr_seen) {
                    last_seen = true;
                }
            } else if (data_seen) {
                last_seen = true;
            }
            if (last_seen) {
                meta.io_digest.from_data_ns = meta.now32 - meta.io_digest.from_data_ns;
            } else {
                meta.io_digest.from_data_ns = 0;
            }
            meta.io_digest.e2e_ns = meta.now32 - meta.io_digest.e2e_ns;
            meta.stat.io_rsp = true;
            meta.digest_kind = DIGEST_IO;
            meta.io_digest.event = (bit<2>)(IO_EVENT_RSP);
            meta.io_digest.flags = flags[3:0];
            meta.io_digest.vantage = info[1:0];
            meta.io_digest.op = (bit<2>)(IO_OP_READ);
            if (is_write) {
                meta.io_digest.op = (bit<2>)(IO_OP_WRITE);
            }
            rsp_digest_target_qp();
            return;
        }

        // Data packets: the I/O their reference names, if its command still holds the slot.
        if (!found) {
            return;
        }
        bit<IO_SLOT_BITS> slot = ref[31:16][IO_SLOT_BITS-1:0];
        if (check_data.execute(slot) == 0) {
            return;
        }
        if (pkt_class == IO_PKT_READ_RESP) {
            info_w = IO_INFO_RR_SEEN;
        } else {
            info_w = IO_INFO_DATA_SEEN;
        }
        bit<8> info = info_set.execute(slot);
        if ((info & IO_INFO_VALID) == 0) {
            return;
        }
        bool is_write = (info & IO_INFO_WRITE) != 0;
        if (pkt_class == IO_PKT_WRITE_DATA && !is_write) {
            if ((info & IO_INFO_DATA_SEEN) == 0) {
                first_ts_write.execute(slot);
            }
            last_ts_write.execute(slot);
        } else if (pkt_class == IO_PKT_READ_REQ && is_write) {
            if ((info & IO_INFO_DATA_SEEN) == 0) {
                first_ts_write.execute(slot);
            }
        } else if (pkt_class == IO_PKT_READ_RESP && is_write) {
            if ((info & IO_INFO_RR_SEEN) == 0) {
                rr_first_ts_write.execute(slot);
            }
            last_ts_write.execute(slot);
        }
    }
}

#endif
