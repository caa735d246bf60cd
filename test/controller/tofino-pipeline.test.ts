// The controller on a Tofino program: the committed TNA and T2NA P4Infos
// are accepted (their digests in the compact layout), the report mirror
// session is part of the desired state, written to the switch and rewritten
// after a restart; compact digest lists leave the controller in the full
// layout. Runs on the software switch with the v1model program built with
// the compact digests (p4/build/compact/).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { parseConfig } from "../../p4runtime-controller/src/config.js";
import { RECIRCULATION_PORT, REPORT_PACKET_LENGTH_BYTES, REPORT_SESSION_ID, TelemetryController } from "../../p4runtime-controller/src/controller.js";
import { P4RuntimeClient, P4RuntimeError } from "../../p4runtime/src/index.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { decodeDigest, EXPECTED_COMPACT, MODE_FULL, MODE_POLLING, type IoDigest, type MsgDigest } from "../../contract/src/digests.js";
import type { DigestBatch } from "../../contract/src/digest-batch.js";
import { ipv4 } from "../../contract/src/ipv4.js";
import { buildFrame, nvmeSqe, Opcode } from "../../traffic/src/roce.js";
import { until } from "../support/wait.js";

const root = new URL("../..", import.meta.url).pathname;
const tmp = mkdtempSync(join(tmpdir(), "tofino-pipeline-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ports = [{ port: 1, role: "compute", prefixes: ["10.0.1.1/32"] }, { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] }];
const TNA = { p4info: join(root, "p4/build/tna/telemetry.p4info.json"), device_config: join(root, "p4/build/tna/bfrt.json") };
const T2NA = { p4info: join(root, "p4/build/t2na/telemetry.p4info.json"), device_config: join(root, "p4/build/t2na/bfrt.json") };
const COMPACT = { p4info: join(root, "p4/build/compact/telemetry.p4info.json"), device_config: join(root, "p4/build/compact/telemetry.json") };

/** A P4Info file edited from a committed one. */
function editedP4Info(from: string, name: string, edit: (p: Record<string, any>) => void): string {
  const p = JSON.parse(readFileSync(from, "utf8")) as Record<string, any>;
  edit(p);
  const f = join(tmp, name);
  writeFileSync(f, JSON.stringify(p));
  return f;
}

function controller(pipeline: Record<string, unknown>, extra: Record<string, unknown> = {}, address = "127.0.0.1:1") {
  return new TelemetryController(parseConfig({ switch: { address, switch_id: "sw", timestamp_unit_ns: 1 }, ports, pipeline, ...extra }), { rotationTimer: false });
}

describe("a Tofino P4Info", () => {
  test.each([{ arch: "tna", pipeline: TNA, port: 68, histograms: false }, { arch: "t2na", pipeline: T2NA, port: 6, histograms: true }] as const)("the committed $arch P4Info is accepted; the report mirror session goes to port $port", ({ arch, pipeline, port, histograms }) => {
    expect(RECIRCULATION_PORT[arch]).toBe(port);
    const c = controller(pipeline);
    expect(c.digestLayout).toBe("compact");
    expect(c.reportPort).toBe(port);
    expect([...c.state.cloneSessions().values()]).toEqual([
      { sessionId: REPORT_SESSION_ID, replicas: [{ portKind: { $case: "egressPort", value: port }, instance: 0, backupReplicas: [] }], classOfService: 0, packetLengthBytes: REPORT_PACKET_LENGTH_BYTES },
    ]);
    expect(REPORT_SESSION_ID).toBe(1);
    expect(REPORT_PACKET_LENGTH_BYTES).toBe(64);
    // Overridden in the config.
    const other = controller({ ...pipeline, recirculation_port: 196 });
    expect(other.state.cloneSessions().get(1)?.replicas[0]?.portKind).toEqual({ $case: "egressPort", value: 196 });
    if (histograms) {
      // Tofino 2 has the data-plane histograms (fewer ids than BMv2): read, and summary mode allowed.
      expect(c.histograms).toBeDefined();
      expect(controller(pipeline, { mode: "summary" }).currentMode).toBe("summary");
    } else {
      // Tofino 1 has none: none read, and summary mode refused by name, in the config and at run time.
      expect(c.histograms).toBeUndefined();
      expect(() => controller(pipeline, { mode: "summary" })).toThrow(/mode summary: .* has no data-plane histograms/);
    }
  });

  test("summary mode at run time on a Tofino 1 program: refused, the mode unchanged", async () => {
    const c = controller(TNA);
    await expect(c.setMode("summary")).rejects.toThrow(/mode summary: .* has no data-plane histograms/);
    expect(c.currentMode).toBe("full");
  });

  test("the port constants are the Tofino program's (TNA_RECIRC_PORT, TNA_REPORT_SESSION)", () => {
    const src = readFileSync(join(root, "p4/tna/include/define_tna.p4"), "utf8");
    expect(src).toMatch(new RegExp(`#if __TARGET_TOFINO__ == 2\\s+const bit<\\d+> TNA_RECIRC_PORT = ${RECIRCULATION_PORT.t2na};\\s+#else\\s+const bit<\\d+> TNA_RECIRC_PORT = ${RECIRCULATION_PORT.tna};`));
    expect(src).toMatch(new RegExp(`const MirrorId_t TNA_REPORT_SESSION = ${REPORT_SESSION_ID};`));
  });

  test("a v1model P4Info, either layout, writes no clone session; a recirculation port for it is refused", () => {
    for (const pipeline of [{}, COMPACT]) {
      const c = controller(pipeline);
      expect(c.reportPort).toBeUndefined();
      expect(c.state.cloneSessions().size).toBe(0);
    }
    expect(controller({}).digestLayout).toBe("full");
    expect(controller(COMPACT).digestLayout).toBe("compact");
    expect(() => controller({ recirculation_port: 68 })).toThrow(/pipeline\.recirculation_port: set, but pipeline\.p4info .* is for architecture 'v1model', which has no report mirror session/);
  });

  test("the recirculation port is validated", () => {
    for (const [v, message] of [[-1, /must be between 0 and 511 \(got -1\)/], [512, /must be between 0 and 511 \(got 512\)/], ["68", /must be an integer/], [6.5, /must be an integer/]] as const) {
      expect(() => parseConfig({ ports, pipeline: { recirculation_port: v } }), String(v)).toThrow(new RegExp(`pipeline\\.recirculation_port: ${message.source}`));
    }
    expect(parseConfig({ ports, pipeline: { recirculation_port: 0 } }).pipeline.recirculationPort).toBe(0);
    expect(parseConfig({ ports }).pipeline.recirculationPort).toBeUndefined();
  });

  test("a P4Info whose digests follow neither layout is refused, naming the digest and the member", () => {
    const third = editedP4Info(TNA.p4info, "third.p4info.json", (p) => {
      const io = p.typeInfo.structs.io_digest_t.members.find((m: { name: string }) => m.name === "cmd_psn");
      io.typeSpec.bitstring.bit.bitwidth = 20;
    });
    expect(() => controller({ ...TNA, p4info: third })).toThrow(/does not match this controller's digests: digest 'io_digest_t' member 'cmd_psn' is 20 bits, expected 16 \(compact \(Tofino\) layout\)/);
    const dropped = editedP4Info(T2NA.p4info, "dropped.p4info.json", (p) => {
      p.typeInfo.structs.msg_digest_t.members = p.typeInfo.structs.msg_digest_t.members.filter((m: { name: string }) => m.name !== "cnp");
    });
    expect(() => controller({ ...T2NA, p4info: dropped })).toThrow(/digest 'msg_digest_t' lacks member 'cnp' \(compact \(Tofino\) layout\)/);
  });
});

describe("compact digest lists", () => {
  const bits = (n: number) => ({ data: { $case: "bitstring" as const, value: Buffer.from(n.toString(16).padStart(2, "0").replace(/^(.)((..)*)$/, "0$1$2"), "hex") } });
  const struct = (values: number[]) => ({ data: { $case: "struct" as const, value: { members: values.map(bits) } } });
  const compactSample = (name: string, members: Record<string, number>) => Object.keys(EXPECTED_COMPACT[name]!.fields).map((f) => members[f] ?? 0);

  test("leave the controller in the full layout: typed digests and raw samples; times from the list as the switch stamped it", async () => {
    const c = controller(TNA);
    const batches: DigestBatch[] = [];
    const bad: string[] = [];
    c.on("digests", (b) => batches.push(b));
    c.on("bad-digest", (e) => bad.push(e.message));
    const io = c.schema.digests.get("io_digest_t").preamble!.id;
    const msg = c.schema.digests.get("msg_digest_t").preamble!.id;
    // A clock since boot (PI's): the batch's time is mapped to Unix time, the digests' are the switch's.
    const T = 7_000_000_000n;
    const cmd = compactSample("io_digest_t", { seq: 1, event: 1, vantage: 1, op: 1, host: ipv4("10.0.1.1"), target: ipv4("10.0.2.1"), target_qp: 5, cmd_psn: 0xabcd, cid: 9, bytes: 4096 });
    const wrong = compactSample("io_digest_t", { seq: 2, flags: 0x1f });
    c.connection.emit("digest", { digestId: io, listId: 1n, data: [struct(cmd), struct(wrong), struct([3, ...cmd.slice(1)])], timestamp: T });
    expect(batches).toHaveLength(1);
    const b = batches[0]!;
    expect(b.listTimestampNs).toBeGreaterThan(1_000_000_000_000_000_000n);
    expect(b.badDigests).toBe(1);
    expect(bad).toEqual(["digest 'io_digest_t' member 'flags': value 31 does not fit in 4 bits"]);
    // The bad sample is lost alone: the ones after it are delivered.
    expect(b.digests.map((d) => d.seq)).toEqual([1, 3]);
    const d = b.digests[0] as IoDigest;
    expect(d).toMatchObject({ kind: "io", mode: MODE_FULL, ts: Number(T), cmd_psn: 0xabcd, bytes: 4096 });
    // The raw samples (Kafka's rdma.digest.v1, the journal) are the full layout's.
    expect(b.raw.digest).toBe("io_digest_t");
    expect(b.raw.samples.map((s) => decodeDigest("io_digest_t", s))).toEqual(b.digests);

    // The mode the controller is in when the list arrives.
    await c.setMode("polling");
    c.connection.emit("digest", { digestId: msg, listId: 2n, data: [struct(compactSample("msg_digest_t", { seq: 4, fct_ns: 2500, packets: 3, bytes: 3000 }))], timestamp: T + 10_000n });
    const m = batches[1]!.digests[0] as MsgDigest;
    expect(m).toMatchObject({ kind: "msg", mode: MODE_POLLING, first_ts: Number(T) + 10_000 - 2500, fct_ns: 2500, extra_ecn_ce: 0, packets: 3 });
    expect(c.stats).toMatchObject({ digests: 3, badDigests: 1 });
  });
});

describe("the report mirror session on a switch", () => {
  async function startSwitch(port = 0) {
    const sw = new SoftwareSwitch({ clock: "virtual" });
    const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
    const bound = await server.listen(`127.0.0.1:${port}`);
    return { sw, server, port: bound };
  }
  /** Clone session 1 as the switch holds it, or undefined. */
  async function session1(port: number) {
    const r = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n, timeoutMs: 5000 });
    try {
      const [e] = await r.readAll([{ entity: { $case: "packetReplicationEngineEntry", value: { type: { $case: "cloneSessionEntry", value: { sessionId: 1, replicas: [], classOfService: 0, packetLengthBytes: 0 } } } } }]);
      const t = e?.entity?.$case === "packetReplicationEngineEntry" ? e.entity.value.type : undefined;
      return t?.$case === "cloneSessionEntry" ? { port: t.value.replicas.map((x) => (x.portKind?.$case === "egressPort" ? x.portKind.value : -1)), length: t.value.packetLengthBytes } : undefined;
    } catch (err) {
      if (err instanceof P4RuntimeError && (err.code === "NOT_FOUND" || err.code === "FAILED_PRECONDITION")) return undefined;
      throw err;
    } finally {
      r.close();
    }
  }

  // The software switch runs BMv2 JSON: the compact v1model program, its P4Info labelled a Tofino one.
  const asTofino = (arch: string) => editedP4Info(COMPACT.p4info, `compact-${arch}.p4info.json`, (p) => (p.pkgInfo.arch = arch));

  test("is written with the rest of the state, and again after the switch restarts; compact digests flow", async () => {
    let s = await startSwitch();
    const port = s.port;
    cleanups.push(() => s.server.close());
    const c = controller({ p4info: asTofino("t2na"), device_config: COMPACT.device_config }, { digest: { max_list_size: 1, max_timeout_us: 1 } }, `127.0.0.1:${port}`);
    c.start();
    cleanups.push(() => c.stop());
    await c.ready();
    expect(await session1(port)).toEqual({ port: [6], length: 64 });
    expect(s.sw.replication.sessions.get(1)).toEqual({ replicas: [{ egressPort: 6, instance: 0 }], classOfService: 0, packetLengthBytes: 64 });
    // A reconciliation writes nothing more.
    expect(await c.connection.reconcile()).toBe(0);

    await s.server.close();
    await until(() => !c.stats.primary, 5000, "the controller to see the switch go");
    s = await startSwitch(port);
    expect(s.sw.replication.sessions.size).toBe(0);
    await until(() => c.stats.primary, 10_000, "the controller back on the restarted switch");
    await until(async () => (await session1(port)) !== undefined, 5000, "the session rewritten");
    expect(await session1(port)).toEqual({ port: [6], length: 64 });

    // The compact program's digests reach the controller's listeners in the full layout.
    const got: DigestBatch[] = [];
    c.on("digests", (b) => got.push(b));
    const T = 1_800_000_000_000_000_000n;
    s.sw.process({ port: 1, unixNs: T, data: buildFrame({ src: ipv4("10.0.1.1"), dst: ipv4("10.0.2.1"), opcode: Opcode.SEND_ONLY, destQp: 3, psn: 0x12345, payload: nvmeSqe("read", 4, 1, 0n, 4096, 4) }).data });
    await until(() => got.some((b) => b.digests.some((d) => d.kind === "io")), 3000, "the command's digest");
    const io = got.flatMap((b) => b.digests).find((d): d is IoDigest => d.kind === "io")!;
    expect(io).toMatchObject({ event: 1, cmd_psn: 0x2345, ts: Number(T % 2n ** 48n), mode: MODE_FULL, bytes: 4096 });
  });

  test("an overridden port is the one written", async () => {
    const s = await startSwitch();
    cleanups.push(() => s.server.close());
    const c = controller({ p4info: asTofino("tna"), device_config: COMPACT.device_config, recirculation_port: 196 }, {}, `127.0.0.1:${s.port}`);
    c.start();
    cleanups.push(() => c.stop());
    await c.ready();
    expect(await session1(s.port)).toEqual({ port: [196], length: 64 });
  });
});
