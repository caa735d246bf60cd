// Topics for a test on the real broker, made with Kafka's admin API, and read
// back to their end.
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js"; // kafkajs reads only gzip without these plugins
import { waitForLeaders as leadersOf } from "../../exporter/src/kafka/topics-ready.js";

/**
 * Makes `topics` with `partitions` each, waiting for their leaders unless told
 * not to. (Not with kafkajs's own wait: a KRaft broker may answer its metadata
 * request for a topic it has just created with UNKNOWN_TOPIC_OR_PARTITION,
 * which kafkajs takes for a failure; topics-ready.ts looks again.)
 */
export async function createTopics(brokers: string, topics: readonly string[], partitions = 1, waitForLeaders = true): Promise<void> {
  const admin = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING, clientId: "test-topics" }).admin();
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders: false, topics: topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })) });
    if (waitForLeaders) {
      await leadersOf(async (wanted) => {
        const md = await admin.fetchTopicMetadata({ topics: wanted });
        return { topics: new Map(md.topics.map((t) => [t.name, { partitions: t.partitions.map((p) => ({ leader: p.leader })) }])) };
      }, [...topics]);
    }
  } finally {
    await admin.disconnect();
  }
}

export interface ReadMessage {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, string>;
}

/**
 * Every message on `topics` (not written in transactions), from the
 * beginning to each partition's end as it is when called: what the producers
 * done by then wrote, duplicates included, read without waiting for a quiet
 * spell.
 */
export async function readToEnd(brokers: string, topics: readonly string[], timeoutMs = 60_000): Promise<ReadMessage[]> {
  const kafka = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING, clientId: "test-reader" });
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map<string, bigint>();
  try {
    for (const topic of topics) for (const p of await admin.fetchTopicOffsets(topic)) if (BigInt(p.high) > BigInt(p.low)) ends.set(`${topic}/${p.partition}`, BigInt(p.high));
  } finally {
    await admin.disconnect();
  }
  const out: ReadMessage[] = [];
  if (ends.size === 0) return out;
  const consumer = kafka.consumer({ groupId: `test-reader-${Date.now()}-${Math.random()}` });
  await consumer.connect();
  try {
    for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true });
    const left = new Set(ends.keys());
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${out.length} messages on ${topics.join(", ")} after ${timeoutMs} ms; partitions not read to their end: ${[...left].join(", ")}`)), timeoutMs);
      void consumer.run({
        eachMessage: async ({ topic, partition, message }) => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = String(v);
          out.push({ topic, partition, offset: message.offset, key: message.key, value: message.value, headers });
          const id = `${topic}/${partition}`;
          if (BigInt(message.offset) + 1n >= (ends.get(id) ?? 0n)) left.delete(id);
          if (left.size === 0) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return out;
}
