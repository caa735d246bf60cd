// The P4Runtime conformance items (docs/p4runtime-conformance.md) as the same
// requests on two targets: the software switch, which must answer as the
// spec says, and BMv2's simple_switch_grpc where it is installed, whose
// answers are held here too, so that a change on either side shows. The
// program is test/fixtures/counters (a ternary table with a direct counter,
// an indirect counter, a table without a key).
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ReadRequest, SetForwardingPipelineConfigRequest_Action, Update_Type, type Entity, type TableEntry } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { buildTableEntry, P4RuntimeClient, toUint128, type P4RuntimeError } from "../../p4runtime/src/index.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { loadFixture } from "../support/fixtures.js";
import { bmv2Unavailable, launchBmv2, VETH_TAG, type Bmv2Process } from "../../tools/bmv2.js";

const { schema, p4info, deviceConfig } = loadFixture("counters");
const counterId = schema.counters.get("port_in").preamble!.id;

interface Target {
  address: string;
  close(): Promise<void> | void;
}

/** What a request came to: "OK", a gRPC code name, or a value read back. */
type Outcome = string;

interface Ctx {
  c: P4RuntimeClient;
  address: string;
  election: bigint;
}

const code = async (p: Promise<unknown>): Promise<Outcome> => {
  try {
    await p;
    return "OK";
  } catch (err) {
    const e = err as P4RuntimeError & { updates?: Array<{ code: string }> };
    return e.updates?.find((u) => u.code !== "OK")?.code ?? e.code;
  }
};

const aclEntry = (dst: bigint, priority: number, action: "forward" | "drop" = "drop"): TableEntry =>
  buildTableEntry(schema, { table: "acl", match: { "hdr.ethernet.dst": { value: dst, mask: 0xffffffffffffn } }, action: action === "forward" ? { name: "forward", params: { port: 2 } } : { name: "drop" }, priority });
const tableEntity = (te: TableEntry): Entity => ({ entity: { $case: "tableEntry", value: te } });
const defaultOf = (table: string): TableEntry => ({ ...buildTableEntry(schema, { table, match: {} }), action: undefined, isDefaultAction: true });
const cell = (index: bigint | undefined, data?: { packetCount: bigint; byteCount: bigint }): Entity => ({ entity: { $case: "counterEntry", value: { counterId, index: index === undefined ? undefined : { index }, data } } });
const actionName = (e: Entity | undefined) => (e?.entity?.$case === "tableEntry" && e.entity.value.action?.type?.$case === "action" ? schema.actions.get(e.entity.value.action.type.value.actionId).preamble!.name : "none");

/** Each conformance item: the request(s), what the spec says, and what BMv2 1.15 answers where it differs. */
const items: Array<{ item: string; spec: Outcome; bmv2?: Outcome; run: (x: Ctx) => Promise<Outcome> }> = [
  {
    item: "default entry: MODIFY without an action resets it to the program's default",
    spec: "I.drop",
    run: async ({ c, election }) => {
      await c.write([{ type: Update_Type.MODIFY, entity: tableEntity({ ...defaultOf("acl"), action: buildTableEntry(schema, { table: "acl", match: {}, action: { name: "forward", params: { port: 3 } } }).action }) }], election);
      const r = await code(c.write([{ type: Update_Type.MODIFY, entity: tableEntity(defaultOf("acl")) }], election));
      if (r !== "OK") return r;
      return actionName((await c.readAll([tableEntity(defaultOf("acl"))]))[0]);
    },
  },
  { item: "default entry: DELETE", spec: "INVALID_ARGUMENT", run: ({ c, election }) => code(c.write([{ type: Update_Type.DELETE, entity: tableEntity(defaultOf("acl")) }], election)) },
  {
    item: "default entry with a priority",
    spec: "INVALID_ARGUMENT",
    run: ({ c, election }) => code(c.write([{ type: Update_Type.MODIFY, entity: tableEntity({ ...buildTableEntry(schema, { table: "acl", match: {}, action: { name: "drop" } }), isDefaultAction: true, priority: 5 }) }], election)),
  },
  { item: "is_const in a write", spec: "INVALID_ARGUMENT", bmv2: "OK", run: ({ c, election }) => code(c.write([{ type: Update_Type.INSERT, entity: tableEntity({ ...aclEntry(0x1n, 10), isConst: true }) }], election)) },
  {
    item: "a non-default entry in a table without a key",
    spec: "INVALID_ARGUMENT",
    bmv2: "UNKNOWN",
    run: ({ c, election }) => code(c.write([{ type: Update_Type.INSERT, entity: tableEntity(buildTableEntry(schema, { table: "settings", match: {}, action: { name: "set_level", params: { l: 2 } } })) }], election)),
  },
  { item: "idle_timeout_ns on a table without idle timeout", spec: "INVALID_ARGUMENT", run: ({ c, election }) => code(c.write([{ type: Update_Type.INSERT, entity: tableEntity({ ...aclEntry(0x2n, 10), idleTimeoutNs: 1_000_000n }) }], election)) },
  {
    item: "controller_metadata is kept and read back",
    spec: "42",
    run: async ({ c, election }) => {
      await c.write([{ type: Update_Type.INSERT, entity: tableEntity({ ...aclEntry(0x3n, 10), controllerMetadata: 42n }) }], election);
      const [e] = await c.readAll([tableEntity(aclEntry(0x3n, 10))]);
      return String(e?.entity?.$case === "tableEntry" ? e.entity.value.controllerMetadata : "none");
    },
  },
  {
    item: "counter MODIFY without data leaves the cell unchanged",
    spec: "5/500",
    bmv2: "0/0",
    run: async ({ c, election }) => {
      await c.write([{ type: Update_Type.MODIFY, entity: cell(1n, { packetCount: 5n, byteCount: 500n }) }], election);
      await c.write([{ type: Update_Type.MODIFY, entity: cell(1n) }], election);
      const [e] = await c.readAll([cell(1n)]);
      const d = e?.entity?.$case === "counterEntry" ? e.entity.value.data : undefined;
      return `${d?.packetCount}/${d?.byteCount}`;
    },
  },
  {
    item: "counter values past 2^53",
    spec: `${2n ** 53n + 1n}`,
    run: async ({ c, election }) => {
      await c.write([{ type: Update_Type.MODIFY, entity: cell(2n, { packetCount: 2n ** 53n + 1n, byteCount: 1n }) }], election);
      const [e] = await c.readAll([cell(2n)]);
      return String(e?.entity?.$case === "counterEntry" ? e.entity.value.data?.packetCount : "none");
    },
  },
  { item: "counter read at a negative index", spec: "INVALID_ARGUMENT", run: ({ c }) => code(c.readAll([cell(-1n)])) },
  { item: "counter read past the end", spec: "OUT_OF_RANGE", bmv2: "UNKNOWN", run: ({ c }) => code(c.readAll([cell(8n)])) },
  { item: "counter read with an index but no counter id", spec: "INVALID_ARGUMENT", bmv2: "OK", run: ({ c }) => code(c.readAll([{ entity: { $case: "counterEntry", value: { counterId: 0, index: { index: 1n }, data: undefined } } }])) },
  {
    item: "DirectCounterEntry INSERT",
    spec: "INVALID_ARGUMENT",
    run: async ({ c, election }) => {
      await c.write([{ type: Update_Type.INSERT, entity: tableEntity(aclEntry(0x4n, 10)) }], election);
      return code(c.write([{ type: Update_Type.INSERT, entity: { entity: { $case: "directCounterEntry", value: { tableEntry: aclEntry(0x4n, 10), data: { packetCount: 1n, byteCount: 1n } } } } }], election));
    },
  },
  {
    item: "table read filtered by action id",
    spec: "1",
    bmv2: "2",
    run: async ({ c, election }) => {
      await c.write([{ type: Update_Type.INSERT, entity: tableEntity(aclEntry(0x5n, 10, "forward")) }, { type: Update_Type.INSERT, entity: tableEntity(aclEntry(0x6n, 11, "drop")) }], election);
      const q = { ...buildTableEntry(schema, { table: "acl", match: {} }), action: { type: { $case: "action" as const, value: { actionId: schema.actions.get("forward").preamble!.id, params: [] } } } };
      return String((await c.readAll([tableEntity(q)])).length);
    },
  },
  {
    item: "table read with a match key that is not valid (ternary value outside its mask)",
    spec: "INVALID_ARGUMENT",
    run: ({ c }) => {
      const te = aclEntry(0x7n, 10);
      te.match[0]!.fieldMatchType = { $case: "ternary", value: { value: Buffer.from([1, 1]), mask: Buffer.from([0xff]) } };
      return code(c.readAll([tableEntity({ ...te, action: undefined })]));
    },
  },
  { item: "read of every table (id 0) with a priority filter", spec: "INVALID_ARGUMENT", bmv2: "OK", run: ({ c }) => code(c.readAll([tableEntity({ ...buildTableEntry(schema, { table: "acl", match: {} }), tableId: 0, action: undefined, priority: 3 })])) },
  {
    item: "Read batch with one bad request: entities of the good one, then UNKNOWN with a p4.Error per request",
    spec: "8 UNKNOWN [OK,NOT_FOUND]",
    bmv2: "8 INVALID_ARGUMENT []",
    run: async ({ address }) => {
      const Client = grpc.makeGenericClientConstructor({ read: { path: "/p4.v1.P4Runtime/Read", requestStream: false, responseStream: true, requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b } }, "raw");
      const rc = new Client(address, grpc.credentials.createInsecure()) as unknown as { read: (req: Buffer) => grpc.ClientReadableStream<Buffer>; close(): void };
      const req = ReadRequest.encode(ReadRequest.fromPartial({ deviceId: 1n, entities: [cell(undefined), { entity: { $case: "counterEntry", value: { counterId: 999, index: undefined, data: undefined } } }] })).finish();
      const { Status } = await import("../../p4runtime/src/generated/google/rpc/status.js");
      const { Error: P4Error } = await import("../../p4runtime/src/generated/p4/v1/p4runtime.js");
      const { ReadResponse } = await import("../../p4runtime/src/generated/p4/v1/p4runtime.js");
      let n = 0;
      const err = await new Promise<grpc.ServiceError | undefined>((resolve) => {
        const call = rc.read(Buffer.from(req));
        call.on("data", (b: Buffer) => (n += ReadResponse.decode(b).entities.length));
        call.on("error", resolve);
        call.on("end", () => resolve(undefined));
      });
      rc.close();
      if (!err) return `${n} OK`;
      const bin = err.metadata.get("grpc-status-details-bin")[0] as Buffer | undefined;
      const details = bin ? Status.decode(bin).details.map((d) => grpc.status[P4Error.decode(d.value).canonicalCode]) : [];
      return `${n} ${grpc.status[err.code]} [${details.join(",")}]`;
    },
  },
  {
    item: "a write for a role nobody arbitrated for",
    spec: "NOT_FOUND",
    bmv2: "OK",
    run: ({ c, election }) => code(c.write([{ type: Update_Type.INSERT, entity: tableEntity(aclEntry(0x8n, 10)) }], election, { role: "no-such-role" })),
  },
  {
    item: "request bytes that do not decode",
    spec: "INVALID_ARGUMENT",
    bmv2: "INTERNAL",
    run: async ({ address }) => {
      const Client = grpc.makeGenericClientConstructor({ m: { path: "/p4.v1.P4Runtime/Write", requestStream: false, responseStream: false, requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b } }, "raw");
      const rc = new Client(address, grpc.credentials.createInsecure()) as unknown as { m: (req: Buffer, cb: (err: grpc.ServiceError | null) => void) => void; close(): void };
      const r = await new Promise<grpc.ServiceError | null>((resolve) => rc.m(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), resolve));
      rc.close();
      return r ? grpc.status[r.code] : "OK";
    },
  },
  {
    item: "a stream arbitrating again for another device",
    spec: "FAILED_PRECONDITION",
    run: async ({ address }) => {
      const c = new P4RuntimeClient({ address, deviceId: 1n, timeoutMs: 5000 });
      const ch = c.streamChannel();
      ch.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(1n), status: undefined } } });
      for await (const m of ch) if (m.update?.$case === "arbitration") break;
      ch.send({ update: { $case: "arbitration", value: { deviceId: 2n, role: undefined, electionId: toUint128(1n), status: undefined } } });
      const closed = await Promise.race([ch.closed, new Promise<undefined>((r) => setTimeout(() => r(undefined), 3000))]);
      c.close();
      return closed?.code ?? "stream kept open";
    },
  },
];

async function softwareSwitch(): Promise<Target> {
  const server = new P4RuntimeServer(new SoftwareSwitch({ clock: "virtual" }), { deviceId: 1n, cpuPort: 510 });
  return { address: `127.0.0.1:${await server.listen("127.0.0.1:0")}`, close: () => server.close() };
}

async function bmv2(): Promise<Target> {
  const p: Bmv2Process = await launchBmv2({ name: `conf${VETH_TAG}`, ports: [1], deviceId: 1 });
  return { address: p.address, close: () => p.cleanup() };
}

/** A fresh pipeline per item, pushed by a primary at an election id above any before (BMv2 keeps its last primary's id). */
function suite(name: string, start: () => Promise<Target>, expected: (i: (typeof items)[number]) => Outcome) {
  describe(name, () => {
    let target: Target;
    let c: P4RuntimeClient;
    let election = 10n;
    beforeAll(async () => {
      target = await start();
      c = new P4RuntimeClient({ address: target.address, deviceId: 1n, timeoutMs: 10_000 });
    }, 60_000);
    afterAll(async () => {
      c?.close();
      await target?.close();
    });
    for (const it of items) {
      test(it.item, async () => {
        election++;
        const ch = c.streamChannel();
        ch.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(election), status: undefined } } });
        for await (const m of ch) if (m.update?.$case === "arbitration") break;
        await c.setPipeline({ role: "", electionId: toUint128(election), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info, p4DeviceConfig: deviceConfig, cookie: { cookie: election } } });
        try {
          expect(await it.run({ c, address: target.address, election })).toBe(expected(it));
        } finally {
          ch.close();
        }
      }, 30_000);
    }
  });
}

suite("the software switch answers as the P4Runtime spec says", softwareSwitch, (i) => i.spec);
const skip = bmv2Unavailable();
describe.skipIf(skip !== undefined)(`BMv2 simple_switch_grpc${skip ? ` (SKIPPED: ${skip})` : ""}`, () => {
  suite("answers as held", bmv2, (i) => i.bmv2 ?? i.spec);
});
