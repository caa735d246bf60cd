// NVMe queues (SPEC §3), TNA build: the algorithm of
// p4/include/control/queue_pairs.p4. Each map is two pair registers, the
// key (host, target) and (own QP tag, peer QP tag), one access each.
#ifndef __QUEUE_PAIRS__
#define __QUEUE_PAIRS__

const bit<8> QP_LEARN = 1;          // host_qp <-> target_qp
const bit<8> QP_FIND_BY_HOST = 2;   // host_qp -> target_qp (response capsule)
const bit<8> QP_FIND_BY_TARGET = 3; // target_qp -> host_qp (command capsule)

control QueuePairs(in bit<8> op, in ipv4_addr_t host, in ipv4_addr_t target,
                   in qpn_t host_qp, in qpn_t target_qp,
                   out bool found, out qpn_t peer, inout local_metadata_t meta) {
    bit<32> host_tag;    // valid bit 31 ++ host QP
    bit<32> target_tag;  // valid bit 31 ++ target QP
    Hash<bit<16>>(HashAlgorithm_t.CRC16) host_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) target_hash;

    REGPAIR(by_host_key, QUEUE_SLOTS, QUEUE_SLOT_BITS)
    REGPAIR(by_host_qp, QUEUE_SLOTS, QUEUE_SLOT_BITS)
    REGPAIR(by_target_key, QUEUE_SLOTS, QUEUE_SLOT_BITS)
    REGPAIR(by_target_qp, QUEUE_SLOTS, QUEUE_SLOT_BITS)
    RA_PAIR_SWAP(by_host_key, QUEUE_SLOT_BITS, by_host_key_swap, host, target)
    RA_PAIR_MATCH(by_host_key, QUEUE_SLOT_BITS, by_host_key_match, host, target)
    RA_PAIR_SWAP(by_host_qp, QUEUE_SLOT_BITS, by_host_qp_swap, host_tag, target_tag)
    RA_PAIR_FIND(by_host_qp, QUEUE_SLOT_BITS, by_host_qp_find, host_tag)
    RA_PAIR_WRITE(by_target_key, QUEUE_SLOT_BITS, by_target_key_write, host, target)
    RA_PAIR_MATCH(by_target_key, QUEUE_SLOT_BITS, by_target_key_match, host, target)
    RA_PAIR_WRITE(by_target_qp, QUEUE_SLOT_BITS, by_target_qp_write, target_tag, host_tag)
    RA_PAIR_FIND(by_target_qp, QUEUE_SLOT_BITS, by_target_qp_find, target_tag)

    apply {
        found = false;
        peer = 0;
        host_tag = 1w1 ++ 7w0 ++ host_qp;
        target_tag = 1w1 ++ 7w0 ++ target_qp;
        bit<QUEUE_SLOT_BITS> hidx = host_hash.get({ host, target, host_qp })[QUEUE_SLOT_BITS-1:0];
        bit<QUEUE_SLOT_BITS> tidx = target_hash.get({ host, target, target_qp })[QUEUE_SLOT_BITS-1:0];
        if (op == QP_LEARN) {
            bit<1> key_changed = by_host_key_swap.execute(hidx);
            bit<1> qp_changed = by_host_qp_swap.execute(hidx);
            if (key_changed != 0 || qp_changed != 0) {
                meta.stat.queue_pair_learned = true;
            }
            by_target_key_write.execute(tidx);
            by_target_qp_write.execute(tidx);
            found = true;
        } else if (op == QP_FIND_BY_HOST) {
            bit<1> m = by_host_key_match.execute(hidx);
            bit<32> p = by_host_qp_find.execute(hidx);
            if (m == 1 && p[31:31] == 1) {
                found = true;
                peer = p[23:0];
            }
        } else if (op == QP_FIND_BY_TARGET) {
            bit<1> m = by_target_key_match.execute(tidx);
            bit<32> p = by_target_qp_find.execute(tidx);
            if (m == 1 && p[31:31] == 1) {
                found = true;
                peer = p[23:0];
            }
        }
    }
}

#endif
