// A fabric whose broker restarts mid-run (a rolling upgrade, a crash): two
// software switches replay a generated two-ToR workload, a controller per
// switch publishes digests only, two exporter group members join them. The
// broker is stopped once the first records are out and started again 5 s
// later: every I/O once on the io topic read read_committed (by this
// project's `consume`, which waits for the broker, by its reader started
// afresh, and by Kafka's own console consumer), RTT included.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, expect, onTestFailed, test } from "vitest";
import type { IoRecordJson } from "../../contract/src/records.js";
import { startCli } from "../support/cli.js";
import { until } from "../support/wait.js";
import { checkIos, exporter, generateWorkload, printed, readIoRecords, startFabric, truthIos } from "../support/fabric.js";
import { javaCommitted } from "../support/kafka-tools.js";

const dir = mkdtempSync(join(tmpdir(), "fabric-broker-"));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface OwnBroker { brokers: string; restart(o?: { downMs?: number }): Promise<void>; stop(): Promise<void> }
async function ownBroker(): Promise<OwnBroker> {
  // @ts-expect-error -- plain ESM script without types
  const { startBroker } = (await import("../../scripts/kafka/broker.mjs")) as { startBroker: () => Promise<OwnBroker> };
  return startBroker();
}

// OPEN DEFECT (#27), run on demand (FABRIC_BROKER_RESTART=1): in about four runs of five, some I/O records are
// committed twice once a member has taken a partition over after the restart (re-reading it from its first
// digest): seen as a second copy of a record committed before the outage, and as two copies made after the
// takeover, the second in a transaction of the idle partition some 20 s later. The digest topic holds no
// duplicate; Kafka's console consumer reads both copies. Not in .ci/run until it is fixed.
test.runIf(process.env.FABRIC_BROKER_RESTART === "1")("the broker restarts mid-run: every I/O once, equal to the ground truth with its RTT, as Kafka's console consumer reads it too", async () => {
  const broker = await ownBroker();
  try {
    const workload = await generateWorkload(dir, children, 300, "mixed");
    const truth = truthIos(workload);
    const p = `fabric-broker-${Date.now()}`;
    const silence = ["--silent-switch-ms", "30000", "--switch-id", "tor-c", "--switch-id", "tor-s"];
    const members = [0, 1].map(() => exporter(dir, broker.brokers, p, children, silence));
    await Promise.all(members.map((m) => printed(m, /member of group/)));
    const fabric = await startFabric({ dir, workload, brokers: broker.brokers, prefix: p, children });
    onTestFailed(() => console.log([...members, ...fabric.controllers].map((m) => m.out().slice(-5000)).join("\n----\n")));
    // `rdma-telemetry consume` tails the io topic through the outage (it waits for the broker, as Kafka's console
    // consumer does); the broker is stopped once it has printed the first record, and started again 5 s later.
    const tail = startCli(["consume", "--topic", `${p}.io.v1`, "--from-beginning", "--kafka-brokers", broker.brokers], dir, children);
    const tailed = () => tail.out().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { type: string; value: IoRecordJson }).filter((l) => l.type === "rdma.telemetry.v1.IoRecord").map((l) => l.value);
    await until(() => tailed().length > 0 || tail.child.exitCode !== null, 120_000, () => `a first record from consume: ${tail.out().slice(-2000)}`, 100);
    await broker.restart({ downMs: 5000 });
    let completeAt = 0;
    await until(() => {
      if (!completeAt && tailed().length >= truth.length) completeAt = Date.now();
      return (completeAt > 0 && Date.now() - completeAt > 3000) || tail.child.exitCode !== null;
    }, 200_000, "", 200).catch(() => undefined);
    tail.child.kill("SIGTERM");
    await tail.exited;
    const ios = tailed();
    console.log(tail.out().split("\n").filter((l) => l.startsWith("consume:")).join("\n"));
    expect(tail.out()).toMatch(/consume: lost the broker/);
    expect(tail.out()).toMatch(/consume: the broker is back/);
    // This project's committed-record reader, started afresh, reads the same.
    let seenAt = Date.now();
    let seen = 0;
    const again = await readIoRecords(broker.brokers, `${p}.io.v1`, (got) => {
      if (got.length !== seen) [seen, seenAt] = [got.length, Date.now()];
      return got.length >= ios.length && Date.now() - seenAt > 3000;
    }, 60_000);
    const c = checkIos(truth, ios);
    const java = (await javaCommitted(broker.brokers, `${p}.io.v1`, 5000)).filter((r) => r.type === "rdma.telemetry.v1.IoRecord");
    console.log(`broker restarted mid-run: ${JSON.stringify({ truth: truth.length, ...c, again: again.length, java: java.length })}`);
    expect(again.length).toBe(ios.length);
    expect(c.mismatches).toEqual([]);
    expect(c.duplicates).toBe(0);
    expect(c.lost).toBe(0);
    expect(c.extra).toBe(0);
    expect(c.exact + c.referenceLost + c.unansweredAtEnd).toBe(truth.length);
    expect(c.withRtt).toBeGreaterThan(truth.length * 0.95);
    expect(java.length).toBe(ios.length);
    for (const m of members) m.child.kill("SIGTERM");
    await Promise.all(members.map((m) => m.exited));
    const summaries = members.map((m) => /exporter: \d+ digests.*/.exec(m.out())?.[0]);
    console.log(summaries.join("\n"));
    for (const s of fabric.controllers) console.log(/(\d+ records? spilled|spill).*$/m.exec(s.out())?.[0] ?? "");
  } finally {
    await broker.stop();
  }
}, 300_000);
