// Every table size and register depth, in one place.
#ifndef __SIZE__
#define __SIZE__

#define PORT_COUNT 512
#define ROUTE_TABLE_SIZE 1024
// IPv6 endpoints (address -> endpoint key), per table (src_v6, dst_v6), and
// the slots of their learn filter.
#ifdef TARGET_TNA
#define ENDPOINT_TABLE_SIZE 4096
#define ENDPOINT_LEARN_SLOTS 4096
#define ENDPOINT_LEARN_SLOT_BITS 12
#else
#define ENDPOINT_TABLE_SIZE 4096
#define ENDPOINT_LEARN_SLOTS 4096
#endif
// Hash-indexed register slots (full mode). Powers of two.
#ifdef TARGET_TNA
// Tofino 1 (p4/tna): register slots sized for a 32-port ToR, so that every
// register array fits the SRAM of one stage beside the others (see
// docs/tofino.md). *_BITS is log2 of the size (the width of the hash index).
#define FLOW_SLOTS 16384
#define FLOW_SLOT_BITS 14
// The seen-PSN window (Tofino 2): four blocks of 32 PSNs per flow slot.
#define FLOW_SLOTS_W 65536
#define FLOW_SLOT_BITS_W 16
#define IO_SLOTS 16384
#define IO_SLOT_BITS 14
#define IOREF_SLOTS 16384
#define IOREF_SLOT_BITS 14
#define PAIR_SLOTS 2048
#define PAIR_SLOT_BITS 11
// Queue pairings per map (one way): Tofino 2's ingress takes twice Tofino
// 1's (in two more of its 20 stages).
#if __TARGET_TOFINO__ == 2
#define QUEUE_SLOTS 32768
#define QUEUE_SLOT_BITS 15
#else
#define QUEUE_SLOTS 16384
#define QUEUE_SLOT_BITS 14
#endif
#define LEARN_SLOTS 8192
#define LEARN_SLOT_BITS 13
#else
#define FLOW_SLOTS 65536
// In-flight I/Os: a command whose slot holds another live I/O is untracked
// there. A data reference holds the slot in IO_REF_SLOT_BITS bits and the
// command's PSN in the rest of 32 (14 bits: a slot's next I/O is told from
// the last unless their PSNs are a multiple of 16,384 apart).
#define IO_SLOTS 262144
#define IO_REF_SLOT_BITS 18
// Data references (R_Key, PSN, QP maps) live from a command to its data: a
// larger map keeps colliding keys from taking each other's entries.
#define IOREF_SLOTS 262144
#define PAIR_SLOTS 4096
// NVMe queues (host QP <-> target QP pairings), and RDMA CM exchanges in flight.
// Per way of the two-way queue pair maps (queue_pairs.p4): 262,144 entries
// in all per map, 24,576 queues fill 9 % of each way.
#define QUEUE_SLOTS 131072
#define CM_SLOTS 65536  // per way (two)
#define LEARN_SLOTS 65536
#endif
// Polling-mode watchlists (capacity N).
#define FLOW_WATCHLIST_SIZE 1024
#define IO_WATCHLIST_SIZE 1024

#endif
