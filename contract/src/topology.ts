// Where each address sits (SPEC §7): a switch's ports, each with its role
// and the prefixes behind it (IPv4 and IPv6, side by side). The controller installs routes and port
// roles from it, replay gives each packet its ingress port by it, and the
// traffic generator writes one for each capture.

export type PortRole = "compute" | "storage" | "fabric";

export interface PortSpec {
  readonly port: number;
  readonly role: PortRole;
  readonly prefixes: readonly string[];
}

export interface TopologySpec {
  readonly ports: readonly PortSpec[];
}
