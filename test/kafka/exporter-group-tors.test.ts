// A fabric of several ToRs a side (3 compute ToRs, 2 storage ToRs): each
// switch's controller publishes its digests; two exporter group members, on
// a digest topic of 4 partitions, join each I/O's halves from its host's ToR
// and its target's, whichever two of the five they are. Every I/O record on
// the io topic, read read_committed, equals the ground truth with its RTT,
// once (test/setup/kafka.ts starts the broker).
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";
import { expect, inject, test } from "vitest";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import type { IoRecordJson } from "../../contract/src/records.js";
import { ExporterGroupMember } from "../../exporter/src/group/exporter-group.js";
import { rawDigestMessages } from "../../exporter/src/kafka/digest-bus.js";
import type { KafkaMessageOut, TopicNames } from "../../exporter/src/kafka/encode.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { checkIos, readIoRecords } from "../support/fabric.js";
import { createTopics } from "../support/topics.js";
import { until } from "../support/wait.js";

const brokers = [inject("kafkaBrokers")];
// An idle partition moved on by the wall clock after 200 ms; a switch silent for 2 s of the others' time let go.
const engine = { silentSwitchNs: 2_000_000_000n };

test("5 ToRs, a controller each, two members on 4 partitions: every I/O once, equal to the ground truth with its RTT", async () => {
  // Every response in both captures: no I/O waits for a controller's verdict (these controllers run in process).
  const traffic = generateTraffic({ seed: 31, ip: "mixed", durationNs: 150_000_000, hosts: 6, targets: 4, computeTors: 3, storageTors: 2, ioRate: 1000, responseLoss: 0 });
  const names = traffic.switches.map((s) => s.name);
  expect(names).toEqual(["tor-c1", "tor-c2", "tor-c3", "tor-s1", "tor-s2"]);
  const id = `tors-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics: TopicNames = { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
  const digests: KafkaMessageOut[] = [];
  await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
    beforeFeed: (rigs) => {
      for (const r of rigs) r.controller.on("digests", (b) => digests.push(...rawDigestMessages(b, topics)));
    },
  });
  await createTopics(brokers[0]!, [topics.digest], 4);
  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING, clientId: `${id}-test` });
  const producer = kafka.producer();
  await producer.connect();
  const members = [0, 1].map((i) => new ExporterGroupMember({ brokers, groupId: id, topics, clientId: `m${i}`, engine, idleMs: 200, switchIds: names }));
  const truth = traffic.ios.filter((t) => t.record);
  let ios: IoRecordJson[] = [];
  try {
    await members[0]!.start();
    await members[1]!.start();
    await until(() => members.every((m) => m.assigned.size === 2), 60_000, () => "the members to share the 4 partitions", 50);
    // The switches' time of the whole workload reaches the members at once, as the controllers' would over 150 ms.
    await producer.send({ topic: topics.digest, messages: digests.map((m) => ({ key: m.key, value: m.value, headers: m.headers })) });
    ios = await readIoRecords(brokers[0]!, topics.io, (got) => got.length >= truth.length, 90_000);
    // Anything more (a record twice) would come within the silence.
    await new Promise((r) => setTimeout(r, 3_000));
    ios = await readIoRecords(brokers[0]!, topics.io, (got) => got.length >= ios.length, 30_000);
  } finally {
    for (const m of members) await m.stop();
    await producer.disconnect();
  }
  const c = checkIos(truth, ios);
  console.log(`5 ToRs, 2 members: ${JSON.stringify({ truth: truth.length, ...c, digests: digests.length })}`);
  expect(c.mismatches).toEqual([]);
  expect(c.duplicates).toBe(0);
  expect(c.lost).toBe(0);
  expect(c.exact).toBe(truth.length);
  // Both members made records, of I/Os between every compute ToR and every storage ToR.
  const pairs = new Set(ios.filter((r) => r.rtt_ns !== null).map((r) => `${r.c_switch_id}>${r.s_switch_id}`));
  expect(pairs.size).toBe(6);
  expect(members.every((m) => m.stats.records > 0)).toBe(true);
  expect(c.withRtt).toBeGreaterThan(truth.length * 0.95);
}, 240_000);
