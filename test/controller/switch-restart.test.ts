// A switch that is killed and started again mid-traffic, as real processes:
// the switch (its own process, live clock) and the controller with the
// exporter (this process, over gRPC). After the restart the records keep the
// right time, no interval is emitted twice, and the restart is counted.
import type { ChildProcess } from "node:child_process";
import { afterEach, expect, test } from "vitest";
import { Exporter } from "../../exporter/src/exporter.js";
import type { IoAggregateJson, IoRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { parseConfig } from "../../p4runtime-controller/src/config.js";
import { TelemetryController } from "../../p4runtime-controller/src/controller.js";
import { startSwitch as startSwitchProcess } from "../support/controller-restart.js";
import { readIoFrames } from "../support/nvme-frames.js";
import { exited, until } from "../support/wait.js";

const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
const startSwitch = (port = 0) => startSwitchProcess(children, port);
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});

test("SIGKILL of the switch mid-traffic and a restart: records keep the right time, no interval twice, the restart counted", async () => {
  const first = await startSwitch();
  const port = first.port;
  const controller = new TelemetryController(parseConfig({
    switch: { address: `127.0.0.1:${port}`, switch_id: "tor", timestamp_unit_ns: 1 },
    ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.1/32"] }, { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] }],
    digest: { max_list_size: 64, max_timeout_us: 2000 },
  }));
  const records: RecordJson[] = [];
  const exporter = new Exporter({ intervalNs: 250_000_000n, ioTimeoutNs: 300_000_000n, correlationWindowNs: 100_000_000n });
  exporter.addSink((r) => records.push(r));
  controller.on("digests", (b) => exporter.onBatch(b));
  const tick = setInterval(() => exporter.metrics.advance(BigInt(Date.now()) * 1_000_000n), 20);
  cleanups.push(() => clearInterval(tick));
  controller.start();
  cleanups.push(() => controller.stop());
  await controller.ready(10_000);

  const t0 = BigInt(Date.now()) * 1_000_000n;
  let fed = 0;
  const feed = async (sw: ChildProcess, n: number) => {
    for (let k = 0; k < n; k++, fed++) {
      sw.send({ frames: readIoFrames(fed) });
      await new Promise((r) => setTimeout(r, 4));
    }
  };
  await feed(first.child, 150);
  await until(() => records.filter((r) => r.type === "io").length >= 140, 5000, "records before the kill");
  first.child.kill("SIGKILL");
  await exited(first.child);
  await until(() => !controller.stats.primary, 5000, "the controller to see the switch go");
  const second = await startSwitch(port);
  await until(() => controller.stats.sessions === 2 && controller.stats.primary, 10_000, "the controller to set up the restarted switch");
  const before = fed;
  const restarted = BigInt(Date.now()) * 1_000_000n;
  await feed(second.child, 150);
  await until(() => records.filter((r): r is IoRecordJson => r.type === "io" && r.cmd_psn >= before).length >= 140, 5000, "records after the restart");
  await controller.stop();
  exporter.finish();
  const t1 = BigInt(Date.now()) * 1_000_000n;

  const ios = records.filter((r): r is IoRecordJson => r.type === "io" && !r.incomplete);
  // A switch's clock is calibrated on its first digest list, which carries the switch's delay from a
  // packet to its list: a record may land that far off its real time, tens of ms on a loaded machine.
  // A wrong session's calibration would be off by seconds.
  const slack = 500_000_000n;
  // Every record on this run's clock: not shifted by the first session's calibration.
  for (const r of ios) {
    expect(BigInt(r.cmd_unix_ns) >= t0 - 1_000_000_000n && BigInt(r.cmd_unix_ns) <= t1 + slack, `I/O ${r.cmd_psn} at ${r.cmd_unix_ns}, run from ${t0} to ${t1}`).toBe(true);
  }
  // The restarted switch's clock starts at 0 again: its records are placed after the restart, not back in the first session.
  for (const r of ios.filter((x) => x.cmd_psn >= before)) expect(BigInt(r.cmd_unix_ns) >= restarted - slack, `I/O ${r.cmd_psn} at ${r.cmd_unix_ns}, restart at ${restarted}`).toBe(true);
  expect(ios.filter((r) => r.cmd_psn < before).length).toBeGreaterThanOrEqual(140);
  expect(ios.filter((r) => r.cmd_psn >= before).length).toBeGreaterThanOrEqual(140);
  // No interval emitted twice.
  const intervals = records.filter((r): r is IoAggregateJson => r.type === "io_interval").map((r) => `${r.interval_start_unix_ns}|${r.host}|${r.target}|${r.op}`);
  expect(new Set(intervals).size).toBe(intervals.length);
  const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
  const starts = stats.map((s) => s.interval_start_unix_ns);
  expect(new Set(starts).size).toBe(starts.length);
  expect(stats.at(-1)).toMatchObject({ switch_restarts: 1, digests_duplicated: 0 });
}, 60_000);
