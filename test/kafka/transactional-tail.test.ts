// Reading back a topic written in Kafka transactions (the exporter group's
// record topics): a partition that ends with a transaction marker, which is
// never a message, is still read to its end.
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js"; // kafkajs reads gzip only without these plugins
import { expect, inject, test } from "vitest";
import { readTopicTails } from "../../exporter/src/kafka/tail.js";
import { until } from "../support/wait.js";

const brokers = inject("kafkaBrokers");

test("a topic whose partition ends with a commit marker is read back to its end", async () => {
  const topic = `tx-tail-${Date.now()}`;
  const kafka = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING, clientId: "test-tx" });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] });
  await admin.disconnect();
  const producer = kafka.producer({ transactionalId: `${topic}-tx`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const tx = await producer.transaction();
  await tx.send({ topic, messages: [1, 2, 3].map((i) => ({ key: "k", value: `m${i}` })) });
  await tx.commit();
  await producer.disconnect();
  // The commit returns before its marker is written: the partition ends with it (the last stable offset is past it) a moment later.
  await admin.connect();
  await until(async () => (await admin.fetchTopicOffsets(topic))[0]?.high === "4", 15_000, "the commit marker written", 50);
  await admin.disconnect();
  const got: string[] = [];
  const n = await readTopicTails({ brokers: [brokers], topics: [topic], sinceMs: 0, timeoutMs: 15_000, onMessage: (m) => got.push(m.value.toString()) });
  expect(n).toBe(3);
  expect(got).toEqual(["m1", "m2", "m3"]);
}, 60_000);
