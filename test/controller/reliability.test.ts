// The telemetry controller against the software switch over P4Runtime:
// switch restarts, primary failover, mode switches mid-traffic.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { buildTableEntry, decodeTableEntry, P4RuntimeClient, P4RuntimeError, P4Schema, toUint128 } from "../../p4runtime/src/index.js";
import { Update_Type } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { Topology } from "../../app/topology.js";
import { replaySwitches } from "../../app/replay.js";
import type { IoRecordJson, MessageRecordJson, RecordJson, FlowAggregateJson } from "../../contract/src/records.js";
import { Exporter } from "../../exporter/src/exporter.js";
import { parseConfig } from "../../p4runtime-controller/src/config.js";
import type { DigestBatch } from "../../contract/src/digest-batch.js";
import { TelemetryController } from "../../p4runtime-controller/src/controller.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { ipv4 } from "../../contract/src/ipv4.js";
import { buildFrame, nvmeSqe, Opcode } from "../../traffic/src/roce.js";
import { TcpProxy } from "../support/net.js";
import { readIoFrames } from "../support/nvme-frames.js";
import { nextEvent, until } from "../support/wait.js";

const root = new URL("../..", import.meta.url).pathname;

const topology = Topology.parse({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.1/32"] }, { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] }] });
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function controllerFor(port: number, electionId: number, onDigests?: (b: DigestBatch) => void) {
  const c = new TelemetryController(parseConfig({
    switch: { address: `127.0.0.1:${port}`, election_id: electionId, switch_id: "sw", timestamp_unit_ns: 1 },
    ports: topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
    digest: { max_list_size: 1, max_timeout_us: 1 },
  }));
  if (onDigests) c.on("digests", onDigests);
  c.start();
  cleanups.push(() => c.stop());
  return c;
}

async function startSwitch(port = 0) {
  const sw = new SoftwareSwitch({ clock: "virtual" });
  const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
  const bound = await server.listen(`127.0.0.1:${port}`);
  return { sw, server, port: bound };
}

const cmd = (cid: number) => buildFrame({ src: ipv4("10.0.1.1"), dst: ipv4("10.0.2.1"), opcode: Opcode.SEND_ONLY, destQp: 3, psn: cid, payload: nvmeSqe("read", cid, 1, 0n, 4096, cid) }).data;

const schema = P4Schema.fromJson(readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8"));

/** A P4Runtime client for reading what a switch holds (reads need no arbitration). */
function reader(port: number) {
  const c = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n, timeoutMs: 5000 });
  cleanups.push(() => c.close());
  return c;
}

/** Every table entry on the switch (a wildcard Read over all tables), as sorted text; [] while it has no pipeline. */
async function tableEntries(c: P4RuntimeClient): Promise<string[]> {
  const all = { entity: { $case: "tableEntry" as const, value: { ...buildTableEntry(schema, { table: "forwarding.ipv4_routes" }), tableId: 0 } } };
  try {
    return (await c.readAll([all])).map((e) => JSON.stringify(e, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v))).sort();
  } catch (err) {
    if (err instanceof P4RuntimeError && err.code === "FAILED_PRECONDITION") return [];
    throw err;
  }
}

/** Waits until the switch's I/O watchlist holds `n` entries (a pair counted in the window is written a moment later). */
async function watchlistWritten(port: number, n: number): Promise<void> {
  const r = reader(port);
  const all = { entity: { $case: "tableEntry" as const, value: buildTableEntry(schema, { table: "TelemetryIngress.io_tracker.io_watchlist" }) } };
  await until(async () => (await r.readAll([all])).length === n, 5000, `${n} watchlist entries on the switch`);
}

/** The epoch in the config table's default entry on the switch. */
async function configEpoch(c: P4RuntimeClient) {
  const [e] = await c.readAll([{ entity: { $case: "tableEntry", value: buildTableEntry(schema, { table: "config.telemetry_config", isDefault: true }) } }]);
  return e?.entity?.$case === "tableEntry" ? decodeTableEntry(schema, e.entity.value).action?.params.epoch : undefined;
}

/** The io digest's DigestEntry config on the switch, or undefined when it has none. */
async function ioDigestConfig(c: P4RuntimeClient) {
  const digestId = schema.digests.get("io_digest_t").preamble!.id;
  try {
    const [e] = await c.readAll([{ entity: { $case: "digestEntry", value: { digestId, config: undefined } } }]);
    return e?.entity?.$case === "digestEntry" ? e.entity.value.config : undefined;
  } catch (err) {
    if (err instanceof P4RuntimeError && (err.code === "NOT_FOUND" || err.code === "FAILED_PRECONDITION")) return undefined;
    throw err;
  }
}

describe("controller reliability", () => {
  test("the switch restarts mid-run: the controller re-installs the pipeline, every entry and the digest config", async () => {
    let s = await startSwitch();
    const port = s.port;
    const c = controllerFor(port, 1);
    await c.ready();
    let read = reader(port);
    const before = await tableEntries(read);
    expect(before.length).toBeGreaterThan(0);
    expect((await ioDigestConfig(read))?.maxListSize).toBe(1);
    await s.server.close();
    await until(() => !c.stats.primary, 5000, "the controller to see the switch go");
    s = await startSwitch(port);
    const back = Date.now();
    cleanups.push(() => s.server.close());
    read = reader(port);
    // The new switch starts empty: what is read below is what the controller wrote to it.
    // Reconnection backs off to at most 2 s, so this takes about that at worst; the figure is printed, not asserted.
    await until(async () => (await tableEntries(read)).length === before.length && (await ioDigestConfig(read)) !== undefined, 10_000, "re-installation", 50);
    console.log(`switch restart: everything re-installed ${Date.now() - back} ms after the switch came back`);
    expect(await tableEntries(read)).toEqual(before);
    expect((await ioDigestConfig(read))?.maxListSize).toBe(1);
    // Digests flow again: a command capsule produces one.
    let got = 0;
    c.on("digests", (b) => (got += b.digests.length));
    s.sw.process({ port: 1, data: cmd(1), unixNs: 1_800_000_000_000_000_000n });
    await until(() => got === 1, 2000, "a digest after the restart");
  });

  test("reconciliation after a reconnect writes nothing twice and removes nothing it owns", async () => {
    const s = await startSwitch();
    cleanups.push(() => s.server.close());
    // The controller reaches the switch through a proxy that can break the connection; the switch keeps its state.
    const proxy = await TcpProxy.start(s.port);
    cleanups.push(() => proxy.close());
    const c = controllerFor(proxy.port, 1);
    await c.ready();
    const read = reader(s.port);
    const before = await tableEntries(read);
    expect(before.length).toBeGreaterThan(0);
    let pushes = 0;
    c.connection.on("pipeline-pushed", () => pushes++);

    // 1. The connection breaks and cannot be made again for a while; meanwhile
    // another controller takes the switch and deletes one of this one's entries.
    proxy.refusing = true;
    const lost = nextEvent(c.connection, "stream-error", 5000);
    expect(proxy.cut()).toBeGreaterThan(0);
    await lost;
    expect(c.stats.primary).toBe(false);
    const other = reader(s.port);
    const ch = other.streamChannel();
    ch.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(100n), status: undefined } } });
    const first = await ch[Symbol.asyncIterator]().next();
    expect(!first.done && first.value.update?.$case === "arbitration" && first.value.update.value.status?.code).toBe(0);
    const [entity] = await other.readAll([{ entity: { $case: "tableEntry", value: buildTableEntry(schema, { table: "forwarding.ipv4_routes" }) } }]);
    expect(entity).toBeDefined();
    await other.write([{ type: Update_Type.DELETE, entity: entity! }], 100n);
    ch.close();
    expect(await tableEntries(read)).toHaveLength(before.length - 1);

    // 2. The controller reconnects (a new TCP connection through the proxy) and reconciles: exactly the one missing entry is written.
    const reconciled = nextEvent<[{ updates: number }]>(c.connection, "reconciled", 10_000);
    const accepted = proxy.accepted;
    proxy.refusing = false;
    expect((await reconciled)[0].updates).toBe(1);
    expect(proxy.accepted).toBeGreaterThan(accepted);
    await c.ready();
    expect(await tableEntries(read)).toEqual(before);
    // Taking the switch again, the controller moves its epoch on (one write of the config's default entry): let it land.
    await until(async () => (await configEpoch(read)) === BigInt(c.stats.epoch), 5000, "the new epoch on the switch", 20);

    // 3. Broken again with nothing changed: the reconnect writes nothing.
    const again = nextEvent<[{ updates: number }]>(c.connection, "reconciled", 10_000);
    expect(proxy.cut()).toBeGreaterThan(0);
    expect((await again)[0].updates).toBe(0);
    expect(await tableEntries(read)).toEqual(before);
    // The switch kept its pipeline: it was never pushed again, and the controller saw one session throughout.
    expect(pushes).toBe(0);
    expect(c.stats.sessions).toBe(1);
  });

  test("a controller restarted on a switch that kept its entries: a write asked for as it takes the switch inserts nothing twice", async () => {
    const s = await startSwitch();
    cleanups.push(() => s.server.close());
    const a = controllerFor(s.port, 1);
    await a.ready();
    const read = reader(s.port);
    const before = await tableEntries(read);
    expect(before.length).toBeGreaterThan(0);
    await a.stop();
    // Its successor is asked to write as soon as the switch names it primary (as digests arriving at once ask it:
    // a pair joining the watchlist, histogram ids), before it has read what the switch holds.
    const b = new TelemetryController(parseConfig({
      switch: { address: `127.0.0.1:${s.port}`, election_id: 1, switch_id: "sw", timestamp_unit_ns: 1 },
      ports: topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
      digest: { max_list_size: 1, max_timeout_us: 1 },
    }));
    let early: Promise<number> | undefined;
    b.connection.once("channel-up", () => queueMicrotask(() => (early = b.connection.sync())));
    b.start();
    cleanups.push(() => b.stop());
    await b.ready();
    expect(early).toBeDefined();
    await expect(early!).resolves.toBeGreaterThanOrEqual(0);
    expect(await tableEntries(read)).toEqual(before);
  });

  test("two controllers: the primary is killed, the backup takes over and digests keep flowing", async () => {
    const s = await startSwitch();
    cleanups.push(() => s.server.close());
    const seen: number[] = [];
    const a = controllerFor(s.port, 20, (b) => seen.push(...b.digests.map((d) => d.seq)));
    await a.ready();
    const b = controllerFor(s.port, 10, (x) => seen.push(...x.digests.map((d) => d.seq)));
    // The switch answers the backup's arbitration: it is connected, and told it is not primary.
    await nextEvent(b, "backup", 5000);
    expect(b.stats.primary).toBe(false);
    let t = 1_800_000_000_000_000_000n;
    for (let cid = 0; cid < 5; cid++) s.sw.process({ port: 1, data: cmd(cid), unixNs: (t += 1000n) });
    await until(() => seen.length === 5, 2000, "digests to the primary");
    await a.stop();
    await b.ready(3000);
    for (let cid = 5; cid < 10; cid++) s.sw.process({ port: 1, data: cmd(cid), unixNs: (t += 1000n) });
    await until(() => seen.length === 10, 2000, "digests to the new primary");
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

describe("polling, live", () => {
  test("a pair learned while the watchlist has room is watched at once, not at the next rotation", async () => {
    const s = await startSwitch();
    cleanups.push(() => s.server.close());
    const io: Array<{ cid: number; event: number }> = [];
    const c = new TelemetryController(parseConfig({
      switch: { address: `127.0.0.1:${s.port}`, election_id: 1, switch_id: "sw", timestamp_unit_ns: 1 },
      ports: topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
      digest: { max_list_size: 1, max_timeout_us: 1 },
      mode: "polling",
      polling: { rotation_period_ms: 3_600_000 },
    }));
    c.on("digests", (b: DigestBatch) => { for (const d of b.digests) if (d.kind === "io") io.push({ cid: d.cid, event: d.event }); });
    c.start();
    cleanups.push(() => c.stop());
    await c.ready();
    let t = 1_800_000_000_000_000_000n;
    // The pair's first command: not watched yet, so no I/O digest; its learn digest names the pair.
    s.sw.process({ port: 1, data: cmd(0), unixNs: (t += 1000n) });
    await until(() => c.stats.learnedPairs === 1, 5000, "the pair learned");
    const read = reader(s.port);
    const watchlist = `"tableId":${schema.tables.get("io_tracker.io_watchlist").preamble!.id},`;
    await until(async () => (await tableEntries(read)).some((e) => e.includes(watchlist)), 5000, "the pair's watchlist entry on the switch", 20);
    expect(c.pairCoverage()).toEqual({ measured_pairs: 1, known_pairs: 1, ratio: 1 });
    // Its next command, long before any rotation: measured.
    s.sw.process({ port: 1, data: cmd(1), unixNs: (t += 1000n) });
    await until(() => io.some((d) => d.cid === 1), 5000, () => `an I/O digest of the pair's second command (got ${JSON.stringify(io)})`);
    expect(io.some((d) => d.cid === 0)).toBe(false);
    expect(c.stats.rotations).toBe(0);
  });
});

describe("polling, a controller taking the switch over", () => {
  test("the watchlist entries an earlier controller left are deleted and told as left, before any new write", async () => {
    const s = await startSwitch();
    cleanups.push(() => s.server.close());
    const config = () => parseConfig({
      switch: { address: `127.0.0.1:${s.port}`, election_id: 1, switch_id: "sw", timestamp_unit_ns: 1 },
      ports: topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
      digest: { max_list_size: 1, max_timeout_us: 1 },
      mode: "polling",
      polling: { rotation_period_ms: 3_600_000 },
    });
    const a = new TelemetryController(config());
    const io: Array<{ host: number; target: number; gen: number }> = [];
    a.on("digests", (b: DigestBatch) => { for (const d of b.digests) if (d.kind === "io") io.push({ host: d.host, target: d.target, gen: d.gen }); });
    a.start();
    await a.ready();
    let t = 1_800_000_000_000_000_000n;
    s.sw.process({ port: 1, data: cmd(0), unixNs: (t += 1000n) });
    const read = reader(s.port);
    const watchlist = `"tableId":${schema.tables.get("io_tracker.io_watchlist").preamble!.id},`;
    await until(async () => (await tableEntries(read)).some((e) => e.includes(watchlist)), 5000, "the pair's watchlist entry on the switch", 20);
    s.sw.process({ port: 1, data: cmd(1), unixNs: (t += 1000n) });
    await until(() => io.length === 1, 5000, "an I/O digest of the watched pair");
    // Killed with its window on the switch (stop() leaves the switch as it is); a fresh controller takes the switch.
    await a.stop();
    const b = new TelemetryController(config());
    const left: Array<{ host: number; target: number }> = [];
    const leftGens: number[] = [];
    b.on("watch-left", (e) => {
      left.push(...e.pairs.map(({ host, target }) => ({ host, target })));
      leftGens.push(...e.pairs.map((p) => p.gen));
    });
    b.start();
    cleanups.push(() => b.stop());
    await b.ready();
    // Its window (empty until it learns a pair) is what the switch watches, and the pair it took out is told.
    expect(left).toEqual(io.map(({ host, target }) => ({ host, target })));
    // The occurrence it left is the one the switch stamped on the pair's digest (read back from the entry).
    expect(leftGens).toEqual(io.map((d) => d.gen));
    expect(leftGens[0]).toBeGreaterThan(0);
    expect((await tableEntries(read)).some((e) => e.includes(watchlist))).toBe(false);
    // The command's response is not watched: no digest.
    const got: number[] = [];
    b.on("digests", (x: DigestBatch) => { for (const d of x.digests) if (d.kind === "io") got.push(d.cid); });
    s.sw.process({ port: 1, data: cmd(2), unixNs: (t += 1000n) });
    await until(() => b.stats.digests > 0, 5000, "the new pair learned");
    expect(got).toEqual([]);
  });
});

describe("mode switch mid-traffic", () => {
  test("full -> polling -> full by table writes: no message record lost except those straddling a switch, which are counted", async () => {
    const traffic = generateTraffic({ seed: 9, layout: "single", durationNs: 400_000_000, hosts: 4, targets: 1, ioRate: 200, gradientGapNs: 2_000_000 });
    const records: RecordJson[] = [];
    const t0 = traffic.switches[0]!.packets[0]!.timestampNs;
    await replaySwitches([{ name: "sw", topology: Topology.parse(traffic.switches[0]!.topology), packets: traffic.switches[0]!.packets }], {
      onRecord: (r) => records.push(r),
      polling: { rotationPeriodMs: 50, flowCapacity: 2 },
      beforeFeed: (rigs) => {
        // Switch modes at capture times 100 ms (to polling) and 300 ms (back to full).
        rigs[0]!.schedule(t0 + 100_000_000n, () => rigs[0]!.controller.setMode("polling"));
        rigs[0]!.schedule(t0 + 300_000_000n, () => rigs[0]!.controller.setMode("full"));
      },
    });
    const msgs = records.filter((r): r is MessageRecordJson => r.type === "message");
    const flows = records.filter((r): r is FlowAggregateJson => r.type === "flow_interval");
    const straddled = flows.reduce((a, f) => a + f.straddled_messages, 0);
    expect(msgs.some((m) => m.mode === "polling")).toBe(true);
    expect(msgs.some((m) => m.mode === "full")).toBe(true);
    // In full mode every message is measured; each truth message is either
    // reported with its exact figures, unmeasured in polling (flow not in the
    // window), or counted as straddling.
    const byKey = new Map(msgs.map((m) => [`${m.src}|${m.dst}|${m.dest_qp}|${m.first_psn}`, m]));
    let missingInFull = 0;
    for (const t of traffic.messages) {
      const m = byKey.get(`${t.src}|${t.dst}|${t.dest_qp}|${t.first_psn}`);
      const at = t.firstNs - t0;
      const inFull = at < 100_000_000n || at >= 300_000_000n;
      if (m) expect({ fct: m.fct_ns, packets: m.packets }).toEqual({ fct: t.fct_ns, packets: t.packets });
      else if (inFull) missingInFull++;
    }
    expect(missingInFull).toBeLessThanOrEqual(straddled);
  }, 120_000);
});

describe("polling, window occurrences", () => {
  /** The software switch, and a polling controller for it (not started) with a window of `pairs` pairs and no rotation of its own. */
  async function pollingSwitch(pairs?: number, rotationMs = 3_600_000) {
    const s = await startSwitch();
    cleanups.push(() => s.server.close());
    const c = new TelemetryController(parseConfig({
      switch: { address: `127.0.0.1:${s.port}`, switch_id: "sw", timestamp_unit_ns: 1 },
      ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }, { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] }],
      digest: { max_list_size: 1, max_timeout_us: 1 },
      mode: "polling",
      polling: { rotation_period_ms: rotationMs, ...(pairs === undefined ? {} : { io_pair_capacity: pairs }) },
    }));
    return { s, c };
  }

  test("a pair learned into the window's room is told as joined with its occurrence before any digest names it: one an earlier controller's window left is not taken as ended", async () => {
    const { s, c } = await pollingSwitch();
    // The exporter told as run-controller.ts tells it; the occurrence the pair will join with ended once already (an
    // earlier controller's window left it: a restarted controller starts at a random occurrence, so 1 in 255; here
    // every occurrence has ended).
    const records: RecordJson[] = [];
    const exporter = new Exporter({ intervalNs: 250_000_000n, ioTimeoutNs: 300_000_000n, correlationWindowNs: 100_000_000n });
    exporter.addSink((r) => records.push(r));
    const order: string[] = [];
    c.on("watch-joined", (e) => {
      order.push(`joined ${e.pairs.map((p) => p.gen).join(",")}`);
      exporter.metrics.windowJoined("sw", e.pairs);
    });
    c.on("digests", (b: DigestBatch) => {
      for (const d of b.digests) if (d.kind === "io" && d.event !== 0) order.push(`io ${d.gen}`);
      exporter.onBatch(b);
    });
    c.start();
    cleanups.push(() => c.stop());
    await c.ready();
    let t = 1_800_000_000_000_000_000n;
    const send = (f: { port: number; hex: string }) => s.sw.process({ port: f.port, data: Buffer.from(f.hex, "hex"), unixNs: (t += 1000n) });
    const host = ipv4("10.0.1.1"), target = ipv4("10.0.2.1");
    exporter.metrics.windowLeft("sw", Array.from({ length: 255 }, (_, i) => ({ host, target, gen: i + 1 })));
    send(readIoFrames(0)[0]!);
    await until(() => c.pairCoverage().measured_pairs === 1, 5000, "the pair in the window");
    await watchlistWritten(s.port, 1);
    // I/O 1 answered; I/O 2's command alone (its response never crosses the switch).
    const [command, data, response] = readIoFrames(1);
    for (const f of [command!, data!, response!]) send(f);
    send(readIoFrames(2)[0]!);
    await until(() => order.filter((o) => o.startsWith("io")).length === 3, 5000, () => `the I/Os' digests (${order.join("; ")})`);
    exporter.metrics.noteSwitch("sw", t + 2_000_000_000n); // the switch observed past I/O 2's timeout
    exporter.finish();
    const gen = Number(order[0]!.split(" ")[1]);
    expect(gen).toBeGreaterThan(0);
    expect(order).toEqual([`joined ${gen}`, `io ${gen}`, `io ${gen}`, `io ${gen}`]);
    // The unanswered one is incomplete: its occurrence is watched, not one that ended (that would say "answer unknown").
    const ios = records.filter((r): r is IoRecordJson => r.type === "io").sort((a, b) => a.cid - b.cid);
    expect(ios.map((r) => [r.cid, r.incomplete, r.e2e_c_ns !== null])).toEqual([[1, false, true], [2, true, false]]);
  });

  /** Pairs A (10.0.1.1) and B (10.0.1.2) learned, A first: A in the window (room for one), B out of it. */
  async function twoPairs(s: Awaited<ReturnType<typeof startSwitch>>, c: TelemetryController) {
    let t = 1_800_000_000_000_000_000n;
    const command = (host: string) => s.sw.process({ port: 1, data: buildFrame({ src: ipv4(host), dst: ipv4("10.0.2.1"), opcode: Opcode.SEND_ONLY, destQp: 3, psn: 0, payload: nvmeSqe("read", 0, 1, 0n, 4096, 0) }).data, unixNs: (t += 1000n) });
    command("10.0.1.1");
    await until(() => c.pairCoverage().measured_pairs === 1, 5000, "pair A in the window");
    await watchlistWritten(s.port, 1);
    command("10.0.1.2");
    await until(() => c.pairCoverage().known_pairs === 2, 5000, "pair B learned");
  }

  /** Each rotation's notes as [left, joined], each `host@gen` (host: the address's last byte). */
  function rotationNotes(c: TelemetryController): string[][] {
    const notes: string[][] = [];
    c.on("rotated", (e) => notes.push([e.leftPairs, e.joinedPairs].map((ps) => ps.map((p) => `${p.host & 0xff}@${p.gen}`).join(","))));
    return notes;
  }

  /** Each rotation takes out the occurrence the one before put in, and puts in the other pair in a new occurrence. */
  function expectChained(notes: string[][]) {
    expect(notes.length).toBeGreaterThan(1);
    const first = notes[0]![0]!.split("@")[0];
    notes.forEach(([left, joined], i) => {
      expect([left!.split("@")[0], joined!.split("@")[0]]).toEqual((i % 2 === 0) === (first === "1") ? ["1", "2"] : ["2", "1"]);
      if (i > 0) expect(left).toBe(notes[i - 1]![1]);
      if (i > 1) expect(joined).not.toBe(notes[i - 2]![1]);
    });
  }

  test("rotations asked for while one is under way run one after another, each telling the pairs of the window it wrote", async () => {
    const { s, c } = await pollingSwitch(1);
    const notes = rotationNotes(c);
    c.start();
    cleanups.push(() => c.stop());
    await c.ready();
    await twoPairs(s, c);
    // Three rotations asked for at once (a timer firing while a slow write was under way did this): B, A, B in turn.
    await Promise.all([c.rotate(), c.rotate(), c.rotate()]);
    expect(notes).toHaveLength(3);
    expectChained(notes);
    expect(c.stats.rotations).toBe(3);
  });

  test("a rotation period that passes while the last rotation's write is under way makes none, and is counted", async () => {
    const { s, c } = await pollingSwitch(1, 5);
    const notes = rotationNotes(c);
    c.start();
    cleanups.push(() => c.stop());
    await c.ready();
    await twoPairs(s, c);
    // (The timer rotated the window of A alone, unchanged, until B was learned.)
    await until(() => notes.some(([left]) => left !== ""), 5000, "a rotation between A and B");
    notes.splice(0, notes.findIndex(([left]) => left !== ""));
    // A rotation's write goes out once this busy host lets it (after the loop); its answer needs the event loop
    // again, and the 5 ms timer, overdue by then, fires first.
    const rotation = c.rotate();
    const busyUntil = Date.now() + 30;
    while (Date.now() < busyUntil);
    await rotation;
    expect(c.stats.rotationsSkipped).toBeGreaterThan(0);
    await until(() => notes.length >= 6, 5000, "rotations by the timer");
    expectChained(notes);
  });

  test("the switch stamps each I/O event with its pair's window occurrence: a response after the pair left and came back names the next one", async () => {
    const { s, c } = await pollingSwitch(1);
    const io: Array<{ cid: number; event: number; gen: number }> = [];
    c.on("digests", (b: DigestBatch) => { for (const d of b.digests) if (d.kind === "io" && d.event !== 0) io.push({ cid: d.cid, event: d.event, gen: d.gen }); });
    c.start();
    cleanups.push(() => c.stop());
    await c.ready();
    let t = 1_800_000_000_000_000_000n;
    const send = (f: { port: number; hex: string }) => s.sw.process({ port: f.port, data: Buffer.from(f.hex, "hex"), unixNs: (t += 1000n) });
    // Pair A (10.0.1.1) learned first: it joins the window; pair B (10.0.1.2) is known, out of it.
    send(readIoFrames(0)[0]!);
    await until(() => c.pairCoverage().measured_pairs === 1, 5000, "pair A in the window");
    await watchlistWritten(s.port, 1);
    s.sw.process({ port: 1, data: buildFrame({ src: ipv4("10.0.1.2"), dst: ipv4("10.0.2.1"), opcode: Opcode.SEND_ONLY, destQp: 3, psn: 0, payload: nvmeSqe("read", 0, 1, 0n, 4096, 0) }).data, unixNs: (t += 1000n) });
    await until(() => c.pairCoverage().known_pairs === 2, 5000, "pair B learned");
    // A's I/O 1: its command and data watched in A's first occurrence.
    const [command, data, response] = readIoFrames(1);
    send(command!);
    send(data!);
    await until(() => io.length === 1, 5000, "A's command digest");
    const first = io[0]!.gen;
    expect(first).toBeGreaterThan(0);
    // Two rotations: B's turn, then A's again (its next occurrence). The response comes then.
    await c.rotate();
    await c.rotate();
    send(response!);
    await until(() => io.length === 2, 5000, "A's response digest");
    expect(io).toEqual([
      { cid: 1, event: 1, gen: first },
      { cid: 1, event: 2, gen: (first % 255) + 1 },
    ]);
    // A command and its response within one occurrence both name it.
    const [command2, data2, response2] = readIoFrames(2);
    for (const f of [command2!, data2!, response2!]) send(f);
    await until(() => io.length === 4, 5000, "I/O 2's digests");
    expect(io.slice(2).map((d) => [d.event, d.gen])).toEqual([[1, (first % 255) + 1], [2, (first % 255) + 1]]);
  });
});

