// Endpoint keys (docs/architecture.md): every register, watchlist and digest
// holds a 32-bit endpoint key where it would hold an address. An IPv4
// address is its own key; an IPv6 address gets the key the controller wrote
// for it in both endpoint tables (240.0.0.0/4, which no IPv4 host uses).
// A packet is measured only when both its endpoints have keys:
//   - IPv4 from or to 240.0.0.0/4: forwarded, counted (reserved_address; the parser);
//   - IPv6 with an extension header chain: forwarded, counted (ipv6_ext_header; the parser);
//   - RoCEv2 over IPv6 whose source or destination misses its table:
//     forwarded, counted (unknown_endpoint), and the missing address (the
//     source first) is reported in a LEARN_ENDPOINT learn digest, about once
//     per address and epoch (a filter indexed by a fold of the address).
#ifndef __ENDPOINTS__
#define __ENDPOINTS__

control Endpoints(in headers_t hdr, inout local_metadata_t meta) {
    // Addresses reported, by the address's fold (its four words XORed): the
    // fold and the epoch it was reported in (a controller that takes over bumps it).
    REGISTER(bit<32>, ENDPOINT_LEARN_SLOTS, endpoint_learned)
    REGISTER(bit<16>, ENDPOINT_LEARN_SLOTS, endpoint_learned_epoch)

    // The table binds where the key goes; the control plane sets the key.
    action set_key(inout endpoint_key_t to, inout bool known, endpoint_key_t key) {
        to = key;
        known = true;
    }

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

    apply {
        if (hdr.ipv4.isValid()) {
            meta.ecn = hdr.ipv4.ecn;
        } else if (hdr.ipv6.isValid()) {
            meta.ecn = hdr.ipv6.ecn;
            if (hdr.bth.isValid()) {
                src_v6.apply();
                dst_v6.apply();
            }
        }
        if (hdr.bth.isValid() && meta.src_known && meta.dst_known) {
            meta.measured = true;
        } else if (hdr.ipv6.isValid() && hdr.bth.isValid() && meta.cfg.mode != MODE_OFF) {
            meta.stat.unmeasured = UNMEASURED_UNKNOWN_ENDPOINT;
            ipv6_addr_t addr = hdr.ipv6.dst_addr;
            if (!meta.src_known) {
                addr = hdr.ipv6.src_addr;
            }
            // The address's four words XORed: its low bits index the filter.
            bit<32> fold = addr[127:96] ^ addr[95:64] ^ addr[63:32] ^ addr[31:0];
            bit<32> idx = fold & (ENDPOINT_LEARN_SLOTS - 1);
            bit<32> seen;
            bit<16> seen_epoch;
            endpoint_learned.read(seen, idx);
            endpoint_learned_epoch.read(seen_epoch, idx);
            if (seen != fold || seen_epoch != meta.cfg.epoch) {
                endpoint_learned.write(idx, fold);
                endpoint_learned_epoch.write(idx, meta.cfg.epoch);
                meta.digest_kind = DIGEST_LEARN;
                meta.stat.endpoint_learned = true;
                meta.learn_digest.kind = LEARN_ENDPOINT;
                meta.learn_digest.src = 0;
                meta.learn_digest.dst = 0;
                meta.learn_digest.dest_qp = 0;
                meta.learn_digest.addr = addr;
            }
        }
    }
}

#endif
