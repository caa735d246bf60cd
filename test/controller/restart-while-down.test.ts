// What happens while no controller runs, as real processes (switch,
// controller): the controller stopped cleanly and started again on its
// journal counts the digests the switch sent meanwhile as lost and goes on
// with the totals of the run before, and tells a
// switch that restarted meanwhile (a new session: its clock, sequence and
// registers start anew) from one that kept running.
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import type { IoRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { digestsSettled, ioFeeder, startController, startSwitch, stop, writeControllerConfig } from "../support/controller-restart.js";
import { scratch } from "../support/scratch.js";

const { dir, children } = scratch("restart-while-down-");

const settle = () => new Promise((r) => setTimeout(r, 3500)); // the correlation window and the I/O timeout pass, intervals close
const read = (f: string) => readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson);
const lastStats = (records: RecordJson[]) => records.filter((r): r is SwitchStatsJson => r.type === "switch_stats").at(-1)!;

test("a controller stopped cleanly and started again counts what the switch sent meanwhile as lost", async () => {
  const d = mkdtempSync(join(dir, "a-"));
  const sw = await startSwitch(children);
  const config = writeControllerConfig(d, sw.port, "tor");
  const out = join(d, "records.jsonl");
  const args = ["--config", config, "--journal", join(d, "journal"), "--out", out];
  const feed = ioFeeder();
  const first = await startController(args, { KAFKA_BROKERS: "" }, children);
  await feed(sw.child, 100);
  await settle();
  await stop(first, "SIGTERM");
  const firstRun = read(out).length;
  await feed(sw.child, 50); // nobody listens
  const second = await startController([...args, "--append"], { KAFKA_BROKERS: "" }, children);
  await feed(sw.child, 100);
  await settle();
  await stop(second, "SIGTERM");
  const s = lastStats(read(out).slice(firstRun));
  // 50 I/Os, each a command and a response digest, that no controller took.
  expect(s.digests_lost).toBeGreaterThanOrEqual(90);
  expect(s.digests_lost).toBeLessThanOrEqual(110);
  expect(s.switch_restarts).toBe(0);
  // The totals go on from the first run's: each digest of the 250 I/Os fed (2 an I/O) received or lost.
  expect(s.digests_received + s.digests_lost).toBe(500);
  expect(s.totals_since_unix_ns).toBe(lastStats(read(out).slice(0, firstRun)).totals_since_unix_ns);
}, 60_000);

test("a switch that restarted while no controller ran: the new controller counts the restart, and its records keep the right time", async () => {
  const d = mkdtempSync(join(dir, "b-"));
  const first = await startSwitch(children);
  const config = writeControllerConfig(d, first.port, "tor");
  const out = join(d, "records.jsonl");
  const journal = join(d, "journal");
  const feed = ioFeeder();
  const c1 = await startController(["--config", config, "--journal", journal, "--out", out], { KAFKA_BROKERS: "" }, children);
  await feed(first.child, 100);
  await digestsSettled(first.child);
  // Killed with its journal unsettled: the next run replays lists of the switch's old session.
  await stop(c1, "SIGKILL");
  await stop(first.child, "SIGKILL");
  await new Promise((r) => setTimeout(r, 1500)); // the new switch's clock starts well after the old one's
  const second = await startSwitch(children, first.port);
  const c2 = await startController(["--config", config, "--journal", journal, "--out", out, "--append"], { KAFKA_BROKERS: "" }, children);
  const t0 = BigInt(Date.now()) * 1_000_000n;
  await feed(second.child, 100);
  // The switch has taken every packet fed (a loaded machine may have it lag behind the feeding): none is stamped later.
  await digestsSettled(second.child);
  const t1 = BigInt(Date.now()) * 1_000_000n;
  await settle();
  await stop(c2, "SIGTERM");
  const records = read(out);
  expect(lastStats(records).switch_restarts).toBe(1);
  const after = records.filter((r): r is IoRecordJson => r.type === "io" && r.cmd_psn >= 100);
  expect(after.length).toBeGreaterThanOrEqual(95);
  // The new session's clock is placed anew: every command within the time it was fed (give or take a list's delay).
  // The clock is calibrated on the first list, which carries the switch's delay from a packet to its list:
  // tens of ms on a loaded machine. A wrong session's calibration is off by seconds.
  const slack = 500_000_000n;
  const wrong = after.filter((r) => BigInt(r.cmd_unix_ns) < t0 - slack || BigInt(r.cmd_unix_ns) > t1 + slack);
  expect(wrong.map((r) => `${r.cmd_psn}: ${r.cmd_unix_ns}`)).toEqual([]);
  const before = records.filter((r): r is IoRecordJson => r.type === "io" && r.cmd_psn < 100);
  expect(before.length).toBeGreaterThanOrEqual(95);
  const intervals = records.filter((r) => r.type === "io_interval").map((r) => `${r.interval_start_unix_ns}|${r.type === "io_interval" ? r.op : ""}`);
  expect(new Set(intervals).size, "no interval written twice").toBe(intervals.length);
}, 60_000);
