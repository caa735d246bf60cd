// Endpoint keys (docs/architecture.md): every register, watchlist and digest
// holds a 32-bit endpoint key where it would hold an address. An IPv4
// address is its own key; an IPv6 address gets the key the controller wrote
// for it in both endpoint tables (240.0.0.0/4, which no IPv4 host uses).
// A packet is measured only when both its endpoints have keys:
//   - IPv4 from or to 240.0.0.0/4: forwarded, counted (reserved_address);
//   - IPv6 with an extension header chain: forwarded, counted (ipv6_ext_header);
//   - RoCEv2 over IPv6 whose source or destination misses its table:
//     forwarded, counted (unknown_endpoint), and the missing address (the
//     source first) is reported in a LEARN_ENDPOINT learn digest, about once
//     per address and epoch (a filter indexed by a hash of the address).
#ifndef __ENDPOINTS__
#define __ENDPOINTS__

control Endpoints(in headers_t hdr, inout local_metadata_t meta) {
    // Addresses reported, by a hash of the address: a fold of the address
    // and the epoch it was reported in (a controller that takes over bumps it).
    REGISTER(bit<32>, ENDPOINT_LEARN_SLOTS, endpoint_learned)
    REGISTER(bit<16>, ENDPOINT_LEARN_SLOTS, endpoint_learned_epoch)

    endpoint_key_t found = 0;

    action set_key(endpoint_key_t key) {
        found = key;
    }

    table src_v6 {
        key = {
            hdr.ipv6.src_addr: exact @name("addr");
        }
        actions = {
            set_key;
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
            set_key;
            NoAction;
        }
        default_action = NoAction();
        size = ENDPOINT_TABLE_SIZE;
    }

    apply {
        meta.measured = false;
        if (hdr.ipv4.isValid()) {
            meta.src_key = hdr.ipv4.src_addr;
            meta.dst_key = hdr.ipv4.dst_addr;
            meta.ecn = hdr.ipv4.ecn;
            if (hdr.ipv4.src_addr[31:28] == ENDPOINT_KEY_V6_PREFIX || hdr.ipv4.dst_addr[31:28] == ENDPOINT_KEY_V6_PREFIX) {
                meta.stat.unmeasured = UNMEASURED_RESERVED_ADDRESS;
            } else {
                meta.measured = hdr.bth.isValid();
            }
        } else if (hdr.ipv6.isValid()) {
            meta.ecn = hdr.ipv6.ecn;
            bit<8> nh = hdr.ipv6.next_hdr;
            if (nh == IP6_EXT_HOP_BY_HOP || nh == IP6_EXT_ROUTING || nh == IP6_EXT_FRAGMENT || nh == IP6_EXT_ESP
                || nh == IP6_EXT_AH || nh == IP6_EXT_DEST_OPTS || nh == IP6_EXT_MOBILITY || nh == IP6_EXT_HIP
                || nh == IP6_EXT_SHIM6 || nh == IP6_EXT_EXPERIMENT1 || nh == IP6_EXT_EXPERIMENT2) {
                meta.stat.unmeasured = UNMEASURED_IPV6_EXT_HEADER;
            } else if (hdr.bth.isValid() && meta.cfg.mode != MODE_OFF) {
                bool src_hit = false;
                bool dst_hit = false;
                found = 0;
                if (src_v6.apply().hit) {
                    src_hit = true;
                }
                meta.src_key = found;
                found = 0;
                if (dst_v6.apply().hit) {
                    dst_hit = true;
                }
                meta.dst_key = found;
                if (src_hit && dst_hit) {
                    meta.measured = true;
                } else {
                    meta.stat.unmeasured = UNMEASURED_UNKNOWN_ENDPOINT;
                    ipv6_addr_t addr = hdr.ipv6.dst_addr;
                    if (!src_hit) {
                        addr = hdr.ipv6.src_addr;
                    }
                    bit<32> fold = addr[127:96] ^ addr[95:64] ^ addr[63:32] ^ addr[31:0];
                    bit<32> idx;
                    HASH_INDEX(idx, ENDPOINT_LEARN_SLOTS, { addr });
                    bit<32> seen;
                    bit<16> seen_epoch;
                    endpoint_learned.read(seen, idx);
                    endpoint_learned_epoch.read(seen_epoch, idx);
                    if (seen != fold || seen_epoch != meta.cfg.epoch) {
                        endpoint_learned.write(idx, fold);
                        endpoint_learned_epoch.write(idx, meta.cfg.epoch);
                        meta.digest_kind = DIGEST_LEARN;
                        meta.learn_digest.kind = LEARN_ENDPOINT;
                        meta.learn_digest.src = 0;
                        meta.learn_digest.dst = 0;
                        meta.learn_digest.dest_qp = 0;
                        meta.learn_digest.addr = addr;
                    }
                }
            }
        }
    }
}

#endif
