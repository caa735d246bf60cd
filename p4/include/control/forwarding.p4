// Plain IPv4 and IPv6 forwarding, so that the switch carries the traffic it
// measures. Neither TTL nor hop limit is changed (the switch is a bump in the
// wire for its routes).
#ifndef __FORWARDING__
#define __FORWARDING__

control Forwarding(in headers_t hdr, inout local_metadata_t meta) {
    action route(bit<9> port) {
        meta.egress_port = port;
        meta.routed = true;
    }

    action drop() {
        meta.drop = true;
    }

#ifdef TARGET_TNA
    @stage(0)  // the roles and the vantage wait for it
#endif
    table ipv4_routes {
        key = {
            hdr.ipv4.dst_addr: lpm @name("dst_addr");
        }
        actions = {
            route;
            drop;
        }
        const default_action = drop();
        size = ROUTE_TABLE_SIZE;
    }

#ifdef TARGET_TNA
    @stage(0)
#endif
    table ipv6_routes {
        key = {
            hdr.ipv6.dst_addr: lpm @name("dst_addr");
        }
        actions = {
            route;
            drop;
        }
        const default_action = drop();
        size = ROUTE_TABLE_SIZE;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            ipv4_routes.apply();
        } else if (hdr.ipv6.isValid()) {
            ipv6_routes.apply();
        } else {
            drop();
        }
        if (!meta.routed) {
            meta.stat.no_route = true;
        }
    }
}

#endif
