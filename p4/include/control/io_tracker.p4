// NVMe-over-RoCE I/O tracking (SPEC §3).
//
// An I/O (host, target, CID) gets a hash-indexed slot at its command capsule.
// Data packets find their I/O through two reference maps:
//   - by R_Key: RDMA WRITE first/only (read data) and READ REQUEST (write);
//   - by PSN: READ RESPONSE first/only (write data) answers the request's PSN;
// and continuation packets (middle/last) through the map of the QP's
// current message. The response capsule closes the slot and emits one
// io_digest_t with every duration measured at this switch. The command
// capsule emits one too, so that the exporter can count I/Os that never
// complete.
#ifndef __IO_TRACKER__
#define __IO_TRACKER__

// Bits of the io_info register.
const bit<8> IO_INFO_VANTAGE = 0x03;   // VANTAGE_* of the command
const bit<8> IO_INFO_DATA_SEEN = 0x04;
const bit<8> IO_INFO_RR_SEEN = 0x08;
const bit<8> IO_INFO_WRITE = 0x40;
const bit<8> IO_INFO_VALID = 0x80;

// Packet classes this control handles.
const bit<8> IO_PKT_NONE = 0;
const bit<8> IO_PKT_CMD = 1;
const bit<8> IO_PKT_RSP = 2;
const bit<8> IO_PKT_WRITE_DATA = 3;   // target -> host RDMA WRITE (read I/O)
const bit<8> IO_PKT_READ_REQ = 4;     // target -> host READ REQUEST (write I/O)
const bit<8> IO_PKT_READ_RESP = 5;    // host -> target READ RESPONSE (write I/O)

control IoTracker(in headers_t hdr, inout local_metadata_t meta) {
    // The I/O slots.
    REGISTER(ipv4_addr_t, IO_SLOTS, io_host)
    REGISTER(ipv4_addr_t, IO_SLOTS, io_target)
    REGISTER(bit<16>, IO_SLOTS, io_cid)
    REGISTER(bit<8>, IO_SLOTS, io_info)           // IO_INFO_*
    REGISTER(bit<32>, IO_SLOTS, io_bytes)
    REGISTER(ts_t, IO_SLOTS, io_cmd_ts)
    REGISTER(ts_t, IO_SLOTS, io_data_first_ts)    // read: d_first; write: rreq
    REGISTER(ts_t, IO_SLOTS, io_data_last_ts)     // read: d_last; write: rr_last
    REGISTER(ts_t, IO_SLOTS, io_rr_first_ts)      // write: rr_first
    // Reference maps; a reference is slot[31:16] ++ cid[15:0]. Keys are kept
    // whole, in registers of at most 32 bits (as Tofino's are).
    REGISTER(ipv4_addr_t, IOREF_SLOTS, rkey_map_host)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, rkey_map_target)
    REGISTER(rkey_t, IOREF_SLOTS, rkey_map_rkey)
    REGISTER(bit<32>, IOREF_SLOTS, rkey_map_ref)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, psn_map_host)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, psn_map_target)
    REGISTER(psn_t, IOREF_SLOTS, psn_map_psn)
    REGISTER(bit<32>, IOREF_SLOTS, psn_map_ref)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, qp_map_src)
    REGISTER(ipv4_addr_t, IOREF_SLOTS, qp_map_dst)
    REGISTER(bit<32>, IOREF_SLOTS, qp_map_qpn)      // valid bit 31 ++ QP number
    REGISTER(bit<32>, IOREF_SLOTS, qp_map_ref)
    // Host-target pairs already reported by a learn digest (polling mode).
    REGISTER(ipv4_addr_t, LEARN_SLOTS, learned_host)
    REGISTER(ipv4_addr_t, LEARN_SLOTS, learned_target)

    bit<8> pkt_class = IO_PKT_NONE;
    ipv4_addr_t host = 0;
    ipv4_addr_t target = 0;
    bit<8> vantage = 0;
    bool watched = false;

    action watch() {
        watched = true;
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
        if (!hdr.bth.isValid() || meta.cfg.mode == MODE_OFF) {
            return;
        }
        bit<8> opcode = hdr.bth.opcode;

        // Classify, and orient the packet as host/target.
        if (hdr.nvme_sqe.isValid()) {
            if ((hdr.nvme_sqe.opc == NVME_OPC_READ || hdr.nvme_sqe.opc == NVME_OPC_WRITE)
                    && hdr.nvme_sqe.sgl_type == NVME_SGL_TYPE_KEYED) {
                pkt_class = IO_PKT_CMD;
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
        if (pkt_class == IO_PKT_CMD || pkt_class == IO_PKT_READ_RESP) {
            // host -> target
            host = hdr.ipv4.src_addr;
            target = hdr.ipv4.dst_addr;
            if (meta.ingress_role == ROLE_COMPUTE) { vantage = vantage | VANTAGE_C; }
            if (meta.egress_role == ROLE_STORAGE) { vantage = vantage | VANTAGE_S; }
        } else {
            // target -> host
            host = hdr.ipv4.dst_addr;
            target = hdr.ipv4.src_addr;
            if (meta.egress_role == ROLE_COMPUTE) { vantage = vantage | VANTAGE_C; }
            if (meta.ingress_role == ROLE_STORAGE) { vantage = vantage | VANTAGE_S; }
        }
        if (vantage == 0) {
            return;  // neither end of this I/O is attached here
        }

        if (meta.cfg.mode == MODE_POLLING) {
            io_watchlist.apply();
            if (!watched) {
                if (pkt_class == IO_PKT_CMD) {
                    bit<32> lidx;
                    HASH_INDEX(lidx, LEARN_SLOTS, { host, target });
                    ipv4_addr_t seen_host;
                    ipv4_addr_t seen_target;
                    learned_host.read(seen_host, lidx);
                    learned_target.read(seen_target, lidx);
                    if (seen_host != host || seen_target != target) {
                        learned_host.write(lidx, host);
                        learned_target.write(lidx, target);
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

        bit<32> slot = 0;
        bit<16> cid = 0;
        bool found = false;

        if (pkt_class == IO_PKT_CMD) {
            cid = hdr.nvme_sqe.cid_le[7:0] ++ hdr.nvme_sqe.cid_le[15:8];
            rkey_t sgl_key = hdr.nvme_sqe.sgl_key_le[7:0] ++ hdr.nvme_sqe.sgl_key_le[15:8]
                ++ hdr.nvme_sqe.sgl_key_le[23:16] ++ hdr.nvme_sqe.sgl_key_le[31:24];
            bit<32> sgl_len = 8w0 ++ hdr.nvme_sqe.sgl_len_le[7:0] ++ hdr.nvme_sqe.sgl_len_le[15:8]
                ++ hdr.nvme_sqe.sgl_len_le[23:16];
            HASH_INDEX(slot, IO_SLOTS, { host, target, cid });
            ipv4_addr_t old_host;
            ipv4_addr_t old_target;
            bit<16> old_cid;
            bit<8> old_info;
            ts_t old_cmd_ts;
            io_host.read(old_host, slot);
            io_target.read(old_target, slot);
            io_cid.read(old_cid, slot);
            io_info.read(old_info, slot);
            io_cmd_ts.read(old_cmd_ts, slot);
            bool live = (old_info & IO_INFO_VALID) != 0
                && meta.now - old_cmd_ts <= meta.cfg.io_timeout_ns;
            bool same = old_host == host && old_target == target && old_cid == cid;
            if (live && same) {
                // A retransmitted command capsule: the first one counts.
            } else if (live) {
                meta.stat.untracked_io = true;
            } else {
                bit<8> info = IO_INFO_VALID | vantage;
                if (hdr.nvme_sqe.opc == NVME_OPC_WRITE) {
                    info = info | IO_INFO_WRITE;
                }
                io_host.write(slot, host);
                io_target.write(slot, target);
                io_cid.write(slot, cid);
                io_info.write(slot, info);
                io_bytes.write(slot, sgl_len);
                io_cmd_ts.write(slot, meta.now);
                io_data_first_ts.write(slot, 0);
                io_data_last_ts.write(slot, 0);
                io_rr_first_ts.write(slot, 0);
                bit<32> ridx;
                HASH_INDEX(ridx, IOREF_SLOTS, { host, target, sgl_key });
                // An entry of another I/O still in flight is lost here: count it.
                ipv4_addr_t prev_host;
                ipv4_addr_t prev_target;
                rkey_t prev_rkey;
                bit<32> prev_ref;
                rkey_map_host.read(prev_host, ridx);
                rkey_map_target.read(prev_target, ridx);
                rkey_map_rkey.read(prev_rkey, ridx);
                rkey_map_ref.read(prev_ref, ridx);
                if (prev_host != 0 && (prev_host != host || prev_target != target || prev_rkey != sgl_key)) {
                    bit<8> prev_info;
                    bit<16> prev_cid;
                    io_info.read(prev_info, 16w0 ++ prev_ref[31:16]);
                    io_cid.read(prev_cid, 16w0 ++ prev_ref[31:16]);
                    if ((prev_info & IO_INFO_VALID) != 0 && prev_cid == prev_ref[15:0]) {
                        meta.stat.ioref_overwritten = true;
                    }
                }
                rkey_map_host.write(ridx, host);
                rkey_map_target.write(ridx, target);
                rkey_map_rkey.write(ridx, sgl_key);
                rkey_map_ref.write(ridx, slot[15:0] ++ cid);

                meta.stat.io_cmd = true;
                meta.digest_kind = DIGEST_IO;
                meta.io_digest.event = IO_EVENT_CMD;
                meta.io_digest.mode = meta.cfg.mode;
                meta.io_digest.vantage = vantage;
                meta.io_digest.op = (hdr.nvme_sqe.opc == NVME_OPC_WRITE) ? IO_OP_WRITE : IO_OP_READ;
                meta.io_digest.flags = 0;
                meta.io_digest.host = host;
                meta.io_digest.target = target;
                meta.io_digest.cid = cid;
                meta.io_digest.status = 0;
                meta.io_digest.bytes = sgl_len;
                meta.io_digest.ts = meta.now;
                meta.io_digest.e2e_ns = 0;
                meta.io_digest.to_data_ns = 0;
                meta.io_digest.from_data_ns = 0;
                meta.io_digest.host_prep_ns = 0;
            }
            return;
        }

        if (pkt_class == IO_PKT_RSP) {
            cid = hdr.nvme_cqe.cid_le[7:0] ++ hdr.nvme_cqe.cid_le[15:8];
            bit<16> status_word = hdr.nvme_cqe.status_le[7:0] ++ hdr.nvme_cqe.status_le[15:8];
            HASH_INDEX(slot, IO_SLOTS, { host, target, cid });
            ipv4_addr_t slot_host;
            ipv4_addr_t slot_target;
            bit<16> slot_cid;
            bit<8> info;
            io_host.read(slot_host, slot);
            io_target.read(slot_target, slot);
            io_cid.read(slot_cid, slot);
            io_info.read(info, slot);
            if ((info & IO_INFO_VALID) == 0 || slot_host != host || slot_target != target || slot_cid != cid) {
                meta.stat.io_unmatched_rsp = true;
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
            meta.io_digest.to_data_ns = 0;
            meta.io_digest.from_data_ns = 0;
            meta.io_digest.host_prep_ns = 0;
            if (data_seen) {
                meta.io_digest.flags = meta.io_digest.flags | IO_FLAG_DATA_SEEN;
                meta.io_digest.to_data_ns = first_ts - cmd_ts;
            }
            if (rr_seen) {
                meta.io_digest.flags = meta.io_digest.flags | IO_FLAG_RR_SEEN;
            }
            // The last data packet: read data (read), READ RESPONSE (write).
            if ((!is_write && data_seen) || (is_write && rr_seen)) {
                meta.io_digest.from_data_ns = meta.now - last_ts;
            }
            if (is_write && data_seen && rr_seen) {
                meta.io_digest.host_prep_ns = rr_first_ts - first_ts;
            }
            meta.stat.io_rsp = true;
            meta.digest_kind = DIGEST_IO;
            meta.io_digest.event = IO_EVENT_RSP;
            meta.io_digest.mode = meta.cfg.mode;
            meta.io_digest.vantage = info & IO_INFO_VANTAGE;
            meta.io_digest.op = is_write ? IO_OP_WRITE : IO_OP_READ;
            meta.io_digest.host = host;
            meta.io_digest.target = target;
            meta.io_digest.cid = cid;
            meta.io_digest.status = status_word >> 1;
            meta.io_digest.bytes = bytes;
            meta.io_digest.ts = meta.now;
            meta.io_digest.e2e_ns = meta.now - cmd_ts;
            return;
        }

        // Data packets: find the I/O they belong to.
        bit<32> ref = 0;
        bit<32> qidx;
        HASH_INDEX(qidx, IOREF_SLOTS, { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp });
        bit<32> qpn_tag = 1w1 ++ 7w0 ++ hdr.bth.dest_qp;
        bool starts_message = (pkt_class == IO_PKT_WRITE_DATA && hdr.reth.isValid())
            || opcode == OP_READ_RESPONSE_FIRST || opcode == OP_READ_RESPONSE_ONLY;

        if (pkt_class == IO_PKT_WRITE_DATA || pkt_class == IO_PKT_READ_REQ) {
            if (hdr.reth.isValid()) {
                bit<32> ridx;
                HASH_INDEX(ridx, IOREF_SLOTS, { host, target, hdr.reth.rkey });
                ipv4_addr_t k_host;
                ipv4_addr_t k_target;
                rkey_t k_rkey;
                rkey_map_host.read(k_host, ridx);
                rkey_map_target.read(k_target, ridx);
                rkey_map_rkey.read(k_rkey, ridx);
                if (k_host == host && k_target == target && k_rkey == hdr.reth.rkey) {
                    rkey_map_ref.read(ref, ridx);
                    found = true;
                }
            }
        } else if (starts_message) {
            // READ RESPONSE first/only carries the PSN of the READ REQUEST.
            bit<32> pidx;
            HASH_INDEX(pidx, IOREF_SLOTS, { host, target, hdr.bth.psn });
            ipv4_addr_t p_host;
            ipv4_addr_t p_target;
            psn_t p_psn;
            psn_map_host.read(p_host, pidx);
            psn_map_target.read(p_target, pidx);
            psn_map_psn.read(p_psn, pidx);
            if (p_host == host && p_target == target && p_psn == hdr.bth.psn) {
                psn_map_ref.read(ref, pidx);
                found = true;
            }
        }
        if (starts_message) {
            // The QP's current message belongs to this I/O, or to none.
            qp_map_src.write(qidx, hdr.ipv4.src_addr);
            qp_map_dst.write(qidx, hdr.ipv4.dst_addr);
            qp_map_qpn.write(qidx, found ? qpn_tag : 32w0);
            qp_map_ref.write(qidx, ref);
        } else if (pkt_class != IO_PKT_READ_REQ) {
            ipv4_addr_t q_src;
            ipv4_addr_t q_dst;
            bit<32> q_qpn;
            qp_map_src.read(q_src, qidx);
            qp_map_dst.read(q_dst, qidx);
            qp_map_qpn.read(q_qpn, qidx);
            if (q_src == hdr.ipv4.src_addr && q_dst == hdr.ipv4.dst_addr && q_qpn == qpn_tag) {
                qp_map_ref.read(ref, qidx);
                found = true;
            }
        }
        if (!found) {
            return;
        }

        slot = 16w0 ++ ref[31:16];
        cid = ref[15:0];
        ipv4_addr_t slot_host;
        ipv4_addr_t slot_target;
        bit<16> slot_cid;
        bit<8> info;
        io_host.read(slot_host, slot);
        io_target.read(slot_target, slot);
        io_cid.read(slot_cid, slot);
        io_info.read(info, slot);
        bool is_write = (info & IO_INFO_WRITE) != 0;
        if ((info & IO_INFO_VALID) == 0 || slot_host != host || slot_target != target || slot_cid != cid) {
            return;
        }
        if (pkt_class == IO_PKT_WRITE_DATA && !is_write) {
            if ((info & IO_INFO_DATA_SEEN) == 0) {
                io_data_first_ts.write(slot, meta.now);
                io_info.write(slot, info | IO_INFO_DATA_SEEN);
            }
            io_data_last_ts.write(slot, meta.now);
        } else if (pkt_class == IO_PKT_READ_REQ && is_write) {
            if ((info & IO_INFO_DATA_SEEN) == 0) {
                io_data_first_ts.write(slot, meta.now);
                io_info.write(slot, info | IO_INFO_DATA_SEEN);
            }
            bit<32> pidx;
            HASH_INDEX(pidx, IOREF_SLOTS, { host, target, hdr.bth.psn });
            // As for R_Keys: taking the entry of an I/O still waiting for its READ RESPONSE is counted.
            ipv4_addr_t prev_host;
            ipv4_addr_t prev_target;
            psn_t prev_psn;
            bit<32> prev_ref;
            psn_map_host.read(prev_host, pidx);
            psn_map_target.read(prev_target, pidx);
            psn_map_psn.read(prev_psn, pidx);
            psn_map_ref.read(prev_ref, pidx);
            if (prev_host != 0 && (prev_host != host || prev_target != target || prev_psn != hdr.bth.psn)) {
                bit<8> prev_info;
                bit<16> prev_cid;
                io_info.read(prev_info, 16w0 ++ prev_ref[31:16]);
                io_cid.read(prev_cid, 16w0 ++ prev_ref[31:16]);
                if ((prev_info & (IO_INFO_VALID | IO_INFO_RR_SEEN)) == IO_INFO_VALID && prev_cid == prev_ref[15:0]) {
                    meta.stat.ioref_overwritten = true;
                }
            }
            psn_map_host.write(pidx, host);
            psn_map_target.write(pidx, target);
            psn_map_psn.write(pidx, hdr.bth.psn);
            psn_map_ref.write(pidx, ref);
        } else if (pkt_class == IO_PKT_READ_RESP && is_write) {
            if ((info & IO_INFO_RR_SEEN) == 0) {
                io_rr_first_ts.write(slot, meta.now);
                io_info.write(slot, info | IO_INFO_RR_SEEN);
            }
            io_data_last_ts.write(slot, meta.now);
        }
    }
}

#endif
