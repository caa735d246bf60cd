// The controller SIGKILLed mid-traffic and started again on its digest
// journal, writing a JSON-lines file: every I/O whose digests the switch
// delivered before the kill is in the file, none twice, and what the switch
// sent while no controller listened is counted as lost, once, however many
// times the controller is killed.
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import type { IoRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { checkRestartRecords, digestsSettled, ioFeeder, killAndRestartController, startController, startSwitch, stop, writeControllerConfig } from "../support/controller-restart.js";
import { scratch } from "../support/scratch.js";

const { dir, children } = scratch("controller-restart-");
const read = (f: string) => readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson);

test("SIGKILL of the controller mid-traffic: after a restart on its journal, every delivered I/O is recorded once, the gap counted", async () => {
  const out = join(dir, "records.jsonl");
  await killAndRestartController({ dir, switchId: "tor", children, env: { KAFKA_BROKERS: "" }, args: (first) => ["--out", out, ...(first ? [] : ["--append"])] });
  checkRestartRecords(readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson));
}, 60_000);

test("SIGKILL twice with the controller down each time: each gap counts as lost once, in the first interval the controller is back, and every interval's totals are written once", async () => {
  const d = mkdtempSync(join(dir, "twice-"));
  const sw = await startSwitch(children);
  const config = writeControllerConfig(d, sw.port, "tor");
  const out = join(d, "records.jsonl");
  const args = ["--config", config, "--journal", join(d, "journal"), "--out", out];
  const feed = ioFeeder();
  const run = (append: boolean) => startController([...args, ...(append ? ["--append"] : [])], { KAFKA_BROKERS: "" }, children);
  const up = [200, 300, 200];
  const down = [150, 100];
  const c1 = await run(false);
  await feed(sw.child, up[0]!);
  await digestsSettled(sw.child);
  await stop(c1, "SIGKILL");
  await feed(sw.child, down[0]!); // nobody listens
  const c2 = await run(true);
  const back = BigInt(Date.now()) * 1_000_000n;
  await feed(sw.child, up[1]!);
  await new Promise((r) => setTimeout(r, 4500)); // intervals close: the first gap is in the records, and in the journal
  await digestsSettled(sw.child);
  await stop(c2, "SIGKILL");
  const afterSecond = read(out);
  await feed(sw.child, down[1]!);
  const c3 = await run(true);
  await feed(sw.child, up[2]!);
  await new Promise((r) => setTimeout(r, 3500));
  await stop(c3, "SIGTERM");
  await stop(sw.child, "SIGKILL");
  const records = read(out);
  const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
  const last = stats.at(-1)!;
  // Every I/O makes the same number of digests: those of the I/Os fed while no controller ran are the loss, exactly.
  const perIo = last.digests_received / (up[0]! + up[1]! + up[2]!);
  expect(Number.isInteger(perIo) && perIo > 0, `${last.digests_received} digests received for ${up[0]! + up[1]! + up[2]!} I/Os`).toBe(true);
  expect(last).toMatchObject({ digests_lost: perIo * (down[0]! + down[1]!), digests_duplicated: 0, switch_restarts: 0 });
  // The first gap was counted before the second crash, in the first interval the second run had digests for.
  const secondRun = afterSecond.filter((r): r is SwitchStatsJson => r.type === "switch_stats" && r.digests_lost > 0);
  expect(secondRun[0]?.digests_lost).toBe(perIo * down[0]!);
  expect(BigInt(secondRun[0]!.interval_end_unix_ns) > back && BigInt(secondRun[0]!.interval_start_unix_ns) <= back + 500_000_000n, `${secondRun[0]!.interval_start_unix_ns}, back at ${back}`).toBe(true);
  if (process.env.SHOW_FIGURES) console.log(JSON.stringify({ perIo, last, firstBack: secondRun[0] }));
  expect(new Set(stats.map((s) => s.totals_since_unix_ns)).size, "totals counted from the first run's start").toBe(1);
  const intervals = stats.map((s) => s.interval_start_unix_ns);
  expect(new Set(intervals).size, "no switch_stats written twice").toBe(intervals.length);
  const psns = records.filter((r): r is IoRecordJson => r.type === "io").map((r) => r.cmd_psn);
  expect(new Set(psns).size, "no I/O recorded twice").toBe(psns.length);
}, 90_000);
