// A fabric on real processes and a real broker: two software switches replay
// the two captures of a generated two-ToR workload, a controller per switch
// publishes digests only, and `rdma-telemetry exporter` members of one group
// join the vantages. Every I/O record on rdma.io.v1 (read read_committed)
// equals the ground truth, RTT included, exactly once: also when a member is
// killed -9 mid-run, when a member joins mid-run and leaves, and when a
// controller is killed and restarted on its journal.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, inject, test } from "vitest";
import type { IoTruth } from "../../traffic/src/types.js";
import { checkIos, exporter, generateWorkload, printed, readIoRecords, startFabric, truthIos } from "../support/fabric.js";

const brokers = inject("kafkaBrokers");
const dir = mkdtempSync(join(tmpdir(), "fabric-"));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let workload: string;
let truth: IoTruth[];
beforeAll(async () => {
  workload = await generateWorkload(dir, children);
  truth = truthIos(workload);
}, 120_000);

const prefix = (tag: string) => `fabric-${tag}-${Date.now()}`;
const note = (what: string, figures: object) => console.log(`${what}: ${JSON.stringify(figures)}`);

test("two exporters, one killed -9 mid-run: every I/O once on rdma.io.v1, equal to the ground truth with its RTT", async () => {
  const p = prefix("kill");
  const members = [exporter(dir, brokers, p, children), exporter(dir, brokers, p, children)];
  await Promise.all(members.map((m) => printed(m, /member of group/)));
  const fabric = await startFabric({ dir, workload, brokers, prefix: p, children });
  // Kill one member once the first records are out: it holds open halves and maybe an open transaction.
  let killedAt = 0;
  let recoveredAt = 0;
  const ios = await readIoRecords(brokers, `${p}.io.v1`, (got) => {
    if (!killedAt && got.length > 0) {
      members[0]!.child.kill("SIGKILL");
      killedAt = Date.now();
    }
    if (killedAt && !recoveredAt && got.length >= truth.length) recoveredAt = Date.now();
    return recoveredAt > 0 && Date.now() - recoveredAt > 3000; // anything more would be a duplicate
  }, 120_000);
  const c = checkIos(truth, ios);
  note("kill -9 of one exporter", { ...c, truth: truth.length, recovery_ms: recoveredAt - killedAt });
  if (c.lost || c.duplicates) console.log(members.map((m) => m.out()).join("\n----\n"));
  expect(c.mismatches).toEqual([]);
  expect(c.duplicates).toBe(0);
  expect(c.lost).toBe(0);
  expect(c.exact + c.referenceLost).toBe(truth.length);
  expect(ios.length).toBe(truth.length);
  for (const s of [...fabric.controllers, ...fabric.switches, members[1]!]) s.child.kill("SIGTERM");
  const out = await members[1]!.exited.then(() => members[1]!.out());
  expect(out).toMatch(/partitions taken over/);
}, 240_000);
