// NVMe queues (SPEC §3): which host-side QP pairs with which target-side QP.
//
// An NVMe queue is one RC connection. The command capsule goes to the
// target's QP (target_qp), the response capsule and the data transfers the
// target starts go to the host's QP (host_qp); no packet names both. The
// pairing is learned from
//   - the first keyed transfer of an I/O on the queue: the RDMA WRITE (read
//     data) or READ REQUEST (write) that carries the command's SGL key is
//     sent to host_qp, and the command was sent to target_qp;
//   - the RDMA CM exchange that set the queue up, where this switch sees it:
//     the REQ names the host's QP, the REP the target's.
// Two maps hold it, one keyed by each side, so that a command finds its
// host_qp and a response its target_qp. Each map is four registers of 32
// bits, each accessed once per packet. A newer pairing in a slot replaces
// the older one (a queue torn down and set up again, or a collision).
#ifndef __QUEUE_PAIRS__
#define __QUEUE_PAIRS__

const bit<8> QP_LEARN = 1;          // host_qp <-> target_qp
const bit<8> QP_FIND_BY_HOST = 2;   // host_qp -> target_qp (response capsule)
const bit<8> QP_FIND_BY_TARGET = 3; // target_qp -> host_qp (command capsule)

control QueuePairs(in bit<8> op, in ipv4_addr_t host, in ipv4_addr_t target,
                   in qpn_t host_qp, in qpn_t target_qp,
                   out bool found, out qpn_t peer, inout local_metadata_t meta) {
    // Keyed by (host, target, host_qp): the target's QP.
    REGISTER(ipv4_addr_t, QUEUE_SLOTS, by_host_host)
    REGISTER(ipv4_addr_t, QUEUE_SLOTS, by_host_target)
    REGISTER(bit<32>, QUEUE_SLOTS, by_host_qpn)      // valid bit 31 ++ host QP
    REGISTER(bit<32>, QUEUE_SLOTS, by_host_peer)     // target QP
    // Keyed by (host, target, target_qp): the host's QP.
    REGISTER(ipv4_addr_t, QUEUE_SLOTS, by_target_host)
    REGISTER(ipv4_addr_t, QUEUE_SLOTS, by_target_target)
    REGISTER(bit<32>, QUEUE_SLOTS, by_target_qpn)    // valid bit 31 ++ target QP
    REGISTER(bit<32>, QUEUE_SLOTS, by_target_peer)   // host QP

    apply {
        found = false;
        peer = 0;
        bit<32> hidx;
        bit<32> tidx;
        HASH_INDEX(hidx, QUEUE_SLOTS, { host, target, host_qp });
        HASH_INDEX(tidx, QUEUE_SLOTS, { host, target, target_qp });
        bit<32> host_tag = 1w1 ++ 7w0 ++ host_qp;
        bit<32> target_tag = 1w1 ++ 7w0 ++ target_qp;
        ipv4_addr_t k_host;
        ipv4_addr_t k_target;
        bit<32> k_qpn;
        bit<32> k_peer;

        if (op == QP_LEARN) {
            by_host_host.read(k_host, hidx);
            by_host_target.read(k_target, hidx);
            by_host_qpn.read(k_qpn, hidx);
            by_host_peer.read(k_peer, hidx);
            if (k_host != host || k_target != target || k_qpn != host_tag || k_peer != 8w0 ++ target_qp) {
                meta.stat.queue_pair_learned = true;
            }
            by_host_host.write(hidx, host);
            by_host_target.write(hidx, target);
            by_host_qpn.write(hidx, host_tag);
            by_host_peer.write(hidx, 8w0 ++ target_qp);
            by_target_host.write(tidx, host);
            by_target_target.write(tidx, target);
            by_target_qpn.write(tidx, target_tag);
            by_target_peer.write(tidx, 8w0 ++ host_qp);
            found = true;
        } else if (op == QP_FIND_BY_HOST) {
            by_host_host.read(k_host, hidx);
            by_host_target.read(k_target, hidx);
            by_host_qpn.read(k_qpn, hidx);
            by_host_peer.read(k_peer, hidx);
            if (k_host == host && k_target == target && k_qpn == host_tag) {
                found = true;
                peer = k_peer[23:0];
            }
        } else if (op == QP_FIND_BY_TARGET) {
            by_target_host.read(k_host, tidx);
            by_target_target.read(k_target, tidx);
            by_target_qpn.read(k_qpn, tidx);
            by_target_peer.read(k_peer, tidx);
            if (k_host == host && k_target == target && k_qpn == target_tag) {
                found = true;
                peer = k_peer[23:0];
            }
        }
    }
}

#endif
