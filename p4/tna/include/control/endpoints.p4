// Endpoint keys, TNA build: the same tables, action, digest and counting as
// p4/include/control/endpoints.p4 (see there), laid out for the pipeline.
// ECN is the egress's (the flow tracker reads it from the headers there);
// the parser counts reserved addresses and extension headers.
// Stage 0: the endpoint tables (each writes its own key and that it is
// known). Stage 1: the
// packet is measured when both keys are known; otherwise (IPv6 RoCEv2 that
// missed) the missing address. Stage 2: the learn filter.
// Stage 3: the LEARN_ENDPOINT digest.
#ifndef __ENDPOINTS__
#define __ENDPOINTS__

control Endpoints(in headers_t hdr, inout local_metadata_t meta) {
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
        meta.learn_digest.addr = hdr.ipv6.src_addr;
        meta.endpoint_epoch32 = (bit<32>)meta.cfg.epoch;
    }
    @hidden action miss_dst() {
        meta.stat.unmeasured = UNMEASURED_UNKNOWN_ENDPOINT;
        meta.learn_digest.addr = hdr.ipv6.dst_addr;
        meta.endpoint_epoch32 = (bit<32>)meta.cfg.epoch;
    }

    apply {
        // Stage 0 (an IPv4 packet's keys are the parser's).
        if (hdr.ipv6.isValid() && hdr.bth.isValid()) {
            src_v6.apply();
            dst_v6.apply();
        }
        // Stage 1: measured, or the missing address (the source first).
        if (hdr.bth.isValid() && meta.src_known && meta.dst_known) {
            measure();
        } else if (hdr.ipv6.isValid() && hdr.bth.isValid() && meta.cfg.mode != MODE_OFF) {
            if (!meta.src_known) {
                miss_src();
            } else {
                miss_dst();
            }
        }
    }
}

// The learn filter and digest: applied by the I/O tracker where it does
// nothing else (no vantage), so that it shares the late stages with it.
control EndpointLearn(in headers_t hdr, inout local_metadata_t meta) {
    // Addresses reported: (the address's fold, epoch), indexed by the
    // fold's low bits. The fold (XOR of the address's four words) is taken
    // in the stages before, in the ALUs (no hash unit, no crossbar bytes).
    REGPAIR(endpoint_learned, ENDPOINT_LEARN_SLOTS, ENDPOINT_LEARN_SLOT_BITS)
    bit<4> learned;
    bit<32> fold_hi;
    bit<32> fold_lo;
    RegisterAction<pair_t, bit<ENDPOINT_LEARN_SLOT_BITS>, bit<4>>(endpoint_learned) learned_swap = {
        void apply(inout pair_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == meta.endpoint_fold, value.hi == meta.endpoint_epoch32);
            value.lo = meta.endpoint_fold;
            value.hi = meta.endpoint_epoch32;
        }
    };
    @hidden action fold_halves() {
        fold_hi = meta.learn_digest.addr[127:96] ^ meta.learn_digest.addr[95:64];
        fold_lo = meta.learn_digest.addr[63:32] ^ meta.learn_digest.addr[31:0];
    }
    @hidden action fold_words() { meta.endpoint_fold = fold_hi ^ fold_lo; }
    @hidden action learn_a() { learned = learned_swap.execute(meta.endpoint_fold[ENDPOINT_LEARN_SLOT_BITS-1:0]); }
    @stage(8)
    @hidden table learn_tbl {
        actions = { learn_a; }
        const default_action = learn_a();
        size = 1;
    }
    // The digest is sent by main.p4's seq_tbl (a flag of its own, not the
    // digest kind the I/O tracker writes in these stages).
    @hidden action learn_digest() { meta.stat.endpoint_learned = true; }

    apply {
        fold_halves();
        fold_words();
        learn_tbl.apply();
        if (learned != 8) {
            learn_digest();
        }
    }
}

#endif
