// The security options of this project's @platformatic/kafka clients, and the
// client itself loaded when a command first makes one: its import (about
// 0.65 s: it compiles its options' schemas) is paid only by what reaches
// Kafka, not by every start of the command line.
import type { SASLOptions } from "@platformatic/kafka";
import type { ConnectionOptions as TlsOptions } from "node:tls";
import type { KafkaMessageOut } from "./encode.js";
import { describeKafkaError, type KafkaFailure } from "./security.js";
import { MAX_IDEMPOTENT_IN_FLIGHT, type KafkaTransport, type TransportOptions } from "./transport.js";

export type PlatformaticKafka = typeof import("@platformatic/kafka");

let loading: Promise<PlatformaticKafka> | undefined;

/** @platformatic/kafka, imported at the first call. */
export function platformaticKafka(): Promise<PlatformaticKafka> {
  return (loading ??= import("@platformatic/kafka"));
}

export function tlsOptions(ssl: TransportOptions["ssl"]): TlsOptions | undefined {
  if (!ssl) return undefined;
  return ssl === true ? {} : (ssl as TlsOptions);
}

export function saslOptions(sasl: TransportOptions["sasl"]): SASLOptions | undefined {
  if (!sasl) return undefined;
  if (!("username" in sasl)) throw new Error(`@platformatic/kafka: SASL ${sasl.mechanism} is not supported by the exporter`);
  return { mechanism: sasl.mechanism.toUpperCase() as SASLOptions["mechanism"], username: sasl.username, password: sasl.password };
}


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
    this.maxInFlight = Math.min(MAX_IDEMPOTENT_IN_FLIGHT, opts.maxInFlight ?? MAX_IDEMPOTENT_IN_FLIGHT);
  }

  private load(): Promise<KafkaTransport> {
    return (this.loading ??= import("./platformatic-transport.js").then((m) => (this.inner = new m.PlatformaticTransport(this.opts))));
  }

  async connect(topics: string[]): Promise<void> {
    await (await this.load()).connect(topics);
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
