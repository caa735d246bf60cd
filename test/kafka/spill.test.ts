// What a command does with its Kafka records when Kafka is unreachable as it
// ends, as real processes (`rdma-telemetry demo`, `controller` on the
// software switch, `replay`) and a real broker: every record not
// acknowledged is in the spill, the command says how many and where, and the
// next command to reach Kafka delivers each of them once, to the topics it
// names, whatever its own topic prefix.
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, inject, test } from "vitest";
import { recordFromMessage } from "../../exporter/src/kafka/decode.js";
import type { TopicNames } from "../../exporter/src/kafka/encode.js";
import { KafkaSink } from "../../exporter/src/kafka/kafka-sink.js";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { generateTraffic, writeTraffic } from "../../traffic/src/generator.js";
import { startCli } from "../support/cli.js";
import { digestsSettled, ioFeeder, startSwitch, writeControllerConfig } from "../support/controller-restart.js";
import { readToEnd } from "../support/topics.js";
import { until } from "../support/wait.js";
import { scratch } from "../support/scratch.js";

const brokers = inject("kafkaBrokers");
const { dir, children } = scratch("kafka-spill-");

/** A small capture for the runs that deliver a spill. */
beforeAll(() => writeTraffic(join(dir, "cap"), generateTraffic({ seed: 2, layout: "single", durationNs: 20_000_000, hosts: 1, targets: 1, ioRate: 2000 })));

const UNREACHABLE = "127.0.0.1:1";
let runs = 0;
const workDir = (tag: string) => {
  const d = join(dir, `${tag}-${runs++}`);
  mkdirSync(d);
  return d;
};
const prefix = (tag: string) => `spill-${tag}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
const topicsOf = (p: string): TopicNames => ({ io: `${p}.io.v1`, flow: `${p}.flow.v1`, alert: `${p}.alert.v1`, digest: `${p}.digest.v1` });

/** The messages of a spill directory, one string each (topic, key, value, headers). */
function spillMessages(spillDir: string): string[] {
  if (!existsSync(spillDir)) return [];
  return readdirSync(spillDir).filter((f) => f.endsWith(".spill")).sort().flatMap((f) => readFileSync(join(spillDir, f), "utf8").split("\n").filter(Boolean));
}
const asMessage = (line: string) => JSON.parse(line) as { t: string; k: string; v: string; h: Record<string, string> };
const identity = (m: { t: string; k: string; v: string }) => `${m.t}|${m.k}|${m.v}`;

/** Every message on `topics` (topic, key and value of each), read to the partitions' ends; at least `atLeast` of them. */
async function readTopics(topics: string[], atLeast: number): Promise<string[]> {
  let out: string[] = [];
  // Read again while fewer: a topic's partitions may not all be there yet right after its producer ended.
  await until(async () => (out = (await readToEnd(brokers, topics)).map((m) => identity({ t: m.topic, k: m.key!.toString(), v: m.value!.toString("base64") }))).length >= atLeast, 60_000, () => `${atLeast} messages on ${topics.join(", ")} (${out.length} so far)`, 500);
  return out;
}

const count = (xs: string[]) => xs.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<string, number>());

/** `rdma-telemetry replay` of the small capture, publishing on the live broker under `p`: the run that delivers a spill. */
async function replayLive(cwd: string, p: string): Promise<{ published: number; own: number; out: string }> {
  const r = startCli(["replay", join(dir, "cap/tor.pcap"), "--topology", join(dir, "cap/tor.topology.json"), "--out", join(cwd, `replay-${runs++}.jsonl`), "--kafka-brokers", brokers, "--kafka-topic-prefix", p], cwd, children);
  const code = await r.exited;
  const out = r.out();
  expect(code, out).toBe(0);
  expect(out).not.toMatch(/not acknowledged|lost|set aside/);
  const published = Number(/^Kafka: (\d+) records and digests published$/m.exec(out)?.[1]);
  const figures = /(\d+) packets, (\d+) digests, (\d+) records in/.exec(out);
  return { published, own: Number(figures?.[2]) + Number(figures?.[3]), out };
}

/**
 * `rdma-telemetry controller` (no journal) publishing under `p` to a broker
 * that is not there: 60 I/Os through the software switch, then SIGTERM
 * (`beforeStop` runs just before it).
 */
async function controllerWhileKafkaDown(cwd: string, p: string, beforeStop = () => {}): Promise<{ code: number | null; out: string; records: RecordJson[] }> {
  const sw = await startSwitch(children);
  const config = writeControllerConfig(cwd, sw.port, `tor-${p}`);
  const file = join(cwd, "records.jsonl");
  const c = startCli(["controller", "--config", config, "--out", file, "--kafka-brokers", UNREACHABLE, "--kafka-topic-prefix", p], cwd, children);
  await until(() => c.out().includes("primary on"), 30_000, () => `the controller to be primary; it printed: ${c.out()}`);
  await ioFeeder()(sw.child, 60);
  await digestsSettled(sw.child);
  beforeStop();
  c.child.kill("SIGTERM");
  const code = await c.exited;
  sw.child.kill("SIGKILL");
  return { code, out: c.out(), records: readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as RecordJson) };
}

/** The summary line of a command that could not reach Kafka: how many are kept, and where. */
function keptInSpill(out: string): { kept: number; where: string } {
  const m = /^Kafka: 0 records and digests published; (\d+) not acknowledged \(Kafka unreachable .*\) are kept in (\S+) and go out first the next time a command reaches Kafka$/m.exec(out);
  expect(m, out).not.toBeNull();
  return { kept: Number(m![1]), where: m![2]! };
}

describe("Kafka unreachable when a command ends", () => {
  test("demo: every record and digest is in the spill, said so; the next run delivers each of them once", async () => {
    const cwd = workDir("demo");
    const p = prefix("demo");
    const demo = startCli(["demo", "--duration-ms", "300", "--out-dir", "d", "--kafka-brokers", UNREACHABLE, "--kafka-topic-prefix", p], cwd, children);
    const code = await demo.exited;
    const out = demo.out();
    expect(code, out).toBe(0);
    const spillDir = join(cwd, ".cache/kafka-spill");
    const { kept, where } = keptInSpill(out);
    expect(where).toBe(spillDir);
    // Kafka away ends the wait for acknowledgements, and the log says where the records go.
    expect(out).toMatch(/"msg":"Kafka is away; what is left goes to the spill as the sink closes"/);
    expect(out).not.toMatch(/not acknowledged every record; they stay buffered/);
    const spilled = spillMessages(spillDir);
    expect(spilled.length).toBe(kept);
    // Every record the demo wrote, and every digest it received, are in the spill.
    const figures = /(\d+) packets, (\d+) digests, (\d+) records \(/.exec(out)!;
    const written = readFileSync(join(cwd, "d/records.jsonl"), "utf8").split("\n").filter(Boolean).length;
    expect(Number(figures[3])).toBe(written);
    expect(kept).toBe(Number(figures[2]) + written);

    // The next command that reaches Kafka, with the same topics, sends the spill first, then its own.
    const next = await replayLive(cwd, p);
    expect(next.published).toBe(kept + next.own);
    expect(spillMessages(spillDir)).toEqual([]);
    const onKafka = count(await readTopics(Object.values(topicsOf(p)), next.published));
    expect([...onKafka.values()].reduce((a, b) => a + b, 0), "messages on the topics").toBe(next.published);
    const wanted = count(spilled.map((l) => identity(asMessage(l))));
    const wrong = [...wanted].filter(([id, n]) => onKafka.get(id) !== n);
    expect(wrong.length, "spilled messages missing or twice on Kafka").toBe(0);
  }, 150_000);

  test("controller stopped by SIGTERM: every record and digest is in the spill, said so; the next run delivers each of them once", async () => {
    const cwd = workDir("controller");
    const p = prefix("controller");
    const run = await controllerWhileKafkaDown(cwd, p);
    expect(run.code, run.out).toBe(0);
    const spillDir = join(cwd, ".cache/kafka-spill");
    const { kept, where } = keptInSpill(run.out);
    expect(where).toBe(spillDir);
    const spilled = spillMessages(spillDir).map(asMessage);
    expect(spilled.length).toBe(kept);
    // The records in the spill are those of the file; the rest are the raw digests.
    const records = spilled.filter((m) => m.h.type !== "rdma.telemetry.v1.RawDigest").map((m) => recordFromMessage(m.h.type, Buffer.from(m.v, "base64")));
    expect(records.length).toBe(run.records.length);
    const ioKeys = (rs: ReadonlyArray<{ type: string }>) => rs.flatMap((r) => (r.type === "io" ? [(r as IoRecordJson).cmd_psn] : [])).sort((a, b) => a - b);
    expect(ioKeys(records)).toEqual(ioKeys(run.records));
    expect(ioKeys(records)).toEqual([...Array(60).keys()]);
    expect(spilled.length - records.length).toBeGreaterThanOrEqual(60 * 2);

    const next = await replayLive(cwd, p);
    expect(next.published).toBe(kept + next.own);
    expect(spillMessages(spillDir)).toEqual([]);
    const onKafka = count(await readTopics(Object.values(topicsOf(p)), next.published));
    expect([...onKafka.values()].reduce((a, b) => a + b, 0), "messages on the topics").toBe(next.published);
    const wrong = [...count(spilled.map(identity))].filter(([id, n]) => onKafka.get(id) !== n);
    expect(wrong.length, "spilled messages missing or twice on Kafka").toBe(0);
  }, 120_000);

  test("records that can be neither delivered nor spilled are counted as lost, and the command exits 1", async () => {
    const cwd = workDir("lost");
    const spillDir = join(cwd, ".cache/kafka-spill");
    // The spill directory becomes a file while the controller runs: nothing can be written there.
    const run = await controllerWhileKafkaDown(cwd, prefix("lost"), () => {
      rmSync(spillDir, { recursive: true, force: true });
      writeFileSync(spillDir, "");
    });
    expect(run.code, run.out).toBe(1);
    const m = /^Kafka: 0 records and digests published; (\d+) lost: the spill could not be written \(.*kafka-spill: ENOTDIR\)$/m.exec(run.out);
    expect(m, run.out).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(run.records.length);
    expect(run.out).not.toMatch(/not acknowledged/);
  }, 90_000);

  test("what is in memory at close goes to the spill before what was spilled during the run: the next run sends all in the order pushed", async () => {
    const spillDir = join(workDir("order"), "spill");
    const t = topicsOf(prefix("order"));
    const away = new KafkaSink({ brokers: [UNREACHABLE], topics: t, partitions: 1, spillDir, maxBuffered: 10 });
    await away.start();
    for (let i = 0; i < 30; i++) away.push({ topic: t.io, key: "k", value: Buffer.from(String(i)), headers: { type: "test" } });
    expect(away.stats.spilledNow).toBe(20);
    expect(await away.close(5_000)).toBe(30);
    expect(spillMessages(spillDir).map((l) => Buffer.from(asMessage(l).v, "base64").toString())).toEqual([...Array(30).keys()].map(String));
    const back = new KafkaSink({ brokers: brokers.split(","), topics: t, partitions: 1, spillDir });
    await back.start();
    await back.flush(30_000);
    expect(await back.close()).toBe(0);
    const got = (await readTopics([t.io], 30)).map((id) => Buffer.from(id.split("|")[2]!, "base64").toString());
    expect(got).toEqual([...Array(30).keys()].map(String));
  }, 60_000);

  test("a spill directory that cannot be used is refused before any work: exit 2, one line", async () => {
    const cwd = workDir("unusable");
    mkdirSync(join(cwd, ".cache"));
    writeFileSync(join(cwd, ".cache/kafka-spill"), "");
    const demo = startCli(["demo", "--duration-ms", "100", "--out-dir", "d", "--kafka-brokers", UNREACHABLE], cwd, children);
    expect(await demo.exited).toBe(2);
    expect(demo.out()).toBe("rdma-telemetry: Kafka spill .cache/kafka-spill: cannot use it (EEXIST)\n");
    expect(existsSync(join(cwd, "d"))).toBe(false);
  }, 30_000);
});

describe("a spill written under another topic prefix", () => {
  test("goes out to the topics it names (created as the sink creates its own); the run's own records go out to its own", async () => {
    const cwd = workDir("prefix");
    const [pa, pb] = [prefix("pa"), prefix("pb")];
    const first = await controllerWhileKafkaDown(cwd, pa);
    const { kept } = keptInSpill(first.out);
    const spilled = spillMessages(join(cwd, ".cache/kafka-spill")).map(asMessage);
    expect(spilled.length).toBe(kept);
    expect(new Set(spilled.map((m) => m.t.slice(0, pa.length)))).toEqual(new Set([pa]));

    const next = await replayLive(cwd, pb);
    expect(next.published).toBe(kept + next.own);
    const named = [...new Set(spilled.map((m) => m.t))];
    const onA = count(await readTopics(named, kept));
    expect([...onA.values()].reduce((a, b) => a + b, 0)).toBe(kept);
    expect([...count(spilled.map(identity))].filter(([id, n]) => onA.get(id) !== n)).toEqual([]);
    const onB = await readTopics(Object.values(topicsOf(pb)), next.own);
    expect(onB.length).toBe(next.own);
  }, 120_000);

  test("records pushed while such a segment is read back (its topics being created) are neither lost nor sent twice", async () => {
    const spillDir = join(workDir("reading"), "spill");
    mkdirSync(spillDir);
    const other = prefix("earlier");
    const lines = [...Array(20).keys()].map((i) => JSON.stringify({ t: `${other}.io.v1`, k: `k${i}`, v: Buffer.from(`earlier${i}`).toString("base64"), h: { type: "test" } }) + "\n");
    writeFileSync(join(spillDir, "000000000000001-00000000.spill"), lines.join(""));
    const t = topicsOf(prefix("reading"));
    const sink = new KafkaSink({ brokers: brokers.split(","), topics: t, partitions: 1, spillDir });
    await sink.start(); // the earlier segment is being read back now, while Kafka creates its topics
    for (let i = 0; i < 50; i++) sink.push({ topic: t.io, key: "own", value: Buffer.from(`own${i}`), headers: { type: "test" } });
    await sink.flush(30_000);
    expect(await sink.close()).toBe(0);
    expect(sink.stats).toMatchObject({ sent: 70, spilledNow: 0, dropped: 0, setAside: 0 });
    expect(spillMessages(spillDir)).toEqual([]);
    const own = (await readTopics([t.io], 50)).map((id) => Buffer.from(id.split("|")[2]!, "base64").toString());
    expect(own).toEqual([...Array(50).keys()].map((i) => `own${i}`));
    expect((await readTopics([`${other}.io.v1`], 20)).length).toBe(20);
  }, 60_000);

  test("a segment that does not parse, or names a topic Kafka cannot have, is set aside with a warning; what follows goes out", async () => {
    const spillDir = join(workDir("aside"), "spill");
    mkdirSync(spillDir);
    const line = (topic: string, i: number) => JSON.stringify({ t: topic, k: `k${i}`, v: Buffer.from(`v${i}`).toString("base64"), h: { type: "test" } }) + "\n";
    const other = prefix("other");
    writeFileSync(join(spillDir, "000000000000001-00000000.spill"), line("no such topic!", 0) + line("no such topic!", 1));
    writeFileSync(join(spillDir, "000000000000002-00000001.spill"), line(`${other}.io.v1`, 2) + "{not json\n");
    for (let i = 3; i < 6; i++) appendFileSync(join(spillDir, "000000000000003-00000002.spill"), line(`${other}.io.v1`, i));
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (msg: string, f?: Record<string, unknown>) => warnings.push(`${msg} ${JSON.stringify(f)}`), error() {} };
    const t = topicsOf(prefix("own"));
    const sink = new KafkaSink({ brokers: brokers.split(","), topics: t, partitions: 1, spillDir, logger });
    expect(sink.pending).toBe(7);
    await sink.start();
    sink.push({ topic: t.io, key: "own", value: Buffer.from("own"), headers: { type: "test" } });
    await sink.flush(30_000);
    expect(await sink.close()).toBe(0);
    expect(sink.stats).toMatchObject({ sent: 4, setAside: 4, dropped: 0, spilledNow: 0 });
    expect(sink.settled).toBe(8);
    expect(readdirSync(join(spillDir, "set-aside")).sort()).toEqual(["000000000000001-00000000.spill", "000000000000002-00000001.spill"]);
    expect(warnings.join("\n")).toMatch(/spilled records set aside: they are not sent .*"records":2,"why":"Kafka takes no topic named 'no such topic!'"/);
    expect(warnings.join("\n")).toMatch(/spilled records set aside: they are not sent .*"records":2,"why":"it does not parse/);
    expect((await readTopics([`${other}.io.v1`], 3)).length).toBe(3);
  }, 60_000);
});
