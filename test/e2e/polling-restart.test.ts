// A polling controller with records of its own, killed -9 twice mid-run and
// restarted on its journal each time, live on a software switch replaying
// one ToR's capture at its pace. Its records say less than full mode where
// no window held a pair or no controller listened, never more or other.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { startCli, type CliProcess } from "../support/cli.js";
import { pollingMismatches, printed, truthIos } from "../support/fabric.js";
import { pollingSwitch } from "../support/polling-switch.js";
import { scratch } from "../support/scratch.js";

const { dir, children } = scratch("polling-restart-");

const CAPTURE_MS = Number(process.env.RESTART_CAPTURE_MS ?? 4000);
// RESTART_SEED=N: another generated workload (the default is the one CI runs).
const SEED = Number(process.env.RESTART_SEED ?? 7);

test("polling controller killed -9 twice mid-rotation, restarted on its journal: no record says more than the switch saw", async () => {
  const { workload, sw, config } = await pollingSwitch(dir, children, { durationMs: CAPTURE_MS, seed: SEED, load: 0.3, listTimeoutUs: 50_000 });
  const out = join(dir, "records.jsonl");
  const journal = join(dir, "journal");
  const start = () => startCli(["controller", "--config", config, "--out", out, "--append", "--journal", journal, "--log-level", "info"], dir, children);
  const runs: CliProcess[] = [start()];
  // The capture starts 1.5 s after the controller set the pipeline.
  await printed(runs[0]!, /primary on/);
  const t0 = Date.now() + 1500;
  for (const at of [0.3, 0.6]) {
    await new Promise((r) => setTimeout(r, Math.max(0, t0 + at * CAPTURE_MS - Date.now())));
    runs.at(-1)!.child.kill("SIGKILL");
    await runs.at(-1)!.exited;
    runs.push(start());
    await printed(runs.at(-1)!, /primary on/);
  }
  // (A list the switch sent to a controller as it was killed is never acknowledged: the sequence numbers count it lost.)
  await printed(sw, /the captures are in/, 120_000);
  await new Promise((r) => setTimeout(r, 2000));
  runs.at(-1)!.child.kill("SIGTERM");
  expect(await runs.at(-1)!.exited, runs.at(-1)!.out().slice(-2000)).toBe(0);
  const ios = readFileSync(out, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as RecordJson).filter((r): r is IoRecordJson => r.type === "io");
  const truth = truthIos(workload);
  const { wrong, absent } = pollingMismatches(truth, ios);
  const keys = ios.map((r) => `${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn}`);
  console.log(`polling restarts: ${ios.length} records of ${truth.length} I/Os, ${absent} saying less, ${wrong.length} saying other, ${keys.length - new Set(keys).size} duplicated`);
  console.log(sw.out().split("\n").filter((l) => /dropped|acknowledged|lists/.test(l)).join("\n"));
  for (const r of runs) console.log(r.out().split("\n").filter((l) => /replayed|taken out|no longer watched|warn|error/i.test(l)).slice(0, 12).join("\n"));
  if (wrong.length) {
    // POLLING_RESTART_DEBUG=PREFIX: every process's output and the records, in PREFIX-PID.log.
    if (process.env.POLLING_RESTART_DEBUG) writeFileSync(`${process.env.POLLING_RESTART_DEBUG}-${process.pid}.log`, [...runs.map((r) => r.out()), sw.out(), readFileSync(out, "utf8")].join("\n=====\n"));
    console.log(wrong.slice(0, 30).join("\n"));
    // When the commands said wrong came, in ms of the capture, beside the kills (at 30 % and 60 % of it, about).
    const epoch = truth.reduce((a, t) => (t.cmd_unix_ns !== null && BigInt(t.cmd_unix_ns) < a ? BigInt(t.cmd_unix_ns) : a), 1n << 80n);
    const bad = new Set(wrong.map((w) => w.slice(0, w.indexOf(": "))));
    console.log(`kills at ${0.3 * CAPTURE_MS} and ${0.6 * CAPTURE_MS} ms; wrong commands at ${ios.filter((r) => bad.has(`${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn}`)).map((r) => `${Number(BigInt(r.cmd_unix_ns) - epoch) / 1e6} ms`).join(", ")}`);
  }
  expect(ios.length).toBeGreaterThan(0);
  expect(wrong).toEqual([]);
  expect(keys.length - new Set(keys).size).toBe(0);
  // The restarts replayed what their predecessor had not settled, and took the switch with the earlier window on it
  // (its pairs adopted when their digests came first, else deleted and told as left), inserting nothing it held.
  expect(runs.slice(1).some((r) => /replayed the digest journal/.test(r.out()))).toBe(true);
  for (const r of runs) expect(r.out()).not.toMatch(/ALREADY_EXISTS/);
}, 240_000);
