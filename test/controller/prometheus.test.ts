// The controller's /metrics, scraped from the real process while a switch
// feeds it: P4Runtime state, mode and coverage of its switch, and records
// counted as written.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { ioFeeder, startSwitch, stop, writeControllerConfig } from "../support/controller-restart.js";
import { CLI } from "../support/cli.js";
import type { IoHistogramJson, IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { scratch } from "../support/scratch.js";

const root = new URL("../..", import.meta.url).pathname;
const { dir, children } = scratch("controller-metrics-");

const sample = (text: string, name: string) => {
  const line = text.split("\n").find((l) => l.startsWith(name + " ") || l.startsWith(name + "{"));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
};

test("controller --metrics-listen: primary and connected, full-mode coverage, and the records it wrote", async () => {
  const sw = await startSwitch(children);
  const config = writeControllerConfig(dir, sw.port, "tor");
  const out = join(dir, "records.jsonl");
  const c = spawn(process.execPath, [...CLI, "controller", "--config", config, "--out", out, "--metrics-listen", "127.0.0.1:0"], { cwd: root, stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, KAFKA_BROKERS: "" } });
  children.push(c);
  let url = "";
  await new Promise<void>((resolve, reject) => {
    c.stdout!.on("data", (d: Buffer) => {
      const m = /metrics: (\S+)/.exec(d.toString());
      if (m) url = m[1]!;
      if (d.toString().includes("primary on")) resolve();
    });
    c.once("exit", (code) => reject(new Error(`controller exited (${code})`)));
  });
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  const feed = ioFeeder();
  await feed(sw.child, 100);
  // Records are written as intervals close: wait for the first I/O records.
  let text = "";
  for (let i = 0; i < 100 && !(sample(text, 'rdma_telemetry_records_total{type="io",topic="rdma.io.v1"}') ?? 0); i++) {
    text = await (await fetch(url)).text();
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(sample(text, "rdma_telemetry_p4runtime_primary")).toBe(1);
  expect(sample(text, "rdma_telemetry_p4runtime_connected")).toBe(1);
  expect(sample(text, "rdma_telemetry_mode")).toBe(1);
  expect(sample(text, "rdma_telemetry_watchlist_coverage_ratio")).toBe(1);
  // (Full mode: no rotation, none missed.)
  expect(sample(text, 'rdma_telemetry_rotations_missed_total{switch="tor",why="skipped"}')).toBe(0);
  expect(sample(text, 'rdma_telemetry_rotations_missed_total{switch="tor",why="failed"}')).toBe(0);
  expect(sample(text, 'rdma_telemetry_records_total{type="io",topic="rdma.io.v1"}')).toBeGreaterThan(0);
  expect(text).toContain("rdma_telemetry_process_resident_memory_bytes");
  // The data plane's histograms, read at each interval's end. The pair got its id from the first
  // digests; the I/Os before its entry was written count in the overflow, those after it in the pair's own.
  for (let i = 0; i < 50 && !(sample(text, 'rdma_telemetry_histogram_ids{switch="tor",kind="pair"}') ?? 0); i++) {
    await new Promise((r) => setTimeout(r, 100));
    text = await (await fetch(url)).text();
  }
  expect(sample(text, 'rdma_telemetry_histogram_ids{switch="tor",kind="pair"}')).toBeGreaterThan(0);
  await new Promise((r) => setTimeout(r, 300)); // the id's entry written
  await ioFeeder()(sw.child, 100);
  const named = /^rdma_telemetry_dataplane_io_latency_seconds_count\{switch="tor",host="[\d.]+",target="[\d.]+",op="\w+",figure="e2e_\w"\} [1-9]/m;
  for (let i = 0; i < 100 && !named.test(text); i++) {
    await new Promise((r) => setTimeout(r, 100));
    text = await (await fetch(url)).text();
  }
  expect(sample(text, 'rdma_telemetry_histogram_ids_refused_total{switch="tor",kind="pair"}')).toBe(0);
  expect(sample(text, 'rdma_telemetry_histogram_ids_reused_total{switch="tor",kind="pair"}')).toBe(0);
  expect(text).toMatch(named);
  // What the reads cost: cells read, and each read's duration.
  expect(sample(text, 'rdma_telemetry_histogram_cells_read_total{switch="tor"}')).toBeGreaterThan(0);
  expect(sample(text, 'rdma_telemetry_histogram_read_duration_seconds_count{switch="tor"}')).toBeGreaterThan(0);
  // No cell read lower than before on a switch that keeps counting.
  expect(sample(text, 'rdma_telemetry_histogram_cells_lower_total{switch="tor",why="wrap"}')).toBe(0);
  expect(sample(text, 'rdma_telemetry_histogram_cells_lower_total{switch="tor",why="unexplained"}')).toBe(0);
  await stop(c, "SIGTERM");
  const lines = readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson);
  const ios = lines.filter((r): r is IoRecordJson => r.type === "io");
  expect(ios.length).toBeGreaterThanOrEqual(sample(text, 'rdma_telemetry_records_total{type="io",topic="rdma.io.v1"}')!);
  // Every response the switch matched is in the histograms (read at each interval's end and once more at the stop), each figure once.
  const hist = lines.filter((r): r is IoHistogramJson => r.type === "io_histogram");
  for (const f of ["e2e_c_ns", "e2e_s_ns", "dal_ns", "dpl_ns"] as const) {
    expect(hist.filter((h) => h.figure === f).reduce((a, h) => a + h.count, 0), f).toBe(ios.filter((r) => r[f] !== null).length);
  }
}, 60_000);
