// Every table size and register depth, in one place.
#ifndef __SIZE__
#define __SIZE__

#define PORT_COUNT 512
#define ROUTE_TABLE_SIZE 1024
// Hash-indexed register slots (full mode). Powers of two.
#define FLOW_SLOTS 65536
#define IO_SLOTS 65536
// Data references (R_Key, PSN, QP maps) live from a command to its data: a
// larger map keeps colliding keys from taking each other's entries.
#define IOREF_SLOTS 262144
#define PAIR_SLOTS 4096
// NVMe queues (host QP <-> target QP pairings), and RDMA CM exchanges in flight.
#define QUEUE_SLOTS 16384
#define CM_SLOTS 4096
#define LEARN_SLOTS 65536
// Polling-mode watchlists (capacity N).
#define FLOW_WATCHLIST_SIZE 1024
#define IO_WATCHLIST_SIZE 1024
#define STATS_SIZE 32

#endif
