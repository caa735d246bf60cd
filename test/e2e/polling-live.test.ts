// A controller with records of its own (no Kafka), in polling mode, live on
// a software switch replaying one ToR's capture at its pace: digest lists
// wait up to 150 ms for more samples against rotations every 100 ms, so its
// digest stream lags the switch by more than a rotation period. Its records
// say less than full mode where a window did not hold a pair, never more or
// other (p4runtime-controller/src/window-gate.ts: a pair put back into the
// window is handed on once the stream has passed the rotation).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { startCli } from "../support/cli.js";
import { pollingMismatches, printed, truthIos } from "../support/fabric.js";
import { pollingSwitch } from "../support/polling-switch.js";
import { scratch } from "../support/scratch.js";

const { dir, children } = scratch("polling-live-");

test("polling live, digest lists more than a rotation late: no record says more than the switch saw", async () => {
  const { workload, sw, config } = await pollingSwitch(dir, children, { durationMs: 1000, seed: 5, load: 0.5, listTimeoutUs: 150_000 });
  const out = join(dir, "records.jsonl");
  const controller = startCli(["controller", "--config", config, "--out", out, "--log-level", "info"], dir, children);
  await printed(sw, /every digest list acknowledged/, 120_000);
  controller.child.kill("SIGTERM");
  expect(await controller.exited, controller.out().slice(-2000)).toBe(0);
  const ios = readFileSync(out, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as RecordJson).filter((r): r is IoRecordJson => r.type === "io");
  const truth = truthIos(workload);
  const { wrong, absent } = pollingMismatches(truth, ios);
  console.log(`polling live: ${ios.length} records of ${truth.length} I/Os, ${absent} saying less, ${wrong.length} saying other`);
  if (wrong.length) console.log(wrong.join("\n"));
  expect(ios.length).toBeGreaterThan(0);
  expect(wrong).toEqual([]);
}, 180_000);
