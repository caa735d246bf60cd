// TNA (Tofino) specifics. The shared files in p4/include see TARGET_TNA.
#ifndef __DEFINE_TNA__
#define __DEFINE_TNA__

#define TARGET_TNA

#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

// The data-plane latency histograms (include/control/histograms.p4): on
// Tofino 2 only (Tofino 1's 12 stages are taken; docs/tofino.md).
#if __TARGET_TOFINO__ == 2
#define TNA_HISTOGRAMS
#endif

// The flow tracker's seen-PSN window (docs/tofino.md, "Seen-PSN window"):
// on Tofino 2 only (Tofino 1's egress takes its 12 stages).
#if __TARGET_TOFINO__ == 2
#define TNA_PSN_WINDOW
#endif
// The R_Key map keyed by a 32-bit fingerprint of (R_Key or RDMA CM
// communication ID, host, target) instead of the R_Key alone, on Tofino 2:
// on Tofino 1 its hash in stage 2 moves the egress flow tracker a stage
// later, to a 13th.
#if __TARGET_TOFINO__ == 2
#define TNA_RKEY_FP
#else
#define TNA_RKEY_MIX
#endif

// Two 32-bit halves of one register entry: one stateful ALU reads, compares
// and writes both in one access.
struct pair_t {
    bit<32> lo;
    bit<32> hi;
}

// Liveness (timeouts) is kept in a coarse clock: the ingress MAC timestamp's
// bits 47:16 (65.536 us units), so that 32 bits span the 48-bit clock and a
// signed difference stays right for ages up to 39 hours.
#define COARSE(T) ((T)[47:16])


// A register of 32-bit words, one RegisterAction per use; the macro keeps
// the many one-line actions readable.
#define REG32(NAME, SIZE, BITS) Register<bit<32>, bit<BITS>>(SIZE, 0) NAME;
#define REGPAIR(NAME, SIZE, BITS) Register<pair_t, bit<BITS>>(SIZE, {0, 0}) NAME;

// Writes V, returns the old word.
#define RA_SWAP(REG, BITS, NAME, V) \
    RegisterAction<bit<32>, bit<BITS>, bit<32>>(REG) NAME = { \
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = V; } };
// 8-bit flags: writes V, returns the old value; returns the value.
#define REG8(NAME, SIZE, BITS) Register<bit<8>, bit<BITS>>(SIZE, 0) NAME;
#define RA_SWAP8(REG, BITS, NAME, V) \
    RegisterAction<bit<8>, bit<BITS>, bit<8>>(REG) NAME = { \
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; value = V; } };
#define RA_READ8(REG, BITS, NAME) \
    RegisterAction<bit<8>, bit<BITS>, bit<8>>(REG) NAME = { \
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; } };
// Returns the word.
#define RA_READ(REG, BITS, NAME) \
    RegisterAction<bit<32>, bit<BITS>, bit<32>>(REG) NAME = { \
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; } };
// Returns NOW - the word (the age of a stored time).
#define RA_AGE(REG, BITS, NAME, NOW) \
    RegisterAction<bit<32>, bit<BITS>, bit<32>>(REG) NAME = { \
        void apply(inout bit<32> value, out bit<32> rv) { rv = NOW - value; } };
// Writes V.
#define RA_WRITE(REG, BITS, NAME, V) \
    RegisterAction<bit<32>, bit<BITS>, bit<32>>(REG) NAME = { \
        void apply(inout bit<32> value) { value = V; } };

// The ingress and egress halves of the program (docs/tofino.md): the bridge
// header before every packet from ingress to egress, and the reports of the
// egress flow tracker, mirrored to the recirculation port (mirror session
// TNA_REPORT_SESSION, set by the control plane) and turned into digests by
// the ingress. The magic bytes tell the three apart where a parser starts.
const bit<8> TNA_BRIDGE_MAGIC = 0xB1;
const bit<8> TNA_REPORT_MAGIC = 0xB2;
const MirrorType_t TNA_MIRROR_REPORT = 1;
const MirrorId_t TNA_REPORT_SESSION = 1;
// The recirculation port in each pipe (port bits 6:0): 68 on Tofino 1, 6
// on Tofino 2 (its ports 2-7 can recirculate; the mirror session names it).
#if __TARGET_TOFINO__ == 2
const bit<7> TNA_RECIRC_PORT = 6;
#else
const bit<7> TNA_RECIRC_PORT = 68;
#endif

#endif
