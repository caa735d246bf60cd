// P4Runtime counters and reads against the spec, on a small program with a
// direct and an indirect counter (test/fixtures/counters): 64-bit counter
// values, direct counter entries, the filters of a table read, and a Read
// batch that reports one error per request.
import * as grpc from "@grpc/grpc-js";
import { afterEach, beforeEach, expect, test } from "vitest";
import { Status } from "../../p4runtime/src/generated/google/rpc/status.js";
import { Error as P4Error, ReadRequest, ReadResponse, SetForwardingPipelineConfigRequest_Action, Update_Type, type Entity, type TableEntry } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { buildTableEntry, P4RuntimeClient, toUint128 } from "../../p4runtime/src/index.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { loadFixture } from "../support/fixtures.js";

const { schema, p4info, deviceConfig } = loadFixture("counters");
const counterId = schema.counters.get("port_in").preamble!.id;
const actionId = (name: string) => schema.actions.get(name).preamble!.id;

let sw: SoftwareSwitch;
let server: P4RuntimeServer;
let c: P4RuntimeClient;
let address = "";
let t = 1_700_000_000_000_000_000n;

beforeEach(async () => {
  sw = new SoftwareSwitch({ clock: "virtual" });
  server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
  address = `127.0.0.1:${await server.listen("127.0.0.1:0")}`;
  c = new P4RuntimeClient({ address, deviceId: 1n, timeoutMs: 5000 });
  const ch = c.streamChannel();
  ch.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(1n), status: undefined } } });
  for await (const m of ch) if (m.update?.$case === "arbitration") break;
  await c.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info, p4DeviceConfig: deviceConfig, cookie: { cookie: 1n } } });
});
afterEach(async () => {
  c.close();
  await server.close();
});

/** An Ethernet frame of `len` bytes to `dst`. */
function frame(dst: number, etherType = 0x0800, len = 100): Buffer {
  const b = Buffer.alloc(len);
  b.writeUIntBE(dst, 0, 6);
  b.writeUInt16BE(etherType, 12);
  return b;
}

function send(port: number, data: Buffer, n = 1): void {
  for (let i = 0; i < n; i++) {
    t += 1_000n;
    sw.process({ port, data, unixNs: t });
  }
}

const cell = (index: bigint | undefined, data?: { packetCount: bigint; byteCount: bigint }): Entity => ({ entity: { $case: "counterEntry", value: { counterId, index: index === undefined ? undefined : { index }, data } } });

async function readCell(index: bigint) {
  const [e] = await c.readAll([cell(index)]);
  return e?.entity?.$case === "counterEntry" ? e.entity.value.data : undefined;
}

function aclEntry(opts: { dst: number; priority: number; action: "forward" | "drop"; controllerMetadata?: bigint; metadata?: Buffer }): TableEntry {
  const te = buildTableEntry(schema, {
    table: "acl",
    match: { "hdr.ethernet.dst": { value: BigInt(opts.dst), mask: 0xffffffffffffn } },
    action: opts.action === "forward" ? { name: "forward", params: { port: 2 } } : { name: "drop" },
    priority: opts.priority,
  });
  te.controllerMetadata = opts.controllerMetadata ?? 0n;
  te.metadata = opts.metadata ?? Buffer.alloc(0);
  return te;
}

const tableEntity = (te: TableEntry): Entity => ({ entity: { $case: "tableEntry", value: te } });

test("counter values are 64-bit: 2^53 + 1 packets and 2^63 - 1 bytes read back exact, and packets add to them one by one", async () => {
  const big = { packetCount: 2n ** 53n + 1n, byteCount: 7n };
  await c.write([{ type: Update_Type.MODIFY, entity: cell(3n, big) }], 1n);
  expect(await readCell(3n)).toEqual(big);
  send(3, frame(1), 3);
  expect(await readCell(3n)).toEqual({ packetCount: 2n ** 53n + 4n, byteCount: 307n });
  await c.write([{ type: Update_Type.MODIFY, entity: cell(5n, { packetCount: 5n, byteCount: 2n ** 63n - 301n }) }], 1n);
  send(5, frame(1), 3);
  expect(await readCell(5n)).toEqual({ packetCount: 8n, byteCount: 2n ** 63n - 1n });
  // Below 2^48 the cell counts in the packet path's doubles; reads fold what passes it.
  await c.write([{ type: Update_Type.MODIFY, entity: cell(4n, { packetCount: 2n ** 48n - 2n, byteCount: 7n }) }], 1n);
  send(4, frame(1), 5);
  expect(await readCell(4n)).toEqual({ packetCount: 2n ** 48n + 3n, byteCount: 507n });
  send(4, frame(1), 1);
  expect(await readCell(4n)).toEqual({ packetCount: 2n ** 48n + 4n, byteCount: 607n });
  // The once-a-second sweep folds cells nobody reads before a double could pass 2^53.
  const arr = sw.program!.counters.get("I.port_in")!;
  arr.packets[6] = 2 ** 53 - 1;
  send(6, frame(1), 1); // 2^53 in the double, still exact
  // a second of switch time later the next packet brings the sweep
  t += 2_000_000_000n;
  send(7, frame(1), 1);
  expect(arr.packets[6]).toBe(0);
  send(6, frame(1), 2);
  expect(await readCell(6n)).toEqual({ packetCount: 2n ** 53n + 2n, byteCount: 300n });
});

test("counter indices: negative is INVALID_ARGUMENT, past the end OUT_OF_RANGE, an index without a counter id INVALID_ARGUMENT", async () => {
  await expect(c.write([{ type: Update_Type.MODIFY, entity: cell(-1n, { packetCount: 1n, byteCount: 1n }) }], 1n)).rejects.toMatchObject({ updates: [{ code: "INVALID_ARGUMENT" }] });
  await expect(c.write([{ type: Update_Type.MODIFY, entity: cell(8n, { packetCount: 1n, byteCount: 1n }) }], 1n)).rejects.toMatchObject({ updates: [{ code: "OUT_OF_RANGE" }] });
  await expect(c.readAll([cell(-1n)])).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  await expect(c.readAll([{ entity: { $case: "counterEntry", value: { counterId: 0, index: { index: 1n }, data: undefined } } }])).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  expect(await c.readAll([cell(undefined)])).toHaveLength(8);
});

test("direct counters: read by entry, by table and as counter_data; modified to 64-bit values; INSERT and DELETE refused", async () => {
  const fwd = aclEntry({ dst: 0xa, priority: 10, action: "forward" });
  const drop = aclEntry({ dst: 0xb, priority: 20, action: "drop" });
  await c.write([{ type: Update_Type.INSERT, entity: tableEntity(fwd) }, { type: Update_Type.INSERT, entity: tableEntity(drop) }], 1n);
  send(1, frame(0xa), 4);
  send(1, frame(0xb), 2);
  send(1, frame(0xc), 1); // the default entry
  const direct = (te: TableEntry, data?: { packetCount: bigint; byteCount: bigint }): Entity => ({ entity: { $case: "directCounterEntry", value: { tableEntry: te, data } } });
  const dataOf = (es: Entity[]) => es.map((e) => (e.entity?.$case === "directCounterEntry" ? e.entity.value.data : e.entity?.$case === "tableEntry" ? e.entity.value.counterData : undefined));
  expect(dataOf(await c.readAll([direct(fwd)]))).toEqual([{ packetCount: 4n, byteCount: 400n }]);
  const whole = await c.readAll([direct({ ...fwd, match: [], priority: 0 })]);
  expect(dataOf(whole).sort((a, b) => Number(a!.packetCount - b!.packetCount))).toEqual([{ packetCount: 2n, byteCount: 200n }, { packetCount: 4n, byteCount: 400n }]);
  const def = { ...fwd, match: [], priority: 0, action: undefined, isDefaultAction: true };
  expect(dataOf(await c.readAll([direct(def)]))).toEqual([{ packetCount: 1n, byteCount: 100n }]);
  expect(dataOf(await c.readAll([tableEntity({ ...drop, counterData: { packetCount: 0n, byteCount: 0n } })]))).toEqual([{ packetCount: 2n, byteCount: 200n }]);

  await c.write([{ type: Update_Type.MODIFY, entity: direct(drop, { packetCount: 2n ** 60n, byteCount: 2n ** 62n }) }], 1n);
  send(1, frame(0xb), 1);
  expect(dataOf(await c.readAll([direct(drop)]))).toEqual([{ packetCount: 2n ** 60n + 1n, byteCount: 2n ** 62n + 100n }]);
  await c.write([{ type: Update_Type.MODIFY, entity: direct(drop) }], 1n); // no data: unchanged
  expect(dataOf(await c.readAll([direct(drop)]))).toEqual([{ packetCount: 2n ** 60n + 1n, byteCount: 2n ** 62n + 100n }]);
  await expect(c.write([{ type: Update_Type.INSERT, entity: direct(drop, { packetCount: 1n, byteCount: 1n }) }], 1n)).rejects.toMatchObject({ updates: [{ code: "INVALID_ARGUMENT" }] });
  await expect(c.write([{ type: Update_Type.DELETE, entity: direct(drop) }], 1n)).rejects.toMatchObject({ updates: [{ code: "INVALID_ARGUMENT" }] });
  await expect(c.readAll([direct(aclEntry({ dst: 0xd, priority: 5, action: "drop" }))])).rejects.toMatchObject({ code: "NOT_FOUND" });
});

test("a table read filters on action, priority, controller_metadata and metadata; its match key is checked; table id 0 takes no filter", async () => {
  const entries = [
    aclEntry({ dst: 1, priority: 10, action: "forward", controllerMetadata: 7n }),
    aclEntry({ dst: 2, priority: 20, action: "drop", metadata: Buffer.from("blue") }),
    aclEntry({ dst: 3, priority: 20, action: "forward", controllerMetadata: 7n, metadata: Buffer.from("blue") }),
  ];
  await c.write(entries.map((te) => ({ type: Update_Type.INSERT, entity: tableEntity(te) })), 1n);
  const query = (q: Partial<TableEntry>) => c.readAll([tableEntity({ ...buildTableEntry(schema, { table: "acl", match: {} }), action: undefined, ...q })]);
  const dsts = (es: Entity[]) => es.map((e) => (e.entity?.$case === "tableEntry" ? e.entity.value.match.find((m) => m.fieldId === 2)!.fieldMatchType : undefined)).map((m) => (m?.$case === "ternary" ? m.value.value.at(-1) : -1)).sort();

  expect(dsts(await query({}))).toEqual([1, 2, 3]);
  expect(dsts(await query({ action: { type: { $case: "action", value: { actionId: actionId("forward"), params: [] } } } }))).toEqual([1, 3]);
  expect(dsts(await query({ priority: 20 }))).toEqual([2, 3]);
  expect(dsts(await query({ controllerMetadata: 7n }))).toEqual([1, 3]);
  expect(dsts(await query({ metadata: Buffer.from("blue") }))).toEqual([2, 3]);
  expect(dsts(await query({ metadata: Buffer.from("blue"), controllerMetadata: 7n }))).toEqual([3]);
  // One entry by its key; the action filter applies to it too.
  expect(dsts(await query({ match: entries[1]!.match, priority: 20 }))).toEqual([2]);
  expect(await query({ match: entries[1]!.match, priority: 20, action: { type: { $case: "action", value: { actionId: actionId("forward"), params: [] } } } })).toEqual([]);
  // The default entry, filtered by its action.
  expect(await query({ isDefaultAction: true })).toHaveLength(1);
  expect(await query({ isDefaultAction: true, action: { type: { $case: "action", value: { actionId: actionId("forward"), params: [] } } } })).toEqual([]);

  const badKey = aclEntry({ dst: 1, priority: 10, action: "drop" }).match;
  const m = badKey[0]!.fieldMatchType!;
  // A ternary value with bits outside its mask is not a valid key.
  if (m.$case === "ternary") m.value = { value: Buffer.from([0, 0, 0, 0, 1, 1]), mask: Buffer.from([0, 0, 0, 0, 0, 0xff]) };
  await expect(query({ match: badKey, priority: 10 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  await expect(query({ action: { type: { $case: "action", value: { actionId: 12345, params: [] } } } })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  await expect(c.readAll([tableEntity({ ...buildTableEntry(schema, { table: "acl", match: {} }), tableId: 0, action: undefined, priority: 10 })])).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
});

test("a Read batch with bad requests returns the good ones' entities and one p4.Error per request", async () => {
  await c.write([{ type: Update_Type.MODIFY, entity: cell(2n, { packetCount: 9n, byteCount: 90n }) }], 1n);
  const req = ReadRequest.encode(ReadRequest.fromPartial({
    deviceId: 1n,
    entities: [cell(2n), { entity: { $case: "counterEntry", value: { counterId: 999, index: undefined, data: undefined } } }, {}, cell(undefined)],
  })).finish();
  const Client = grpc.makeGenericClientConstructor({ read: { path: "/p4.v1.P4Runtime/Read", requestStream: false, responseStream: true, requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b } }, "raw");
  const rc = new Client(address, grpc.credentials.createInsecure()) as unknown as { read: (req: Buffer) => grpc.ClientReadableStream<Buffer>; close(): void };
  const got: Entity[] = [];
  const err = await new Promise<grpc.ServiceError>((resolve, reject) => {
    const call = rc.read(Buffer.from(req));
    call.on("data", (b: Buffer) => got.push(...ReadResponse.decode(b).entities));
    call.on("error", resolve);
    call.on("end", () => reject(new Error("the read ended without an error")));
  });
  rc.close();
  expect(got).toHaveLength(1 + 8);
  expect(err.code).toBe(grpc.status.UNKNOWN);
  const status = Status.decode(err.metadata.get("grpc-status-details-bin")[0] as Buffer);
  expect(status.message).toBe(err.details);
  expect(status.details.map((d) => P4Error.decode(d.value).canonicalCode)).toEqual([grpc.status.OK, grpc.status.NOT_FOUND, grpc.status.INVALID_ARGUMENT, grpc.status.OK]);
});
