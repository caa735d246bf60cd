// The committed-record reader on a real broker, following a partition while
// transactions are open: it delivers what a read_committed consumer would,
// in offset order, holding the partition at the first record of a
// transaction still open (what follows it waits for it to end), and drops an
// aborted transaction whose marker comes in a later fetch than its records;
// its positions, committed to a consumer group it is not a member of, are
// the group's offsets.
import { Admin } from "@platformatic/kafka";
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";
import { expect, inject, test } from "vitest";
import { CommittedReader } from "../../exporter/src/kafka/committed-reader.js";
import { GroupOffsets } from "../../exporter/src/kafka/group-offsets.js";
import { until } from "../support/wait.js";
import { createTopics } from "../support/topics.js";

const brokers = inject("kafkaBrokers");

test("the reader holds a partition at its first open transaction, then delivers in offset order; an aborted transaction decided in a later fetch is dropped", async () => {
  const topic = `committed-reader-${Date.now()}`;
  const kafka = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING, clientId: "test-reader" });
  await createTopics(brokers, [topic]);
  const x = kafka.producer({ transactionalId: `${topic}-x`, idempotent: true, maxInFlightRequests: 1 });
  const y = kafka.producer({ transactionalId: `${topic}-y`, idempotent: true, maxInFlightRequests: 1 });
  const plain = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  const got: Array<[string, bigint]> = [];
  const fetched = { n: 0 };
  const reader = new CommittedReader({ brokers: [brokers], clientId: "test-reader", maxWaitMs: 100, onMessage: (m) => got.push([m.value!.toString(), m.offset]), onFetch: () => fetched.n++ });
  const ac = new AbortController();
  let running: Promise<void> | undefined;
  try {
    for (const p of [x, y, plain]) await p.connect();
    await plain.send({ topic, messages: [{ value: "p0" }] }); // offset 0
    await reader.follow(topic, "earliest");
    running = reader.run(ac.signal);
    const one = (value: string) => ({ topic, messages: [{ value }] });
    const tx = await x.transaction();
    await tx.send(one("x1")); // 1: opens x's transaction
    await plain.send(one("p2")); // 2
    const ty = await y.transaction();
    await ty.send(one("y3")); // 3
    await ty.commit(); // 4: y's commit marker
    await until(() => got.length >= 1, 15_000, "p0 delivered");
    // Several fetches past x's first record: nothing after it is delivered, and the reader's position stays there.
    const seen = fetched.n;
    await until(() => fetched.n >= seen + 5, 15_000, "five fetches more");
    expect(got).toEqual([["p0", 0n]]);
    expect(reader.positions()).toEqual([{ topic, partition: 0, offset: 1n }]);
    await tx.send(one("x5")); // 5
    await tx.commit(); // 6
    await until(() => got.length >= 5, 15_000, () => `x's transaction and what followed it delivered: ${JSON.stringify(got.map(([v]) => v))}`);
    expect(got.map(([v]) => v)).toEqual(["p0", "x1", "p2", "y3", "x5"]);
    expect(got.map(([, o]) => o)).toEqual([0n, 1n, 2n, 3n, 5n]);

    // An aborted transaction whose records the reader fetched while it was open: dropped when its marker comes.
    const ta = await y.transaction();
    await ta.send(one("y7")); // 7
    await plain.send(one("p8")); // 8
    const before = fetched.n;
    await until(() => fetched.n >= before + 3, 15_000, "three fetches more");
    await ta.abort(); // 9
    await plain.send(one("p10")); // 10
    await until(() => got.length >= 7, 15_000, () => `p8 and p10 delivered: ${JSON.stringify(got.map(([v]) => v))}`);
    expect(got.map(([v]) => v)).toEqual(["p0", "x1", "p2", "y3", "x5", "p8", "p10"]);
    await until(() => reader.positions()[0]!.offset === 11n, 5_000, "the position past the last record");
    // Committed to a consumer group the reader is not a member of, and read back from it.
    const group = new GroupOffsets({ brokers: [brokers], clientId: "test-reader", groupId: `${topic}-group` });
    try {
      // (a commit that fails, the group's coordinator still loading, is made again: as the commands do every second)
      await until(() => group.commit(reader.positions()).then(() => true, () => false), 15_000, "the positions committed", 500);
      expect(await group.committed(topic)).toEqual(new Map([[0, 11n]]));
    } finally {
      await group.close();
    }
  } finally {
    ac.abort();
    await running;
    await reader.close();
    for (const p of [x, y, plain]) await p.disconnect().catch(() => undefined);
  }
}, 90_000);

// A group's offset the partition no longer has: below its start (deleted by
// retention) the reader goes on from the oldest record left; past its end (a
// topic made anew) from the end, reading what comes next.
test("an offset the partition no longer has: below its start, read from the oldest left; past its end, from the end", async () => {
  const topic = `committed-reader-range-${Date.now()}`;
  const kafka = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING, clientId: "test-reader" });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const readers: CommittedReader[] = [];
  const ac = new AbortController();
  const runs: Promise<void>[] = [];
  try {
    await producer.send({ topic, messages: ["m0", "m1", "m2"].map((value) => ({ value })) });
    const records = new Admin({ clientId: "test-reader", bootstrapBrokers: [brokers] });
    try {
      await records.deleteRecords({ topics: [{ name: topic, partitions: [{ partition: 0, offset: 2n }] }] });
    } finally {
      await records.close();
    }
    const follow = async (offset: bigint) => {
      const got: string[] = [];
      const reader = new CommittedReader({ brokers: [brokers], clientId: "test-reader", maxWaitMs: 100, onMessage: (m) => got.push(m.value!.toString()) });
      readers.push(reader);
      await reader.follow(topic, "earliest", new Map([[0, offset]]));
      runs.push(reader.run(ac.signal));
      return got;
    };
    const below = await follow(0n);
    const past = await follow(50n);
    await until(() => below.length >= 1, 15_000, "the oldest record left");
    await until(() => readers[1]!.positions()[0]!.offset === 3n, 15_000, () => `the reader past the end moved to it: ${JSON.stringify(readers[1]!.positions())}`);
    await producer.send({ topic, messages: [{ value: "m3" }] });
    await until(() => below.length >= 2 && past.length >= 1, 15_000, () => `m3 read by both: ${JSON.stringify({ below, past })}`);
    expect(below).toEqual(["m2", "m3"]);
    expect(past).toEqual(["m3"]);
  } finally {
    ac.abort();
    await Promise.all(runs);
    for (const r of readers) await r.close();
    await producer.disconnect();
    await admin.disconnect();
  }
}, 60_000);
