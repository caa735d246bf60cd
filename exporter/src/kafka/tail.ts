// Reads back what is already on Kafka: the messages of some topics from a
// point in time up to their current end. A restarted exporter uses it to
// learn which records an earlier run had published, so that replaying its
// journal publishes none of them twice.
import "./kafkajs-codecs.js";
import { Kafka, logLevel } from "kafkajs";
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
 * had when the read began. Topics that do not exist are skipped. Resolves
 * with the number of messages read.
 */
export async function readTopicTails(o: ReadTailOptions): Promise<number> {
  const kafka = new Kafka({ clientId: "rdma-telemetry-tail", brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, logLevel: logLevel.NOTHING, retry: { retries: 3 } });
  const admin = kafka.admin();
  // The part of each partition to read: [from, end).
  const ranges = new Map<string, { from: bigint; end: bigint }>();
  try {
    await admin.connect();
    const existing = new Set(await admin.listTopics());
    for (const topic of o.topics.filter((t) => existing.has(t))) {
      const ends = await admin.fetchTopicOffsets(topic);
      const froms = await admin.fetchTopicOffsetsByTimestamp(topic, o.sinceMs);
      for (const e of ends) {
        const f = froms.find((x) => x.partition === e.partition);
        // No message at or after the time: the partition's end.
        const from = f && Number(f.offset) >= 0 ? BigInt(f.offset) : BigInt(e.high);
        if (from < BigInt(e.high)) ranges.set(`${topic}|${e.partition}`, { from, end: BigInt(e.high) });
      }
    }
  } catch (err) {
    throw new KafkaConnectError(describeKafkaError(err, o));
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  if (ranges.size === 0) return 0;

  // A consumer group can fail to start on a loaded machine (its join times
  // out, the consumer crashes before it is seeked): the read starts again with
  // a fresh group, and what was read already is read again (the caller's
  // set of records takes it twice without harm).
  const timeoutMs = o.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await readRanges(kafka, ranges, o, deadline, timeoutMs);
    } catch (err) {
      if (attempt >= TAIL_ATTEMPTS || Date.now() >= deadline) throw err;
    }
  }
}

/** Reads with a fresh consumer group a try. */
const TAIL_ATTEMPTS = 3;

async function readRanges(kafka: Kafka, ranges: Map<string, { from: bigint; end: bigint }>, o: ReadTailOptions, deadline: number, timeoutMs: number): Promise<number> {
  // A consumer of its own group, which commits nothing: it seeks to each range's start.
  const groupId = `rdma-telemetry-tail-${process.pid}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200, retry: { retries: 3, restartOnFailure: async () => false } });
  let read = 0;
  let finish!: () => void;
  let fail!: (err: Error) => void;
  const done = new Promise<void>((resolve, reject) => ((finish = resolve), (fail = reject)));
  done.catch(() => undefined); // a crash after the read gave up is nobody's
  consumer.on(consumer.events.CRASH, (e) => fail(new Error(`the reading consumer stopped: ${(e.payload.error as Error).message}`)));
  const open = new Set(ranges.keys());
  try {
    await consumer.connect();
    for (const topic of new Set([...ranges.keys()].map((k) => k.slice(0, k.lastIndexOf("|"))))) await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const key = `${batch.topic}|${batch.partition}`;
        const range = ranges.get(key);
        if (!range) return;
        for (const m of batch.messages) {
          const offset = BigInt(m.offset);
          if (offset < range.from || offset >= range.end) continue;
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(m.headers ?? {})) if (v !== undefined) headers[k] = v.toString();
          if (m.value) o.onMessage({ topic: batch.topic, headers, value: m.value });
          read++;
        }
        // (The batch's last offset counts transaction markers, which are never messages: a partition may end with one.)
        const last = BigInt(batch.lastOffset());
        if (last + 1n >= range.end || BigInt(batch.highWatermark) <= range.from) {
          open.delete(key);
          if (open.size === 0) finish();
        }
      },
    });
    for (const [key, r] of ranges) {
      const i = key.lastIndexOf("|");
      consumer.seek({ topic: key.slice(0, i), partition: Number(key.slice(i + 1)), offset: String(r.from) });
    }
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([done.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), Math.max(0, deadline - Date.now()))))]).finally(() => clearTimeout(timer));
    if (timedOut) throw new Error(`reading back ${open.size} partitions of ${o.topics.join(", ")} took over ${timeoutMs} ms`);
  } finally {
    await consumer.disconnect().catch(() => undefined);
    const cleanup = kafka.admin();
    await cleanup.connect().then(() => cleanup.deleteGroups([groupId])).catch(() => undefined).finally(() => cleanup.disconnect().catch(() => undefined));
  }
  return read;
}
