// The role of a port (SPEC §1): compute, storage or fabric. Two instances
// look up the ingress and the egress port; the controller writes both.
#ifndef __PORT_ROLE__
#define __PORT_ROLE__

control PortRole(in bit<9> port, out role_t role) {
    action set_role(role_t r) {
        role = r;
    }

    table port_roles {
        key = {
            port: exact @name("port");
        }
        actions = {
            set_role;
        }
        const default_action = set_role(ROLE_FABRIC);
        size = PORT_COUNT;
    }

    apply {
        role = ROLE_FABRIC;
        port_roles.apply();
    }
}

#endif
