// KafkaSink's default transport, its client loaded when the sink first
// connects (platformatic-options.ts says why).
import type { KafkaMessageOut } from "./encode.js";
import { describeKafkaError, type KafkaFailure } from "./security.js";
import { idempotentInFlight, type KafkaTransport, type TransportOptions } from "./transport.js";

/**
 * The @platformatic/kafka transport (platformatic-transport.ts), made at the
 * first connect: a sink that never reaches Kafka never loads the client.
 */
export class LazyPlatformaticTransport implements KafkaTransport {
  readonly name = "platformatic" as const;
  readonly maxInFlight: number;
  private inner: KafkaTransport | undefined;
  private loading: Promise<KafkaTransport> | undefined;

  constructor(private readonly opts: TransportOptions) {
    this.maxInFlight = idempotentInFlight(opts);
  }

  private load(): Promise<KafkaTransport> {
    return (this.loading ??= import("./platformatic-transport.js").then((m) => (this.inner = new m.PlatformaticTransport(this.opts))));
  }

  async connect(topics: string[]): Promise<void> {
    await (await this.load()).connect(topics);
  }

  get partitionCounts(): ReadonlyMap<string, number> {
    return this.inner?.partitionCounts ?? new Map();
  }

  send(queue: readonly KafkaMessageOut[], from: number, to: number): Promise<void> {
    if (this.inner) return this.inner.send(queue, from, to);
    // (Not connected yet: the messages are read now, as send() promises.)
    const part = queue.slice(from, to);
    return this.load().then((t) => t.send(part, 0, part.length));
  }

  async disconnect(): Promise<void> {
    if (this.loading) await (await this.loading).disconnect();
  }

  describe(err: unknown): KafkaFailure {
    return this.inner ? this.inner.describe(err) : describeKafkaError(err, this.opts);
  }
}
