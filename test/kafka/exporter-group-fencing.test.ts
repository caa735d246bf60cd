// A member that takes a partition on fences its earlier owner before it
// reads the partition's committed state: a transaction the earlier owner
// still has open is aborted, and it can commit nothing after (test/setup/kafka.ts
// starts the broker).
import { Kafka, logLevel } from "kafkajs";
import { expect, inject, test } from "vitest";
import { ExporterGroupMember } from "../../exporter/src/group/exporter-group.js";
import type { TopicNames } from "../../exporter/src/kafka/encode.js";
import { readTopicTails } from "../../exporter/src/kafka/tail.js";
import { until } from "../support/wait.js";

const brokers = [inject("kafkaBrokers")];

test("taking a partition on fences the producer of its earlier owner, open transaction and all", async () => {
  const id = `fencing-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics: TopicNames = { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING, clientId: "fencing-test" });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: Object.values(topics).map((topic) => ({ topic, numPartitions: 1, replicationFactor: 1 })) });
  await admin.disconnect();
  // The earlier owner of partition 0, still running: a transaction open on the record topic.
  const earlier = kafka.producer({ transactionalId: `${id}.${topics.digest}.0`, idempotent: true, maxInFlightRequests: 1 });
  await earlier.connect();
  const tx = await earlier.transaction();
  await tx.send({ topic: topics.io, messages: [{ key: "k", value: "from the earlier owner" }] });
  const member = new ExporterGroupMember({ brokers, groupId: id, topics, clientId: "m" });
  try {
    await member.start();
    await until(() => member.taken.includes(0), 60_000, () => "the member to take the partition on", 50);
    await expect(tx.commit()).rejects.toThrow();
  } finally {
    await member.stop();
    await earlier.disconnect();
  }
  const seen: string[] = [];
  await readTopicTails({ brokers, topics: [topics.io], sinceMs: 0, onMessage: (m) => seen.push(String(m.value)) });
  expect(seen).toEqual([]);
}, 120_000);
