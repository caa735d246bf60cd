// Headers, digests and metadata.
#ifndef __HEADER__
#define __HEADER__

#include "define.p4"

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16> ether_type;
}

header vlan_h {
    bit<3> pcp;
    bit<1> dei;
    bit<12> vid;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4> version;
    bit<4> ihl;
    bit<6> dscp;
    bit<2> ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header ipv6_h {
    bit<4> version;
    bit<6> dscp;         // the traffic class: DSCP ++ ECN
    bit<2> ecn;
    bit<20> flow_label;  // in no key
    bit<16> payload_len;
    bit<8> next_hdr;
    bit<8> hop_limit;
    ipv6_addr_t src_addr;
    ipv6_addr_t dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

// InfiniBand Base Transport Header (12 bytes).
header bth_h {
    bit<8> opcode;
    bit<1> se;
    bit<1> migreq;
    bit<2> pad_count;
    bit<4> tver;
    bit<16> pkey;
    bit<8> resv8;
    qpn_t dest_qp;
    bit<1> ack_req;
    bit<7> resv7;
    psn_t psn;
}

// RDMA Extended Transport Header (16 bytes).
header reth_h {
    bit<64> va;
    rkey_t rkey;
    bit<32> dma_len;
}

// ACK Extended Transport Header (4 bytes).
header aeth_h {
    bit<8> syndrome;
    bit<24> msn;
}

header immdt_h {
    bit<32> imm;
}

header ieth_h {
    bit<32> rkey;
}

// Datagram Extended Transport Header (8 bytes), on UD packets.
header deth_h {
    bit<32> qkey;
    bit<8> resv8;
    qpn_t src_qp;
}

// Common header of a management datagram (24 bytes).
header mad_h {
    bit<8> base_version;
    bit<8> mgmt_class;
    bit<8> class_version;
    bit<8> method;
    bit<16> status;
    bit<16> class_specific;
    bit<64> tid;
    bit<16> attr_id;
    bit<16> resv16;
    bit<32> attr_mod;
}

// The leading fields of a CM REQ (36 bytes): the active side (the NVMe host) names its QP.
header cm_req_h {
    bit<32> local_comm_id;
    bit<32> resv32;
    bit<64> service_id;
    bit<64> local_ca_guid;
    bit<32> resv32b;
    bit<32> local_qkey;
    qpn_t local_qpn;
    bit<8> responder_resources;
}

// The leading fields of a CM REP (16 bytes): the passive side (the target) names its QP.
header cm_rep_h {
    bit<32> local_comm_id;
    bit<32> remote_comm_id;
    bit<32> local_qkey;
    qpn_t local_qpn;
    bit<8> resv8;
}

// First 40 bytes of the 64-byte NVMe submission queue entry in a command
// capsule. Multi-byte NVMe fields are little-endian on the wire.
header nvme_sqe_h {
    bit<8> opc;
    bit<8> flags;
    bit<16> cid_le;
    bit<32> nsid;
    bit<64> rsvd;
    bit<64> mptr;
    bit<64> sgl_addr;
    bit<24> sgl_len_le;  // keyed: length (3 bytes); data block: the low 3 bytes of the length
    bit<32> sgl_key_le;  // keyed: key; data block: byte 0 is the length's high byte
    bit<4> sgl_type;
    bit<4> sgl_subtype;
}

// 16-byte NVMe completion queue entry in a response capsule.
header nvme_cqe_h {
    bit<32> dw0;
    bit<32> dw1;
    bit<16> sqhd_le;
    bit<16> sqid_le;
    bit<16> cid_le;
    bit<16> status_le;
}

#ifdef TARGET_TNA
// Ingress to egress, before every packet (p4/tna): what the egress half of
// the program (the flow tracker, the statistics) needs from ingress.
header bridge_h {
    bit<8> magic;            // TNA_BRIDGE_MAGIC
    bit<32> now32;           // ingress MAC timestamp, ns, bits 31:0
    bit<32> now_c;           // its bits 47:16 (the coarse clock)
    bit<32> flow_timeout_c;
    epoch_t epoch;
    mode_t mode;
    role_t ingress_role;
    bit<1> no_route;         // dropped in egress
    bit<1> measured;         // the trackers measure it (endpoints.p4)
    bit<6> pad;
    endpoint_key_t src_key;
    endpoint_key_t dst_key;
}

// A message or flow-learn report of the egress flow tracker: mirrored in
// egress to the recirculation port, it comes back to the ingress, which
// sends it as a msg or learn digest and drops it.
header report_h {
    bit<8> magic;            // TNA_REPORT_MAGIC
    bit<8> kind;             // DIGEST_MSG or DIGEST_LEARN
    bit<8> flags;
    ipv4_addr_t src;
    ipv4_addr_t dst;
    qpn_t dest_qp;
    psn_t first_psn;
    psn_t last_psn;
    bit<32> bytes;
    bit<16> packets;
    bit<16> retransmitted;
    bit<16> ecn_ce;
    bit<32> fct_ns;
    bit<32> gap_ns;
    bit<16> extra_packets;
    bit<16> extra_retransmitted;
    bit<8> straddled;
    bit<16> cnp;
}
#endif

struct headers_t {
#ifdef TARGET_TNA
    bridge_h bridge;
    report_h report;
#endif
    ethernet_h ethernet;
    vlan_h vlan;
    ipv4_h ipv4;
    ipv6_h ipv6;
    udp_h udp;
    bth_h bth;
    reth_h reth;
    aeth_h aeth;
    immdt_h immdt;
    ieth_h ieth;
    deth_h deth;
    mad_h mad;
    cm_req_h cm_req;
    cm_rep_h cm_rep;
    nvme_sqe_h nvme_sqe;
    nvme_cqe_h nvme_cqe;
}

#if defined(TARGET_TNA) || defined(DIGESTS_COMPACT)
// Tofino packs a digest into one learn quantum of at most 48 bytes (the
// v1model digests are 64 and 79 bytes). The TNA digests keep the v1model
// member names and order; they leave out what does not fit, and narrow
// durations to 32 bits of ns (registers hold 32 bits; a duration wraps
// after 4.29 s, beyond every timeout). Left out: io `mode`, `ts` (the
// controller fills them in from its mode and the digest list's time);
// msg `mode`, `first_ts`, `extra_ecn_ce`. Narrowed: io `bytes` to 24 (the
// keyed SGL length field), msg counts to 16. test/p4/p4info-parity.test.ts
// lists exactly these. The v1model build sends the same layout when
// compiled with -DDIGESTS_COMPACT (p4/build/compact/, a test build).
// Each member takes whole bytes of the quantum: io `event`, `vantage` and
// `op` (2 bits each) share one, `evo` (event 1:0, vantage 3:2, op 5:4), so
// that the window occurrence (`gen`) fits.
struct io_digest_t {
    bit<32> seq;
    bit<8> evo;
    bit<4> flags;
    ipv4_addr_t host;
    ipv4_addr_t target;
    qpn_t host_qp;
    qpn_t target_qp;
    bit<16> cmd_psn;
    cid_t cid;
    bit<16> status;
    bit<24> bytes;
    bit<32> e2e_ns;
    bit<32> to_data_ns;
    bit<32> from_data_ns;
    bit<32> host_prep_ns;
    bit<8> gen;          // as in the full layout below
}

#ifdef TARGET_TNA
struct io_evo_t {
    bit<2> event;
    bit<2> vantage;
    bit<2> op;
}
#endif

#if defined(DIGESTS_COMPACT) && !defined(TARGET_TNA)
// The v1model trackers fill the compact members one by one; main.p4 packs
// `event`, `vantage` and `op` into `evo` as it sends the digest.
struct io_meta_t {
    bit<32> seq;
    bit<2> event;
    bit<2> vantage;
    bit<2> op;
    bit<4> flags;
    ipv4_addr_t host;
    ipv4_addr_t target;
    qpn_t host_qp;
    qpn_t target_qp;
    bit<16> cmd_psn;
    cid_t cid;
    bit<16> status;
    bit<24> bytes;
    bit<32> e2e_ns;
    bit<32> to_data_ns;
    bit<32> from_data_ns;
    bit<32> host_prep_ns;
    bit<8> gen;
}
#define IO_META_T io_meta_t
#endif

struct msg_digest_t {
    bit<32> seq;
    bit<1> flags;
    ipv4_addr_t src;
    ipv4_addr_t dst;
    qpn_t dest_qp;
    psn_t first_psn;
    psn_t last_psn;
    bit<32> bytes;
    bit<16> packets;
    bit<16> retransmitted;
    bit<16> ecn_ce;
    bit<32> fct_ns;
    bit<32> gap_ns;
    bit<16> extra_packets;
    bit<16> extra_retransmitted;
    bit<8> straddled;
    bit<16> cnp;
}
#else
// One per completed or started NVMe I/O at a vantage (SPEC §3). An I/O is
// (host, target, target_qp, cid); cmd_psn (the command capsule's PSN) tells
// apart the successive I/Os of one key, and joins the two vantages' halves.
// Durations are ns; fields that do not apply are 0 and flagged in `flags`.
struct io_digest_t {
    bit<32> seq;
    bit<8> event;        // IO_EVENT_*
    bit<8> vantage;      // VANTAGE_* bits
    bit<8> mode;
    bit<8> op;           // IO_OP_*
    bit<8> flags;        // IO_FLAG_*
    ipv4_addr_t host;
    ipv4_addr_t target;
    qpn_t host_qp;       // 0 while the queue's pairing is unknown
    qpn_t target_qp;     // 0 on IO_EVENT_UNPAIRED_RSP
    psn_t cmd_psn;
    cid_t cid;
    bit<16> status;      // CQE DW3 bits 31:16 with the phase bit (16) cleared; 0 on CMD
    bit<32> bytes;       // SGL length
    ts_t ts;             // ingress time of this event's packet
    ts_t e2e_ns;         // rsp - cmd
    ts_t to_data_ns;     // read: d_first - cmd; write: rreq - cmd
    ts_t from_data_ns;   // read: rsp - d_last; write: rsp - rr_last
    ts_t host_prep_ns;   // write: rr_first - rreq (DPL)
    // Polling and summary mode: the window occurrence (io_watchlist's `gen`,
    // a new value each time a rotation puts the pair back; 0 unwatched and in
    // full mode) this event's packet was seen in. A response seen in another
    // occurrence than its command may answer a command the switch did not
    // see: the exporter then gives that vantage no figure.
    bit<8> gen;
}

// One per RDMA WRITE message, when its last-PSN packet is first seen (SPEC §4).
struct msg_digest_t {
    bit<32> seq;
    bit<8> mode;
    bit<8> flags;        // MSG_FLAG_*
    ipv4_addr_t src;
    ipv4_addr_t dst;
    qpn_t dest_qp;
    psn_t first_psn;
    psn_t last_psn;
    bit<32> bytes;       // RETH DMA length
    bit<32> packets;
    bit<32> retransmitted;
    bit<32> ecn_ce;
    ts_t first_ts;
    ts_t fct_ns;
    ts_t gap_ns;
    // Flow packets seen outside any message since the previous message
    // digest (retransmissions after a last PSN, for the flow's interval FNR).
    bit<32> extra_packets;
    bit<32> extra_retransmitted;
    bit<32> extra_ecn_ce;
    bit<16> straddled;   // messages abandoned by a mode switch or rotation
    bit<32> cnp;         // CNPs for (dst -> src) since the pair's last report
}

#endif

// A flow or host-target pair seen for the first time while not watched
// (polling), or an IPv6 address the endpoint tables lack (LEARN_ENDPOINT).
struct learn_digest_t {
    bit<32> seq;
    bit<8> kind;         // LEARN_*
    endpoint_key_t src;
    endpoint_key_t dst;
    qpn_t dest_qp;
    ipv6_addr_t addr;    // LEARN_ENDPOINT: the missing address; 0 otherwise
}

// Telemetry configuration, set by the controller through tables only.
struct config_t {
    mode_t mode;
    // Bumped by the controller on a mode switch and when it takes over the
    // switch: flow state and the learn filters of earlier epochs are stale.
    epoch_t epoch;
    bit<48> ts_scale;        // ns per tick of the ingress timestamp
    ts_t io_timeout_ns;
    ts_t flow_timeout_ns;
#ifdef TARGET_TNA
    bit<32> io_timeout_c;    // the timeouts in the coarse clock (bits 47:16, see define_tna.p4)
    bit<32> flow_timeout_c;
#endif
}

// A packet's statistics events (p4/include/stats_index.p4 turns them into the
// indices of the packet_events and flow_events counters).
struct stat_flags_t {
    // packet_events
    bool roce;
    bool parser_error;
    bool unknown_opcode;
    bool no_route;
    io_outcome_t io_outcome;  // the I/O tracker's one outcome (IO_OUTCOME_*)
    bool ioref_overwritten;
    bool queue_pair_learned;
    bool learned;             // an NVMe host-target pair learned
    bit<2> unmeasured;        // UNMEASURED_*: forwarded, not measured
    bool endpoint_learned;    // a LEARN_ENDPOINT digest sent (the TNA build's digest kind does not say)
    // flow_events
    bool message;
    bool straddled;
    bool cnp;
    bool cnp_untracked;
    bool untracked_flow;
    bool ecn_ce;
    bool flow_learned;        // an RDMA WRITE flow learned
}

struct local_metadata_t {
    config_t cfg;
    ts_t now;
#ifdef TARGET_TNA
    bit<32> now32;           // ingress time, ns, low 32 bits (register timestamps)
    bit<32> now_c;           // ingress time bits 47:16 (liveness, see define_tna.p4)
#endif
    // The packet's endpoint keys and ECN (either family), and whether the
    // trackers measure it (a RoCEv2 packet whose endpoints have keys).
    endpoint_key_t src_key;
    endpoint_key_t dst_key;
    bit<2> ecn;
    bool measured;
    bool src_known;          // the source has an endpoint key (IPv4: not in 240.0.0.0/4)
    bool dst_known;
#ifdef TARGET_TNA
    bit<32> endpoint_fold;     // the missing address folded: words 3^0 (TNA endpoint learn filter)
    bit<32> endpoint_fold_hi;  // and words 2^1
#endif
    role_t ingress_role;
    role_t egress_role;
    bool routed;
    bit<9> egress_port;
    bool drop;
    stat_flags_t stat;
    bit<8> digest_kind;      // DIGEST_*
#ifdef IO_META_T
    IO_META_T io_digest;
#else
    io_digest_t io_digest;
#endif
#ifdef TARGET_TNA
    io_evo_t io_evo;           // io_digest.evo's parts, packed into it as the digest goes
#endif
    msg_digest_t msg_digest;
    learn_digest_t learn_digest;
}

#endif
