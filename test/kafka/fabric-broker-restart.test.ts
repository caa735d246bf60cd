// A fabric whose broker restarts mid-run (a rolling upgrade, a crash): two
// software switches replay a generated two-ToR workload, a controller per
// switch publishes digests only, two exporter group members join them. The
// broker is stopped once the first records are out and started again 5 s
// later: every I/O once on the io topic read read_committed (by this
// project's committed-record reader and by Kafka's own console consumer),
// RTT included, and `consume`, tailing the io topic through the outage,
// prints each of them once.
import { expect, onTestFailed, test } from "vitest";
import { startCli } from "../support/cli.js";
import { checkIos, exporter, generateWorkload, placed, printed, readIoRecords, startFabric, truthIos } from "../support/fabric.js";
import { javaCommitted, ownBroker } from "../support/kafka-tools.js";
import { until } from "../support/wait.js";
import { scratch } from "../support/scratch.js";

const { dir, children } = scratch("fabric-broker-");


// The broker is SIGKILLed: it may come back without the producer state that keeps an idempotent producer's
// requests in order. A controller with several produce requests in flight then had one acknowledged after an
// earlier one had failed: a switch's response digest landed before its command's in the partition, and the
// exporter group made two records of the I/O (in 9 of 11 runs, 2 to 59 of 1,976 I/Os twice). Controllers now send
// one request at a time (app/run-controller.ts). On the default broker and client only (the broker's own start
// and the outage take a minute and a half): the member is kafkajs in every run, and kafkajs sends one request
// at a time whatever the setting.
test.skipIf(process.env.KAFKA_CLIENT === "kafkajs" || (process.env.KAFKA_VERSION ?? "4").startsWith("3."))("the broker restarts mid-run: every I/O once, equal to the ground truth with its RTT, as Kafka's console consumer reads it too", async () => {
  const broker = await ownBroker();
  try {
    const workload = await generateWorkload(dir, children, 300, "mixed");
    const truth = truthIos(workload);
    const p = `fabric-broker-${Date.now()}`;
    // (The default silence, 60 s: a broker that takes 20–30 s to come back must not make a switch count as silent.)
    const silence = ["--silent-switch-ms", "60000", "--switch-id", "tor-c", "--switch-id", "tor-s"];
    const members = [0, 1].map(() => exporter(dir, broker.brokers, p, children, silence));
    await Promise.all(members.map((m) => printed(m, /member of group/)));
    // `consume` tails the io topic through the outage, as an operator's would.
    const tail = startCli(["consume", "--topic", `${p}.io.v1`, "--from-beginning", "--kafka-brokers", broker.brokers], dir, children);
    const fabric = await startFabric({ dir, workload, brokers: broker.brokers, prefix: p, children });
    onTestFailed(() => console.log([...members.map((m) => m.out()), ...[...fabric.controllers, tail].map((m) => m.out().slice(-5000))].join("\n----\n")));
    // Stopped once the first records are out, and started again 5 s later; then the io topic is read afresh.
    await readIoRecords(broker.brokers, `${p}.io.v1`, (got) => got.length > 0, 120_000);
    await broker.restart({ downMs: 5000 });
    let completeAt = 0;
    const ios = await readIoRecords(broker.brokers, `${p}.io.v1`, (got) => {
      if (!completeAt && got.length >= truth.length) completeAt = Date.now();
      return completeAt > 0 && Date.now() - completeAt > 3000;
    }, 200_000);
    const c = checkIos(truth, ios);
    const java = (await javaCommitted(broker.brokers, `${p}.io.v1`, 15_000)).filter((r) => r.type === "rdma.telemetry.v1.IoRecord");
    // Kafka's own reader beside ours: a copy only ours read would be our reader's, not on the topic.
    const javaAt = new Set(java.map((r) => `${r.partition}@${r.offset}`));
    const notInJava = ios.map((r) => placed.get(r)).filter((at) => at !== undefined && !javaAt.has(at));
    console.log(`broker restarted mid-run: ${JSON.stringify({ truth: truth.length, ...c, java: java.length, readByOursOnly: notInJava.slice(0, 10) })}`);
    expect(c.mismatches).toEqual([]);
    expect(c.duplicates).toBe(0);
    expect(c.lost).toBe(0);
    expect(c.extra).toBe(0);
    expect(c.exact + c.referenceLost + c.saidLess).toBe(truth.length);
    expect(c.withRtt).toBeGreaterThan(truth.length * 0.95);
    expect(java.length, "records Kafka's console consumer read (15 s idle ends it)").toBe(ios.length);
    // What `consume` printed by now: every I/O record once, and for each time it lost the broker (the restart, and a
    // broker still settling may drop it once more) one line, then one when it is back.
    await until(() => tail.out().split("\n").filter((l) => l.includes('"type":"rdma.telemetry.v1.IoRecord"')).length >= ios.length, 30_000, () => `consume to print ${ios.length} I/O records`, 200).catch(() => undefined);
    expect(tail.child.exitCode).toBe(null);
    expect(tail.out().split("\n").filter((l) => l.includes('"type":"rdma.telemetry.v1.IoRecord"')).length).toBe(ios.length);
    const said = tail.out().match(/^consume: (lost the broker|the broker is back)/gm) ?? [];
    expect(said.length >= 2 && said.length % 2 === 0, said.join("\n")).toBe(true);
    expect(said, said.join("\n")).toEqual(said.map((_, i) => (i % 2 === 0 ? "consume: lost the broker" : "consume: the broker is back")));
    for (const m of members) m.child.kill("SIGTERM");
    await Promise.all(members.map((m) => m.exited));
    const summaries = members.map((m) => /exporter: \d+ digests.*/.exec(m.out())?.[0]);
    console.log(summaries.join("\n"));
    for (const s of fabric.controllers) console.log(/(\d+ records? spilled|spill).*$/m.exec(s.out())?.[0] ?? "");
  } finally {
    await broker.stop();
  }
}, 300_000);
