// Reads back what is already on Kafka: the messages of some topics from a
// point in time up to their current end. A restarted exporter uses it to
// learn which records an earlier run had published, so that replaying its
// journal publishes none of them twice; an exporter group member taking a
// partition over, to learn which records the partition's earlier owners
// committed.
import type { ClusterMetadata, RecordsBatch } from "@platformatic/kafka";
import { fetchRequest } from "./committed-reader.js";
import { TransactionSorter } from "./transaction-sorter.js";
import { platformaticKafka, saslOptions, tlsOptions } from "./platformatic-options.js";
import { describeKafkaError, KafkaConnectError, type KafkaSecurity } from "./security.js";

export interface TailMessage {
  topic: string;
  headers: Record<string, string>;
  value: Buffer;
}

export interface ReadTailOptions extends KafkaSecurity {
  brokers: string[];
  topics: string[];
  /** read messages whose Kafka timestamp is at or after this time (ms since the epoch) */
  sinceMs: number;
  onMessage: (m: TailMessage) => void;
  /** give up after this long (default 60 s): the tail is then incomplete, and the caller is told */
  timeoutMs?: number;
}

/**
 * Reads every message of `topics` from `sinceMs` to the end each partition
 * had when the read began (its high watermark). Topics that do not exist are
 * skipped. Resolves with the number of messages read.
 *
 * Only what is committed is read: a message outside any transaction, or in a
 * transaction whose commit marker lies before that end. The read sorts the
 * transactions itself, from the markers (it fetches read_uncommitted): an
 * aborted transaction is never read, however its records interleave with
 * other producers' (the kafkajs client's read_committed let some through
 * when two aborted transactions overlapped a fetch), and a transaction
 * still open at that end is not read and not waited for. Callers read back
 * what producers that are gone (a crashed run, an owner fenced by
 * InitProducerId, which ends its transaction first) have written: their
 * transactions are all decided by then.
 */
export async function readTopicTails(o: ReadTailOptions): Promise<number> {
  const timeoutMs = o.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const { Consumer } = await platformaticKafka();
  const consumer = new Consumer({
    clientId: "rdma-telemetry-tail", groupId: `rdma-telemetry-tail-${process.pid}`, bootstrapBrokers: o.brokers,
    tls: tlsOptions(o.ssl), sasl: saslOptions(o.sasl), connectTimeout: 5000, requestTimeout: 30_000, retries: 3, retryDelay: 200,
  });
  try {
    let meta: ClusterMetadata;
    const ranges = new Map<string, Range>();
    try {
      meta = await consumer.metadata({ topics: [] });
      const topics = o.topics.filter((t) => meta.topics.has(t) || false);
      // Topics not in the cluster-wide listing are looked up by name (the listing above may be partial under ACLs).
      const wanted = o.topics.filter((t) => !topics.includes(t));
      if (wanted.length) {
        const named = await consumer.metadata({ topics: wanted }).catch(() => undefined);
        for (const t of wanted) if (named?.topics.has(t)) topics.push(t);
      }
      if (topics.length === 0) return 0;
      meta = await consumer.metadata({ topics, forceUpdate: true });
      const ends = await consumer.listOffsets({ topics, isolationLevel: 0 });
      const froms = await consumer.listOffsets({ topics, timestamp: BigInt(o.sinceMs), isolationLevel: 0 });
      for (const topic of topics) {
        const e = ends.get(topic) ?? [];
        const f = froms.get(topic) ?? [];
        for (let partition = 0; partition < e.length; partition++) {
          const end = e[partition]!;
          // No message at or after the time: nothing to read.
          const from = f[partition] !== undefined && f[partition]! >= 0n ? f[partition]! : end;
          if (from < end) ranges.set(`${topic}|${partition}`, { topic, partition, next: from, from, end, sorter: new TransactionSorter(false) });
        }
      }
    } catch (err) {
      throw new KafkaConnectError(describeKafkaError(err, o));
    }
    let read = 0;
    while (ranges.size > 0) {
      if (Date.now() >= deadline) throw new Error(`reading back ${ranges.size} partitions of ${o.topics.join(", ")} took over ${timeoutMs} ms`);
      // One fetch per leader, every open partition of it.
      const byNode = new Map<number, Range[]>();
      for (const r of ranges.values()) {
        const leader = meta.topics.get(r.topic)?.partitions[r.partition]?.leader ?? -1;
        byNode.set(leader, [...(byNode.get(leader) ?? []), r]);
      }
      for (const [node, rs] of byNode) {
        const { topics, byId: topicIds } = fetchRequest(rs, meta, 4 << 20);
        let response;
        try {
          response = await consumer.fetch({ node, topics, isolationLevel: 0, maxWaitTime: 200, minBytes: 1, maxBytes: 16 << 20 });
        } catch (err) {
          // A leader moved or a connection dropped: the metadata is looked up again, and the read goes on from where it stands.
          if (Date.now() >= deadline) throw new KafkaConnectError(describeKafkaError(err, o));
          meta = await consumer.metadata({ topics: [...new Set([...ranges.values()].map((r) => r.topic))], forceUpdate: true });
          continue;
        }
        for (const t of response.responses) {
          const topic = topicIds.get(t.topicId);
          for (const p of t.partitions) {
            const r = topic === undefined ? undefined : ranges.get(`${topic}|${p.partitionIndex}`);
            if (!r) continue;
            for (const batch of p.records ?? []) read += take(r, batch, o.onMessage);
            // An offset the partition no longer has (deleted by retention meanwhile): what is left starts later.
            if (p.logStartOffset > r.next) r.next = p.logStartOffset;
            if (r.next >= r.end) ranges.delete(`${r.topic}|${r.partition}`);
          }
        }
      }
    }
    return read;
  } finally {
    // Closing waits for nothing that matters here: bounded, so that a close that hangs does not hold up a start.
    await Promise.race([consumer.close().catch(() => undefined), new Promise((r) => setTimeout(r, CLOSE_WAIT_MS).unref())]);
  }
}

/** How long a tail read waits for its consumer to close. */
const CLOSE_WAIT_MS = 5_000;

interface Range {
  topic: string;
  partition: number;
  /** where the next fetch starts */
  next: bigint;
  from: bigint;
  end: bigint;
  /** the messages of each producer's open transaction, until its marker says whether they count (committed-reader.ts) */
  sorter: TransactionSorter<TailMessage>;
}

/** Takes a fetched record batch into its partition's range: returns the messages it read. */
function take(r: Range, batch: RecordsBatch, onMessage: (m: TailMessage) => void): number {
  const last = batch.firstOffset + BigInt(batch.lastOffsetDelta);
  if (last < r.next) return 0; // fetched again (a batch starts before the offset asked for)
  // A marker at or past the end decides a transaction that was still open at the end: not read.
  const read = batch.firstOffset >= r.end ? 0 : r.sorter.take(batch, r.next > r.from ? r.next : r.from, (record, offset) => {
    if (offset >= r.end || !record.value) return undefined;
    const headers: Record<string, string> = {};
    for (const [k, v] of record.headers) if (k && v) headers[k.toString()] = v.toString();
    return { topic: r.topic, headers, value: record.value };
  }, onMessage);
  r.next = last + 1n;
  return read;
}
