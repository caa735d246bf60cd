// The packet replication engine, packet by packet, on a p4c-compiled program
// (programs/replication.p4): multicast, clone I2E and E2E with preserved
// field lists and truncation, resubmit, recirculate, the loop bound. Where
// BMv2 simple_switch_grpc can run, the same packets go through it too, both
// switches configured over P4Runtime, and what leaves them must match.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { P4Info } from "../../p4runtime/src/generated/p4/config/v1/p4info.js";
import { SetForwardingPipelineConfigRequest_Action, Update_Type, type Entity, type Replica } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { P4RuntimeClient, toUint128 } from "../../p4runtime/src/index.js";
import { InstanceType, MAX_EGRESS_PASSES, MAX_INGRESS_PASSES, Pipeline } from "../../switch/src/bmv2/pipeline.js";
import { CompiledProgram } from "../../switch/src/bmv2/program.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch, type SwitchPacket } from "../../switch/src/software-switch.js";
import { announceSkip, Bmv2Switch, bmv2SkipReason, Wire, type WireFrame } from "../bmv2/harness.js";

const dir = new URL("./programs/", import.meta.url);
const jsonText = readFileSync(new URL("replication.json", dir), "utf8");
const p4infoText = readFileSync(new URL("replication.p4info.json", dir), "utf8");

const OP = { UNICAST: 0, MULTICAST: 1, CLONE_I2E: 2, RESUBMIT: 3, RECIRCULATE: 4, CLONE_E2E: 5, RECIRCULATE_FOREVER: 6, RESUBMIT_FOREVER: 7, DROP_AND_CLONE: 8, CLONE_E2E_FOREVER: 9 };
const PAYLOAD = Buffer.from("payload!");
const LENGTH = 5 + 15 + PAYLOAD.length;

/** The packet in: what to do (op), the unicast port, the group or session; an empty report. */
function packet(op: number, port: number, arg = 0): Buffer {
  return frame({ op, port, arg });
}

interface Fields {
  op: number; port: number; arg: number; marker?: number;
  itype?: number; rid?: number; eport?: number; iport?: number; iitype?: number; kept?: number; lost?: number; passes?: number; len?: number;
}

function frame(f: Fields): Buffer {
  const b = Buffer.alloc(LENGTH);
  b[0] = f.op;
  b[1] = f.port;
  b.writeUInt16BE(f.arg, 2);
  b[4] = f.marker ?? 0;
  b[5] = f.itype ?? 0;
  b.writeUInt16BE(f.rid ?? 0, 6);
  b.writeUInt16BE(f.eport ?? 0, 8);
  b.writeUInt16BE(f.iport ?? 0, 10);
  b[12] = f.iitype ?? 0;
  b[13] = f.kept ?? 0;
  b[14] = f.lost ?? 0;
  b[15] = f.passes ?? 0;
  b.writeUInt32BE(f.len ?? 0, 16);
  PAYLOAD.copy(b, 20);
  return b;
}

const hex = (outs: readonly { port: number; data: Buffer }[]) => outs.map((o) => `${o.port}:${o.data.toString("hex")}`);

describe("the replication engine on the software switch", () => {
  const pl = new Pipeline(new CompiledProgram(JSON.parse(jsonText)));
  const send = (data: Buffer, port = 1) => pl.process({ port, data, timestampNs: 0 });
  pl.replication.setMulticastGroup(5, [{ egressPort: 6, instance: 1 }, { egressPort: 7, instance: 2 }, { egressPort: 8, instance: 3 }]);
  pl.replication.setCloneSession(9, { replicas: [{ egressPort: 3, instance: 0 }] });
  pl.replication.setCloneSession(10, { replicas: [{ egressPort: 4, instance: 7 }, { egressPort: 5, instance: 8 }], packetLengthBytes: 12 });

  test("unicast: one packet, instance_type NORMAL, the ingress port and length as received", () => {
    const r = send(packet(OP.UNICAST, 2), 4);
    expect(hex(r.outputs)).toEqual(hex([{ port: 2, data: frame({ op: 0, port: 2, arg: 0, marker: 0xee, eport: 2, iport: 4, passes: 1, len: LENGTH }) }]));
  });

  test("multicast: one copy a replica, each with its egress_rid and instance_type REPLICATION; an unknown group drops", () => {
    const r = send(packet(OP.MULTICAST, 2, 5));
    const copy = (port: number, rid: number) => ({ port, data: frame({ op: 1, port: 2, arg: 5, marker: 0xee, itype: InstanceType.REPLICATION, rid, eport: port, iport: 1, passes: 1, len: LENGTH }) });
    expect(hex(r.outputs)).toEqual(hex([copy(6, 1), copy(7, 2), copy(8, 3)]));
    const dropped = pl.packetsDropped;
    expect(send(packet(OP.MULTICAST, 2, 6)).outputs).toEqual([]);
    expect(pl.packetsDropped).toBe(dropped + 1);
  });

  test("a group replaced or deleted takes effect on the next packet", () => {
    pl.replication.setMulticastGroup(20, [{ egressPort: 9, instance: 4 }]);
    expect(send(packet(OP.MULTICAST, 2, 20)).outputs.map((o) => o.port)).toEqual([9]);
    pl.replication.setMulticastGroup(20, [{ egressPort: 10, instance: 4 }, { egressPort: 11, instance: 4 }]);
    expect(send(packet(OP.MULTICAST, 2, 20)).outputs.map((o) => o.port)).toEqual([10, 11]);
    pl.replication.deleteMulticastGroup(20);
    expect(send(packet(OP.MULTICAST, 2, 20)).outputs).toEqual([]);
  });

  test("clone I2E: the packet as received, reparsed, its metadata cleared but the preserved field; sent before the original", () => {
    const r = send(packet(OP.CLONE_I2E, 2, 9));
    expect(hex(r.outputs)).toEqual(hex([
      // Ingress wrote marker, iport, passes: the clone has none of it; kept (field list 1) is preserved, lost is not.
      { port: 3, data: frame({ op: 2, port: 2, arg: 9, itype: InstanceType.INGRESS_CLONE, eport: 3, kept: 0xab, len: LENGTH }) },
      { port: 2, data: frame({ op: 2, port: 2, arg: 9, marker: 0xee, eport: 2, iport: 1, kept: 0xab, lost: 0xcd, passes: 1, len: LENGTH }) },
    ]));
  });

  test("clone to a session of two replicas truncated to 12 bytes; a session that does not exist clones nothing", () => {
    const r = send(packet(OP.CLONE_I2E, 2, 10));
    const clone = (port: number, rid: number) => ({ port, data: frame({ op: 2, port: 2, arg: 10, itype: InstanceType.INGRESS_CLONE, rid, eport: port, kept: 0xab, len: LENGTH }).subarray(0, 12) });
    expect(hex(r.outputs)).toEqual(hex([clone(4, 7), clone(5, 8), { port: 2, data: frame({ op: 2, port: 2, arg: 10, marker: 0xee, eport: 2, iport: 1, kept: 0xab, lost: 0xcd, passes: 1, len: LENGTH }) }]));
    expect(send(packet(OP.CLONE_I2E, 2, 11)).outputs.map((o) => o.port)).toEqual([2]);
  });

  test("mark_to_drop then clone: only the clone leaves", () => {
    const r = send(packet(OP.DROP_AND_CLONE, 2, 9));
    expect(hex(r.outputs)).toEqual(hex([{ port: 3, data: frame({ op: 8, port: 2, arg: 9, itype: InstanceType.INGRESS_CLONE, eport: 3, len: LENGTH }) }]));
  });

  test("clone E2E: the headers as egress left them, not deparsed again; metadata cleared but the field list; after the original", () => {
    pl.replication.setCloneSession(12, { replicas: [{ egressPort: 4, instance: 7 }] });
    const r = send(packet(OP.CLONE_E2E, 2, 12));
    expect(hex(r.outputs)).toEqual(hex([
      { port: 2, data: frame({ op: 5, port: 2, arg: 12, marker: 0xee, eport: 2, iport: 1, passes: 1, len: LENGTH }) },
      // The clone's egress rewrote the report: instance_type EGRESS_CLONE, its rid and port, kept 0x55 preserved.
      { port: 4, data: frame({ op: 5, port: 2, arg: 12, marker: 0xee, itype: InstanceType.EGRESS_CLONE, rid: 7, eport: 4, iport: 1, kept: 0x55, passes: 1, len: LENGTH }) },
    ]));
  });

  test("resubmit: ingress again on the packet as received, instance_type RESUBMIT, the field list kept, other metadata cleared", () => {
    const r = send(packet(OP.RESUBMIT, 2), 4);
    expect(hex(r.outputs)).toEqual(hex([{ port: 2, data: frame({ op: 3, port: 2, arg: 0, marker: 0xee, eport: 2, iport: 0, iitype: InstanceType.RESUBMIT, kept: 0x11, passes: 2, len: LENGTH }) }]));
  });

  test("recirculate: the deparsed packet through ingress again, instance_type RECIRC, the field list kept", () => {
    const r = send(packet(OP.RECIRCULATE, 2), 4);
    // The first egress set port 3 and the report; the second pass reports over it.
    expect(hex(r.outputs)).toEqual(hex([{ port: 3, data: frame({ op: 4, port: 3, arg: 0, marker: 0xee, eport: 3, iport: 0, iitype: InstanceType.RECIRC, kept: 0x33, passes: 2, len: LENGTH }) }]));
  });

  test("a packet that recirculates or resubmits forever is dropped at the bound, counted, and the next packet is unaffected", () => {
    for (const op of [OP.RECIRCULATE_FOREVER, OP.RESUBMIT_FOREVER]) {
      const loops = pl.loopDrops;
      const r = send(packet(op, 2));
      expect(r.outputs).toEqual([]);
      expect(r.error).toMatch(op === OP.RESUBMIT_FOREVER ? /resubmitted more than 15 times/ : /recirculated more than 15 times/);
      expect(pl.loopDrops).toBe(loops + 1);
      expect(send(packet(OP.UNICAST, 2)).outputs.map((o) => o.port)).toEqual([2]);
    }
    expect(MAX_INGRESS_PASSES).toBe(16);
  });

  test("egress clones of egress clones stop at the bound of egress passes, each copy sent until then", () => {
    const loops = pl.loopDrops;
    const r = send(packet(OP.CLONE_E2E_FOREVER, 2, 9));
    expect(r.outputs).toHaveLength(MAX_EGRESS_PASSES);
    expect(r.outputs.slice(0, 3).map((o) => o.port)).toEqual([2, 3, 3]);
    expect(r.error).toMatch(/more than 4096 copies/);
    expect(pl.loopDrops).toBe(loops + 1);
  });

  test("bad groups and sessions are refused by name and change nothing", () => {
    expect(() => pl.replication.setMulticastGroup(0, [])).toThrow(/multicast group id 0 is not in 1..65535/);
    expect(() => pl.replication.setMulticastGroup(5, [{ egressPort: 1, instance: 1 }, { egressPort: 1, instance: 1 }])).toThrow(/replica \(port 1, instance 1\) appears twice/);
    expect(() => pl.replication.setMulticastGroup(5, [{ egressPort: 511, instance: 1 }])).toThrow(/egress port 511/);
    expect(() => pl.replication.setCloneSession(32768, { replicas: [] })).toThrow(/clone session id 32768/);
    expect(() => pl.replication.setCloneSession(9, { replicas: [], classOfService: 8 })).toThrow(/class of service 8/);
    expect(() => pl.replication.deleteCloneSession(99)).toThrow(/no clone session 99/);
    expect(pl.replication.groups.get(5)?.length).toBe(3);
  });
});

describe("the software switch sends every copy", () => {
  test("each output is a 'packet' event; the switch's replication is its pipeline's", () => {
    const sw = new SoftwareSwitch({ clock: "virtual" });
    sw.load(JSON.parse(jsonText));
    sw.replication.setMulticastGroup(5, [{ egressPort: 6, instance: 1 }, { egressPort: 7, instance: 2 }]);
    const seen: number[] = [];
    sw.on("packet", (p) => seen.push(p.port));
    const r = sw.process({ port: 1, data: packet(OP.MULTICAST, 2, 5), unixNs: 1_000n } satisfies SwitchPacket)!;
    expect(seen).toEqual([6, 7]);
    expect(r.outputs.map((o) => o.port)).toEqual([6, 7]);
    expect(sw.stats().packetsOut).toBe(2);
  });
});

// ---- the same packets on BMv2 ------------------------------------------------------------

const PORTS = [1, 2, 3, 4, 5, 6, 7, 8];

function replica(port: number, instance: number): Replica {
  return { portKind: { $case: "egressPort", value: port }, instance, backupReplicas: [] };
}

/** The groups and sessions of the differential run, as P4Runtime entities (no truncation: BMv2 does not truncate clones). */
const PRE: Entity[] = [
  { entity: { $case: "packetReplicationEngineEntry", value: { type: { $case: "multicastGroupEntry", value: { multicastGroupId: 5, replicas: [replica(6, 1), replica(7, 2), replica(8, 3)], metadata: Buffer.alloc(0) } } } } },
  { entity: { $case: "packetReplicationEngineEntry", value: { type: { $case: "cloneSessionEntry", value: { sessionId: 9, replicas: [replica(3, 0)], classOfService: 0, packetLengthBytes: 0 } } } } },
  { entity: { $case: "packetReplicationEngineEntry", value: { type: { $case: "cloneSessionEntry", value: { sessionId: 10, replicas: [replica(4, 7), replica(5, 8)], classOfService: 0, packetLengthBytes: 0 } } } } },
];

/** [in port, packet, frames expected out] */
const CASES: Array<[number, Buffer, number]> = [
  [4, packet(OP.UNICAST, 2), 1],
  [1, packet(OP.MULTICAST, 2, 5), 3],
  [1, packet(OP.CLONE_I2E, 2, 9), 2],
  [1, packet(OP.CLONE_I2E, 2, 10), 3],
  [1, packet(OP.DROP_AND_CLONE, 2, 9), 1],
  [1, packet(OP.CLONE_E2E, 2, 10), 3],
  [4, packet(OP.RESUBMIT, 2), 1],
  [4, packet(OP.RECIRCULATE, 2), 1],
];

async function configure(address: string, deviceId: bigint): Promise<P4RuntimeClient> {
  const c = new P4RuntimeClient({ address, deviceId, timeoutMs: 20_000 });
  const ch = c.streamChannel();
  ch.send({ update: { $case: "arbitration", value: { deviceId, role: undefined, electionId: toUint128(1n), status: undefined } } });
  for await (const m of ch) if (m.update?.$case === "arbitration") break;
  await c.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info: P4Info.fromJSON(JSON.parse(p4infoText)), p4DeviceConfig: Buffer.from(jsonText), cookie: { cookie: 1n } } });
  await c.write(PRE.map((entity) => ({ type: Update_Type.INSERT, entity })), 1n);
  return c;
}

const sortFrames = (fs: readonly WireFrame[]) => hex(fs).sort();

describe.skipIf(bmv2SkipReason !== undefined)("the same packets on BMv2 simple_switch_grpc", () => {
  let bmv2: Bmv2Switch | undefined;
  let wire: Wire | undefined;
  let server: P4RuntimeServer | undefined;
  const clients: P4RuntimeClient[] = [];
  const sw = new SoftwareSwitch({ clock: "virtual" });
  announceSkip("BMv2 replication tests");

  beforeAll(async () => {
    bmv2 = await Bmv2Switch.start({ name: "pre", ports: PORTS });
    wire = new Wire(bmv2);
    clients.push(await configure(bmv2.address, BigInt(bmv2.deviceId)));
    server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
    const port = await server.listen("127.0.0.1:0");
    clients.push(await configure(`127.0.0.1:${port}`, 1n));
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    wire?.close();
    await server?.close();
    await bmv2?.stop();
  });

  test.each(CASES.map((c, i) => [i, ...c] as const))("case %i: the same frames leave both switches", async (_i, port, data, count) => {
    const fromBmv2 = await wire!.send(port, data, 3000, count);
    const r = sw.process({ port, data, unixNs: 1_000n })!;
    expect(r.outputs).toHaveLength(count);
    // BMv2 sends copies from several threads: compare as sets.
    expect(sortFrames(r.outputs)).toEqual(sortFrames(fromBmv2));
  }, 30_000);
});
