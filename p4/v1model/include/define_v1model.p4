// v1model (BMv2 simple_switch_grpc) specifics. Everything that differs from
// TNA is here; the controls in include/control use only these macros.
#ifndef __DEFINE_V1MODEL__
#define __DEFINE_V1MODEL__

#include <core.p4>
#include <v1model.p4>

#define REGISTER(T, SIZE, NAME) register<T>(SIZE) NAME;
#define PACKET_COUNTER(SIZE, NAME) counter(SIZE, CounterType.packets) NAME;
#define PACKET_BYTE_COUNTER(SIZE, NAME) counter(SIZE, CounterType.packets_and_bytes) NAME;
// Slot index in [0, SIZE): CRC-32 of the concatenated fields { ... } (last,
// so that the commas inside the braces do not split the macro's arguments).
#define HASH_INDEX(OUT, SIZE, ...) hash(OUT, HashAlgorithm.crc32, 32w0, __VA_ARGS__, (bit<32>)(SIZE))

// The digest members' types (p4/include/header.p4). Built with
// -DDIGESTS_COMPACT (p4/build/compact/), the program sends the compact
// digests of the Tofino build, so that the controller's Tofino path runs on
// BMv2 and the software switch: the controls cast to these types, which
// narrow (to the low bits) only in that build, and leave out the members the
// compact layout lacks.
#ifdef DIGESTS_COMPACT
typedef bit<2>  dg_code_t;       // io event, vantage, op
typedef bit<4>  dg_io_flags_t;
typedef bit<16> dg_psn_t;        // io cmd_psn
typedef bit<24> dg_io_bytes_t;
typedef bit<32> dg_ns_t;         // durations
typedef bit<1>  dg_msg_flags_t;
typedef bit<16> dg_count_t;      // msg packet, retransmission, ECN CE and CNP counts
typedef bit<8>  dg_straddled_t;
#else
typedef bit<8>  dg_code_t;
typedef bit<8>  dg_io_flags_t;
typedef bit<24> dg_psn_t;
typedef bit<32> dg_io_bytes_t;
typedef bit<48> dg_ns_t;
typedef bit<8>  dg_msg_flags_t;
typedef bit<32> dg_count_t;
typedef bit<16> dg_straddled_t;
#endif

#endif
