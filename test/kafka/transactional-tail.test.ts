// Reading back a topic written in Kafka transactions (the exporter group's
// record topics): a partition that ends with a transaction marker, which is
// never a message, is still read to its end.
import { Admin } from "@platformatic/kafka";
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js"; // kafkajs reads gzip only without these plugins
import { expect, inject, test } from "vitest";
import { readTopicTails } from "../../exporter/src/kafka/tail.js";
import { until } from "../support/wait.js";
import { createTopics } from "../support/topics.js";

const brokers = inject("kafkaBrokers");

test("a topic whose partition ends with a commit marker is read back to its end", async () => {
  const topic = `tx-tail-${Date.now()}`;
  const kafka = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING, clientId: "test-tx" });
  await createTopics(brokers, [topic]);
  const admin = kafka.admin();
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

// The exporter group's takeover reads back what the partition's earlier owner
// committed. Another member may have a transaction open on the same record
// partition at that moment: the read goes past it to the partition's end
// (its high watermark), and neither waits for it nor reads it.
test("records committed behind another producer's open transaction are read back; the open one is not read or waited for", async () => {
  const topic = `tx-open-${Date.now()}`;
  const kafka = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING, clientId: "test-tx" });
  await createTopics(brokers, [topic]);
  const other = kafka.producer({ transactionalId: `${topic}-other`, idempotent: true, maxInFlightRequests: 1 });
  const owner = kafka.producer({ transactionalId: `${topic}-owner`, idempotent: true, maxInFlightRequests: 1 });
  await other.connect();
  await owner.connect();
  try {
    const open = await other.transaction();
    await open.send({ topic, messages: [{ key: "k", value: "other" }] });
    const tx = await owner.transaction();
    await tx.send({ topic, messages: [{ key: "k", value: "owner-1" }, { key: "k", value: "owner-2" }] });
    await tx.commit();
    await until(async () => (await highWatermark(topic)) === 4n, 15_000, "the owner's commit marker written", 50);
    // The other transaction holds the last stable offset before the owner's records.
    const got: string[] = [];
    await readTopicTails({ brokers: [brokers], topics: [topic], sinceMs: 0, timeoutMs: 30_000, onMessage: (m) => got.push(m.value.toString()) });
    expect(got.sort()).toEqual(["owner-1", "owner-2"]);
    await open.abort();
  } finally {
    await other.disconnect();
    await owner.disconnect();
  }
}, 90_000);

// A member killed -9 leaves a transaction open for each partition it owned;
// the member taking them over fences each one (its producer's transaction is
// aborted), so the record partitions hold several aborted transactions whose
// records interleave. None of their records may be read back as committed:
// the new owner would then think them published and publish them never.
test("aborted transactions that overlap one another are never read back, from whatever point the read starts", async () => {
  const topic = `tx-aborts-${Date.now()}`;
  const kafka = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING, clientId: "test-tx" });
  await createTopics(brokers, [topic]);
  const names = ["a", "b", "c"];
  const producers = names.map((n) => kafka.producer({ transactionalId: `${topic}-${n}`, idempotent: true, maxInFlightRequests: 1 }));
  const plain = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  try {
    for (const p of [...producers, plain]) await p.connect();
    const txs = [];
    for (const p of producers) txs.push(await p.transaction());
    // a0 b0 c0, then (later) c1 b1 a1 plain c2 b2 a2 ...: every transaction began before the read's start.
    for (let i = 0; i < 3; i++) await txs[i]!.send({ topic, messages: [{ key: "k", value: `${names[i]}0` }] });
    await new Promise((r) => setTimeout(r, 50));
    const since = Date.now();
    await new Promise((r) => setTimeout(r, 50));
    for (let round = 1; round <= 4; round++) {
      for (let i = 2; i >= 0; i--) await txs[i]!.send({ topic, messages: [{ key: "k", value: `${names[i]}${round}` }] });
      await plain.send({ topic, messages: [{ key: "k", value: `plain${round}` }] });
    }
    await txs[0]!.abort();
    await txs[1]!.commit();
    await txs[2]!.abort();
    await plain.send({ topic, messages: [{ key: "k", value: "plain-last" }] });
    await until(async () => (await highWatermark(topic)) === 23n, 15_000, "every marker written", 50);
    for (const sinceMs of [0, since]) {
      const got: string[] = [];
      await readTopicTails({ brokers: [brokers], topics: [topic], sinceMs, timeoutMs: 30_000, onMessage: (m) => got.push(m.value.toString()) });
      const committedB = sinceMs === 0 ? ["b0", "b1", "b2", "b3", "b4"] : ["b1", "b2", "b3", "b4"];
      expect(got.sort()).toEqual([...committedB, "plain-last", "plain1", "plain2", "plain3", "plain4"].sort());
    }
  } finally {
    for (const p of [...producers, plain]) await p.disconnect().catch(() => undefined);
  }
}, 90_000);

/** The partition's high watermark (listed read_uncommitted: kafkajs lists the last stable offset). */
async function highWatermark(topic: string): Promise<bigint> {
  const admin = new Admin({ clientId: "test-tx-hw", bootstrapBrokers: [brokers] });
  try {
    const [t] = await admin.listOffsets({ topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -1n }] }], isolationLevel: 0 });
    return t!.partitions[0]!.offset;
  } finally {
    await admin.close();
  }
}
