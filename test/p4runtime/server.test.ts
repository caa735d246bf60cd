// The P4Runtime client against the software switch's P4Runtime server, in
// process, on a loopback port.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { P4Info } from "../../p4runtime/src/generated/p4/config/v1/p4info.js";
import { SetForwardingPipelineConfigRequest_Action, Update_Type, GetForwardingPipelineConfigRequest_ResponseType, type StreamMessageResponse } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { buildTableEntry, decodeTableEntry, P4RuntimeClient, P4RuntimeError, P4Schema, P4WriteError, tableEntity, toUint128 } from "../../p4runtime/src/index.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { ipv4 } from "../../contract/src/ipv4.js";
import { buildFrame, nvmeSqe, Opcode } from "../../traffic/src/roce.js";

const root = new URL("../..", import.meta.url).pathname;
const p4infoText = readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8");
const deviceConfig = readFileSync(join(root, "p4/build/telemetry.json"));
const schema = P4Schema.fromJson(p4infoText);
const p4info = P4Info.fromJSON(JSON.parse(p4infoText));

let sw: SoftwareSwitch;
let server: P4RuntimeServer;
let address: string;
const clients: P4RuntimeClient[] = [];

beforeEach(async () => {
  sw = new SoftwareSwitch({ clock: "virtual" });
  server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
  address = `127.0.0.1:${await server.listen("127.0.0.1:0")}`;
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await server.close();
});

function client(deviceId = 1n) {
  const c = new P4RuntimeClient({ address, deviceId, timeoutMs: 5000 });
  clients.push(c);
  return c;
}

async function arbitrate(c: P4RuntimeClient, electionId: bigint) {
  const ch = c.streamChannel();
  ch.send({ update: { $case: "arbitration", value: { deviceId: c.deviceId, role: undefined, electionId: toUint128(electionId), status: undefined } } });
  const it = ch[Symbol.asyncIterator]();
  const next = async (): Promise<StreamMessageResponse> => {
    const r = await it.next();
    if (r.done) throw new Error("stream ended");
    return r.value;
  };
  const first = await next();
  return { ch, first, next };
}

async function push(c: P4RuntimeClient, electionId: bigint, cookie = 7n) {
  await c.setPipeline({ role: "", electionId: toUint128(electionId), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info, p4DeviceConfig: deviceConfig, cookie: { cookie } } });
}

describe("P4Runtime server", () => {
  test("capabilities", async () => {
    expect((await client().capabilities()).p4runtimeApiVersion).toBe("1.5.0");
  });

  test("arbitration: the highest election id is primary, others are told they are backups, and the backup takes over", async () => {
    const a = await arbitrate(client(), 10n);
    expect(a.first.update?.$case === "arbitration" && a.first.update.value.status?.code).toBe(0);
    const b = await arbitrate(client(), 20n);
    expect(b.first.update?.$case === "arbitration" && b.first.update.value.status?.code).toBe(0);
    const demoted = await a.next();
    expect(demoted.update?.$case === "arbitration" && demoted.update.value.status?.code).toBe(6); // ALREADY_EXISTS
    const c = await arbitrate(client(), 5n);
    expect(c.first.update?.$case === "arbitration" && c.first.update.value.status?.code).toBe(6);
    b.ch.close();
    const promoted = await a.next();
    expect(promoted.update?.$case === "arbitration" && promoted.update.value.status?.code).toBe(0);
    a.ch.close();
    c.ch.close();
  });

  test("arbitration: a used election id or a wrong device id ends the stream", async () => {
    const a = await arbitrate(client(), 10n);
    const dup = client().streamChannel();
    dup.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(10n), status: undefined } } });
    expect((await dup.closed)?.code).toBe("INVALID_ARGUMENT");
    const wrong = client(9n).streamChannel();
    wrong.send({ update: { $case: "arbitration", value: { deviceId: 9n, role: undefined, electionId: toUint128(11n), status: undefined } } });
    expect((await wrong.closed)?.code).toBe("NOT_FOUND");
    a.ch.close();
  });

  test("only the primary writes and sets the pipeline", async () => {
    const c = client();
    const a = await arbitrate(c, 10n);
    await expect(push(c, 3n)).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
    await push(c, 10n);
    const got = await c.getPipeline(GetForwardingPipelineConfigRequest_ResponseType.COOKIE_ONLY);
    expect(got.config?.cookie?.cookie).toBe(7n);
    await expect(c.write([{ type: Update_Type.INSERT, entity: tableEntity(schema, { table: "forwarding.ipv4_routes", match: { dst_addr: "10.0.0.0/8" }, action: { name: "forwarding.route", params: { port: 1 } } }) }], 9n)).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
    a.ch.close();
  });

  test("writes: a batch keeps every per-update error, in order; reads return what was written", async () => {
    const c = client();
    const a = await arbitrate(c, 1n);
    await push(c, 1n);
    const route = (prefix: string, port: number) => tableEntity(schema, { table: "forwarding.ipv4_routes", match: { dst_addr: prefix }, action: { name: "forwarding.route", params: { port } } });
    await c.write([{ type: Update_Type.INSERT, entity: route("10.0.1.0/24", 1) }], 1n);
    let err: unknown;
    try {
      await c.write([
        { type: Update_Type.INSERT, entity: route("10.0.2.0/24", 2) },
        { type: Update_Type.INSERT, entity: route("10.0.1.0/24", 3) },
        { type: Update_Type.DELETE, entity: route("10.9.0.0/16", 1) },
        { type: Update_Type.INSERT, entity: { entity: { $case: "tableEntry", value: { ...buildTableEntry(schema, { table: "forwarding.ipv4_routes", match: { dst_addr: "10.0.3.0/24" }, action: { name: "forwarding.route", params: { port: 1 } } }), tableId: 999 } } } },
      ], 1n);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(P4WriteError);
    const we = err as P4WriteError;
    expect(we.updates.map((u) => u.code)).toEqual(["OK", "ALREADY_EXISTS", "NOT_FOUND", "NOT_FOUND"]);
    expect(we.updates[3]!.message).toMatch(/no table with id 999/);
    const entries = await c.readAll([{ entity: { $case: "tableEntry", value: buildTableEntry(schema, { table: "forwarding.ipv4_routes" }) } }]);
    const decoded = entries.map((e) => (e.entity?.$case === "tableEntry" ? decodeTableEntry(schema, e.entity.value) : undefined));
    // Entries come back in no promised order: sorted by prefix, they are exactly the two inserted.
    const prefixes = decoded.map((d) => d?.match.dst_addr as { prefix: bigint; length: number }).sort((x, y) => (x.prefix < y.prefix ? -1 : x.prefix > y.prefix ? 1 : 0));
    expect(prefixes).toEqual([{ prefix: 0x0a000100n, length: 24 }, { prefix: 0x0a000200n, length: 24 }]);
    expect(decoded.find((d) => (d?.match.dst_addr as { prefix: bigint }).prefix === 0x0a000100n)?.action?.params.port).toBe(1n);
    a.ch.close();
  });

  test("bad values are rejected with the field named", async () => {
    const c = client();
    const a = await arbitrate(c, 1n);
    await push(c, 1n);
    const te = buildTableEntry(schema, { table: "forwarding.ipv4_routes", match: { dst_addr: "10.0.0.0/8" }, action: { name: "forwarding.route", params: { port: 1 } } });
    te.match[0]!.fieldMatchType = { $case: "lpm", value: { value: Buffer.from([10, 0, 0, 1]), prefixLen: 8 } };
    await expect(c.write([{ type: Update_Type.INSERT, entity: { entity: { $case: "tableEntry", value: te } } }], 1n)).rejects.toThrow(/beyond its \/8 prefix/);
    expect(() => buildTableEntry(schema, { table: "forwarding.ipv4_routes", match: { dst_addr: "10.0.0.0/8" }, action: { name: "forwarding.route", params: { port: 600 } } })).toThrow(/parameter 'port': 600 does not fit in 9 bits/);
    await expect(c.readAll([{ entity: { $case: "registerEntry", value: { registerId: 1, index: undefined, data: undefined } } }])).rejects.toMatchObject({ code: "UNIMPLEMENTED" });
    a.ch.close();
  });

  test("the default entry of the config table is modified by a table write; a const default is refused", async () => {
    const c = client();
    const a = await arbitrate(c, 1n);
    await push(c, 1n);
    const cfg = buildTableEntry(schema, { table: "config.telemetry_config", isDefault: true, action: { name: "config.set_config", params: { mode: 2, epoch: 5, ts_scale: 1, io_timeout_ns: 1_000_000_000n, flow_timeout_ns: 1_000_000_000n } } });
    await c.write([{ type: Update_Type.MODIFY, entity: { entity: { $case: "tableEntry", value: cfg } } }], 1n);
    const [read] = await c.readAll([{ entity: { $case: "tableEntry", value: buildTableEntry(schema, { table: "config.telemetry_config", isDefault: true }) } }]);
    expect(read?.entity?.$case === "tableEntry" && decodeTableEntry(schema, read.entity.value).action?.params.mode).toBe(2n);
    const roleDefault = buildTableEntry(schema, { table: "ingress_port_role.port_roles", isDefault: true, action: { name: "ingress_port_role.set_role", params: { r: 1 } } });
    await expect(c.write([{ type: Update_Type.MODIFY, entity: { entity: { $case: "tableEntry", value: roleDefault } } }], 1n)).rejects.toThrow(/const default action/);
    a.ch.close();
  });

  test("digests: nothing until a DigestEntry is written; then lists honour max_list_size and are acknowledged", async () => {
    const c = client();
    const a = await arbitrate(c, 1n);
    await push(c, 1n);
    const w = (spec: Parameters<typeof tableEntity>[1]) => ({ type: Update_Type.INSERT, entity: tableEntity(schema, spec) });
    await c.write([
      w({ table: "forwarding.ipv4_routes", match: { dst_addr: "10.0.1.0/24" }, action: { name: "forwarding.route", params: { port: 1 } } }),
      w({ table: "forwarding.ipv4_routes", match: { dst_addr: "10.0.2.0/24" }, action: { name: "forwarding.route", params: { port: 2 } } }),
      w({ table: "ingress_port_role.port_roles", match: { port: 1 }, action: { name: "ingress_port_role.set_role", params: { r: 1 } } }),
      w({ table: "egress_port_role.port_roles", match: { port: 2 }, action: { name: "egress_port_role.set_role", params: { r: 2 } } }),
    ], 1n);
    await c.write([{ type: Update_Type.MODIFY, entity: tableEntity(schema, { table: "config.telemetry_config", isDefault: true, action: { name: "config.set_config", params: { mode: 1, epoch: 1, ts_scale: 1, io_timeout_ns: 1_000_000_000n, flow_timeout_ns: 1_000_000_000n } } }) }], 1n);
    const cmd = (cid: number) => buildFrame({ src: ipv4("10.0.1.1"), dst: ipv4("10.0.2.1"), opcode: Opcode.SEND_ONLY, destQp: 17, psn: cid, payload: nvmeSqe("read", cid, 1, 0n, 4096, 0x1234 + cid) }).data;
    const ioDigest = schema.digests.get("io_digest_t").preamble!.id;
    let t = 1_800_000_000_000_000_000n;
    sw.process({ port: 1, data: cmd(1), unixNs: (t += 1000n) });
    expect(sw.digests.unconfiguredDrops).toBe(1);
    await c.write([{ type: Update_Type.INSERT, entity: { entity: { $case: "digestEntry", value: { digestId: ioDigest, config: { maxListSize: 2, maxTimeoutNs: 1_000_000_000_000n, ackTimeoutNs: 1_000_000_000n } } } } }], 1n);
    for (let cid = 2; cid <= 5; cid++) sw.process({ port: 1, data: cmd(cid), unixNs: (t += 1000n) });
    const lists = [];
    for (let i = 0; i < 2; i++) {
      const m = await a.next();
      if (m.update?.$case === "digest") lists.push(m.update.value);
    }
    expect(lists.map((l) => l.data.length)).toEqual([2, 2]);
    expect(lists[0]!.digestId).toBe(ioDigest);
    // The sequence numbers run on; number 0 went to the digest dropped before the DigestEntry existed.
    const seqs = lists.flatMap((l) => l.data.map((d) => (d.data?.$case === "struct" && d.data.value.members[0]?.data?.$case === "bitstring" ? d.data.value.members[0].data.value.readUIntBE(0, d.data.value.members[0].data.value.length) : -1)));
    expect(seqs).toEqual([1, 2, 3, 4]);
    const [cfg] = await c.readAll([{ entity: { $case: "digestEntry", value: { digestId: ioDigest, config: undefined } } }]);
    expect(cfg?.entity?.$case === "digestEntry" && cfg.entity.value.config?.maxListSize).toBe(2);
    a.ch.close();
  });

  test("a pipeline that does not match its P4Info is refused with the reason, and replaces nothing", async () => {
    const c = client();
    const a = await arbitrate(c, 1n);
    const bad = P4Info.fromJSON(JSON.parse(p4infoText));
    bad.tables[0]!.preamble!.name = "TelemetryIngress.nope";
    const pushBad = (p4: P4Info, device: Buffer) =>
      c.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info: p4, p4DeviceConfig: device, cookie: { cookie: 99n } } });
    const mismatch = await pushBad(bad, deviceConfig).then(() => undefined, (e: unknown) => e);
    expect(mismatch).toBeInstanceOf(P4RuntimeError);
    expect(mismatch).toMatchObject({ code: "INVALID_ARGUMENT", retriable: false, message: expect.stringMatching(/P4Info table 'TelemetryIngress.nope' is not in the device config/) });
    await expect(pushBad(p4info, Buffer.from("{not json"))).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/not a BMv2 JSON/) });
    // Neither was committed: the switch still has no pipeline, and says so.
    await expect(c.getPipeline(GetForwardingPipelineConfigRequest_ResponseType.COOKIE_ONLY)).rejects.toMatchObject({ code: "FAILED_PRECONDITION" });
    await expect(c.readAll([{ entity: { $case: "tableEntry", value: buildTableEntry(schema, { table: "forwarding.ipv4_routes" }) } }])).rejects.toMatchObject({ code: "FAILED_PRECONDITION" });
    // With a pipeline running, a refused one leaves it and its entries in place.
    await push(c, 1n);
    await c.write([{ type: Update_Type.INSERT, entity: tableEntity(schema, { table: "forwarding.ipv4_routes", match: { dst_addr: "10.0.1.0/24" }, action: { name: "forwarding.route", params: { port: 1 } } }) }], 1n);
    await expect(pushBad(bad, deviceConfig)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect((await c.getPipeline(GetForwardingPipelineConfigRequest_ResponseType.COOKIE_ONLY)).config?.cookie?.cookie).toBe(7n);
    const entries = await c.readAll([{ entity: { $case: "tableEntry", value: buildTableEntry(schema, { table: "forwarding.ipv4_routes" }) } }]);
    expect(entries.map((e) => (e.entity?.$case === "tableEntry" ? decodeTableEntry(schema, e.entity.value).match.dst_addr : undefined))).toEqual([{ prefix: 0x0a000100n, length: 24 }]);
    a.ch.close();
  });
  test("a route to drop drops: the table's own copy of an action p4c emitted twice, and the default entries of those tables read back", async () => {
    const c = client();
    const { ch } = await arbitrate(c, 1n);
    await push(c, 1n);
    const out: number[] = [];
    sw.on("packet", (p) => out.push(p.port));
    await c.write([
      { type: Update_Type.INSERT, entity: tableEntity(schema, { table: "ipv4_routes", match: { dst_addr: "10.1.0.0/16" }, action: { name: "forwarding.drop" } }) },
      { type: Update_Type.INSERT, entity: tableEntity(schema, { table: "ipv4_routes", match: { dst_addr: "10.2.0.0/16" }, action: { name: "forwarding.route", params: { port: 3 } } }) },
    ], 1n);
    const frame = (dst: string) => buildFrame({ src: ipv4("10.0.1.1"), dst: ipv4(dst), opcode: Opcode.SEND_ONLY, destQp: 17, psn: 1, payload: Buffer.alloc(64) }).data;
    sw.process({ port: 1, data: frame("10.2.0.5"), unixNs: 1_000n });
    sw.process({ port: 1, data: frame("10.1.0.5"), unixNs: 2_000n });
    expect(out).toEqual([3]);
    // The entry reads back with the action it was written with.
    const entries = await c.readAll([{ entity: { $case: "tableEntry", value: buildTableEntry(schema, { table: "ipv4_routes" }) } }]);
    const actions = entries.map((e) => (e.entity?.$case === "tableEntry" && e.entity.value.action?.type?.$case === "action" ? schema.actions.get(e.entity.value.action.type.value.actionId).preamble!.name : ""));
    expect(actions.sort()).toEqual(["TelemetryIngress.forwarding.drop", "TelemetryIngress.forwarding.route"]);
    for (const table of ["ipv4_routes", "io_watchlist"]) {
      const [d] = await c.readAll([{ entity: { $case: "tableEntry", value: buildTableEntry(schema, { table, isDefault: true }) } }]);
      expect(d?.entity?.$case === "tableEntry" && d.entity.value.isDefaultAction, table).toBe(true);
    }
    ch.close();
  });
  test("default entries as the spec says: a MODIFY without an action resets, DELETE and a priority are refused; is_const, keyless inserts and an unsupported idle timeout are refused; controller_metadata reads back", async () => {
    const c = client();
    const { ch } = await arbitrate(c, 1n);
    await push(c, 1n);
    const entry = (v: Parameters<typeof buildTableEntry>[1], extra: Partial<ReturnType<typeof buildTableEntry>> = {}) => ({ entity: { $case: "tableEntry" as const, value: { ...buildTableEntry(schema, v), ...extra } } });
    const code = async (type: Update_Type, e: ReturnType<typeof entry>) => {
      try {
        await c.write([{ type, entity: e }], 1n);
        return "OK";
      } catch (err) {
        return err instanceof P4WriteError ? err.updates[0]!.code : String(err);
      }
    };
    const readDefault = async () => {
      const [d] = await c.readAll([entry({ table: "config.telemetry_config", isDefault: true })]);
      return d?.entity?.$case === "tableEntry" ? decodeTableEntry(schema, d.entity.value).action : undefined;
    };
    const initial = await readDefault();
    const cfg = { table: "config.telemetry_config", isDefault: true, action: { name: "config.set_config", params: { mode: 2, epoch: 5, ts_scale: 1, io_timeout_ns: 1_000_000_000n, flow_timeout_ns: 1_000_000_000n } } };
    expect(await code(Update_Type.MODIFY, entry(cfg))).toBe("OK");
    expect((await readDefault())?.params.mode).toBe(2n);
    // Reset: MODIFY with is_default_action and no action.
    expect(await code(Update_Type.MODIFY, entry({ table: "config.telemetry_config", isDefault: true }))).toBe("OK");
    expect(await readDefault()).toEqual(initial);
    expect(await code(Update_Type.DELETE, entry({ table: "config.telemetry_config", isDefault: true }))).toBe("INVALID_ARGUMENT");
    expect(await code(Update_Type.MODIFY, entry(cfg, { priority: 5 }))).toBe("INVALID_ARGUMENT");
    // A keyless table takes no entries but its default one.
    expect(await code(Update_Type.INSERT, entry({ ...cfg, isDefault: false }))).toBe("INVALID_ARGUMENT");
    const route = { table: "ipv4_routes", match: { dst_addr: "10.3.0.0/16" }, action: { name: "forwarding.route", params: { port: 4 } } };
    expect(await code(Update_Type.INSERT, entry(route, { isConst: true }))).toBe("INVALID_ARGUMENT");
    expect(await code(Update_Type.INSERT, entry(route, { idleTimeoutNs: 1_000_000n }))).toBe("INVALID_ARGUMENT");
    expect(await code(Update_Type.INSERT, entry(route, { controllerMetadata: 0xfeedn }))).toBe("OK");
    const [read] = await c.readAll([entry({ table: "ipv4_routes", match: { dst_addr: "10.3.0.0/16" } })]);
    expect(read?.entity?.$case === "tableEntry" && read.entity.value.controllerMetadata).toBe(0xfeedn);
    ch.close();
  });
});
