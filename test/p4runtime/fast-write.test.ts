// The server reads common table writes straight from the request bytes and
// every other update through the generated decoder. Both paths must have the
// same effect: the same random stream of updates, valid and not, goes to a
// switch using both and to one using the generated decoder only; each update
// must succeed or fail alike, with the same error, and the tables must end
// up equal.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, test } from "vitest";
import { P4Info } from "../../p4runtime/src/generated/p4/config/v1/p4info.js";
import { SetForwardingPipelineConfigRequest_Action, TableEntry, Update_Type, type Entity, type FieldMatch, type Update } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { P4RuntimeClient, P4WriteError } from "../../p4runtime/src/client.js";
import { toUint128 } from "../../p4runtime/src/wire.js";
import { P4Schema } from "../../p4runtime/src/schema.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";

const root = new URL("../..", import.meta.url).pathname;
const p4infoText = readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8");
const schema = P4Schema.fromJson(p4infoText);
const p4info = P4Info.fromJSON(JSON.parse(p4infoText));

const targets: Array<{ server: P4RuntimeServer; client: P4RuntimeClient; address: string }> = [];

beforeAll(async () => {
  for (const genericWrites of [false, true]) {
    const server = new P4RuntimeServer(new SoftwareSwitch({ clock: "virtual" }), { deviceId: 1n, cpuPort: 510, genericWrites });
    const address = `127.0.0.1:${await server.listen("127.0.0.1:0")}`;
    const client = new P4RuntimeClient({ address, deviceId: 1n, timeoutMs: 10_000 });
    const ch = client.streamChannel();
    ch.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(1n), status: undefined } } });
    for await (const m of ch) if (m.update?.$case === "arbitration") break;
    await client.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info, p4DeviceConfig: readFileSync(join(root, "p4/build/telemetry.json")), cookie: { cookie: 1n } } });
    targets.push({ server, client, address });
  }
});

afterAll(async () => {
  for (const t of targets) {
    t.client.close();
    await t.server.close();
  }
});

let seed = 2024;
const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n;
/** One update in three is made wrong in some ways; `odd(k)`: one of k chances of a fault in it. */
let faulty = false;
const odd = (k: number) => faulty && rnd(k) === 0;

/** Big-endian bytes of `v`: canonical, with a leading zero, empty, or one byte too many. */
function bytes(v: bigint, width: number): Buffer {
  const hex = v.toString(16);
  const b = Buffer.from(hex.length % 2 ? "0" + hex : hex, "hex");
  if (rnd(10) === 0) return Buffer.concat([Buffer.from([0]), b]); // not canonical, still the same value
  if (odd(10)) return Buffer.alloc(0);
  if (odd(10)) return Buffer.concat([Buffer.from([0xff]), Buffer.alloc(Math.ceil(width / 8))]);
  return b;
}

// Few distinct keys, so that inserts collide and modifies and deletes find entries.
const value = (width: number) => BigInt(rnd(4)) & ((1n << BigInt(width)) - 1n);

function randomUpdate(): Update {
  faulty = rnd(3) === 0;
  // A table without a key takes only its default entry: a faulty update may still pick one.
  const tables = schema.p4info.tables.filter((x) => faulty || x.matchFields.length > 0);
  const t = tables[rnd(tables.length)]!;
  const match: FieldMatch[] = [];
  for (const f of t.matchFields) {
    if (odd(6)) continue; // missing
    const type = f.match?.$case === "matchType" ? f.match.value : 0;
    const fieldId = odd(8) ? 99 : f.id;
    if (type === 3) {
      const len = odd(3) ? rnd(f.bitwidth + 2) : 8 + rnd(17);
      const v = value(f.bitwidth);
      const prefix = odd(4) ? v | 1n : len === 0 ? 0n : (v >> BigInt(Math.max(0, f.bitwidth - len))) << BigInt(Math.max(0, f.bitwidth - len));
      match.push({ fieldId, fieldMatchType: { $case: "lpm", value: { value: bytes(prefix, f.bitwidth), prefixLen: len } } });
    } else if (odd(8)) match.push({ fieldId, fieldMatchType: { $case: "ternary", value: { value: bytes(1n, f.bitwidth), mask: bytes(1n, f.bitwidth) } } });
    else match.push({ fieldId, fieldMatchType: { $case: "exact", value: { value: bytes(value(f.bitwidth), f.bitwidth) } } });
    if (odd(10)) match.push(match[match.length - 1]!); // twice
  }
  const refs = t.actionRefs.map((r) => r.id);
  const actionId = odd(6) ? schema.p4info.actions[rnd(schema.p4info.actions.length)]!.preamble!.id : refs[rnd(refs.length)]!;
  const info = schema.p4info.actions.find((a) => a.preamble!.id === actionId)!;
  const params = info.params.filter(() => !odd(6)).map((p) => ({ paramId: odd(8) ? 77 : p.id, value: bytes(value(p.bitwidth), p.bitwidth) }));
  const e = TableEntry.fromPartial({
    tableId: odd(10) ? 12345 : t.preamble!.id,
    match,
    action: odd(10) ? undefined : { type: { $case: "action", value: { actionId, params } } },
    priority: odd(6) ? 5 : 0,
    isDefaultAction: odd(8),
    metadata: rnd(20) === 0 ? Buffer.from("note") : Buffer.alloc(0),
  });
  const types = [Update_Type.INSERT, Update_Type.INSERT, Update_Type.MODIFY, Update_Type.DELETE, Update_Type.UNSPECIFIED];
  return { type: types[rnd(odd(5) ? 5 : 4)]!, entity: { entity: { $case: "tableEntry", value: e } } };
}

async function outcome(client: P4RuntimeClient, updates: Update[]): Promise<string[]> {
  try {
    await client.write(updates, 1n);
    return updates.map(() => "OK");
  } catch (err) {
    if (!(err instanceof P4WriteError)) throw err;
    return err.updates.map((u) => `${u.code} ${u.message}`);
  }
}

const text = (es: Entity[]) => es.map((e) => JSON.stringify(e, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v))).sort();

test("table writes have the same outcome, update by update, with and without the fast path", async () => {
  let ok = 0;
  for (let batch = 0; batch < 40; batch++) {
    const updates = Array.from({ length: 60 }, randomUpdate);
    const [fast, generic] = [await outcome(targets[0]!.client, updates), await outcome(targets[1]!.client, updates)];
    expect(fast).toEqual(generic);
    ok += fast.filter((o) => o.startsWith("OK")).length;
  }
  // Enough of both kinds to mean something, and the fast path took most of the good ones.
  expect(ok).toBeGreaterThan(300);
  expect(ok).toBeLessThan(40 * 60 - 300);
  console.log(`fast-path equivalence: ${ok} of 2400 updates applied, ${targets[0]!.server.fastWrites} of them by the fast path`);
  expect(targets[0]!.server.fastWrites).toBeGreaterThan(ok * 0.8);
  expect(targets[1]!.server.fastWrites).toBe(0);
  for (const t of schema.p4info.tables) {
    const read = (c: P4RuntimeClient) => c.readAll([{ entity: { $case: "tableEntry", value: TableEntry.fromPartial({ tableId: t.preamble!.id }) } }]);
    expect(text(await read(targets[0]!.client)), t.preamble!.name).toEqual(text(await read(targets[1]!.client)));
  }
});

test("bytes that are no WriteRequest get an error, and the switch keeps serving", async () => {
  const Raw = grpc.makeGenericClientConstructor({ write: { path: "/p4.v1.P4Runtime/Write", requestStream: false, responseStream: false, requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b } }, "p4.v1.P4Runtime");
  for (const junk of [Buffer.from([0x22, 0x7f, 0x01]), Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), Buffer.from("random bytes, not protobuf")]) {
    const raw = new Raw(targets[0]!.address, grpc.credentials.createInsecure()) as unknown as { write(b: Buffer, cb: (err: grpc.ServiceError | null) => void): void; close(): void };
    const err = await new Promise<grpc.ServiceError | null>((resolve) => raw.write(junk, resolve));
    raw.close();
    expect(err, junk.toString("hex")).not.toBeNull();
  }
  // Still serving: a good write goes through.
  const route = { type: Update_Type.INSERT, entity: { entity: { $case: "tableEntry" as const, value: TableEntry.fromPartial({ tableId: schema.tables.get("forwarding.ipv4_routes").preamble!.id, match: [{ fieldId: 1, fieldMatchType: { $case: "lpm", value: { value: Buffer.from([10, 99, 0, 0]), prefixLen: 16 } } }], action: { type: { $case: "action", value: { actionId: schema.actions.get("forwarding.route").preamble!.id, params: [{ paramId: 1, value: Buffer.from([1]) }] } } } }) } } };
  await targets[0]!.client.write([route], 1n);
});
