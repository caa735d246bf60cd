// KafkaSink's transport on @platformatic/kafka: an idempotent producer
// (acks=all, up to five produce requests in flight per broker connection as
// Java's max.in.flight.requests.per.connection, sequence numbers kept while it
// retries), keyed records partitioned as Kafka's Java client does.
//
// The producer retries every retriable failure itself with the same producer
// id and sequence numbers, without limit: a batch that reached the log before
// a broker died is dropped by the broker when it comes again, rather than
// written twice. (When a send fails for good, this client starts a new
// producer id, and the broker could no longer tell a batch sent again.) Each
// retried failure is reported through onRetry, so the sink counts and logs it
// as it does kafkajs's failures. Failures that retrying cannot mend (refused
// credentials, TLS) end the send and are reported by the sink.
import { Admin, instancesChannel, kGetApi, Producer, type API, type Callback, type MessageToProduce } from "@platformatic/kafka";
import type { KafkaMessageOut } from "./encode.js";
import { saslOptions, tlsOptions } from "./platformatic-options.js";
import { positiveKeyHash } from "./partitioner.js";
import { fastProduceApi, waitsForEarlier, withBufferKeys } from "./produce-request.js";
import { describeKafkaError } from "./security.js";
import { waitForLeaders } from "./topics-ready.js";
import { idempotentInFlight, type KafkaTransport, type TransportOptions } from "./transport.js";

/** Keys go to the producer as strings: the partitioner hashes them and produce-request.ts writes them without a Buffer each. */
type Out = MessageToProduce<string, Buffer, Buffer, Buffer>;

/** Header sets as the wire wants them (Buffer names and values), shared by every record with the same set. */
const headerMaps = new WeakMap<Record<string, string>, Map<Buffer, Buffer>>();
function headerMap(h: Record<string, string>): Map<Buffer, Buffer> {
  let m = headerMaps.get(h);
  if (!m) {
    m = new Map(Object.entries(h).map(([k, v]) => [Buffer.from(k), Buffer.from(v)]));
    headerMaps.set(h, m);
  }
  return m;
}

/**
 * The last socket error of each client's connections (by the client's
 * instance id). This client fails a request on a connection the broker closed
 * with "Connection closed" alone; the socket's own error (a TLS alert: a
 * client certificate the broker wants) only goes to the connection's error
 * event, seen here through the client's diagnostics channel.
 */
const socketErrors = new Map<number, { error: unknown; at: number }>();
instancesChannel.subscribe((event) => {
  const e = event as { type?: string; instance?: { ownerId?: number; on?: (ev: string, f: (err: { cause?: unknown }) => void) => void } };
  if (e.type !== "connection" || e.instance?.ownerId === undefined || !e.instance.on) return;
  const owner = e.instance.ownerId;
  e.instance.on("error", (err) => {
    socketErrors.set(owner, { error: err.cause ?? err, at: Date.now() });
    if (socketErrors.size > 256) socketErrors.delete(socketErrors.keys().next().value!);
  });
});

/** Kafka's default partitioner (murmur2, positive, modulo the partition count), which the producer applies modulo. */
const javaPartitioner = (_m: Out, key: Buffer | string | undefined) => (key ? positiveKeyHash(key) : 0);

/**
 * The client's producer with its Produce requests (v11) written by
 * produce-request.ts; other versions and APIs as the client has them.
 */
class ExporterProducer extends Producer<string, Buffer, Buffer, Buffer> {
  private fastProduce: ReturnType<typeof fastProduceApi> | undefined;

  override [kGetApi]<A extends Array<unknown>, R>(name: string, callback: Callback<API<A, R>>): void {
    if (name !== "Produce") {
      super[kGetApi]<A, R>(name, callback);
      return;
    }
    super[kGetApi]<A, R>(name, (error, api) => {
      if (error || !api) {
        callback(error, api);
        return;
      }
      if (api.version !== 11) {
        callback(null, withBufferKeys(api as never) as unknown as API<A, R>);
        return;
      }
      this.fastProduce ??= fastProduceApi(api as never);
      callback(null, this.fastProduce as unknown as API<A, R>);
    });
  }
}

export class PlatformaticTransport implements KafkaTransport {
  readonly name = "platformatic" as const;
  /**
   * Sends take their sequence numbers in the order they are made and queue
   * on the broker's connection, which carries up to this many produce
   * requests at once (the client's own idempotent mode allows one only).
   */
  readonly maxInFlight: number;
  private producer: Producer<string, Buffer, Buffer, Buffer> | undefined;
  private readonly base;
  private adminId: number | undefined;
  /** failed attempts since the last acknowledged send: the backoff of every retry grows with it */
  private failuresInRow = 0;

  constructor(private readonly opts: TransportOptions) {
    this.maxInFlight = idempotentInFlight(opts);
    this.base = {
      clientId: opts.clientId,
      bootstrapBrokers: opts.brokers,
      tls: tlsOptions(opts.ssl),
      sasl: saslOptions(opts.sasl),
      connectTimeout: 5000,
      requestTimeout: 30_000,
    };
  }

  private newProducer(): Producer<string, Buffer, Buffer, Buffer> {
    // Idempotent per send (below), not per client: the client's idempotent
    // mode would hold each broker connection to one request in flight.
    return new ExporterProducer({
      ...this.base,
      maxInflights: this.maxInFlight,
      acks: -1,
      compression: this.opts.compression,
      partitioner: javaPartitioner,
      autocreateTopics: false,
      retries: true,
      retryDelay: (_client, _op, _attempt, _retries, error) => {
        // A request held back while an earlier one goes through again
        // (produce-request.ts) is no failure of its own: it looks again soon,
        // but no more often than the failing one is retried.
        if (waitsForEarlier(error)) return Math.min(250, 100 * 2 ** Math.min(this.failuresInRow, 5));
        this.opts.onRetry?.(error);
        return Math.min(2000, 100 * 2 ** Math.min(this.failuresInRow++, 5));
      },
    });
  }

  readonly partitionCounts = new Map<string, number>();

  async connect(topics: string[]): Promise<void> {
    const admin = new Admin({ ...this.base, retries: 2, retryDelay: 200 });
    this.adminId = admin.instanceId;
    try {
      const existing = new Set(await admin.listTopics());
      const wanted = topics.filter((t) => !existing.has(t));
      if (wanted.length) {
        await admin.createTopics({ topics: wanted, partitions: this.opts.partitions, replicas: this.opts.replicationFactor }).catch((err: unknown) => {
          // Another exporter created it meanwhile.
          if (!/TOPIC_ALREADY_EXISTS|already exists/i.test(String((err as { errors?: unknown[] }).errors?.map(String) ?? err))) throw err;
        });
        await waitForLeaders((t) => admin.metadata({ topics: t, forceUpdate: true }), wanted);
      }
      const md = await admin.metadata({ topics, forceUpdate: true });
      for (const t of topics) {
        const n = md.topics.get(t)?.partitions.length;
        if (n) this.partitionCounts.set(t, n);
      }
    } finally {
      await admin.close().catch(() => undefined);
    }
    this.producer ??= this.newProducer();
  }

  async send(queue: readonly KafkaMessageOut[], from: number, to: number): Promise<void> {
    const messages = new Array<Out>(to - from);
    // One timestamp for the batch (the client would make a BigInt of Date.now() for each record).
    const timestamp = BigInt(Date.now());
    for (let i = from; i < to; i++) {
      const m = queue[i]!;
      messages[i - from] = { topic: m.topic, key: m.key, value: m.value, headers: headerMap(m.headers), timestamp };
    }
    const producer = (this.producer ??= this.newProducer());
    try {
      await producer.send({ messages, idempotent: true, acks: -1 });
      this.failuresInRow = 0;
    } catch (err) {
      // The client gave up on this producer (and its id): the next send starts another.
      if (this.producer === producer) this.producer = undefined;
      await producer.close(true).catch(() => undefined);
      throw err;
    }
  }

  async disconnect(): Promise<void> {
    await this.producer?.close(true).catch(() => undefined);
  }

  describe(err: unknown) {
    const f = describeKafkaError(err, this.opts);
    if (f.cause !== "connection" && f.cause !== "other") return f;
    // A connection closed under a request: its socket's error, when it had one just now, tells why.
    for (const id of [this.producer?.instanceId, this.adminId]) {
      const seen = id === undefined ? undefined : socketErrors.get(id);
      if (seen && Date.now() - seen.at < 10_000) {
        const g = describeKafkaError(seen.error, this.opts);
        if (g.cause === "tls" || g.cause === "authentication") return g;
      }
    }
    return f;
  }
}

