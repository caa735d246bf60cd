// An exporter group member taking a backlog of gzip'd digests: a fetch gives
// it a partition's whole backlog at once, and the records of that batch
// (megabytes of them) must still go out in its transaction, within the
// broker's limit on a produce batch (message.max.bytes, 1 MiB by default),
// and be published once each (test/setup/kafka.ts starts the broker).
import { CompressionTypes, Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";
import { expect, inject, test } from "vitest";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import type { RecordJson } from "../../contract/src/records.js";
import { ExporterGroupMember } from "../../exporter/src/group/exporter-group.js";
import { rawDigestMessages } from "../../exporter/src/kafka/digest-bus.js";
import type { KafkaMessageOut, TopicNames } from "../../exporter/src/kafka/encode.js";
import { generateTraffic, loadOptions } from "../../traffic/src/generator.js";
import { until } from "../support/wait.js";

const brokers = [inject("kafkaBrokers")];
const engine = { intervalNs: 100_000_000n, correlationWindowNs: 100_000_000n, ioTimeoutNs: 200_000_000n, silentSwitchNs: 1_000_000_000n };

test("a backlog of gzip'd digests taken in one fetch: its megabytes of records go out in one transaction, none lost, none twice", async () => {
  const id = `big-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics: TopicNames = { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
  const traffic = generateTraffic({ seed: 5, durationNs: 1_000_000_000, hosts: 4, targets: 2, ...loadOptions(1) });
  const digests: KafkaMessageOut[] = [];
  const inProcess: RecordJson[] = [];
  await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
    exporter: engine,
    onRecord: (r: RecordJson) => inProcess.push(r),
    beforeFeed: (rigs) => {
      for (const r of rigs) r.controller.on("digests", (b) => digests.push(...rawDigestMessages(b, topics)));
    },
  });
  const ios = inProcess.filter((r) => r.type === "io").length;
  expect(ios, "records enough to pass 1 MiB in one transaction").toBeGreaterThan(5000);

  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING, clientId: `${id}-test` });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: Object.values(topics).map((topic) => ({ topic, numPartitions: 1 })), waitForLeaders: true });
  await admin.disconnect();
  // The whole workload on the digest topic first, gzip'd (the controllers' default), as a backlog is after an outage.
  const producer = kafka.producer();
  await producer.connect();
  for (let i = 0; i < digests.length; i += 2000)
    await producer.send({ topic: topics.digest, compression: CompressionTypes.GZIP, messages: digests.slice(i, i + 2000).map((m) => ({ key: m.key, value: m.value, headers: m.headers })) });
  await producer.disconnect();

  const records: RecordJson[] = [];
  const member = new ExporterGroupMember({ brokers, groupId: id, topics, partitions: 1, clientId: "m", engine, idleMs: 200, onRecord: (r) => records.push(r) });
  try {
    await member.start();
    await until(() => member.stats.digests === digests.length && records.filter((r) => r.type === "io").length === ios, 120_000,
      () => `every digest taken and every I/O record published (digests ${member.stats.digests} of ${digests.length}, I/O records ${records.filter((r) => r.type === "io").length} of ${ios}, transactions ${member.stats.transactions}, aborted ${member.stats.aborted})`, 100);
  } finally {
    await member.stop();
  }
  expect(member.stats.aborted).toBe(0);
  // The same I/O records as in process, their wall-clock time aside (the command's, and so the interval it falls in):
  // the replay places a switch's clock at its capture's start, a member at the first digest list it takes of it. At
  // the workload's end the replay calls the commands still waiting incomplete; a member, whose switches fell silent,
  // gives them up as "answer unknown" (docs/spec.md §3): `incomplete` aside for those.
  const key = (r: RecordJson, withIncomplete = true) => JSON.stringify({ ...r, cmd_unix_ns: undefined, interval_start_unix_ns: undefined, ...(withIncomplete ? {} : { incomplete: undefined }) });
  const got = records.filter((r) => r.type === "io");
  const want = inProcess.filter((r) => r.type === "io");
  expect(got.map((r) => key(r, false)).sort()).toEqual(want.map((r) => key(r, false)).sort());
  const answered = new Set(got.map((r) => key(r)));
  const complete = want.filter((r) => r.type === "io" && !r.incomplete);
  expect(complete.length).toBeGreaterThan(ios * 0.9);
  expect(complete.filter((r) => !answered.has(key(r)))).toEqual([]);
}, 240_000);
