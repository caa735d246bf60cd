// A live controller on a switch that goes quiet, as real processes (switch,
// controller): every interval gets its switch_stats record, digests or none,
// so that a quiet switch is told from a gone one.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import type { RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { ioFeeder, startController, startSwitch, stop, writeControllerConfig } from "../support/controller-restart.js";
import { scratch } from "../support/scratch.js";

const { dir, children } = scratch("quiet-switch-");

test("a switch that sends no digests for seconds still has a switch_stats record for every interval", async () => {
  const sw = await startSwitch(children);
  const config = writeControllerConfig(dir, sw.port, "tor");
  const out = join(dir, "records.jsonl");
  const c = await startController(["--config", config, "--out", out], { KAFKA_BROKERS: "" }, children);
  await ioFeeder()(sw.child, 20);
  const quietFrom = BigInt(Date.now()) * 1_000_000n;
  await new Promise((r) => setTimeout(r, 6500)); // quiet; intervals close 3 s behind
  await stop(c, "SIGTERM");
  await stop(sw.child, "SIGKILL");
  const stats = readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson).filter((r): r is SwitchStatsJson => r.type === "switch_stats");
  const starts = stats.map((s) => BigInt(s.interval_start_unix_ns));
  expect(starts.slice(1).map((s, i) => s - starts[i]!), "one record per interval, none skipped").toEqual(starts.slice(1).map(() => 1_000_000_000n));
  expect(starts.filter((s) => s > quietFrom).length, "records of quiet intervals").toBeGreaterThanOrEqual(3);
  expect(stats.at(-1)).toMatchObject({ digests_received: 40, digests_lost: 0 });
}, 30_000);
