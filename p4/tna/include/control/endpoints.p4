// Endpoint keys, TNA build: the same tables, action, digest and counting as
// p4/include/control/endpoints.p4 (see there), laid out for the pipeline.
// ECN is the egress's (the flow tracker reads it from the headers there);
// the parser counts reserved addresses and extension headers.
// Stage 0: the endpoint tables (each writes its own key and that it is
// known). Stage 1: the
// packet is measured when both keys are known; otherwise (IPv6 RoCEv2 that
// missed) the missing address and its CRC-32. Stage 2: the learn filter.
// Stage 3: the LEARN_ENDPOINT digest.
#ifndef __ENDPOINTS__
#define __ENDPOINTS__

control Endpoints(in headers_t hdr, inout local_metadata_t meta) {
    // Addresses reported: (CRC-32 of the address, epoch), indexed by its low bits.
    REGPAIR(endpoint_learned, ENDPOINT_LEARN_SLOTS, ENDPOINT_LEARN_SLOT_BITS)
    Hash<bit<32>>(HashAlgorithm_t.CRC32) src_crc;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) dst_crc;
    bit<32> crc;
    bit<32> epoch32;
    bit<4> learned;
    RegisterAction<pair_t, bit<ENDPOINT_LEARN_SLOT_BITS>, bit<4>>(endpoint_learned) learned_swap = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == crc, value.hi == epoch32);
            value.lo = crc;
            value.hi = epoch32;
        }
    };

    // The table binds where the key goes (its own key, in the same stage as
    // the other table); the control plane sets the key.
    action set_key(inout endpoint_key_t to, inout bool known, endpoint_key_t key) {
        to = key;
        known = true;
    }

    @stage(0)
    table src_v6 {
        key = {
            hdr.ipv6.src_addr: exact @name("addr");
        }
        actions = {
            set_key(meta.src_key, meta.src_known);
            NoAction;
        }
        default_action = NoAction();
        size = ENDPOINT_TABLE_SIZE;
    }

    @stage(0)
    table dst_v6 {
        key = {
            hdr.ipv6.dst_addr: exact @name("addr");
        }
        actions = {
            set_key(meta.dst_key, meta.dst_known);
            NoAction;
        }
        default_action = NoAction();
        size = ENDPOINT_TABLE_SIZE;
    }

    @hidden action measure() { meta.measured = true; }
    @hidden action miss_src() {
        meta.stat.unmeasured = UNMEASURED_UNKNOWN_ENDPOINT;
        crc = src_crc.get({ hdr.ipv6.src_addr });
        meta.learn_digest.addr = hdr.ipv6.src_addr;
        epoch32 = (bit<32>)meta.cfg.epoch;
    }
    @hidden action miss_dst() {
        meta.stat.unmeasured = UNMEASURED_UNKNOWN_ENDPOINT;
        crc = dst_crc.get({ hdr.ipv6.dst_addr });
        meta.learn_digest.addr = hdr.ipv6.dst_addr;
        epoch32 = (bit<32>)meta.cfg.epoch;
    }
    @hidden action learn_a() { learned = learned_swap.execute(crc[ENDPOINT_LEARN_SLOT_BITS-1:0]); }
    @stage(2)
    @hidden table learn_tbl {
        actions = { learn_a; }
        const default_action = learn_a();
        size = 1;
    }
    @hidden action learn_digest() {
        meta.digest_kind = DIGEST_LEARN;
        meta.learn_digest.kind = LEARN_ENDPOINT;
    }

    apply {
        // Stage 0 (an IPv4 packet's keys are the parser's).
        if (hdr.ipv6.isValid() && hdr.bth.isValid()) {
            src_v6.apply();
            dst_v6.apply();
        }
        // Stages 1-3.
        if (hdr.bth.isValid() && meta.src_known && meta.dst_known) {
            measure();
        } else if (hdr.ipv6.isValid() && hdr.bth.isValid() && meta.cfg.mode != MODE_OFF) {
            if (!meta.src_known) {
                miss_src();
            } else {
                miss_dst();
            }
            learn_tbl.apply();
            if (learned != 8) {
                learn_digest();
            }
        }
    }
}

#endif
