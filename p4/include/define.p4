// Shared types, enums and constants of the RoCEv2 telemetry program.
#ifndef __DEFINE__
#define __DEFINE__

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<128> ipv6_addr_t;
// An endpoint key (docs/architecture.md): an IPv4 address is its own key; an
// IPv6 address gets one in 240.0.0.0/4 from the endpoint tables.
typedef bit<32> endpoint_key_t;
typedef bit<24> qpn_t;
typedef bit<24> psn_t;
typedef bit<32> rkey_t;
typedef bit<16> cid_t;
// Switch-local time in ns since the switch started; differences wrap mod 2^48.
typedef bit<48> ts_t;
typedef bit<8>  role_t;
typedef bit<8>  mode_t;
typedef bit<16> epoch_t;
typedef bit<3>  io_outcome_t;  // IO_OUTCOME_*
typedef bit<32> slot_t;

const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_IPV6 = 0x86DD;
const bit<8>  IP_PROTO_UDP = 17;
// IPv6 extension headers (RFC 7045, RFC 8200): hop-by-hop options, routing,
// fragment, ESP, AH, destination options, mobility, HIP, shim6, experimental.
// A RoCEv2 packet behind one is forwarded, not measured, and counted.
const bit<8>  IP6_EXT_HOP_BY_HOP = 0;
const bit<8>  IP6_EXT_ROUTING = 43;
const bit<8>  IP6_EXT_FRAGMENT = 44;
const bit<8>  IP6_EXT_ESP = 50;
const bit<8>  IP6_EXT_AH = 51;
const bit<8>  IP6_EXT_DEST_OPTS = 60;
const bit<8>  IP6_EXT_MOBILITY = 135;
const bit<8>  IP6_EXT_HIP = 139;
const bit<8>  IP6_EXT_SHIM6 = 140;
const bit<8>  IP6_EXT_EXPERIMENT1 = 253;
const bit<8>  IP6_EXT_EXPERIMENT2 = 254;
// IPv4's reserved class E (RFC 1112), never a host address: the endpoint keys
// of IPv6 addresses. An IPv4 packet from or to it is forwarded, not measured.
const bit<4>  ENDPOINT_KEY_V6_PREFIX = 0xF;
const bit<16> ROCEV2_UDP_PORT = 4791;
const bit<2>  ECN_CE = 3;

// Port roles (SPEC §1).
const role_t ROLE_NONE = 0;
const role_t ROLE_COMPUTE = 1;
const role_t ROLE_STORAGE = 2;
const role_t ROLE_FABRIC = 3;

// Measurement modes (SPEC §5). OFF forwards without measuring.
const mode_t MODE_OFF = 0;
const mode_t MODE_FULL = 1;
const mode_t MODE_POLLING = 2;

// BTH opcodes, reliable connection (SPEC §2).
const bit<8> OP_SEND_FIRST = 0x00;
const bit<8> OP_SEND_MIDDLE = 0x01;
const bit<8> OP_SEND_LAST = 0x02;
const bit<8> OP_SEND_LAST_IMM = 0x03;
const bit<8> OP_SEND_ONLY = 0x04;
const bit<8> OP_SEND_ONLY_IMM = 0x05;
const bit<8> OP_WRITE_FIRST = 0x06;
const bit<8> OP_WRITE_MIDDLE = 0x07;
const bit<8> OP_WRITE_LAST = 0x08;
const bit<8> OP_WRITE_LAST_IMM = 0x09;
const bit<8> OP_WRITE_ONLY = 0x0A;
const bit<8> OP_WRITE_ONLY_IMM = 0x0B;
const bit<8> OP_READ_REQUEST = 0x0C;
const bit<8> OP_READ_RESPONSE_FIRST = 0x0D;
const bit<8> OP_READ_RESPONSE_MIDDLE = 0x0E;
const bit<8> OP_READ_RESPONSE_LAST = 0x0F;
const bit<8> OP_READ_RESPONSE_ONLY = 0x10;
const bit<8> OP_ACK = 0x11;
const bit<8> OP_SEND_LAST_INV = 0x16;
const bit<8> OP_SEND_ONLY_INV = 0x17;
const bit<8> OP_CNP = 0x81;
// The other opcodes a RoCEv2 fabric carries: RC atomics up to FETCH_ADD,
// UC SEND/WRITE, UD SEND ONLY. Any other opcode is reserved.
const bit<8> OP_RC_FETCH_ADD = 0x14;
const bit<8> OP_UC_SEND_FIRST = 0x20;
const bit<8> OP_UC_WRITE_ONLY_IMM = 0x2B;
const bit<8> OP_UD_SEND_ONLY = 0x64;
const bit<8> OP_UD_SEND_ONLY_IMM = 0x65;

// UDP lengths of a SEND that carries exactly a 16-byte NVMe CQE:
// UDP 8 + BTH 12 + CQE 16 + ICRC 4, plus 4 with ImmDt or IETH.
const bit<16> UDP_LEN_CQE = 40;
const bit<16> UDP_LEN_CQE_EXT = 44;

// NVMe (SPEC §2).
const bit<8> NVME_OPC_WRITE = 0x01;
const bit<8> NVME_OPC_READ = 0x02;
// NSID FFFFFFFFh: every namespace (admin commands; never a Read's or a Write's).
const bit<32> NVME_NSID_ALL = 0xffffffff;
// Keyed SGL Data Block descriptor: SGL type 4 in the upper nibble of byte 15.
const bit<4> NVME_SGL_TYPE_KEYED = 0x4;
// In-capsule data: an SGL Data Block descriptor (type 0), with the Offset subtype (1) as NVMe-oF asks.
const bit<4> NVME_SGL_TYPE_DATA_BLOCK = 0x0;

// RDMA CM on RoCEv2 (SPEC §3: a signal for queue pairing). CM MADs travel as
// UD SEND ONLY to QP 1 with a DETH; management class 0x07; REQ and REP.
const qpn_t QPN_GSI = 1;
const bit<8> MAD_CLASS_CM = 0x07;
const bit<16> CM_ATTR_REQ = 0x0010;
const bit<16> CM_ATTR_REP = 0x0013;

// I/O operation as reported in digests.
const bit<8> IO_OP_READ = 1;
const bit<8> IO_OP_WRITE = 2;

// Vantage bits (SPEC §1): compute side, storage side.
const bit<8> VANTAGE_C = 0x01;
const bit<8> VANTAGE_S = 0x02;

// I/O digest events.
const bit<8> IO_EVENT_CMD = 1;
const bit<8> IO_EVENT_RSP = 2;
// A response capsule on a queue whose pairing is unknown: the I/O it closes
// cannot be attributed to a queue (counted as untracked, never merged).
const bit<8> IO_EVENT_UNPAIRED_RSP = 3;
// A queue pairing a colliding one took from the switch (host, target,
// host_qp, target_qp; no I/O): the exporter attributes the responses of that
// queue (IO_EVENT_UNPAIRED_RSP) to their I/Os.
const bit<8> IO_EVENT_QUEUE_PAIR = 0;

// Bits of io_digest_t.flags.
const bit<8> IO_FLAG_DATA_SEEN = 0x01;   // d_first (read) or rreq (write) seen
const bit<8> IO_FLAG_RR_SEEN = 0x02;     // write: at least one READ RESPONSE seen
const bit<8> IO_FLAG_IN_CAPSULE = 0x04;  // write whose data is in the command capsule
const bit<8> IO_FLAG_REPLACED = 0x08;    // CMD: closed an open I/O with the same key (its response was lost)
// RSP: the I/O's last data packet (read: d_last; write: rr_last) was not
// seen (its message's state was taken by a colliding key): from_data_ns is
// not measured, and DAL is absent.
const bit<8> IO_FLAG_LAST_LOST = 0x08;

// Bits of msg_digest_t.flags.
const bit<8> MSG_FLAG_GAP_VALID = 0x01;  // gap_ns measured (previous message seen)

// Learn digest kinds (polling mode).
const bit<8> LEARN_FLOW = 1;     // RDMA WRITE flow (src, dst, dest_qp)
const bit<8> LEARN_IO_PAIR = 2;  // NVMe host-target pair (dest_qp = 0)
// An IPv6 address missing from the endpoint tables (addr; src, dst and
// dest_qp 0): the controller gives it a key. Any mode but OFF.
const bit<8> LEARN_ENDPOINT = 3;

// Which digest a packet emits (at most one per packet).
const bit<8> DIGEST_NONE = 0;
const bit<8> DIGEST_IO = 1;
const bit<8> DIGEST_MSG = 2;
const bit<8> DIGEST_LEARN = 3;

// The switch's statistics events, in the order the controller reports them
// (SWITCH_COUNTER_NAMES). Two counters count them, packet_events and
// flow_events, each indexed by the set of events of a packet (the fields
// below, stats_index.p4): every event of a packet is counted with one
// counter access per counter, which is all a Tofino counter allows. The
// controller adds up, per event, the entries whose index holds it.
const bit<32> STAT_ROCE_PACKETS = 0;
const bit<32> STAT_UNTRACKED_FLOWS = 1;
const bit<32> STAT_UNTRACKED_IOS = 2;
const bit<32> STAT_IO_COMMANDS = 3;
const bit<32> STAT_IO_RESPONSES = 4;
const bit<32> STAT_IO_UNMATCHED_RESPONSES = 5;
const bit<32> STAT_MESSAGES = 6;
const bit<32> STAT_STRADDLED_MESSAGES = 7;
const bit<32> STAT_LEARNED = 8;             // I/O pairs and flows learned (polling mode)
const bit<32> STAT_DIGESTS = 9;
const bit<32> STAT_PARSER_ERRORS = 10;
const bit<32> STAT_CNP = 11;
const bit<32> STAT_ECN_CE = 12;
const bit<32> STAT_NO_ROUTE = 13;
const bit<32> STAT_IOREF_OVERWRITTEN = 14;  // an in-flight I/O's R_Key entry taken by another
const bit<32> STAT_UNKNOWN_OPCODES = 15;    // a BTH with a reserved opcode (forwarded, not measured)
const bit<32> STAT_IO_REPLACED = 16;        // an open I/O closed by a new command with its key
const bit<32> STAT_IO_UNPAIRED_RESPONSES = 17;  // a response on a queue whose pairing is unknown
const bit<32> STAT_QUEUE_PAIRS_LEARNED = 18;    // host QP <-> target QP pairings learned
const bit<32> STAT_CNP_UNTRACKED = 19;      // a CNP whose pair slot is held by another host pair
// Forwarded, not measured (UNMEASURED_*, at most one per packet):
const bit<32> STAT_RESERVED_ADDRESS = 20;   // an IPv4 packet from or to 240.0.0.0/4 (the IPv6 endpoint keys)
const bit<32> STAT_IPV6_EXT_HEADER = 21;    // an IPv6 packet with an extension header chain
const bit<32> STAT_UNKNOWN_ENDPOINT = 22;   // RoCEv2 over IPv6 from or to an address the endpoint tables lack

// The I/O tracker's outcome for a packet: at most one, so 3 bits of the
// packet_events index hold it.
const bit<3> IO_OUTCOME_NONE = 0;
const bit<3> IO_OUTCOME_CMD = 1;            // io_commands
const bit<3> IO_OUTCOME_REPLACED = 2;       // io_commands and io_replaced
const bit<3> IO_OUTCOME_UNTRACKED = 3;      // untracked_ios
const bit<3> IO_OUTCOME_RSP = 4;            // io_responses
const bit<3> IO_OUTCOME_UNMATCHED = 5;      // io_unmatched_responses
const bit<3> IO_OUTCOME_UNPAIRED = 6;       // io_unpaired_responses
const bit<3> IO_OUTCOME_CLOSED = 7;         // io_replaced: an open I/O's CID taken by a command not measured (Flush, ...)

// Why a packet was forwarded but not measured: at most one reason, so 2
// bits of the packet_events index hold it.
const bit<2> UNMEASURED_NONE = 0;
const bit<2> UNMEASURED_RESERVED_ADDRESS = 1;  // reserved_address
const bit<2> UNMEASURED_IPV6_EXT_HEADER = 2;   // ipv6_ext_header
const bit<2> UNMEASURED_UNKNOWN_ENDPOINT = 3;  // unknown_endpoint

// The packet_events index: the offset of each field (1 bit unless noted).
const bit<32> PKT_EV_BITS = 15;             // the index's width: 32,768 entries
const bit<32> PKT_EV_ROCE = 0;              // roce_packets
const bit<32> PKT_EV_PARSER_ERROR = 1;      // parser_errors
const bit<32> PKT_EV_UNKNOWN_OPCODE = 2;    // unknown_opcodes
const bit<32> PKT_EV_NO_ROUTE = 3;          // no_route
const bit<32> PKT_EV_DIGEST = 4;            // 2 bits, the digest kind (DIGEST_*): digests when not 0
const bit<32> PKT_EV_IO_OUTCOME = 6;        // 3 bits, IO_OUTCOME_*
const bit<32> PKT_EV_IOREF_OVERWRITTEN = 9; // ioref_overwritten
const bit<32> PKT_EV_QUEUE_PAIR_LEARNED = 10;  // queue_pairs_learned
const bit<32> PKT_EV_LEARNED = 11;          // learned (an NVMe host-target pair)
const bit<32> PKT_EV_UNMEASURED = 12;       // 2 bits, UNMEASURED_*
const bit<32> PKT_EV_ENDPOINT_LEARNED = 14; // a LEARN_ENDPOINT digest (digests, with the digest kind)

// The flow_events index: the offset of each field (1 bit each).
const bit<32> FLOW_EV_BITS = 7;             // the index's width: 128 entries
const bit<32> FLOW_EV_MESSAGE = 0;          // messages
const bit<32> FLOW_EV_STRADDLED = 1;        // straddled_messages
const bit<32> FLOW_EV_CNP = 2;              // cnp
const bit<32> FLOW_EV_CNP_UNTRACKED = 3;    // cnp_untracked
const bit<32> FLOW_EV_UNTRACKED_FLOW = 4;   // untracked_flows
const bit<32> FLOW_EV_ECN_CE = 5;           // ecn_ce
const bit<32> FLOW_EV_LEARNED = 6;          // learned (an RDMA WRITE flow)

#endif
