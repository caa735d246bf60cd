// The controller's IPv6 endpoint keys on a running switch (the software
// switch over P4Runtime): both endpoint tables written, and a controller that
// takes over reads them back, so that keys stay what they were.
import { afterAll, expect, test } from "vitest";
import { P4RuntimeServer, SoftwareSwitch } from "../../switch/src/index.js";
import { parseConfig, TelemetryController } from "../../p4runtime-controller/src/index.js";
import { P4_NAMES } from "../../contract/src/generated/telemetry-names.js";
import { ipv6FromBytes, ipv6Text } from "../../contract/src/address.js";
import { until } from "../support/wait.js";

const sw = new SoftwareSwitch({ clock: "virtual" });
const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
const port = await server.listen("127.0.0.1:0");
afterAll(async () => {
  await server.close();
});

const X = "2001:db8:0:1::1";
const Y = "2001:db8:0:1::2";
const Z = "2001:db8:0:2::1";

function controller(electionId: number, endpoints: string[]): TelemetryController {
  return new TelemetryController(parseConfig({
    switch: { address: `127.0.0.1:${port}`, device_id: 1, election_id: electionId, switch_id: "tor", timestamp_unit_ns: 1 },
    ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24", "2001:db8:0:1::/64"] }, { port: 2, role: "fabric", prefixes: ["0.0.0.0/0", "::/0"] }],
    endpoints,
  }));
}

/** Both endpoint tables as the switch holds them: address -> key. */
async function tables(c: TelemetryController): Promise<Array<Map<string, number>>> {
  return Promise.all([P4_NAMES.tables.endpoints_src_v6, P4_NAMES.tables.endpoints_dst_v6].map(async (t) => {
    const tableId = c.schema.tables.get(t.name).preamble!.id;
    const out = new Map<string, number>();
    for await (const e of c.connection.client.read([{ entity: { $case: "tableEntry", value: { tableId, match: [], priority: 0, isDefaultAction: false } as never } }])) {
      if (e.entity?.$case !== "tableEntry") continue;
      const te = e.entity.value;
      const m = te.match[0]!.fieldMatchType;
      const a = te.action!.type;
      if (m?.$case === "exact" && a?.$case === "action") out.set(ipv6Text(ipv6FromBytes(m.value.value)), Number(ipv6FromBytes(a.value.params[0]!.value)));
    }
    return out;
  }));
}

test("IPv6 endpoints get keys from 240.0.0.1 in both tables; a controller that takes over keeps them, and gives a new address the next key", async () => {
  const a = controller(1, [X, Y]);
  a.start();
  await a.ready();
  const want = new Map([[X, 0xf0000001], [Y, 0xf0000002]]);
  expect(await tables(a)).toEqual([want, want]);
  await a.stop();

  // The next controller is told of Y and Z only, in another order: X and Y keep the switch's keys, Z gets the next one.
  const b = controller(2, [Z, Y]);
  b.start();
  await b.ready();
  expect([X, Y, Z].map((e) => b.endpointKey(e))).toEqual([0xf0000001, 0xf0000002, 0xf0000003]);
  const after = new Map([...want, [Z, 0xf0000003]]);
  expect(await tables(b)).toEqual([after, after]);
  // The IPv6 routes are written beside the IPv4 ones.
  const routes = b.schema.tables.get(P4_NAMES.tables.forwarding_ipv6_routes.name).preamble!.id;
  let n = 0;
  for await (const e of b.connection.client.read([{ entity: { $case: "tableEntry", value: { tableId: routes, match: [], priority: 0, isDefaultAction: false } as never } }])) if (e.entity?.$case === "tableEntry") n++;
  expect(n).toBe(2);
  await b.stop();
}, 30_000);

test("more endpoints in the config than the endpoint tables hold: refused in one line naming the field", () => {
  const many = Array.from({ length: 4097 }, (_, i) => `2001:db8:1::${i.toString(16)}`);
  expect(() => controller(3, many)).toThrow("endpoints: 4097 listed, and the switch's endpoint tables hold 4096");
});

test("an address the switch reports when its endpoint tables are full: the refused entry is given up and counted once, later writes go through", async () => {
  const { Rig } = await import("../../app/rig.js");
  const { Topology } = await import("../../app/topology.js");
  const { buildFrame, Opcode } = await import("../../traffic/src/roce.js");
  const full = Array.from({ length: 4096 }, (_, i) => `2001:db8:1::${(i + 1).toString(16)}`);
  const topology = Topology.parse({ ports: [{ port: 1, role: "compute", prefixes: ["2001:db8:0:1::/64"] }, { port: 2, role: "storage", prefixes: ["2001:db8:1::/64"] }] });
  const rig = new Rig({ name: "tor", topology, endpoints: full });
  await rig.start(() => {});
  try {
    expect(rig.controller.stats.endpoints).toBe(4096);
    // A host no one listed sends to a listed target: the switch reports it, the controller's entry does not fit.
    const frame = buildFrame({ src: 0x20010db8000000010000000000000001n, dst: 0x20010db8000100000000000000000001n, opcode: Opcode.SEND_ONLY, destQp: 0x11, psn: 1, payloadLength: 64 });
    rig.feed({ timestampNs: 1_000_000n, data: frame.data, originalLength: frame.wireLength });
    await rig.drain();
    // A rig writes learned endpoints at the next 1 ms of capture time (as replay reaches it).
    await rig.runDue(2_000_000n);
    await until(() => rig.controller.stats.endpointsRefused > 0, 10_000, () => `the entry to be refused (${JSON.stringify(rig.controller.stats)})`);
    expect(rig.controller.stats).toMatchObject({ learnedEndpoints: 1, endpointsRefused: 1, endpoints: 4096 });
    expect(rig.controller.endpointKey("2001:db8:0:1::1")).toBeUndefined();
    // Nothing is left to write again: the next write is the next one alone.
    await expect(rig.controller.connection.sync()).resolves.toBe(0);
    expect((await rig.controller.readCounters()).unknown_endpoint).toBe(1);
  } finally {
    await rig.stop();
  }
}, 60_000);
