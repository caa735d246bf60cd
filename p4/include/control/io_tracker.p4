// NVMe-over-RoCE I/O tracking (SPEC §3).
//
// An I/O is (host, target, queue, CID), the queue named by its target-side
// QP (the command capsule's destination). It gets a hash-indexed slot at its
// command capsule. Data packets find their I/O through reference maps:
//   - by R_Key: RDMA WRITE first/only (read data) and READ REQUEST (write);
//   - by PSN: READ RESPONSE first/only (write data) answers the request's PSN;
// and continuation packets (middle/last) through the map of the QP's current
// message. The response capsule arrives on the host-side QP: QueuePairs
// gives the queue's target QP, and the I/O's slot. The response closes the
// slot and emits one io_digest_t with every duration measured at this
// switch. The command capsule emits one too, so that the exporter can count
// I/Os that never complete.
//
// Stages, in the order a pipeline with one access per register can run
// them: RDMA CM map, R_Key map, PSN map, QP map, queue pairs, I/O slot.
#ifndef __IO_TRACKER__
#define __IO_TRACKER__

#include "queue_pairs.p4"
#include "histograms.p4"

// Bits of the io_info register.
const bit<8> IO_INFO_VANTAGE = 0x03;   // VANTAGE_* of the command
const bit<8> IO_INFO_DATA_SEEN = 0x04;
const bit<8> IO_INFO_RR_SEEN = 0x08;
const bit<8> IO_INFO_IN_CAPSULE = 0x10;
// The data packet io_data_last_ts holds ends its message (LAST or ONLY) and
// the message is the I/O's last RDMA operation: a FIRST or MIDDLE recorded
// last, with the rest of its message not found (its QP map entry taken by a
// colliding key), or the end of an earlier operation, with the later ones
// not found (the R_Key map entry taken), leaves the I/O without its own last
// data packet, and DAL absent.
const bit<8> IO_INFO_LAST_END = 0x20;
const bit<8> IO_INFO_WRITE = 0x40;
const bit<8> IO_INFO_VALID = 0x80;

// Bits of a reference map entry's target QP word (R_Key and PSN maps): the
// entry is valid; the I/O it names still waits for the data it names (set by
// the command or READ REQUEST, cleared by the first packet that finds it).
const bit<32> IOREF_VALID = 0x80000000;
const bit<32> IOREF_PENDING = 0x40000000;
// PSN and QP map entries: the message is not the I/O's last RDMA operation
// (its RETH's address and length end before the command's SGL does). nvmet
// moves a large I/O's data in several operations, each with its own RETH;
// only the last operation's LAST or ONLY is the I/O's last data packet.
const bit<32> IOREF_MORE = 0x20000000;

// How long a LAST held for its message's first stays usable: far longer than
// any path reorders, far shorter than the time a QP takes to come round to
// the same PSN (2^24 packets).
const ts_t END_HELD_MAX_NS = 10000000;

// Packet classes this control handles.
const bit<8> IO_PKT_NONE = 0;
const bit<8> IO_PKT_CMD = 1;
const bit<8> IO_PKT_RSP = 2;
const bit<8> IO_PKT_WRITE_DATA = 3;   // target -> host RDMA WRITE (read I/O)
const bit<8> IO_PKT_READ_REQ = 4;     // target -> host READ REQUEST (write I/O)
const bit<8> IO_PKT_READ_RESP = 5;    // host -> target READ RESPONSE (write I/O)
const bit<8> IO_PKT_OTHER_CMD = 6;    // host -> target command not measured (Flush, Write Zeroes, Dataset Management, ...)

control IoTracker(in headers_t hdr, inout local_metadata_t meta) {
    // The I/O slots; the key is (host, target, target QP, CID).
    REGISTER(ipv4_addr_t, IO_SLOTS, io_host)
    REGISTER(ipv4_addr_t, IO_SLOTS, io_target)
    REGISTER(bit<32>, IO_SLOTS, io_target_qp)
    REGISTER(bit<16>, IO_SLOTS, io_cid)
    REGISTER(bit<32>, IO_SLOTS, io_cmd_psn)       // tells a retransmitted command from a new one
    REGISTER(bit<8>, IO_SLOTS, io_info)           // IO_INFO_*
    REGISTER(bit<32>, IO_SLOTS, io_bytes)
    REGISTER(ts_t, IO_SLOTS, io_cmd_ts)
    REGISTER(ts_t, IO_SLOTS, io_data_first_ts)    // read: d_first; write: rreq
    REGISTER(ts_t, IO_SLOTS, io_data_last_ts)     // read: d_last; write: rr_last
    REGISTER(ts_t, IO_SLOTS, io_rr_first_ts)      // write: rr_first
    // Reference maps; a reference is the I/O's slot (IO_REF_SLOT_BITS) ++ the
    // low bits of the command's PSN (the rest of 32)
    // (one I/O, not only its CID), with the I/O's target QP beside it (and
    // IOREF_* bits). Keys are kept whole, in registers of at most 32 bits (as
    // Tofino's are).
    REGISTER(ipv4_addr_t, IOREF_SLOTS, rkey_map_host)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, rkey_map_target)
    REGISTER(rkey_t, IOREF_SLOTS, rkey_map_rkey)
    REGISTER(bit<32>, IOREF_SLOTS, rkey_map_ref)
    REGISTER(bit<32>, IOREF_SLOTS, rkey_map_target_qp)
    REGISTER(bit<32>, IOREF_SLOTS, rkey_map_end)      // the SGL's end: address + length, low 32 bits
    // The R_Key map's second way: an entry waits from its command to its
    // data, the target's whole latency, so thousands wait at once on a ToR
    // (queues per CPU, each many commands deep), and two in one way's slot
    // would lose one. A command takes way 0 when its entry there waits for
    // no other key, else way 1 (newest wins there, counted).
    REGISTER(ipv4_addr_t, IOREF_SLOTS, rkey1_map_host)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, rkey1_map_target)
    REGISTER(rkey_t, IOREF_SLOTS, rkey1_map_rkey)
    REGISTER(bit<32>, IOREF_SLOTS, rkey1_map_ref)
    REGISTER(bit<32>, IOREF_SLOTS, rkey1_map_target_qp)
    REGISTER(bit<32>, IOREF_SLOTS, rkey1_map_end)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, psn_map_host)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, psn_map_target)
    REGISTER(bit<32>, IOREF_SLOTS, psn_map_psn)       // valid bit 31 ++ PSN
    REGISTER(bit<32>, IOREF_SLOTS, psn_map_target_qp)
    REGISTER(bit<32>, IOREF_SLOTS, psn_map_ref)
    REGISTER(bit<32>, IOREF_SLOTS, psn_map_len)       // the READ REQUEST's DMA length
    REGISTER(ipv4_addr_t, IOREF_SLOTS, qp_map_src)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, qp_map_dst)
    REGISTER(bit<32>, IOREF_SLOTS, qp_map_qpn)      // valid bit 31 ++ QP number
    REGISTER(bit<32>, IOREF_SLOTS, qp_map_ref)
    REGISTER(bit<32>, IOREF_SLOTS, qp_map_target_qp)
    REGISTER(psn_t, IOREF_SLOTS, qp_map_next_psn)  // the PSN that continues the message
    // End map: a message's LAST, by (source, destination, QP, last PSN): the
    // I/O of the message (valid bit, IOREF_MORE, target QP), or a LAST that
    // came before its message's first (its time).
    REGISTER(ipv4_addr_t, IOREF_SLOTS, end_map_src)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, end_map_dst)
    REGISTER(bit<32>, IOREF_SLOTS, end_map_qpn)       // valid bit 31 ++ QP number
    REGISTER(bit<32>, IOREF_SLOTS, end_map_psn)       // valid bit 31 ++ last PSN
    REGISTER(bit<32>, IOREF_SLOTS, end_map_ref)
    REGISTER(bit<32>, IOREF_SLOTS, end_map_target_qp)
    REGISTER(ts_t, IOREF_SLOTS, end_map_held_ts)
    // RDMA CM exchanges in flight: the host's QP from its REQ, by communication
    // id, in two ways (as the queue pair maps): a job's start connects every
    // queue of a ToR's hosts within milliseconds, thousands of REQs waiting
    // for their REPs at once. A REQ takes way 0 when its entry is free or its
    // own, else way 1; its REP frees the entry.
    REGISTER(ipv4_addr_t, CM_SLOTS, cm_host)
    REGISTER(ipv4_addr_t, CM_SLOTS, cm_target)
    REGISTER(bit<32>, CM_SLOTS, cm_comm_id)
    REGISTER(bit<32>, CM_SLOTS, cm_host_qp)
    REGISTER(ipv4_addr_t, CM_SLOTS, cm1_host)
    REGISTER(ipv4_addr_t, CM_SLOTS, cm1_target)
    REGISTER(bit<32>, CM_SLOTS, cm1_comm_id)
    REGISTER(bit<32>, CM_SLOTS, cm1_host_qp)
    // Host-target pairs already reported by a learn digest (polling mode), with
    // the epoch they were reported in: a controller that takes over bumps it.
    REGISTER(ipv4_addr_t, LEARN_SLOTS, learned_host)
    REGISTER(ipv4_addr_t, LEARN_SLOTS, learned_target)
    REGISTER(bit<16>, LEARN_SLOTS, learned_epoch)

    QueuePairs() queue_pairs;
    IoHistograms() histograms;

    bit<8> pkt_class = IO_PKT_NONE;
    ipv4_addr_t host = 0;
    ipv4_addr_t target = 0;
    bit<8> vantage = 0;
    bool watched = false;
    bit<8> win_gen = 0;   // the watched pair's window occurrence
    // Summary mode: every I/O is tracked and counted in the histograms; I/O
    // digests only for the pairs of the watchlist.
    bool io_digests = true;

    // `gen`: the pair's window occurrence, a new value (never 0) each time a
    // rotation puts the pair back into the window.
    action watch(bit<8> gen) {
        watched = true;
        win_gen = gen;
    }

    // Polling mode: the host-target pairs measured in this rotation period.
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
        if (!meta.measured || meta.cfg.mode == MODE_OFF) {
            return;
        }
        bit<8> opcode = hdr.bth.opcode;

        // Queue pairing request, made once below (one access per register).
        bit<8> qp_op = 0;
        ipv4_addr_t qp_host = 0;
        ipv4_addr_t qp_target = 0;
        qpn_t qp_host_qp = 0;
        qpn_t qp_target_qp = 0;

        // RDMA CM: the REQ (host -> target) names the host's QP; the REP
        // (target -> host) names the target's, and answers the REQ's id.
        if (hdr.cm_req.isValid()) {
            bit<32> cidx;
            bit<32> cidx1;
            HASH_INDEX(cidx, CM_SLOTS, { meta.src_key, meta.dst_key, hdr.cm_req.local_comm_id });
            HASH_INDEX(cidx1, CM_SLOTS, { hdr.cm_req.local_comm_id, meta.dst_key, meta.src_key });
            ipv4_addr_t w_host;
            ipv4_addr_t w_target;
            bit<32> w_id;
            cm_host.read(w_host, cidx);
            cm_target.read(w_target, cidx);
            cm_comm_id.read(w_id, cidx);
            // Free: its addresses are 0 (never written, or cleared by a REP).
            bool free0 = w_host == 0 && w_target == 0;
            bool own0 = w_host == meta.src_key && w_target == meta.dst_key && w_id == hdr.cm_req.local_comm_id;
            if (free0 || own0) {
                cm_host.write(cidx, meta.src_key);
                cm_target.write(cidx, meta.dst_key);
                cm_comm_id.write(cidx, hdr.cm_req.local_comm_id);
                cm_host_qp.write(cidx, 8w0 ++ hdr.cm_req.local_qpn);
            } else {
                cm1_host.write(cidx1, meta.src_key);
                cm1_target.write(cidx1, meta.dst_key);
                cm1_comm_id.write(cidx1, hdr.cm_req.local_comm_id);
                cm1_host_qp.write(cidx1, 8w0 ++ hdr.cm_req.local_qpn);
            }
            return;
        }
        bool is_cm_rep = hdr.cm_rep.isValid();
        if (is_cm_rep) {
            bit<32> cidx;
            bit<32> cidx1;
            HASH_INDEX(cidx, CM_SLOTS, { meta.dst_key, meta.src_key, hdr.cm_rep.remote_comm_id });
            HASH_INDEX(cidx1, CM_SLOTS, { hdr.cm_rep.remote_comm_id, meta.src_key, meta.dst_key });
            ipv4_addr_t c_host;
            ipv4_addr_t c_target;
            bit<32> c_id;
            bit<32> c_qp;
            cm_host.read(c_host, cidx);
            cm_target.read(c_target, cidx);
            cm_comm_id.read(c_id, cidx);
            cm_host_qp.read(c_qp, cidx);
            ipv4_addr_t c1_host;
            ipv4_addr_t c1_target;
            bit<32> c1_id;
            bit<32> c1_qp;
            cm1_host.read(c1_host, cidx1);
            cm1_target.read(c1_target, cidx1);
            cm1_comm_id.read(c1_id, cidx1);
            cm1_host_qp.read(c1_qp, cidx1);
            if (c_host == meta.dst_key && c_target == meta.src_key && c_id == hdr.cm_rep.remote_comm_id) {
                qp_op = QP_LEARN;
                qp_host = meta.dst_key;
                qp_target = meta.src_key;
                qp_host_qp = c_qp[23:0];
                qp_target_qp = hdr.cm_rep.local_qpn;
                cm_host.write(cidx, 0);
                cm_target.write(cidx, 0);
            } else if (c1_host == meta.dst_key && c1_target == meta.src_key && c1_id == hdr.cm_rep.remote_comm_id) {
                qp_op = QP_LEARN;
                qp_host = meta.dst_key;
                qp_target = meta.src_key;
                qp_host_qp = c1_qp[23:0];
                qp_target_qp = hdr.cm_rep.local_qpn;
                cm1_host.write(cidx1, 0);
                cm1_target.write(cidx1, 0);
            }
        }

        bit<16> cid = 0;
        qpn_t ref_tqp = 0;       // the target QP of the I/O a data packet belongs to
        bit<32> ref = 0;
        bool found = false;
        bool more = false;       // a data packet's message is not its I/O's last RDMA operation
        bool held_last = false;  // a message's first whose LAST came before it (held in the end map)
        ts_t held_last_ts = 0;
        bool in_capsule = false;
        bool unmeasured_io = false;
        bit<32> cmd_slot = 0;
        rkey_t sgl_key = 0;
        bit<32> sgl_len = 0;
        if (!is_cm_rep) {
            // Classify, and orient the packet as host/target.
            if (hdr.nvme_sqe.isValid()) {
                // A Read or Write names a namespace: NSID 0 or FFFFFFFFh is an
                // admin command's (Get Log Page is opcode 02h on the admin queue).
                bool io_nsid = hdr.nvme_sqe.nsid != 0 && hdr.nvme_sqe.nsid != NVME_NSID_ALL;
                if ((hdr.nvme_sqe.opc == NVME_OPC_READ || hdr.nvme_sqe.opc == NVME_OPC_WRITE)
                        && hdr.nvme_sqe.sgl_type == NVME_SGL_TYPE_KEYED && io_nsid) {
                    pkt_class = IO_PKT_CMD;
                } else if (hdr.nvme_sqe.opc == NVME_OPC_WRITE && hdr.nvme_sqe.sgl_type == NVME_SGL_TYPE_DATA_BLOCK && io_nsid) {
                    // In-capsule data (NVMe-oF asks for the Offset subtype; any
                    // data block of a write over RDMA can only be in the capsule).
                    pkt_class = IO_PKT_CMD;
                    in_capsule = true;
                } else {
                    // Not measured, but it takes its CID: an I/O still open
                    // with that key lost its response (below). A read or a
                    // write in another SGL form (a descriptor list, as SPDK
                    // hosts may send) is an I/O without a record: counted.
                    pkt_class = IO_PKT_OTHER_CMD;
                    unmeasured_io = io_nsid && (hdr.nvme_sqe.opc == NVME_OPC_READ || hdr.nvme_sqe.opc == NVME_OPC_WRITE);
                }
            } else if (hdr.nvme_cqe.isValid()) {
                pkt_class = IO_PKT_RSP;
            } else if (opcode >= OP_WRITE_FIRST && opcode <= OP_WRITE_ONLY_IMM) {
                pkt_class = IO_PKT_WRITE_DATA;
            } else if (opcode == OP_READ_REQUEST) {
                pkt_class = IO_PKT_READ_REQ;
            } else if (opcode >= OP_READ_RESPONSE_FIRST && opcode <= OP_READ_RESPONSE_ONLY) {
                pkt_class = IO_PKT_READ_RESP;
            }
            if (pkt_class == IO_PKT_NONE) {
                return;
            }
            if (pkt_class == IO_PKT_CMD || pkt_class == IO_PKT_OTHER_CMD || pkt_class == IO_PKT_READ_RESP) {
                // host -> target
                host = meta.src_key;
                target = meta.dst_key;
                if (meta.ingress_role == ROLE_COMPUTE) { vantage = vantage | VANTAGE_C; }
                if (meta.egress_role == ROLE_STORAGE) { vantage = vantage | VANTAGE_S; }
            } else {
                // target -> host
                host = meta.dst_key;
                target = meta.src_key;
                if (meta.egress_role == ROLE_COMPUTE) { vantage = vantage | VANTAGE_C; }
                if (meta.ingress_role == ROLE_STORAGE) { vantage = vantage | VANTAGE_S; }
            }
            if (vantage == 0) {
                return;  // neither end of this I/O is attached here
            }

            if (meta.cfg.mode == MODE_POLLING || meta.cfg.mode == MODE_SUMMARY) {
                io_watchlist.apply();
                io_digests = watched;
                if (!watched) {
                    if (pkt_class == IO_PKT_CMD) {
                        bit<32> lidx;
                        HASH_INDEX(lidx, LEARN_SLOTS, { host, target });
                        ipv4_addr_t seen_host;
                        ipv4_addr_t seen_target;
                        bit<16> seen_epoch;
                        learned_host.read(seen_host, lidx);
                        learned_target.read(seen_target, lidx);
                        learned_epoch.read(seen_epoch, lidx);
                        if (seen_host != host || seen_target != target || seen_epoch != meta.cfg.epoch) {
                            learned_host.write(lidx, host);
                            learned_target.write(lidx, target);
                            learned_epoch.write(lidx, meta.cfg.epoch);
                            meta.digest_kind = DIGEST_LEARN;
                            meta.learn_digest.kind = LEARN_IO_PAIR;
                            meta.learn_digest.src = host;
                            meta.learn_digest.dst = target;
                            meta.learn_digest.dest_qp = 0;
                            meta.stat.learned = true;
                        }
                    }
                    if (meta.cfg.mode == MODE_POLLING) {
                        return;
                    }
                }
            }

            if (pkt_class == IO_PKT_CMD || pkt_class == IO_PKT_OTHER_CMD) {
                cid = hdr.nvme_sqe.cid_le[7:0] ++ hdr.nvme_sqe.cid_le[15:8];
            }
            if (pkt_class == IO_PKT_CMD) {
                sgl_key = hdr.nvme_sqe.sgl_key_le[7:0] ++ hdr.nvme_sqe.sgl_key_le[15:8]
                    ++ hdr.nvme_sqe.sgl_key_le[23:16] ++ hdr.nvme_sqe.sgl_key_le[31:24];
                if (in_capsule) {
                    // Data Block descriptor: a 4-byte length.
                    sgl_len = hdr.nvme_sqe.sgl_key_le[31:24] ++ hdr.nvme_sqe.sgl_len_le[7:0]
                        ++ hdr.nvme_sqe.sgl_len_le[15:8] ++ hdr.nvme_sqe.sgl_len_le[23:16];
                } else {
                    sgl_len = 8w0 ++ hdr.nvme_sqe.sgl_len_le[7:0] ++ hdr.nvme_sqe.sgl_len_le[15:8]
                        ++ hdr.nvme_sqe.sgl_len_le[23:16];
                }
            } else if (pkt_class == IO_PKT_RSP) {
                cid = hdr.nvme_cqe.cid_le[7:0] ++ hdr.nvme_cqe.cid_le[15:8];
            }
            HASH_INDEX(cmd_slot, IO_SLOTS, { host, target, hdr.bth.dest_qp, cid });

            // R_Key map. The command writes its key whatever becomes of it (a
            // reference to another I/O's slot fails that slot's key check).
            if (pkt_class == IO_PKT_CMD && !in_capsule) {
                bit<32> ridx;
                bit<32> ridx1;
                HASH_INDEX(ridx, IOREF_SLOTS, { host, target, sgl_key });
                HASH_INDEX(ridx1, IOREF_SLOTS, { sgl_key, target, host });
                bit<32> ref_word = cmd_slot[IO_REF_SLOT_BITS-1:0] ++ hdr.bth.psn[31-IO_REF_SLOT_BITS:0];
                bit<32> tqp_word = IOREF_VALID | IOREF_PENDING | (8w0 ++ hdr.bth.dest_qp);
                // The SGL address is little-endian: its low 32 bits are bytes 0-3.
                bit<32> sgl_end = (hdr.nvme_sqe.sgl_addr[39:32] ++ hdr.nvme_sqe.sgl_addr[47:40]
                    ++ hdr.nvme_sqe.sgl_addr[55:48] ++ hdr.nvme_sqe.sgl_addr[63:56]) + sgl_len;
                // Way 0 unless its entry waits for another key's data. An
                // entry of another key still waiting that is taken is lost:
                // counted. (The entry's own pending bit says so, not the older
                // I/O's slot: one access per register, as on Tofino.)
                rkey_t prev_rkey;
                bit<32> prev_tqp;
                rkey_map_rkey.read(prev_rkey, ridx);
                rkey_map_target_qp.read(prev_tqp, ridx);
                if ((prev_tqp & IOREF_PENDING) == 0 || prev_rkey == sgl_key) {
                    rkey_map_host.write(ridx, host);
                    rkey_map_target.write(ridx, target);
                    rkey_map_rkey.write(ridx, sgl_key);
                    rkey_map_ref.write(ridx, ref_word);
                    rkey_map_target_qp.write(ridx, tqp_word);
                    rkey_map_end.write(ridx, sgl_end);
                } else {
                    rkey_t prev1_rkey;
                    bit<32> prev1_tqp;
                    rkey1_map_rkey.read(prev1_rkey, ridx1);
                    rkey1_map_target_qp.read(prev1_tqp, ridx1);
                    if ((prev1_tqp & IOREF_PENDING) != 0 && prev1_rkey != sgl_key) {
                        meta.stat.ioref_overwritten = true;
                    }
                    rkey1_map_host.write(ridx1, host);
                    rkey1_map_target.write(ridx1, target);
                    rkey1_map_rkey.write(ridx1, sgl_key);
                    rkey1_map_ref.write(ridx1, ref_word);
                    rkey1_map_target_qp.write(ridx1, tqp_word);
                    rkey1_map_end.write(ridx1, sgl_end);
                }
            } else if ((pkt_class == IO_PKT_WRITE_DATA || pkt_class == IO_PKT_READ_REQ) && hdr.reth.isValid()) {
                // Way 0, else way 1: the key is in one of them.
                bit<32> ridx;
                bit<32> ridx1;
                HASH_INDEX(ridx, IOREF_SLOTS, { host, target, hdr.reth.rkey });
                HASH_INDEX(ridx1, IOREF_SLOTS, { hdr.reth.rkey, target, host });
                ipv4_addr_t k_host;
                ipv4_addr_t k_target;
                rkey_t k_rkey;
                bit<32> k_ref;
                bit<32> k_tqp;
                bit<32> k_end;
                rkey_map_host.read(k_host, ridx);
                rkey_map_target.read(k_target, ridx);
                rkey_map_rkey.read(k_rkey, ridx);
                rkey_map_ref.read(k_ref, ridx);
                rkey_map_target_qp.read(k_tqp, ridx);
                rkey_map_end.read(k_end, ridx);
                if (k_rkey == hdr.reth.rkey) {
                    rkey_map_target_qp.write(ridx, k_tqp & ~IOREF_PENDING);
                }
                if (k_host == host && k_target == target && k_rkey == hdr.reth.rkey) {
                    ref = k_ref;
                    ref_tqp = k_tqp[23:0];
                    found = true;
                    more = hdr.reth.va[31:0] + hdr.reth.dma_len != k_end;
                } else {
                    rkey1_map_host.read(k_host, ridx1);
                    rkey1_map_target.read(k_target, ridx1);
                    rkey1_map_rkey.read(k_rkey, ridx1);
                    rkey1_map_ref.read(k_ref, ridx1);
                    rkey1_map_target_qp.read(k_tqp, ridx1);
                    rkey1_map_end.read(k_end, ridx1);
                    if (k_rkey == hdr.reth.rkey) {
                        rkey1_map_target_qp.write(ridx1, k_tqp & ~IOREF_PENDING);
                    }
                    if (k_host == host && k_target == target && k_rkey == hdr.reth.rkey) {
                        ref = k_ref;
                        ref_tqp = k_tqp[23:0];
                        found = true;
                        more = hdr.reth.va[31:0] + hdr.reth.dma_len != k_end;
                    }
                }
            }

            // The DMA length of the message a packet starts (RETH, or its READ REQUEST's).
            bit<32> msg_len = 0;
            if (hdr.reth.isValid()) {
                msg_len = hdr.reth.dma_len;
            }
            // PSN map: a READ RESPONSE first/only carries the PSN of the READ
            // REQUEST it answers, on the I/O's target QP.
            bit<32> psn_tag = 1w1 ++ 7w0 ++ hdr.bth.psn;
            if (pkt_class == IO_PKT_READ_REQ && found) {
                bit<32> pidx;
                HASH_INDEX(pidx, IOREF_SLOTS, { host, target, ref_tqp, hdr.bth.psn });
                // As for R_Keys: taking the entry of another PSN still waiting for its READ RESPONSE is counted.
                bit<32> prev_psn;
                bit<32> prev_tqp;
                psn_map_psn.read(prev_psn, pidx);
                psn_map_target_qp.read(prev_tqp, pidx);
                if ((prev_tqp & IOREF_PENDING) != 0 && prev_psn != psn_tag) {
                    meta.stat.ioref_overwritten = true;
                }
                psn_map_host.write(pidx, host);
                psn_map_target.write(pidx, target);
                psn_map_psn.write(pidx, psn_tag);
                psn_map_target_qp.write(pidx, IOREF_VALID | IOREF_PENDING | (more ? IOREF_MORE : 0) | (8w0 ++ ref_tqp));
                psn_map_ref.write(pidx, ref);
                psn_map_len.write(pidx, hdr.reth.dma_len);
            } else if (opcode == OP_READ_RESPONSE_FIRST || opcode == OP_READ_RESPONSE_ONLY) {
                bit<32> pidx;
                HASH_INDEX(pidx, IOREF_SLOTS, { host, target, hdr.bth.dest_qp, hdr.bth.psn });
                ipv4_addr_t p_host;
                ipv4_addr_t p_target;
                bit<32> p_psn;
                bit<32> p_tqp;
                bit<32> p_ref;
                psn_map_len.read(msg_len, pidx);
                psn_map_host.read(p_host, pidx);
                psn_map_target.read(p_target, pidx);
                psn_map_psn.read(p_psn, pidx);
                psn_map_target_qp.read(p_tqp, pidx);
                psn_map_ref.read(p_ref, pidx);
                if (p_psn == psn_tag) {
                    psn_map_target_qp.write(pidx, p_tqp & ~IOREF_PENDING);
                }
                if (p_host == host && p_target == target && p_psn == psn_tag
                        && (p_tqp & IOREF_VALID) != 0 && p_tqp[23:0] == hdr.bth.dest_qp) {
                    ref = p_ref;
                    ref_tqp = hdr.bth.dest_qp;
                    found = true;
                    more = (p_tqp & IOREF_MORE) != 0;
                }
            }

            // End map: each message's last PSN names its I/O, as a READ
            // REQUEST's PSN names the I/O of its READ RESPONSE. The message's
            // first packet writes it (the last PSN from the DMA length, the
            // RETH's or its READ REQUEST's, over the path MTU: the payload of
            // the first packet, 256-4096 bytes); its LAST finds it, however
            // many of the QP's packets and messages came between (paths
            // reorder: adaptive routing, packet spraying). A LAST that finds
            // no entry is held in the entry with its time, and becomes its
            // message's end when that message's first packet comes (within
            // END_HELD_MAX_NS). Messages whose span is not known are left to
            // the QP map below (the next PSN only).
            bool ends_message = opcode == OP_WRITE_LAST || opcode == OP_WRITE_LAST_IMM || opcode == OP_READ_RESPONSE_LAST;
            bool first_of_many = (pkt_class == IO_PKT_WRITE_DATA && opcode == OP_WRITE_FIRST)
                || opcode == OP_READ_RESPONSE_FIRST;
            bit<32> span = 0;
            if (first_of_many && found && msg_len != 0) {
                // UDP less its header, the BTH, the RETH or AETH and the ICRC.
                bit<16> payload = hdr.udp.length - 24;
                if (hdr.reth.isValid()) {
                    payload = payload - 16;
                }
                if (hdr.aeth.isValid()) {
                    payload = payload - 4;
                }
                bit<32> m1 = msg_len - 1;
                if (payload == 256) {
                    span = 8w0 ++ m1[31:8];
                } else if (payload == 512) {
                    span = 9w0 ++ m1[31:9];
                } else if (payload == 1024) {
                    span = 10w0 ++ m1[31:10];
                } else if (payload == 2048) {
                    span = 11w0 ++ m1[31:11];
                } else if (payload == 4096) {
                    span = 12w0 ++ m1[31:12];
                }
                if (span[31:24] != 0) {
                    span = 0; // more than 2^24 packets: not a message
                }
            }
            bool end_found = false;
            if ((pkt_class == IO_PKT_WRITE_DATA || pkt_class == IO_PKT_READ_RESP) && (span != 0 || ends_message)) {
                psn_t last_psn = hdr.bth.psn + span[23:0];
                bit<32> eidx;
                HASH_INDEX(eidx, IOREF_SLOTS, { meta.src_key, meta.dst_key, hdr.bth.dest_qp, last_psn });
                bit<32> key_tag = 1w1 ++ 7w0 ++ last_psn;
                ipv4_addr_t e_src;
                ipv4_addr_t e_dst;
                bit<32> e_qpn;
                bit<32> e_psn;
                bit<32> e_ref;
                bit<32> e_tqp;
                ts_t e_held;
                end_map_src.read(e_src, eidx);
                end_map_dst.read(e_dst, eidx);
                end_map_qpn.read(e_qpn, eidx);
                end_map_psn.read(e_psn, eidx);
                end_map_ref.read(e_ref, eidx);
                end_map_target_qp.read(e_tqp, eidx);
                end_map_held_ts.read(e_held, eidx);
                bool e_ours = e_src == meta.src_key && e_dst == meta.dst_key
                    && e_qpn == 1w1 ++ 7w0 ++ hdr.bth.dest_qp && e_psn == key_tag;
                bool hold = false;
                if (span != 0) {
                    // The message's first: its end, held or to come.
                    if (e_ours && (e_tqp & IOREF_VALID) == 0 && e_held != 0 && meta.now - e_held < END_HELD_MAX_NS) {
                        held_last = true;
                        held_last_ts = e_held;
                    }
                    end_map_ref.write(eidx, ref);
                    if (held_last) {
                        end_map_target_qp.write(eidx, 0);
                    } else {
                        end_map_target_qp.write(eidx, IOREF_VALID | (more ? IOREF_MORE : 0) | (8w0 ++ ref_tqp));
                    }
                    end_map_held_ts.write(eidx, 0);
                } else if (e_ours && (e_tqp & IOREF_VALID) != 0) {
                    // A LAST whose message's first came: found; the entry is done.
                    ref = e_ref;
                    ref_tqp = e_tqp[23:0];
                    found = true;
                    end_found = true;
                    more = (e_tqp & IOREF_MORE) != 0;
                    end_map_target_qp.write(eidx, 0);
                } else if ((e_tqp & IOREF_VALID) == 0 && !(e_ours && e_held != 0)) {
                    // A LAST before its message's first: held (its first
                    // sighting), in an entry no message waits on.
                    hold = true;
                    end_map_held_ts.write(eidx, meta.now);
                }
                if (span != 0 || hold) {
                    end_map_src.write(eidx, meta.src_key);
                    end_map_dst.write(eidx, meta.dst_key);
                    end_map_qpn.write(eidx, 1w1 ++ 7w0 ++ hdr.bth.dest_qp);
                    end_map_psn.write(eidx, key_tag);
                }
            }

            // QP map: the QP's current message belongs to this I/O, or to none.
            // A packet after the first is the message's only when it is the
            // next PSN: one that overtook an earlier packet of its message, or
            // came before its own message's first (reordered paths), is not
            // taken for the I/O the QP's last message named; nor is a resent one.
            bool starts_message = (pkt_class == IO_PKT_WRITE_DATA && hdr.reth.isValid())
                || opcode == OP_READ_RESPONSE_FIRST || opcode == OP_READ_RESPONSE_ONLY;
            if ((pkt_class == IO_PKT_WRITE_DATA || pkt_class == IO_PKT_READ_RESP) && !end_found) {
                bit<32> qidx;
                HASH_INDEX(qidx, IOREF_SLOTS, { meta.src_key, meta.dst_key, hdr.bth.dest_qp });
                bit<32> qpn_tag = 1w1 ++ 7w0 ++ hdr.bth.dest_qp;
                if (starts_message) {
                    qp_map_src.write(qidx, meta.src_key);
                    qp_map_dst.write(qidx, meta.dst_key);
                    qp_map_qpn.write(qidx, found ? qpn_tag : 32w0);
                    qp_map_ref.write(qidx, ref);
                    qp_map_target_qp.write(qidx, (more ? IOREF_MORE : 0) | (8w0 ++ ref_tqp));
                    qp_map_next_psn.write(qidx, hdr.bth.psn + 1);
                } else {
                    ipv4_addr_t q_src;
                    ipv4_addr_t q_dst;
                    bit<32> q_qpn;
                    bit<32> q_ref;
                    bit<32> q_tqp;
                    qp_map_src.read(q_src, qidx);
                    qp_map_dst.read(q_dst, qidx);
                    qp_map_qpn.read(q_qpn, qidx);
                    qp_map_ref.read(q_ref, qidx);
                    qp_map_target_qp.read(q_tqp, qidx);
                    psn_t q_next;
                    qp_map_next_psn.read(q_next, qidx);
                    if (q_src == meta.src_key && q_dst == meta.dst_key && q_qpn == qpn_tag && q_next == hdr.bth.psn) {
                        ref = q_ref;
                        ref_tqp = q_tqp[23:0];
                        found = true;
                        more = (q_tqp & IOREF_MORE) != 0;
                        qp_map_next_psn.write(qidx, hdr.bth.psn + 1);
                    }
                }
            }

            // Queue pairs: a keyed transfer teaches the pairing (it goes to the
            // host's QP, and its key names an I/O of the target's QP); a command
            // looks up its host QP, a response its target QP.
            qp_host = host;
            qp_target = target;
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
        qpn_t peer_qp;
        queue_pair_t evicted;
        queue_pairs.apply(qp_op, qp_host, qp_target, qp_host_qp, qp_target_qp, paired, peer_qp, evicted, meta);
        if (evicted.valid && meta.digest_kind == DIGEST_NONE) {
            // A pairing a colliding one took from the switch, told to the
            // exporter: the responses of its queue still find their I/Os there.
            meta.digest_kind = DIGEST_IO;
            meta.io_digest.event = (dg_code_t)IO_EVENT_QUEUE_PAIR;
#ifndef DIGESTS_COMPACT
            meta.io_digest.mode = meta.cfg.mode;
            meta.io_digest.ts = meta.now;
#endif
            meta.io_digest.vantage = (dg_code_t)vantage;
            meta.io_digest.op = 0;
            meta.io_digest.flags = 0;
            meta.io_digest.host = evicted.host;
            meta.io_digest.target = evicted.target;
            meta.io_digest.host_qp = evicted.qp;
            meta.io_digest.target_qp = evicted.peer;
            meta.io_digest.cmd_psn = 0;
            meta.io_digest.cid = 0;
            meta.io_digest.status = 0;
            meta.io_digest.bytes = 0;
            meta.io_digest.e2e_ns = 0;
            meta.io_digest.to_data_ns = 0;
            meta.io_digest.from_data_ns = 0;
            meta.io_digest.host_prep_ns = 0;
        }
        if (is_cm_rep) {
            return;
        }

        // The I/O's slot.
        if (pkt_class == IO_PKT_CMD || pkt_class == IO_PKT_OTHER_CMD) {
            if (in_capsule && !paired) {
                // No keyed transfer will name this queue's host QP before the
                // response: the I/O cannot be attributed to a queue.
                meta.stat.io_outcome = IO_OUTCOME_UNTRACKED;
                return;
            }
            bit<32> slot = cmd_slot;
            bit<32> cmd_psn = 8w0 ++ hdr.bth.psn;
            ipv4_addr_t old_host;
            ipv4_addr_t old_target;
            bit<32> old_tqp;
            bit<16> old_cid;
            bit<32> old_psn;
            bit<8> old_info;
            ts_t old_cmd_ts;
            io_host.read(old_host, slot);
            io_target.read(old_target, slot);
            io_target_qp.read(old_tqp, slot);
            io_cid.read(old_cid, slot);
            io_cmd_psn.read(old_psn, slot);
            io_info.read(old_info, slot);
            io_cmd_ts.read(old_cmd_ts, slot);
            bool live = (old_info & IO_INFO_VALID) != 0
                && meta.now - old_cmd_ts <= meta.cfg.io_timeout_ns;
            bool same = old_host == host && old_target == target && old_tqp == 8w0 ++ hdr.bth.dest_qp
                && old_cid == cid;
            if (pkt_class == IO_PKT_OTHER_CMD) {
                // A command not measured takes its CID all the same: NVMe
                // reuses a CID only after its completion, so an I/O open with
                // that key lost its response. Closed here (whatever its age),
                // it is never closed by this command's completion.
                if ((old_info & IO_INFO_VALID) != 0 && same) {
                    io_info.write(slot, 0);
                    meta.stat.io_outcome = IO_OUTCOME_CLOSED;
                }
                if (unmeasured_io) {
                    // (The I/O it closed, if any, is reported incomplete at its timeout.)
                    meta.stat.io_outcome = IO_OUTCOME_UNTRACKED;
                }
            } else if (live && same && old_psn == cmd_psn) {
                // A retransmitted command capsule: the first one counts.
            } else if (live && !same) {
                meta.stat.io_outcome = IO_OUTCOME_UNTRACKED;
            } else {
                // New, or the key of an open I/O: NVMe reuses a CID only after
                // its completion, so that I/O's response was lost.
                bit<8> flags = 0;
                if (live) {
                    flags = IO_FLAG_REPLACED;
                }
                bit<8> info = IO_INFO_VALID | vantage;
                if (hdr.nvme_sqe.opc == NVME_OPC_WRITE) {
                    info = info | IO_INFO_WRITE;
                }
                if (in_capsule) {
                    info = info | IO_INFO_IN_CAPSULE;
                    flags = flags | IO_FLAG_IN_CAPSULE;
                }
                io_host.write(slot, host);
                io_target.write(slot, target);
                io_target_qp.write(slot, 8w0 ++ hdr.bth.dest_qp);
                io_cid.write(slot, cid);
                io_cmd_psn.write(slot, cmd_psn);
                io_info.write(slot, info);
                io_bytes.write(slot, sgl_len);
                io_cmd_ts.write(slot, meta.now);
                io_data_first_ts.write(slot, 0);
                io_data_last_ts.write(slot, 0);
                io_rr_first_ts.write(slot, 0);

                meta.stat.io_outcome = live ? IO_OUTCOME_REPLACED : IO_OUTCOME_CMD;
                if (io_digests) {
                    meta.digest_kind = DIGEST_IO;
                }
                meta.io_digest.event = (dg_code_t)IO_EVENT_CMD;
#ifndef DIGESTS_COMPACT
                meta.io_digest.mode = meta.cfg.mode;
#endif
                meta.io_digest.vantage = (dg_code_t)vantage;
                meta.io_digest.op = (dg_code_t)((hdr.nvme_sqe.opc == NVME_OPC_WRITE) ? IO_OP_WRITE : IO_OP_READ);
                meta.io_digest.flags = (dg_io_flags_t)flags;
                meta.io_digest.host = host;
                meta.io_digest.target = target;
                meta.io_digest.host_qp = peer_qp;
                meta.io_digest.target_qp = hdr.bth.dest_qp;
                meta.io_digest.cmd_psn = (dg_psn_t)hdr.bth.psn;
                meta.io_digest.cid = cid;
                meta.io_digest.status = 0;
                meta.io_digest.bytes = (dg_io_bytes_t)sgl_len;
#ifndef DIGESTS_COMPACT
                meta.io_digest.ts = meta.now;
#endif
                meta.io_digest.e2e_ns = 0;
                meta.io_digest.to_data_ns = 0;
                meta.io_digest.from_data_ns = 0;
                meta.io_digest.host_prep_ns = 0;
                meta.io_digest.gen = win_gen;
            }
            return;
        }

        if (pkt_class == IO_PKT_RSP) {
            // CQE DW3 bits 31:16, without the phase bit.
            bit<16> status = (hdr.nvme_cqe.status_le[7:0] ++ hdr.nvme_cqe.status_le[15:8]) & 16w0xfffe;
#ifndef DIGESTS_COMPACT
            meta.io_digest.mode = meta.cfg.mode;
#endif
            meta.io_digest.host = host;
            meta.io_digest.target = target;
            meta.io_digest.host_qp = hdr.bth.dest_qp;
            meta.io_digest.cid = cid;
            meta.io_digest.status = status;
#ifndef DIGESTS_COMPACT
            meta.io_digest.ts = meta.now;
#endif
            meta.io_digest.to_data_ns = 0;
            meta.io_digest.from_data_ns = 0;
            meta.io_digest.host_prep_ns = 0;
            meta.io_digest.gen = win_gen;
            if (!paired) {
                meta.stat.io_outcome = IO_OUTCOME_UNPAIRED;
                if (io_digests) {
                    meta.digest_kind = DIGEST_IO;
                }
                meta.io_digest.event = (dg_code_t)IO_EVENT_UNPAIRED_RSP;
                meta.io_digest.vantage = (dg_code_t)vantage;
                meta.io_digest.op = 0;
                meta.io_digest.flags = 0;
                meta.io_digest.target_qp = 0;
                meta.io_digest.cmd_psn = 0;
                meta.io_digest.bytes = 0;
                meta.io_digest.e2e_ns = 0;
                return;
            }
            bit<32> slot;
            HASH_INDEX(slot, IO_SLOTS, { host, target, peer_qp, cid });
            ipv4_addr_t slot_host;
            ipv4_addr_t slot_target;
            bit<32> slot_tqp;
            bit<16> slot_cid;
            bit<32> slot_psn;
            bit<8> info;
            io_host.read(slot_host, slot);
            io_target.read(slot_target, slot);
            io_target_qp.read(slot_tqp, slot);
            io_cid.read(slot_cid, slot);
            io_cmd_psn.read(slot_psn, slot);
            io_info.read(info, slot);
            if ((info & IO_INFO_VALID) == 0 || slot_host != host || slot_target != target
                    || slot_tqp != 8w0 ++ peer_qp || slot_cid != cid) {
                meta.stat.io_outcome = IO_OUTCOME_UNMATCHED;
                return;
            }
            ts_t cmd_ts;
            ts_t first_ts;
            ts_t last_ts;
            ts_t rr_first_ts;
            bit<32> bytes;
            io_cmd_ts.read(cmd_ts, slot);
            io_data_first_ts.read(first_ts, slot);
            io_data_last_ts.read(last_ts, slot);
            io_rr_first_ts.read(rr_first_ts, slot);
            io_bytes.read(bytes, slot);
            io_info.write(slot, 0);

            bool is_write = (info & IO_INFO_WRITE) != 0;
            bool data_seen = (info & IO_INFO_DATA_SEEN) != 0;
            bool rr_seen = (info & IO_INFO_RR_SEEN) != 0;
            meta.io_digest.flags = 0;
            if (data_seen) {
                meta.io_digest.flags = meta.io_digest.flags | (dg_io_flags_t)IO_FLAG_DATA_SEEN;
                meta.io_digest.to_data_ns = (dg_ns_t)(first_ts - cmd_ts);
            }
            if (rr_seen) {
                meta.io_digest.flags = meta.io_digest.flags | (dg_io_flags_t)IO_FLAG_RR_SEEN;
            }
            if ((info & IO_INFO_IN_CAPSULE) != 0) {
                meta.io_digest.flags = meta.io_digest.flags | (dg_io_flags_t)IO_FLAG_IN_CAPSULE;
            }
            // The last data packet: read data (read), READ RESPONSE (write);
            // only the I/O's own (the packet recorded last ends its message).
            if ((!is_write && data_seen) || (is_write && rr_seen)) {
                if ((info & IO_INFO_LAST_END) != 0) {
                    meta.io_digest.from_data_ns = (dg_ns_t)(meta.now - last_ts);
                } else {
                    meta.io_digest.flags = meta.io_digest.flags | (dg_io_flags_t)IO_FLAG_LAST_LOST;
                    meta.stat.ioref_overwritten = true;
                }
            }
            if (is_write && data_seen && rr_seen) {
                meta.io_digest.host_prep_ns = (dg_ns_t)(rr_first_ts - first_ts);
            }
            // The histograms: each figure exactly when the record has it.
            bit<8> rsp_vantage = info & IO_INFO_VANTAGE;
            bool in_capsule_io = (info & IO_INFO_IN_CAPSULE) != 0;
            bool last_seen = ((!is_write && data_seen) || (is_write && rr_seen)) && (info & IO_INFO_LAST_END) != 0;
            bool dal_valid = (rsp_vantage & VANTAGE_S) != 0 && (in_capsule_io || (data_seen && last_seen));
            ts_t e2e = meta.now - cmd_ts;
            ts_t dal = in_capsule_io ? e2e : (first_ts - cmd_ts) + (meta.now - last_ts);
            bool dpl_valid = (rsp_vantage & VANTAGE_C) != 0 && is_write && !in_capsule_io && data_seen && rr_seen;
            bool unpaired;
            histograms.apply(host, target, is_write, rsp_vantage, e2e, dal_valid, dal, dpl_valid,
                             rr_first_ts - first_ts, unpaired);
            if (unpaired) {
                meta.io_digest.flags = meta.io_digest.flags | (dg_io_flags_t)IO_FLAG_HIST_UNPAIRED;
            }
            meta.stat.io_outcome = IO_OUTCOME_RSP;
            if (io_digests) {
                meta.digest_kind = DIGEST_IO;
            }
            meta.io_digest.event = (dg_code_t)IO_EVENT_RSP;
            meta.io_digest.vantage = (dg_code_t)(info & IO_INFO_VANTAGE);
            meta.io_digest.op = (dg_code_t)(is_write ? IO_OP_WRITE : IO_OP_READ);
            meta.io_digest.target_qp = peer_qp;
            meta.io_digest.cmd_psn = (dg_psn_t)slot_psn[23:0];
            meta.io_digest.bytes = (dg_io_bytes_t)bytes;
            meta.io_digest.e2e_ns = (dg_ns_t)(meta.now - cmd_ts);
            return;
        }

        // Data packets: the I/O their reference names, if its key still holds.
        if (!found) {
            return;
        }
        bit<32> slot = (bit<32>)ref[31:32-IO_REF_SLOT_BITS];
        ipv4_addr_t slot_host;
        ipv4_addr_t slot_target;
        bit<32> slot_tqp;
        bit<32> slot_psn;
        bit<8> info;
        io_host.read(slot_host, slot);
        io_target.read(slot_target, slot);
        io_target_qp.read(slot_tqp, slot);
        io_cmd_psn.read(slot_psn, slot);
        io_info.read(info, slot);
        bool is_write = (info & IO_INFO_WRITE) != 0;
        if ((info & IO_INFO_VALID) == 0 || slot_host != host || slot_target != target
                || slot_tqp != 8w0 ++ ref_tqp || slot_psn[31-IO_REF_SLOT_BITS:0] != ref[31-IO_REF_SLOT_BITS:0]) {
            return;
        }
        // Whether this packet ends its message, and the message is the I/O's
        // last RDMA operation (it becomes the I/O's last data packet); a
        // message's first whose LAST was held ends it at the LAST's time.
        // Once the I/O has its last data packet (the first sighting of its
        // final message's last PSN), a late or resent packet does not move
        // it (the info word keeps IO_INFO_LAST_END).
        bit<8> end_bit = 0;
        ts_t last_ts = meta.now;
        if (held_last) {
            last_ts = held_last_ts;
        }
        if (!more && (held_last || opcode == OP_WRITE_LAST || opcode == OP_WRITE_LAST_IMM || opcode == OP_WRITE_ONLY
                || opcode == OP_WRITE_ONLY_IMM || opcode == OP_READ_RESPONSE_LAST || opcode == OP_READ_RESPONSE_ONLY)) {
            end_bit = IO_INFO_LAST_END;
        }
        bool has_last = (info & IO_INFO_LAST_END) != 0;
        if (pkt_class == IO_PKT_WRITE_DATA && !is_write) {
            if ((info & IO_INFO_DATA_SEEN) == 0) {
                io_data_first_ts.write(slot, meta.now);
            }
            io_info.write(slot, info | IO_INFO_DATA_SEEN | end_bit);
            if (!has_last) {
                io_data_last_ts.write(slot, last_ts);
            }
        } else if (pkt_class == IO_PKT_READ_REQ && is_write) {
            if ((info & IO_INFO_DATA_SEEN) == 0) {
                io_data_first_ts.write(slot, meta.now);
                io_info.write(slot, info | IO_INFO_DATA_SEEN);
            }
        } else if (pkt_class == IO_PKT_READ_RESP && is_write) {
            if ((info & IO_INFO_RR_SEEN) == 0) {
                io_rr_first_ts.write(slot, meta.now);
            }
            io_info.write(slot, info | IO_INFO_RR_SEEN | end_bit);
            if (!has_last) {
                io_data_last_ts.write(slot, last_ts);
            }
        }
    }
}

#endif
