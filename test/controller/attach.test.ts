// A controller attached to a pipeline it did not push (pipeline.push false):
// the software switch runs as a process of its own, and another P4Runtime
// client loads the pipeline with a plain SetForwardingPipelineConfig, as
// Stratum, an orchestrator or a second controller would. Records flow; a
// switch running another P4Info is refused with one message and left
// untouched; a switch restarted (and loaded again, with the same cookie or
// a new one) under the attached controller is detected and counted. The
// switch command started with its own pipeline (no cookie) is attached to too.
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, test } from "vitest";
import { Exporter } from "../../exporter/src/exporter.js";
import type { IoRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { parseConfig } from "../../p4runtime-controller/src/config.js";
import { TelemetryController } from "../../p4runtime-controller/src/controller.js";
import { P4Info } from "../../p4runtime/src/generated/p4/config/v1/p4info.js";
import { GetForwardingPipelineConfigRequest_ResponseType, SetForwardingPipelineConfigRequest_Action, Update_Type } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { P4RuntimeClient, toUint128, type Logger } from "../../p4runtime/src/index.js";
import { startSwitch as startSwitchProcess } from "../support/controller-restart.js";
import { readIoFrames } from "../support/nvme-frames.js";
import { startCli } from "../support/cli.js";
import { exited, until, waitFor } from "../support/wait.js";

const root = new URL("../..", import.meta.url).pathname;
const P4INFO = join(root, "p4/build/telemetry.p4info.json");
const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});

/**
 * Another client (election id 10: primary over the controller's 1 while it
 * is there) loads the BMv2 pipeline on the switch at `port` with `cookie`, and goes away.
 */
async function loadPipeline(port: number, cookie: bigint): Promise<void> {
  const client = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n, timeoutMs: 10_000 });
  const stream = client.streamChannel();
  try {
    stream.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(10n), status: undefined } } });
    await stream[Symbol.asyncIterator]().next();
    await client.setPipeline({
      role: "",
      electionId: toUint128(10n),
      action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT,
      config: { p4info: P4Info.fromJSON(JSON.parse(readFileSync(P4INFO, "utf8"))), p4DeviceConfig: readFileSync(join(root, "p4/build/telemetry.json")), cookie: { cookie } },
    });
  } finally {
    stream.close();
    client.close();
  }
}

/** What the switch at `port` holds: its cookie and how many table entries. */
/** The tables of the program whose entries are constant (P4Info `isConstTable`). */
function constTables(): Set<number> {
  const info = JSON.parse(readFileSync(P4INFO, "utf8")) as { tables?: Array<{ preamble: { id: number }; isConstTable?: boolean }> };
  return new Set((info.tables ?? []).filter((t) => t.isConstTable).map((t) => t.preamble.id));
}

async function switchHolds(port: number): Promise<{ cookie: bigint | undefined; entries: number }> {
  const client = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n, timeoutMs: 10_000 });
  try {
    const got = await client.getPipeline(GetForwardingPipelineConfigRequest_ResponseType.COOKIE_ONLY);
    const entries = await client.readAll([{ entity: { $case: "tableEntry", value: { tableId: 0, match: [], priority: 0, isDefaultAction: false } as never } }]);
    // (The program's constant entries, the histograms' bucket tables, are not written by anyone.)
    const constant = constTables();
    return { cookie: got.config?.cookie?.cookie, entries: entries.filter((e) => !(e.entity?.$case === "tableEntry" && constant.has(e.entity.value.tableId))).length };
  } finally {
    client.close();
  }
}

function attachedController(port: number, p4info = P4INFO, logger?: Logger): TelemetryController {
  const c = new TelemetryController(parseConfig({
    switch: { address: `127.0.0.1:${port}`, switch_id: "tor", timestamp_unit_ns: 1 },
    pipeline: { p4info, push: false },
    ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.1/32"] }, { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] }],
    digest: { max_list_size: 64, max_timeout_us: 2000 },
  }), { logger });
  cleanups.push(() => c.stop());
  return c;
}

function withExporter(controller: TelemetryController): RecordJson[] {
  const records: RecordJson[] = [];
  const exporter = new Exporter({ intervalNs: 250_000_000n, ioTimeoutNs: 300_000_000n, correlationWindowNs: 100_000_000n });
  exporter.addSink((r) => records.push(r));
  controller.on("digests", (b) => exporter.onBatch(b));
  const tick = setInterval(() => exporter.metrics.advance(BigInt(Date.now()) * 1_000_000n), 20);
  cleanups.push(() => {
    clearInterval(tick);
    exporter.finish();
  });
  return records;
}

let fed = 0;
async function feed(sw: ChildProcess, n: number): Promise<void> {
  for (let k = 0; k < n; k++, fed++) {
    sw.send({ frames: readIoFrames(fed) });
    await new Promise((r) => setTimeout(r, 4));
  }
}
const ioCount = (records: RecordJson[], from = 0) => records.filter((r): r is IoRecordJson => r.type === "io" && !r.incomplete && r.cmd_psn >= from).length;

test("attached to a pipeline another client loaded: tables and digests set up, records flow, the switch keeps its pipeline and cookie", async () => {
  const sw = await startSwitchProcess(children);
  await loadPipeline(sw.port, 0xabcdef0012345678n);
  const controller = attachedController(sw.port);
  const records = withExporter(controller);
  controller.start();
  await controller.ready(10_000);
  const from = fed;
  await feed(sw.child, 60);
  await until(() => ioCount(records, from) >= 55, 5000, () => `records from the attached switch (${ioCount(records, from)})`);
  const held = await switchHolds(sw.port);
  expect(held.cookie).toBe(0xabcdef0012345678n);
  expect(held.entries).toBeGreaterThan(0);
  expect(controller.stats.sessions).toBe(1);
}, 30_000);

test("a controller attaching after another gave histogram ids: the earlier ids are removed, its own written without a failed write, and its histograms count under them", async () => {
  const sw = await startSwitchProcess(children);
  await loadPipeline(sw.port, 0x1234n);
  const first = attachedController(sw.port);
  first.start();
  await first.ready(10_000);
  await feed(sw.child, 10);
  await until(() => (first.histograms?.pairCount ?? 0) > 0, 5000, () => "the first controller's pair id");
  await new Promise((r) => setTimeout(r, 200)); // (its id written)
  await first.stop();
  const warnings: string[] = [];
  const logger: Logger = { debug: () => {}, info: () => {}, warn: (msg: string, f?: Record<string, unknown>) => warnings.push(`${msg} ${JSON.stringify(f ?? {})}`), error: () => {} } as unknown as Logger;
  const second = attachedController(sw.port, P4INFO, logger);
  second.start();
  await second.ready(10_000);
  await second.readHistograms(); // the baseline: what the switch counted before
  await feed(sw.child, 10);
  await until(() => (second.histograms?.pairCount ?? 0) > 0, 5000, () => "the second controller's pair id");
  await new Promise((r) => setTimeout(r, 200));
  await feed(sw.child, 20);
  await new Promise((r) => setTimeout(r, 300));
  const h = (await second.readHistograms())!;
  expect(warnings.filter((w) => w.includes("histogram"))).toEqual([]);
  // The later I/Os count under the pair's new id (the earliest, before it landed, in the overflow).
  const e2e = (pair: boolean) => h.io.filter((d) => d.figure === "e2e_c" && (d.host !== null) === pair).reduce((a, d) => a + d.buckets.reduce((x, [, n]) => x + n, 0), 0);
  expect(e2e(true)).toBeGreaterThanOrEqual(15);
  expect(e2e(true) + e2e(false)).toBe(30);
}, 60_000);

test("the histogram counters cleared behind the controller's back mid-run: that read counts nothing (no negative count), it is counted, and the next read counts exactly what came after", async () => {
  const sw = await startSwitchProcess(children);
  await loadPipeline(sw.port, 0x1234n);
  const c = attachedController(sw.port);
  c.start();
  await c.ready(10_000);
  await c.readHistograms(); // the baseline
  const e2e = (h: Awaited<ReturnType<TelemetryController["readHistograms"]>>) => h!.io.filter((d) => d.figure === "e2e_c").reduce((a, d) => a + d.buckets.reduce((x, [, n]) => x + n, 0), 0);
  await feed(sw.child, 10);
  await new Promise((r) => setTimeout(r, 300));
  expect(e2e(await c.readHistograms())).toBe(10);
  // Ten more I/Os, then every histogram counter set to 0 by a write the controller does not know of.
  await feed(sw.child, 10);
  await new Promise((r) => setTimeout(r, 300));
  const info = JSON.parse(readFileSync(P4INFO, "utf8")) as { counters: Array<{ preamble: { id: number; name: string } }> };
  const histogramCounters = info.counters.filter((x) => x.preamble.name.includes(".histograms."));
  expect(histogramCounters.length).toBeGreaterThan(0);
  await c.connection.client.write(histogramCounters.map((x) => ({ type: Update_Type.MODIFY, entity: { entity: { $case: "counterEntry" as const, value: { counterId: x.preamble.id, index: undefined, data: { packetCount: 0n, byteCount: 0n } } } } })), 1n);
  const decreasedBefore = c.histograms!.cellsDecreased;
  const cleared = (await c.readHistograms())!;
  expect(cleared.io.flatMap((d) => d.buckets).filter(([, n]) => n < 0)).toEqual([]);
  expect(cleared.fct.flatMap((d) => d.buckets).filter(([, n]) => n < 0)).toEqual([]);
  expect(c.histograms!.cellsDecreased).toBeGreaterThan(decreasedBefore);
  // What came after the clear is counted from the baselines read anew: exactly those I/Os.
  await feed(sw.child, 10);
  await new Promise((r) => setTimeout(r, 300));
  expect(e2e(await c.readHistograms())).toBe(10);
}, 60_000);

test("the switch started with its pipeline (rdma-telemetry switch --p4info --device-config, no cookie): attached and set up, nothing pushed", async () => {
  const sw = startCli(["switch", "--listen", "127.0.0.1:0", "--p4info", P4INFO, "--device-config", join(root, "p4/build/telemetry.json")], root, children);
  const port = Number(await waitFor(() => /P4Runtime on [\d.]+:(\d+)/.exec(sw.out())?.[1], 30_000, "the switch's port"));
  const controller = attachedController(port);
  controller.start();
  await controller.ready(10_000);
  const held = await switchHolds(port);
  expect(held.cookie, "no cookie written: the pipeline is the switch's own").toBeUndefined();
  expect(held.entries).toBeGreaterThan(0);
  expect(controller.stats).toMatchObject({ primary: true, sessions: 1 });
}, 60_000);

test("a switch running another P4Info: refused with one message naming the difference, nothing written", async () => {
  const sw = await startSwitchProcess(children);
  await loadPipeline(sw.port, 7n);
  const errors: string[] = [];
  const log: Logger = { debug() {}, info() {}, warn() {}, error: (msg, f) => errors.push(`${msg}: ${String(f?.error)}`) };
  // The compact layout's P4Info (Tofino's digests): a build this switch does not run.
  const controller = attachedController(sw.port, join(root, "p4/build/compact/telemetry.p4info.json"), log);
  const retrying: Array<{ error: string; inMs: number }> = [];
  controller.connection.on("retrying", (r) => retrying.push(r));
  controller.start();
  await until(() => retrying.length > 0, 10_000, "the controller to give up on the switch");
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatch(/^setting up the switch failed: refusing to attach: the switch's pipeline is not the one in pipeline\.p4info: digest 'io_digest_t': field 2 is 'event' on the switch, 'evo' here/);
  expect(retrying[0]!.error).toMatch(/^refusing to attach/);
  // Not retried at once: an operator's mistake, tried again after the long delay.
  expect(retrying[0]!.inMs).toBeGreaterThanOrEqual(10_000);
  expect(controller.stats.primary).toBe(false);
  expect(await switchHolds(sw.port)).toEqual({ cookie: 7n, entries: 0 });
}, 30_000);

test.each([
  ["the same cookie (the controller's entries gone tell it)", 0x1234n],
  ["a new cookie", 0x5678n],
])("a switch restarted and loaded again with %s under an attached controller: a new session, counted, records on its clock", async (_how, cookie) => {
  const first = await startSwitchProcess(children);
  const port = first.port;
  await loadPipeline(port, 0x1234n);
  const controller = attachedController(port);
  const records = withExporter(controller);
  controller.start();
  await controller.ready(10_000);
  await feed(first.child, 60);
  await until(() => ioCount(records) >= 55, 5000, "records before the restart");
  first.child.kill("SIGKILL");
  await exited(first.child);
  await until(() => !controller.stats.primary, 5000, "the controller to see the switch go");
  const second = await startSwitchProcess(children, port);
  // (gRPC's connection to the address may still be backing off from the killed switch: try until it answers.)
  await until(() => loadPipeline(port, cookie).then(() => true, () => false), 10_000, "the pipeline loaded on the restarted switch", 100);
  await until(() => controller.stats.primary, 10_000, "the controller to attach to the restarted switch");
  expect(controller.stats.sessions).toBe(2);
  const before = fed;
  const restarted = BigInt(Date.now()) * 1_000_000n;
  await feed(second.child, 60);
  await until(() => ioCount(records, before) >= 55, 5000, "records after the restart");
  await controller.stop();
  // The restarted switch's clock starts at 0: placed after the restart, not in the first session.
  for (const r of records.filter((x): x is IoRecordJson => x.type === "io" && !x.incomplete && x.cmd_psn >= before)) {
    expect(BigInt(r.cmd_unix_ns) >= restarted - 50_000_000n, `I/O ${r.cmd_psn} at ${r.cmd_unix_ns}, restart at ${restarted}`).toBe(true);
  }
  for (const c of cleanups.splice(0).reverse()) await c();
  const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
  expect(stats.at(-1)).toMatchObject({ switch_restarts: 1 });
  expect((await switchHolds(port)).cookie).toBe(cookie);
}, 60_000);
