// Endpoint keys, TNA build: the same tables, action, digest and counting as
// p4/include/control/endpoints.p4 (see there), laid out for the pipeline.
// ECN is the egress's (the flow tracker reads it from the headers there);
// the parser counts reserved addresses and extension headers.
// Stage 0: the endpoint tables (each writes its own key and that it is
// known). Stage 1: the packet is measured when both keys are known;
// otherwise (IPv6 RoCEv2 that missed) the missing address and its fold.
// Stage 2: the learn filter, in a stateful ALU the trackers leave free
// there, which raises the LEARN_ENDPOINT flag (main.p4's seq_tbl sends the
// digest).
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
        meta.endpoint_fold = hdr.ipv6.src_addr[127:96] ^ hdr.ipv6.src_addr[31:0];
        meta.endpoint_fold_hi = hdr.ipv6.src_addr[95:64] ^ hdr.ipv6.src_addr[63:32];
    }
    @hidden action miss_dst() {
        meta.stat.unmeasured = UNMEASURED_UNKNOWN_ENDPOINT;
        meta.learn_digest.addr = hdr.ipv6.dst_addr;
        meta.endpoint_fold = hdr.ipv6.dst_addr[127:96] ^ hdr.ipv6.dst_addr[31:0];
        meta.endpoint_fold_hi = hdr.ipv6.dst_addr[95:64] ^ hdr.ipv6.dst_addr[63:32];
    }

    // The learn filter: the missing address, folded to 64 bits (its words
    // XORed in pairs, at the miss), last reported in each slot; the slot is
    // a hash of the fold and the epoch, so that a new epoch reports every
    // address again. One digest per address and epoch unless two share a
    // slot.
    REGPAIR(endpoint_learned, ENDPOINT_LEARN_SLOTS, ENDPOINT_LEARN_SLOT_BITS)
    RegisterAction<pair_t, bit<ENDPOINT_LEARN_SLOT_BITS>, bit<1>>(endpoint_learned) learned_swap = {
        void apply(inout pair_t value, out bit<1> rv) {
            if (value.lo == meta.endpoint_fold && value.hi == meta.endpoint_fold_hi) {
                rv = 0;
            } else {
                rv = 1;
            }
            value.lo = meta.endpoint_fold;
            value.hi = meta.endpoint_fold_hi;
        }
    };
    Hash<bit<ENDPOINT_LEARN_SLOT_BITS>>(HashAlgorithm_t.CRC16) learn_slot;
    @hidden action learn_a() {
        meta.stat.endpoint_learned = (bool)learned_swap.execute(learn_slot.get({ meta.endpoint_fold, meta.cfg.epoch }));
    }
    @stage(2)
    @hidden table learn_tbl {
        actions = { learn_a; }
        const default_action = learn_a();
        size = 1;
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
        // Stage 2: reported once per address and epoch.
        if (meta.stat.unmeasured == UNMEASURED_UNKNOWN_ENDPOINT) {
            learn_tbl.apply();
        }
    }
}

#endif
