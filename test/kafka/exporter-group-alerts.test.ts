// An exporter group member taking a partition over raises and clears its
// alerts as the earlier owner would have: the alerts raised are carried in
// the partition's offset metadata (test/setup/kafka.ts starts the broker),
// whether the earlier owner stopped cleanly or was killed -9 (a process of
// its own, test/support/group-member-process.ts).
import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";
import { afterEach, describe, expect, inject, test } from "vitest";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import type { AlertJson } from "../../contract/src/records.js";
import { rawDigestMessages } from "../../exporter/src/kafka/digest-bus.js";
import { recordFromMessage } from "../../exporter/src/kafka/decode.js";
import type { KafkaMessageOut, TopicNames } from "../../exporter/src/kafka/encode.js";
import { readTopicTails } from "../../exporter/src/kafka/tail.js";
import { ExporterGroupMember, type ExporterGroupStats } from "../../exporter/src/group/exporter-group.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import type { Fault } from "../../traffic/src/types.js";
import { until } from "../support/wait.js";

const brokers = [inject("kafkaBrokers")];
const root = new URL("../..", import.meta.url).pathname;
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});
const EPOCH = 1_800_000_000_000_000_000n;
const MS = 1_000_000;
/** Alerts on a target's data access latency, over 250 µs raised, under 180 µs cleared, on 250 ms intervals. */
const engine = { perEventRecords: false, intervalNs: 250_000_000n, correlationWindowNs: 100_000_000n, ioTimeoutNs: 200_000_000n, alertRules: [{ metric: "dal_ns.p99", scope: "target" as const, raise: 250_000, clear: 180_000 }] };

/**
 * A 5 s workload of one host and one target whose latency `faults` shape;
 * one member of a group takes its digests up to `moveAtMs` (digest list
 * time), stops cleanly, and a second member takes the partition over (it
 * re-reads the open digests) and the rest. Returns the alerts committed on
 * the alert topic, as `state@ms` of their interval's end, and by member.
 * With `kill`, the first member is a process of its own, killed -9 once its
 * raised alert is committed, right after it was sent more digests.
 */
async function moveMidRun(faults: Fault[], moveAtMs: number, kill = false): Promise<{ committed: string[]; byMember: string[]; second: ExporterGroupStats; firstAtKill?: ExporterGroupStats }> {
  const id = `alerts-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics: TopicNames = { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
  // No Flushes: a Flush held by the slow target moves which interval the last slow I/O ends in.
  const traffic = generateTraffic({ seed: 3, durationNs: 5000 * MS, hosts: 1, targets: 1, ioRate: 300, gradientBytes: 0, flushShare: 0, faults });
  const digests: Array<{ listNs: bigint; m: KafkaMessageOut }> = [];
  await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
    exporter: engine,
    beforeFeed: (rigs) => { for (const r of rigs) r.controller.on("digests", (b) => { for (const m of rawDigestMessages(b, topics)) digests.push({ listNs: b.listTimestampNs, m }); }); },
  });
  const before = digests.filter((d) => d.listNs < EPOCH + BigInt(moveAtMs * MS));
  const after = digests.slice(before.length);
  expect(after.every((d) => d.listNs >= EPOCH + BigInt((moveAtMs - 500) * MS))).toBe(true);

  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING, clientId: "alerts-test" });
  const producer = kafka.producer();
  await producer.connect();
  const publish = async (l: ReadonlyArray<{ m: KafkaMessageOut }>) => {
    for (let i = 0; i < l.length; i += 500) await producer.send({ topic: topics.digest, messages: l.slice(i, i + 500).map(({ m }) => ({ key: m.key, value: m.value, headers: m.headers })) });
  };
  const alerts: Array<{ member: string; a: AlertJson }> = [];
  const at = (a: AlertJson) => `${a.state}@${(BigInt(a.at_unix_ns) - EPOCH) / BigInt(MS)}`;
  // No wall clock moving the partition on: its time is its digests' alone.
  const member = (name: string) => new ExporterGroupMember({ brokers, groupId: id, topics, partitions: 1, clientId: name, engine, idleMs: 3_600_000, onRecord: (r) => { if (r.type === "alert") alerts.push({ member: name, a: r }); } });
  if (kill) return killMidRun({ id, topics, before, after, publish, alerts, at, member });
  const first = member("first");
  const second = member("second");
  try {
    await first.start();
    await until(() => first.assigned.size === 1, 60_000, () => "the first member to get the partition", 50);
    await publish(before);
    // Digests re-read as open state (a partition taken on again) are counted apart: the others count once.
    await until(() => first.stats.digests - first.stats.replayedDigests === before.length && alerts.length > 0, 60_000, () => `the first member to take ${before.length} digests (${JSON.stringify(first.stats)}) and raise the alert`, 50);
    await first.stop(); // its transaction under way commits; the partition goes to the next member
    await second.start();
    await until(() => second.assigned.size === 1, 60_000, () => "the second member to get the partition", 50);
    await publish(after);
    // Every digest taken (the re-read ones and the new ones); stopping lets the transaction under way commit.
    const taken = () => second.stats.digests + second.stats.duplicateDigests + second.stats.badDigests;
    await until(() => taken() >= after.length + second.stats.replayedDigests, 60_000, () => `the second member to take ${after.length} digests and the ${second.stats.replayedDigests} re-read (${taken()})`, 50);
    await second.stop();
  } finally {
    await first.stop();
    await second.stop();
    await producer.disconnect();
  }
  expect(second.stats.takeovers, "the second member re-read the open digests").toBe(1);
  expect(second.stats.replayedDigests).toBeGreaterThan(0);
  return { committed: (await committedAlerts(topics)).map(at), byMember: alerts.map((x) => `${x.member}:${at(x.a)}`), second: second.stats };
}

/** The alerts on the alert topic, as a consumer downstream reads them (committed only). */
async function committedAlerts(topics: TopicNames): Promise<AlertJson[]> {
  const committed: AlertJson[] = [];
  await readTopicTails({ brokers, topics: [topics.alert], sinceMs: 0, onMessage: (m) => { const r = recordFromMessage(m.headers.type, m.value); if (r.type === "alert") committed.push(r); } });
  return committed;
}

/** moveMidRun's first member a process, killed -9 mid-run (no LeaveGroup, its transaction under way left open). */
async function killMidRun(o: {
  id: string; topics: TopicNames; before: Array<{ m: KafkaMessageOut }>; after: Array<{ m: KafkaMessageOut }>;
  publish: (l: ReadonlyArray<{ m: KafkaMessageOut }>) => Promise<void>; alerts: Array<{ member: string; a: AlertJson }>; at: (a: AlertJson) => string; member: (name: string) => ExporterGroupMember;
}): Promise<{ committed: string[]; byMember: string[]; second: ExporterGroupStats; firstAtKill: ExporterGroupStats }> {
  const json = JSON.stringify({ brokers, groupId: o.id, topics: o.topics, clientId: "first", partitions: 1, idleMs: 3_600_000, engine }, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v));
  const child = fork(join(root, "test/support/group-member-process.ts"), [json], { execArgv: ["--conditions=source", "--import", "tsx"], stdio: ["ignore", "ignore", "inherit", "ipc"] });
  children.push(child);
  let firstStats: ExporterGroupStats | undefined;
  let firstAssigned: number[] = [];
  child.on("message", (m: { stats?: ExporterGroupStats; assigned?: number[]; alert?: AlertJson }) => {
    if (m.alert) o.alerts.push({ member: "first", a: m.alert });
    if (m.stats) [firstStats, firstAssigned] = [m.stats, m.assigned ?? []];
  });
  const exited = new Promise((r) => child.once("exit", r));
  await until(() => firstAssigned.length === 1, 60_000, () => "the first member to get the partition", 50);
  await o.publish(o.before);
  await until(() => firstStats !== undefined && firstStats.digests - firstStats.replayedDigests === o.before.length, 60_000, () => `the first member to take ${o.before.length} digests (${JSON.stringify(firstStats)})`, 50);
  // Its raised alert committed: the offset metadata of that commit or a later one carries it.
  let raised: string[] = [];
  await until(async () => (raised = (await committedAlerts(o.topics)).map(o.at)).length > 0, 60_000, () => "the first member's alert to be committed", 200);
  expect(raised).toEqual(["raised@250"]);
  // More digests, and the kill right after: whatever it took of them is committed or aborted, not half.
  const handed = 100;
  await o.publish(o.after.slice(0, handed));
  child.kill("SIGKILL");
  await exited;
  const firstAtKill = firstStats!;
  const second = o.member("second");
  try {
    await second.start();
    // The group gives the partition on once the dead member's session (10 s) is over.
    await until(() => second.assigned.size === 1, 60_000, () => "the second member to get the partition", 50);
    await o.publish(o.after.slice(handed));
    // Done once the alert is cleared on the topic: any raising again would come from the re-read digests, before it.
    await until(async () => (await committedAlerts(o.topics)).some((a) => a.state === "cleared"), 60_000, () => `the second member to clear the alert (${second.stats.digests} digests, ${second.stats.replayedDigests} re-read)`, 200);
  } finally {
    await second.stop();
  }
  expect(second.stats.takeovers, "the second member re-read the open digests").toBe(1);
  expect(second.stats.replayedDigests).toBeGreaterThan(0);
  return { committed: (await committedAlerts(o.topics)).map(o.at), byMember: o.alerts.map((x) => `${x.member}:${o.at(x.a)}`), second: second.stats, firstAtKill };
}

describe("exporter group: alerts across a partition move", () => {
  test("an alert raised before its partition moves, still over the line after: not raised again, cleared once when back under", async () => {
    // Slow for 3 s: raised in the first interval, still over the line when the partition moves at 1.5 s.
    const r = await moveMidRun([{ kind: "slow-target", target: 0, fromNs: 0, toNs: 3000 * MS, extraNs: MS }], 1500);
    expect(r.committed).toEqual(["raised@250", "cleared@3250"]);
    expect(r.byMember).toEqual(["first:raised@250", "second:cleared@3250"]);
    expect(r.second.alertsNotCarried).toBe(0);
  }, 120_000);

  test("an alert raised before its owner is killed -9, still over the line after: the new owner restores it from the last commit, not raised again, cleared once", async () => {
    const r = await moveMidRun([{ kind: "slow-target", target: 0, fromNs: 0, toNs: 3000 * MS, extraNs: MS }], 1500, true);
    expect(r.committed).toEqual(["raised@250", "cleared@3250"]);
    expect(r.byMember).toEqual(["first:raised@250", "second:cleared@3250"]);
    expect(r.second.alertsNotCarried).toBe(0);
    console.log(`kill -9: the first member had taken ${r.firstAtKill!.digests} digests in ${r.firstAtKill!.transactions} transactions; the second re-read ${r.second.replayedDigests}, ${r.second.suppressedRecords} records already committed`);
  }, 180_000);

  test("an alert raised before its partition moves, between the lines after: cleared by the new owner when back under", async () => {
    // Over the line for 1 s, then between clear and raise (no change) until 3 s: the move at 2 s re-reads only values in between.
    const r = await moveMidRun([
      { kind: "slow-target", target: 0, fromNs: 0, toNs: 1000 * MS, extraNs: MS },
      { kind: "slow-target", target: 0, fromNs: 1000 * MS, toNs: 3000 * MS, extraNs: 90_000 },
    ], 2000);
    expect(r.committed).toEqual(["raised@250", "cleared@3250"]);
    expect(r.byMember).toEqual(["first:raised@250", "second:cleared@3250"]);
  }, 120_000);
});
