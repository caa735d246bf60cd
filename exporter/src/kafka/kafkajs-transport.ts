// KafkaSink's transport on kafkajs 2.2: an idempotent producer (one request
// in flight, sequence numbers kept across retries, so a batch sent again after
// a broker restart is not duplicated), keyed records partitioned as Kafka's
// Java client does.
import "./kafkajs-codecs.js";
import { CompressionTypes, Kafka, logLevel, type KafkaConfig, type Message, type Producer } from "kafkajs";
import type { KafkaMessageOut } from "./encode.js";
import { KeyedPartitioner } from "./partitioner.js";
import { describeKafkaError } from "./security.js";
import { headerBytes, type KafkaTransport, type TransportOptions } from "./transport.js";
import { waitForLeaders } from "./topics-ready.js";

const KAFKAJS_CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD } as const;

export class KafkajsTransport implements KafkaTransport {
  readonly name = "kafkajs" as const;
  /** kafkajs's idempotent producer takes one send at a time (concurrent sends would share sequence numbers). */
  readonly maxInFlight = 1;
  /** the same client with few retries, to set up topics */
  private readonly adminKafka: Kafka;
  private readonly producer: Producer;
  private readonly compression: CompressionTypes;

  constructor(private readonly opts: TransportOptions) {
    const config: KafkaConfig = {
      clientId: opts.clientId,
      brokers: opts.brokers,
      ssl: opts.ssl,
      sasl: opts.sasl,
      logLevel: logLevel.NOTHING,
      retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2000 },
    };
    const kafka = new Kafka(config);
    // The sink retries connecting for as long as it takes: a failure to
    // connect is reported at once rather than after kafkajs's backoff.
    this.adminKafka = new Kafka({ ...config, retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 500 } });
    // Idempotent: kafkajs retries a request with its sequence numbers, so the
    // broker drops what it already has (also across a broker restart).
    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: KeyedPartitioner, retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 2000 } });
    this.compression = KAFKAJS_CODECS[opts.compression];
  }

  readonly partitionCounts = new Map<string, number>();

  async connect(topics: string[]): Promise<void> {
    const admin = this.adminKafka.admin();
    try {
      await admin.connect();
      const existing = new Set(await admin.listTopics());
      const wanted = topics.filter((t) => !existing.has(t));
      if (wanted.length) {
        await admin.createTopics({
          waitForLeaders: false,
          topics: wanted.map((topic) => ({ topic, numPartitions: this.opts.partitions, replicationFactor: this.opts.replicationFactor })),
        });
        await waitForLeaders(async (t) => {
          const md = await admin.fetchTopicMetadata({ topics: t });
          return { topics: new Map(md.topics.map((x) => [x.name, { partitions: x.partitions.map((p) => ({ leader: p.leader })) }])) };
        }, wanted);
      }
      for (const t of (await admin.fetchTopicMetadata({ topics })).topics) this.partitionCounts.set(t.name, t.partitions.length);
    } finally {
      await admin.disconnect();
    }
    await this.producer.connect();
  }

  async send(queue: readonly KafkaMessageOut[], from: number, to: number): Promise<void> {
    // One list per topic, in queue order; the common case is a single topic.
    const topicMessages: Array<{ topic: string; messages: Message[] }> = [];
    let last: { topic: string; messages: Message[] } | undefined;
    for (let i = from; i < to; i++) {
      const m = queue[i]!;
      if (last?.topic !== m.topic) last = topicMessages.find((t) => t.topic === m.topic) ?? topicMessages[topicMessages.push({ topic: m.topic, messages: [] }) - 1]!;
      last.messages.push({ key: m.key, value: m.value, headers: headerBytes(m.headers) });
    }
    await this.producer.sendBatch({ acks: -1, compression: this.compression, topicMessages });
  }

  async disconnect(): Promise<void> {
    await this.producer.disconnect();
  }

  describe(err: unknown) {
    return describeKafkaError(err, this.opts);
  }
}
