// PacketReplicationEngineEntry (multicast groups, clone sessions) over
// P4Runtime against the spec, item by item (docs/p4runtime-conformance.md):
// status codes of INSERT, MODIFY, DELETE, reads by id and wildcard, what a
// read gives back. Where BMv2 simple_switch_grpc can run, every request also
// goes to it, and its code is checked beside ours: the same, or the
// documented difference.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { P4Info } from "../../p4runtime/src/generated/p4/config/v1/p4info.js";
import { SetForwardingPipelineConfigRequest_Action, Update_Type, type CloneSessionEntry, type Entity, type MulticastGroupEntry, type Replica } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { P4RuntimeClient, P4WriteError, toUint128 } from "../../p4runtime/src/index.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { announceSkip, Bmv2Switch, bmv2SkipReason } from "../bmv2/harness.js";

const dir = new URL("../switch/programs/", import.meta.url);
const jsonText = readFileSync(new URL("replication.json", dir), "utf8");
const p4info = P4Info.fromJSON(JSON.parse(readFileSync(new URL("replication.p4info.json", dir), "utf8")));

const r = (port: number, instance: number, backup?: [number, number]): Replica => ({
  portKind: { $case: "egressPort", value: port },
  instance,
  backupReplicas: backup ? [{ port: Buffer.from([backup[0]]), instance: backup[1] }] : [],
});
const group = (id: number, replicas: Replica[], metadata = Buffer.alloc(0)): Entity => ({ entity: { $case: "packetReplicationEngineEntry", value: { type: { $case: "multicastGroupEntry", value: { multicastGroupId: id, replicas, metadata } } } } });
const session = (id: number, replicas: Replica[], more: Partial<CloneSessionEntry> = {}): Entity => ({ entity: { $case: "packetReplicationEngineEntry", value: { type: { $case: "cloneSessionEntry", value: { sessionId: id, replicas, classOfService: 0, packetLengthBytes: 0, ...more } } } } });

interface Target {
  client: P4RuntimeClient;
  close(): Promise<void>;
}

async function connect(address: string, deviceId: bigint): Promise<P4RuntimeClient> {
  return (await connectWithStream(address, deviceId)).c;
}

async function connectWithStream(address: string, deviceId: bigint) {
  const c = new P4RuntimeClient({ address, deviceId, timeoutMs: 20_000 });
  const ch = c.streamChannel();
  ch.send({ update: { $case: "arbitration", value: { deviceId, role: undefined, electionId: toUint128(1n), status: undefined } } });
  for await (const m of ch) if (m.update?.$case === "arbitration") break;
  await commit(c);
  return { c, ch };
}

async function commit(c: P4RuntimeClient): Promise<void> {
  await c.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info, p4DeviceConfig: Buffer.from(jsonText), cookie: { cookie: 1n } } });
}

/** The status code of a one-update Write: "OK" or the update's error code. */
async function code(c: P4RuntimeClient, type: Update_Type, entity: Entity): Promise<string> {
  try {
    await c.write([{ type, entity }], 1n);
    return "OK";
  } catch (err) {
    if (err instanceof P4WriteError) return err.failures[0]!.code;
    return (err as { code: string }).code;
  }
}

async function readCode(c: P4RuntimeClient, entity: Entity): Promise<string | Entity[]> {
  try {
    return await c.readAll([entity]);
  } catch (err) {
    return (err as { code: string }).code;
  }
}

const { INSERT, MODIFY, DELETE } = Update_Type;

/**
 * [what, update type, entity, our code, BMv2's code]: the requests in order
 * (each may depend on the ones before), on a pipeline with no groups or
 * sessions yet.
 */
const WRITES: Array<[string, Update_Type, Entity, string, string]> = [
  ["group id 0", INSERT, group(0, [r(1, 1)]), "INVALID_ARGUMENT", "INVALID_ARGUMENT"],
  ["a group", INSERT, group(1, [r(1, 1), r(2, 1)], Buffer.from("meta")), "OK", "OK"],
  ["the same group again", INSERT, group(1, [r(3, 1)]), "ALREADY_EXISTS", "ALREADY_EXISTS"],
  ["MODIFY of a group that does not exist", MODIFY, group(2, [r(1, 1)]), "NOT_FOUND", "NOT_FOUND"],
  ["DELETE of a group that does not exist", DELETE, group(2, []), "NOT_FOUND", "NOT_FOUND"],
  ["a replica twice", INSERT, group(3, [r(1, 1), r(1, 1)]), "INVALID_ARGUMENT", "INVALID_ARGUMENT"],
  ["a replica without a port", INSERT, group(3, [{ portKind: undefined, instance: 1, backupReplicas: [] }]), "INVALID_ARGUMENT", "INVALID_ARGUMENT"],
  // Spec: an instance over the target's EgressInstance_t (16 bits on v1model) is INVALID_ARGUMENT; PI truncates it.
  ["an instance past 16 bits", INSERT, group(3, [r(1, 0x10000)]), "INVALID_ARGUMENT", "OK"],
  ["a group with a backup replica", INSERT, group(4, [r(1, 1, [2, 1])]), "UNIMPLEMENTED", "OK"],
  // mcast_grp is 16 bits: groups past 32767 reach the data plane (PI keeps them for its clone sessions).
  ["group id 40000", INSERT, group(40000, [r(1, 1)]), "OK", "OUT_OF_RANGE"],
  ["group id past 16 bits", INSERT, group(0x10000, [r(1, 1)]), "OUT_OF_RANGE", "OUT_OF_RANGE"],
  ["a group modified", MODIFY, group(1, [r(5, 2)]), "OK", "OK"],
  ["a port on the drop port", INSERT, group(5, [r(511, 1)]), "INVALID_ARGUMENT", "OK"],
  ["session id 0", INSERT, session(0, [r(1, 1)]), "INVALID_ARGUMENT", "INVALID_ARGUMENT"],
  ["session id 32768", INSERT, session(32768, [r(1, 1)]), "INVALID_ARGUMENT", "INVALID_ARGUMENT"],
  ["a session", INSERT, session(7, [r(3, 0)]), "OK", "OK"],
  ["the same session again", INSERT, session(7, [r(3, 0)]), "ALREADY_EXISTS", "ALREADY_EXISTS"],
  ["MODIFY of a session that does not exist", MODIFY, session(8, [r(3, 0)]), "NOT_FOUND", "NOT_FOUND"],
  ["DELETE of a session that does not exist", DELETE, session(8, []), "NOT_FOUND", "NOT_FOUND"],
  ["a session with a replica twice", INSERT, session(8, [r(3, 0), r(3, 0)]), "INVALID_ARGUMENT", "INVALID_ARGUMENT"],
  // Spec: packet_length_bytes truncates clones; BMv2 does not truncate and refuses it.
  ["a session that truncates", INSERT, session(9, [r(3, 0)], { packetLengthBytes: 64 }), "OK", "UNKNOWN"],
  // class_of_service must fit ClassOfService_t (v1model priority: 3 bits); PI refuses any.
  ["a session with class of service 2", INSERT, session(10, [r(3, 0)], { classOfService: 2 }), "OK", "UNIMPLEMENTED"],
  ["a session with class of service 8", INSERT, session(11, [r(3, 0)], { classOfService: 8 }), "INVALID_ARGUMENT", "UNIMPLEMENTED"],
  ["a session modified", MODIFY, session(7, [r(4, 1), r(5, 2)]), "OK", "OK"],
  ["a session deleted", DELETE, session(7, []), "OK", "OK"],
  ["the group deleted", DELETE, group(40000, []), "OK", "OUT_OF_RANGE"],
];

/** After WRITES: the groups and sessions a wildcard read returns (the session 20 the read test adds included). */
interface Left {
  groups: number[];
  sessions: number[];
}

function suite(name: string, start: () => Promise<Target>, column: 3 | 4, left: Left) {
  describe(name, () => {
    let t: Target;
    beforeAll(async () => {
      t = await start();
    }, 120_000);
    afterAll(async () => {
      await t?.close();
    });

    test("writes answer with the spec's codes, one request after another", async () => {
      const got: string[] = [];
      for (const w of WRITES) got.push(`${w[0]}: ${await code(t.client, w[1], w[2])}`);
      expect(got).toEqual(WRITES.map((w) => `${w[0]}: ${w[column]}`));
    }, 60_000);

    test("reads: by id, the wildcard (0), a missing id NOT_FOUND; what was written comes back", async () => {
      const c = t.client;
      await c.write([{ type: INSERT, entity: session(20, [r(6, 3)]) }], 1n);
      const one = await c.readAll([group(1, [])]);
      expect(one).toHaveLength(1);
      const g = one[0]!.entity?.$case === "packetReplicationEngineEntry" && one[0]!.entity.value.type?.$case === "multicastGroupEntry" ? one[0]!.entity.value.type.value : undefined;
      expect(g?.multicastGroupId).toBe(1);
      expect(g?.replicas.map((x) => [x.portKind?.$case === "egressPort" ? x.portKind.value : undefined, x.instance])).toEqual([[5, 2]]);
      const groups = (await c.readAll([group(0, [])])).map((e) => (e.entity?.$case === "packetReplicationEngineEntry" && e.entity.value.type?.$case === "multicastGroupEntry" ? e.entity.value.type.value.multicastGroupId : -1));
      expect(groups.sort((a, b) => a - b)).toEqual(left.groups);
      const sessions = (await c.readAll([session(0, [])])).map((e) => (e.entity?.$case === "packetReplicationEngineEntry" && e.entity.value.type?.$case === "cloneSessionEntry" ? e.entity.value.type.value : undefined));
      expect(sessions.map((s) => s?.sessionId).sort((a, b) => a! - b!)).toEqual(left.sessions);
      expect(await readCode(c, group(77, []))).toBe("NOT_FOUND");
      expect(await readCode(c, session(77, []))).toBe("NOT_FOUND");
    }, 60_000);
  });
}

suite("the software switch", async () => {
  const server = new P4RuntimeServer(new SoftwareSwitch({ clock: "virtual" }), { deviceId: 1n, cpuPort: 510 });
  const port = await server.listen("127.0.0.1:0");
  const client = await connect(`127.0.0.1:${port}`, 1n);
  return {
    client,
    async close() {
      client.close();
      await server.close();
    },
  };
}, 3, { groups: [1], sessions: [9, 10, 20] });

describe("the software switch beyond the code table", () => {
  let server: P4RuntimeServer;
  let sw: SoftwareSwitch;
  let c: P4RuntimeClient;
  let ch: Awaited<ReturnType<typeof connectWithStream>>["ch"];
  beforeAll(async () => {
    sw = new SoftwareSwitch({ clock: "virtual" });
    server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
    ({ c, ch } = await connectWithStream(`127.0.0.1:${await server.listen("127.0.0.1:0")}`, 1n));
  });

  test("a packet-out to a multicast group with the CPU port: one packet-in, the other replicas out their ports", async () => {
    await c.write([{ type: INSERT, entity: group(40, [r(510, 1), r(3, 2), r(4, 3)]) }], 1n);
    const out: number[] = [];
    sw.on("packet", (p) => out.push(p.port));
    // replication.p4: op 1 multicasts to the group in bytes 2..3.
    const payload = Buffer.alloc(28);
    payload[0] = 1;
    payload.writeUInt16BE(40, 2);
    ch.send({ update: { $case: "packet", value: { payload, metadata: [] } } });
    for await (const m of ch) {
      if (m.update?.$case !== "packet") continue;
      const p = m.update.value.payload;
      expect([p[0], p.readUInt16BE(6), p.readUInt16BE(8)]).toEqual([1, 1, 510]); // the replica's rid and egress port
      break;
    }
    expect(out).toEqual([510, 3, 4]);
    await c.write([{ type: DELETE, entity: group(40, []) }], 1n);
  });
  afterAll(async () => {
    c.close();
    await server.close();
  });

  test("a port written as bytes reads back as bytes, the group's metadata too; the data plane uses the port number", async () => {
    const replicas: Replica[] = [{ portKind: { $case: "port", value: Buffer.from([0x00, 0x07]) }, instance: 9, backupReplicas: [] }];
    await c.write([{ type: INSERT, entity: group(30, replicas, Buffer.from("opaque")) }], 1n);
    const [e] = await c.readAll([group(30, [])]);
    const g = (e!.entity as { value: { type: { value: MulticastGroupEntry } } }).value.type.value;
    expect(g.replicas[0]!.portKind).toEqual({ $case: "port", value: Buffer.from([0x00, 0x07]) });
    expect(g.replicas[0]!.instance).toBe(9);
    expect(g.metadata.toString()).toBe("opaque");
    expect(sw.replication.groups.get(30)).toEqual([{ egressPort: 7, instance: 9 }]);
  });

  test("a session's class of service and truncation read back as written and reach the engine", async () => {
    await c.write([{ type: INSERT, entity: session(31, [r(2, 4)], { classOfService: 5, packetLengthBytes: 100 }) }], 1n);
    const [e] = await c.readAll([session(31, [])]);
    const s = (e!.entity as { value: { type: { value: CloneSessionEntry } } }).value.type.value;
    expect([s.classOfService, s.packetLengthBytes, s.replicas.length]).toEqual([5, 100, 1]);
    expect(sw.replication.sessions.get(31)).toEqual({ replicas: [{ egressPort: 2, instance: 4 }], classOfService: 5, packetLengthBytes: 100 });
  });

  test("a failed update changes nothing; a new pipeline starts with no groups or sessions", async () => {
    const before = await c.readAll([group(0, [])]);
    expect(await code(c, MODIFY, group(30, [r(1, 1), r(1, 1)]))).toBe("INVALID_ARGUMENT");
    expect(await c.readAll([group(0, [])])).toEqual(before);
    await commit(c);
    expect(await c.readAll([group(0, [])])).toEqual([]);
    expect(await c.readAll([session(0, [])])).toEqual([]);
    expect(sw.replication.groups.size + sw.replication.sessions.size).toBe(0);
  });
});

describe.skipIf(bmv2SkipReason !== undefined)("BMv2 simple_switch_grpc, the same requests", () => {
  announceSkip("BMv2 P4Runtime replication tests");
  suite("BMv2", async () => {
    const bmv2 = await Bmv2Switch.start({ name: "prep4r", ports: [1] });
    const client = await connect(bmv2.address, BigInt(bmv2.deviceId));
    return {
      client,
      async close() {
        client.close();
        await bmv2.stop();
      },
    };
  }, 4, { groups: [1, 3, 4, 5], sessions: [20] });
});
