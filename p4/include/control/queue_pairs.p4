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
// host_qp and a response its target_qp. Each map has two ways, each indexed
// by its own hash (CRC-32 of the key's fields in two orders) and each four registers of 32
// bits accessed once per packet, in order (way 0, then way 1), as two stages
// of a pipeline would. A pairing goes to the first way whose entry holds its
// key or is empty (the full key is checked before an entry is reused); only
// when both hold other keys does it replace way 1's (a collision): the
// pairing lost from the by-host-QP map is reported (IO_EVENT_QUEUE_PAIR), so
// that the exporter still attributes the responses of its queue. A newer pairing of the same key replaces the older one (a
// queue torn down and set up again).
#ifndef __QUEUE_PAIRS__
#define __QUEUE_PAIRS__

// A pairing a newer one took from the by-host-QP map.
struct queue_pair_t {
    bool valid;
    ipv4_addr_t host;
    ipv4_addr_t target;
    qpn_t qp;      // the host's QP
    qpn_t peer;    // the target's QP
}

const bit<8> QP_LEARN = 1;          // host_qp <-> target_qp
const bit<8> QP_FIND_BY_HOST = 2;   // host_qp -> target_qp (response capsule)
const bit<8> QP_FIND_BY_TARGET = 3; // target_qp -> host_qp (command capsule)

control QueuePairWay(in bit<8> op, in bit<32> idx, in ipv4_addr_t host, in ipv4_addr_t target,
                     in bit<32> tag, in bit<32> peer_word, in bool last_way,
                     inout bool done, inout bool found, inout bit<32> peer, inout bool learned,
                     inout queue_pair_t evicted) {
    REGISTER(ipv4_addr_t, QUEUE_SLOTS, way_host)
    REGISTER(ipv4_addr_t, QUEUE_SLOTS, way_target)
    REGISTER(bit<32>, QUEUE_SLOTS, way_qpn)      // valid bit 31 ++ this side's QP
    REGISTER(bit<32>, QUEUE_SLOTS, way_peer)     // the other side's QP

    apply {
        if (done) {
            return;
        }
        ipv4_addr_t k_host;
        ipv4_addr_t k_target;
        bit<32> k_qpn;
        bit<32> k_peer;
        way_host.read(k_host, idx);
        way_target.read(k_target, idx);
        way_qpn.read(k_qpn, idx);
        way_peer.read(k_peer, idx);
        bool same = k_host == host && k_target == target && k_qpn == tag;
        if (op == QP_LEARN) {
            if (same || k_qpn == 0 || last_way) {
                if (!same || k_peer != peer_word) {
                    learned = true;
                }
                if (!same && k_qpn != 0) {
                    // Both ways hold other keys: this one's pairing is lost here.
                    evicted.valid = true;
                    evicted.host = k_host;
                    evicted.target = k_target;
                    evicted.qp = k_qpn[23:0];
                    evicted.peer = k_peer[23:0];
                }
                way_host.write(idx, host);
                way_target.write(idx, target);
                way_qpn.write(idx, tag);
                way_peer.write(idx, peer_word);
                done = true;
            }
        } else if (same) {
            found = true;
            peer = k_peer;
            done = true;
        }
    }
}

control QueuePairs(in bit<8> op, in ipv4_addr_t host, in ipv4_addr_t target,
                   in qpn_t host_qp, in qpn_t target_qp,
                   out bool found, out qpn_t peer, out queue_pair_t evicted, inout local_metadata_t meta) {
    // Keyed by (host, target, host_qp): the target's QP.
    QueuePairWay() by_host_0;
    QueuePairWay() by_host_1;
    // Keyed by (host, target, target_qp): the host's QP.
    QueuePairWay() by_target_0;
    QueuePairWay() by_target_1;

    apply {
        found = false;
        peer = 0;
        evicted = { false, 0, 0, 0, 0 };
        queue_pair_t evicted_by_target = { false, 0, 0, 0, 0 };
        if (op == 0) {
            return;
        }
        bit<32> hidx0;
        bit<32> hidx1;
        bit<32> tidx0;
        bit<32> tidx1;
        HASH_INDEX(hidx0, QUEUE_SLOTS, { host, target, host_qp });
        // Way 1 hashes the key's fields in the other order: CRC-32 is linear,
        // so this is an independent index (keys that collide in way 0 do not
        // in way 1), where a prefix or salt would only shift way 0's.
        HASH_INDEX(hidx1, QUEUE_SLOTS, { host_qp, target, host });
        HASH_INDEX(tidx0, QUEUE_SLOTS, { host, target, target_qp });
        HASH_INDEX(tidx1, QUEUE_SLOTS, { target_qp, target, host });
        bit<32> host_tag = 1w1 ++ 7w0 ++ host_qp;
        bit<32> target_tag = 1w1 ++ 7w0 ++ target_qp;
        bool done = false;
        bool learned = false;
        bit<32> peer_word = 0;

        if (op == QP_LEARN || op == QP_FIND_BY_HOST) {
            by_host_0.apply(op, hidx0, host, target, host_tag, 8w0 ++ target_qp, false, done, found, peer_word, learned, evicted);
            by_host_1.apply(op, hidx1, host, target, host_tag, 8w0 ++ target_qp, true, done, found, peer_word, learned, evicted);
        }
        if (op == QP_LEARN || op == QP_FIND_BY_TARGET) {
            done = false;
            // (A command whose host QP was lost here gets a digest without it; its response names it.)
            by_target_0.apply(op, tidx0, host, target, target_tag, 8w0 ++ host_qp, false, done, found, peer_word, learned, evicted_by_target);
            by_target_1.apply(op, tidx1, host, target, target_tag, 8w0 ++ host_qp, true, done, found, peer_word, learned, evicted_by_target);
        }
        if (op == QP_LEARN) {
            found = true;
            if (learned) {
                meta.stat.queue_pair_learned = true;
            }
        }
        peer = peer_word[23:0];
    }
}

#endif
