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

#endif
