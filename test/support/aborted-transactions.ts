// A record partition as the exporter group leaves it after a member was
// killed -9: transactions of several producers interleaved with one another
// and with records outside any transaction; the killed member's open
// transactions aborted by fencing (another producer initialising the same
// transactional id, as the member taking its partitions over does), in
// another order than they began; a producer that aborts two transactions in
// a row, then commits one. Neither JS client's read_committed filters all of
// it: kafkajs activates one aborted transaction per message, and
// @platformatic/kafka keeps one aborted range per producer.
import { Kafka, logLevel, type Message, type Producer } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";

export interface AbortedTransactionsTopic {
  /** the messages' indexes committed (outside a transaction, or in a committed one), in offset order */
  committed: number[];
  /** the messages' indexes whose transactions were aborted */
  aborted: number[];
  /** the partition's high watermark once every marker is written */
  end: bigint;
}

/** Messages made by `make(i)` for i in 0..12, written to `partition` of `topic` as above. */
export async function writeAbortedTransactions(brokers: string, topic: string, make: (i: number) => Message, partition = 0): Promise<AbortedTransactionsTopic> {
  const kafka = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING, clientId: "test-aborts" });
  const tx = (name: string) => kafka.producer({ transactionalId: `${topic}-${name}`, idempotent: true, maxInFlightRequests: 1 });
  const [a, b, c] = [tx("a"), tx("b"), tx("c")];
  const plain = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  const producers: Producer[] = [a, b, c, plain];
  try {
    for (const p of producers) await p.connect();
    const [ta, tb, tc] = [await a.transaction(), await b.transaction(), await c.transaction()];
    const one = (i: number) => ({ topic, messages: [{ ...make(i), partition }] });
    // 0 a, 1 b, 2 c, 3 plain, 4 c, 5 a, 6 b, 7 plain, 8 a
    await ta.send(one(0));
    await tb.send(one(1));
    await tc.send(one(2));
    await plain.send(one(3));
    await tc.send(one(4));
    await ta.send(one(5));
    await tb.send(one(6));
    await plain.send(one(7));
    await ta.send(one(8));
    // c's and a's owners are gone: fenced (c first, though a began first), while b commits between.
    const c2 = tx("c");
    producers.push(c2);
    await c2.connect();
    await (await c2.transaction()).abort();
    await tb.commit();
    const a2 = tx("a");
    producers.push(a2);
    await a2.connect();
    // a's new owner: two transactions aborted in a row (9, 10), then one committed (11).
    let t = await a2.transaction();
    await t.send(one(9));
    await t.abort();
    t = await a2.transaction();
    await t.send(one(10));
    await t.abort();
    t = await a2.transaction();
    await t.send(one(11));
    await t.commit();
    await plain.send(one(12));
  } finally {
    for (const p of producers) await p.disconnect().catch(() => undefined);
  }
  // The markers are written after the commit or abort returns: wait for them (13 messages, 6 markers).
  const admin = kafka.admin();
  await admin.connect();
  try {
    const deadline = Date.now() + 15_000;
    let end = 0n;
    while ((end = BigInt((await admin.fetchTopicOffsets(topic)).find((o) => o.partition === partition)?.high ?? "0")) < 19n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    return { committed: [1, 3, 6, 7, 11, 12], aborted: [0, 2, 4, 5, 8, 9, 10], end };
  } finally {
    await admin.disconnect();
  }
}
