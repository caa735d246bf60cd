// The security options of this project's @platformatic/kafka clients, and the
// client itself loaded when a command first makes one: its import (about
// 0.65 s: it compiles its options' schemas) is paid only by what reaches
// Kafka, not by every start of the command line.
import type { SASLOptions } from "@platformatic/kafka";
import type { ConnectionOptions as TlsOptions } from "node:tls";
import type { TransportOptions } from "./transport.js";

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
