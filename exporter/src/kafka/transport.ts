// The one sink interface the exporter publishes through, and the small
// "transport" a Kafka client plugs into it. KafkaSink owns the memory queue,
// the spill to disk, batching, retries and the accounting; a transport only
// creates topics, connects, sends one batch (idempotent, acks=all) and
// disconnects. Two transports ship: kafkajs and @platformatic/kafka.
import type { KafkaMessageOut, TopicNames } from "./encode.js";
import type { KafkaFailure, KafkaSecurity } from "./security.js";

export interface KafkaSinkStats {
  sent: number;
  buffered: number;
  spilledNow: number;
  spilledTotal: number;
  /** dropped: Kafka away and the spill full or unwritable */
  dropped: number;
  /** spilled messages set aside, not sent: their segment did not parse, or names topics Kafka does not create */
  setAside: number;
  sendFailures: number;
  /** why the spill could not be written, when it could not */
  spillError?: string;
  /** why the last attempt to connect or send failed; cleared by the next success */
  lastError?: string;
}

/** What the exporter, the replay and the controller publish records through. */
export interface RecordSink {
  start(): Promise<void>;
  push(m: KafkaMessageOut): void;
  /** true once everything pushed is acknowledged; with untilAway, false as soon as Kafka is `away` */
  waitDelivered(timeoutMs: number, o?: { untilAway?: boolean }): Promise<boolean>;
  flush(timeoutMs?: number): Promise<void>;
  close(timeoutMs?: number): Promise<number>;
  readonly pending: number;
  /** Kafka failing longer than a passing error, with a spill to take what is left */
  readonly away: boolean;
  /** where what Kafka has not acknowledged is kept (undefined: nowhere) */
  readonly spillDir: string | undefined;
  readonly stats: KafkaSinkStats;
  readonly topicNames: TopicNames;
  spillFiles(): string[];
}

export const KAFKA_CLIENTS = ["kafkajs", "platformatic"] as const;
export type KafkaClientName = (typeof KAFKA_CLIENTS)[number];
/**
 * The client a sink uses when none is named (--kafka-client, KAFKA_CLIENT):
 * @platformatic/kafka, 1.3 to 1.6 times kafkajs's records/s in the exporter
 * (`npm run bench -- kafka`, docs/operations.md), maintained; kafkajs stays
 * selectable.
 */
export const DEFAULT_KAFKA_CLIENT: KafkaClientName = "platformatic";

/** A client name from a flag or KAFKA_CLIENT; undefined gives the default. */
export function kafkaClientName(v: string | undefined, from = "KAFKA_CLIENT"): KafkaClientName {
  if (v === undefined || v === "") return DEFAULT_KAFKA_CLIENT;
  const name = v.toLowerCase() === "@platformatic/kafka" ? "platformatic" : v.toLowerCase();
  if (!(KAFKA_CLIENTS as readonly string[]).includes(name)) throw new Error(`${from}: must be ${KAFKA_CLIENTS.join(" or ")} (got '${v}')`);
  return name as KafkaClientName;
}

/**
 * Produce requests a broker keeps the sequence numbers of, per producer and
 * partition: with more in flight, a batch sent again after a broker restart
 * could be older than what the broker remembers and be written twice.
 */
export const MAX_IDEMPOTENT_IN_FLIGHT = 5;

/** The produce requests an idempotent transport keeps in flight: as asked, at most MAX_IDEMPOTENT_IN_FLIGHT. */
export function idempotentInFlight(o: TransportOptions): number {
  return Math.min(MAX_IDEMPOTENT_IN_FLIGHT, o.maxInFlight ?? MAX_IDEMPOTENT_IN_FLIGHT);
}

/** maxInFlight from the option or KAFKA_MAX_IN_FLIGHT: an integer from 1 to 5. */
export function kafkaMaxInFlight(v: number | string | undefined, from = "KAFKA_MAX_IN_FLIGHT"): number {
  if (v === undefined || v === "") return MAX_IDEMPOTENT_IN_FLIGHT;
  const n = typeof v === "number" ? v : /^\d+$/.test(v.trim()) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_IDEMPOTENT_IN_FLIGHT) throw new Error(`${from}: must be an integer from 1 to ${MAX_IDEMPOTENT_IN_FLIGHT} (got '${v}')`);
  return n;
}

/** Kafka's compression.type values: the record batches' codec. */
export const KAFKA_COMPRESSIONS = ["none", "gzip", "snappy", "lz4", "zstd"] as const;
export type KafkaCompression = (typeof KAFKA_COMPRESSIONS)[number];
/** The default codec: zstd, the most records/s of the five at about lz4's CPU, and the smallest batches (docs/operations.md, "Kafka compression"). */
export const DEFAULT_KAFKA_COMPRESSION: KafkaCompression = "zstd";

/** The codec from an option or KAFKA_COMPRESSION (default when not given). */
export function kafkaCompression(v: string | undefined, from = "KAFKA_COMPRESSION"): KafkaCompression {
  if (v === undefined || v === "") return DEFAULT_KAFKA_COMPRESSION;
  if ((KAFKA_COMPRESSIONS as readonly string[]).includes(v)) return v as KafkaCompression;
  throw new Error(`${from} must be ${KAFKA_COMPRESSIONS.join(", ")} (got '${v}')`);
}

export interface TransportOptions extends KafkaSecurity {
  brokers: string[];
  clientId: string;
  compression: KafkaCompression;
  partitions: number;
  replicationFactor: number;
  /** produce requests in flight at most (the transport may allow fewer) */
  maxInFlight?: number;
  /** called on every failed attempt the client retries by itself (the sink counts and logs it) */
  onRetry?: (err: unknown) => void;
}

export interface KafkaTransport {
  readonly name: KafkaClientName;
  /**
   * Batches the sink may hand over before the first is acknowledged. Sends
   * must reach Kafka in the order they were made (the idempotent producer's
   * sequence numbers), and send() must not keep the queue it was given.
   */
  readonly maxInFlight: number;
  /** Creates the topics that are missing, then connects the producer. */
  connect(topics: string[]): Promise<void>;
  /** The partition count of each topic connect() was given, as Kafka had it then. */
  readonly partitionCounts: ReadonlyMap<string, number>;
  /** Sends messages [from, to) of `queue` (read before it returns) and resolves once Kafka acknowledged all of them. */
  send(queue: readonly KafkaMessageOut[], from: number, to: number): Promise<void>;
  disconnect(): Promise<void>;
  /** A failure of this client, told by its cause. */
  describe(err: unknown): KafkaFailure;
}

/**
 * Record headers with their values as Buffers, shared by every record with
 * the same headers (a handful of type/encoding pairs): a client would encode
 * each string value of each record anew. Keyed by the headers object itself
 * (encodeRecord shares one per type and encoding), then by its content.
 */
const byObject = new WeakMap<Record<string, string>, Record<string, Buffer>>();
const byContent = new Map<string, Record<string, Buffer>>();
export function headerBytes(h: Record<string, string>): Record<string, Buffer> {
  let out = byObject.get(h);
  if (out) return out;
  const keys = Object.keys(h);
  let id = "";
  for (const k of keys) id += `${k}\u0000${h[k]}\u0000`;
  out = byContent.get(id);
  if (!out) {
    out = Object.fromEntries(keys.map((k) => [k, Buffer.from(h[k]!)]));
    if (byContent.size < 1024) byContent.set(id, out);
  }
  byObject.set(h, out);
  return out;
}
