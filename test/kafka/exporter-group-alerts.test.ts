// An exporter group member taking a partition over raises and clears its
// alerts as the earlier owner would have: the alerts raised are carried in
// the partition's offset metadata (test/setup/kafka.ts starts the broker).
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";
import { describe, expect, inject, test } from "vitest";
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
 */
async function moveMidRun(faults: Fault[], moveAtMs: number): Promise<{ committed: string[]; byMember: string[]; second: ExporterGroupStats }> {
  const id = `alerts-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics: TopicNames = { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
  const traffic = generateTraffic({ seed: 3, durationNs: 5000 * MS, hosts: 1, targets: 1, ioRate: 300, gradientBytes: 0, faults });
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
  const publish = async (l: typeof digests) => {
    for (let i = 0; i < l.length; i += 500) await producer.send({ topic: topics.digest, messages: l.slice(i, i + 500).map(({ m }) => ({ key: m.key, value: m.value, headers: m.headers })) });
  };
  const alerts: Array<{ member: string; a: AlertJson }> = [];
  const at = (a: AlertJson) => `${a.state}@${(BigInt(a.at_unix_ns) - EPOCH) / BigInt(MS)}`;
  // No wall clock moving the partition on: its time is its digests' alone.
  const member = (name: string) => new ExporterGroupMember({ brokers, groupId: id, topics, partitions: 1, clientId: name, engine, idleMs: 3_600_000, onRecord: (r) => { if (r.type === "alert") alerts.push({ member: name, a: r }); } });
  const first = member("first");
  const second = member("second");
  try {
    await first.start();
    await until(() => first.assigned.size === 1, 60_000, () => "the first member to get the partition", 50);
    await publish(before);
    await until(() => first.stats.digests === before.length && alerts.length > 0, 60_000, () => `the first member to take ${before.length} digests (${first.stats.digests}) and raise the alert`, 50);
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
  // What a consumer downstream reads, read_committed.
  const committed: AlertJson[] = [];
  await readTopicTails({ brokers, topics: [topics.alert], sinceMs: 0, onMessage: (m) => { const r = recordFromMessage(m.headers.type, m.value); if (r.type === "alert") committed.push(r); } });
  return { committed: committed.map(at), byMember: alerts.map((x) => `${x.member}:${at(x.a)}`), second: second.stats };
}

describe("exporter group: alerts across a partition move", () => {
  test("an alert raised before its partition moves, still over the line after: not raised again, cleared once when back under", async () => {
    // Slow for 3 s: raised in the first interval, still over the line when the partition moves at 1.5 s.
    const r = await moveMidRun([{ kind: "slow-target", target: 0, fromNs: 0, toNs: 3000 * MS, extraNs: MS }], 1500);
    expect(r.committed).toEqual(["raised@250", "cleared@3250"]);
    expect(r.byMember).toEqual(["first:raised@250", "second:cleared@3250"]);
    expect(r.second.alertsNotCarried).toBe(0);
  }, 120_000);

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
