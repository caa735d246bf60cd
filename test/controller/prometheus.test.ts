// The controller's /metrics, scraped from the real process while a switch
// feeds it: P4Runtime state, mode and coverage of its switch, and records
// counted as written.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, expect, test } from "vitest";
import { ioFeeder, startSwitch, stop, writeControllerConfig } from "../support/controller-restart.js";
import { CLI } from "../support/cli.js";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "controller-metrics-"));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
  await ioFeeder()(sw.child, 100);
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
  expect(sample(text, 'rdma_telemetry_records_total{type="io",topic="rdma.io.v1"}')).toBeGreaterThan(0);
  expect(text).toContain("rdma_telemetry_process_resident_memory_bytes");
  await stop(c, "SIGTERM");
  const ios = readFileSync(out, "utf8").trim().split("\n").filter((l) => l.includes('"type":"io"')).length;
  expect(ios).toBeGreaterThanOrEqual(sample(text, 'rdma_telemetry_records_total{type="io",topic="rdma.io.v1"}')!);
}, 60_000);
