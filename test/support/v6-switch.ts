// A switch configured for IPv6 as the controller configures it: the real
// telemetry controller (mode, roles, IPv4 routes, digests) over P4Runtime,
// plus the IPv6 routes and endpoint entries (address -> endpoint key, the
// same entry in endpoints.src_v6 and endpoints.dst_v6) written through the
// controller's own P4Runtime connection. Digests are collected decoded.
import { buildTableEntry } from "../../p4runtime/src/index.js";
import { P4_NAMES, type SwitchCounters, type TelemetryDigest } from "../../contract/src/index.js";
import { parseConfig } from "../../p4runtime-controller/src/config.js";
import { TelemetryController } from "../../p4runtime-controller/src/controller.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { until } from "./wait.js";

const T = P4_NAMES.tables;
const A = P4_NAMES.actions;

export interface V6Port {
  port: number;
  role: "compute" | "storage" | "fabric";
  /** IPv4 prefixes routed to the port (at least one: the controller's configuration asks for it) */
  prefixes: string[];
  /** IPv6 prefixes routed to the port (written to forwarding.ipv6_routes) */
  prefixes6: string[];
}

/** The entries the controller writes for IPv6: routes and endpoint keys. */
export function v6Entries(ports: readonly V6Port[], endpoints: ReadonlyArray<readonly [bigint, number]>) {
  const out: Array<Parameters<typeof buildTableEntry>[1]> = [];
  for (const p of ports) {
    for (const prefix of p.prefixes6) out.push({ table: T.forwarding_ipv6_routes.name, match: { dst_addr: prefix }, action: { name: A.forwarding_route.name, params: { port: p.port } } });
  }
  for (const [addr, key] of endpoints) {
    for (const table of [T.endpoints_src_v6.name, T.endpoints_dst_v6.name]) out.push({ table, match: { addr }, action: { name: A.endpoints_set_key.name, params: { key } } });
  }
  return out;
}

/** Writes the IPv6 routes and endpoint entries through a ready controller's connection. */
export async function writeV6Entries(c: TelemetryController, ports: readonly V6Port[], endpoints: ReadonlyArray<readonly [bigint, number]>): Promise<void> {
  for (const spec of v6Entries(ports, endpoints)) c.state.set(buildTableEntry(c.schema, spec));
  await c.connection.sync();
}

export interface V6Switch {
  sw: SoftwareSwitch;
  controller: TelemetryController;
  /** every digest decoded so far, in order */
  digests: TelemetryDigest[];
  /** forwarded packets: [ingress port, egress port or undefined when dropped] */
  forwarded: Array<[number, number | undefined]>;
  send(port: number, data: Uint8Array, unixNs: bigint): void;
  /** waits until `n` digests arrived (or fails naming how many did) */
  waitDigests(n: number): Promise<TelemetryDigest[]>;
  counters(): Promise<SwitchCounters>;
  close(): Promise<void>;
}

/** A software switch (virtual clock) behind its P4Runtime server, configured for IPv6. */
export async function v6Switch(ports: readonly V6Port[], endpoints: ReadonlyArray<readonly [bigint, number]>, mode: "full" | "polling" = "full"): Promise<V6Switch> {
  const sw = new SoftwareSwitch({ clock: "virtual" });
  const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
  const port = await server.listen("127.0.0.1:0");
  const controller = new TelemetryController(parseConfig({
    switch: { address: `127.0.0.1:${port}`, election_id: 5, switch_id: "sw", timestamp_unit_ns: 1 },
    ports: ports.map((p) => ({ port: p.port, role: p.role, prefixes: p.prefixes })),
    mode,
    digest: { max_list_size: 1, max_timeout_us: 1 },
  }), { rotationTimer: false });
  const digests: TelemetryDigest[] = [];
  controller.on("digests", (b) => digests.push(...b.digests));
  controller.on("bad-digest", (e) => {
    throw new Error(`bad digest: ${e.message}`);
  });
  controller.start();
  await controller.ready();
  await writeV6Entries(controller, ports, endpoints);
  const forwarded: Array<[number, number | undefined]> = [];
  return {
    sw,
    controller,
    digests,
    forwarded,
    send(p, data, unixNs) {
      const r = sw.process({ port: p, data, unixNs });
      forwarded.push([p, r?.output?.port]);
    },
    async waitDigests(n) {
      await until(() => digests.length >= n, 5000, () => `${n} digests (got ${digests.length})`);
      return digests;
    },
    counters: () => controller.readCounters(),
    async close() {
      await controller.stop();
      await server.close();
    },
  };
}
