// TLS and SASL settings of a Kafka client, and failures to connect told by
// their cause: refused credentials, an untrusted certificate, a broker that
// cannot be reached.
import { ExporterError } from "../errors.js";
import type { KafkaConfig } from "kafkajs";

export interface KafkaSecurity {
  /** true: TLS with the system's CAs; an object: tls.connect options (ca, cert, key) */
  ssl?: KafkaConfig["ssl"];
  sasl?: KafkaConfig["sasl"];
}

export type KafkaFailureCause = "authentication" | "tls" | "connection" | "other";

export interface KafkaFailure {
  cause: KafkaFailureCause;
  message: string;
}

/** A Kafka connection that failed, told by its cause. */
export class KafkaConnectError extends ExporterError {
  override readonly name = "KafkaConnectError";
  constructor(readonly failure: KafkaFailure) {
    // Refused credentials and TLS need an operator; a broker away may come back.
    super(failure.message, `KAFKA_${failure.cause.toUpperCase().replace(/-/g, "_")}`, failure.cause !== "authentication" && failure.cause !== "tls");
  }
}

/** Node's codes for a peer certificate that does not verify. */
const UNTRUSTED = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

const UNREACHABLE = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT"]);

type Chained = { name?: string; code?: string; message?: string; serverErrorMessage?: string; cause?: unknown; errors?: unknown[] };

/**
 * Describes a Kafka client's failure by its cause. kafkajs wraps the original
 * error in `cause`; @platformatic/kafka gathers the attempts' errors in
 * `errors` (the last is the latest), each wrapping its own in `cause`.
 */
export function describeKafkaError(err: unknown, security: KafkaSecurity = {}): KafkaFailure {
  const chain: Chained[] = [];
  for (let e = err as Chained | undefined; e && typeof e === "object" && chain.length < 16; e = (e.cause ?? e.errors?.[e.errors.length - 1]) as Chained | undefined) chain.push(e);
  const root = chain[chain.length - 1];
  const text = root?.serverErrorMessage ?? root?.message ?? String(err);
  const codes = chain.map((e) => e.code).filter((c): c is string => typeof c === "string");
  const sasl = security.sasl;
  if (chain.some((e) => e.name === "KafkaJSSASLAuthenticationError" || e.code === "PLT_KFK_AUTHENTICATION")) {
    const who = sasl && "username" in sasl ? ` for user '${sasl.username}' (${sasl.mechanism.toUpperCase()})` : "";
    return { cause: "authentication", message: `Kafka refused the SASL credentials${who}: ${text}; check the username, password and mechanism` };
  }
  const untrusted = codes.find((c) => UNTRUSTED.has(c));
  if (untrusted) {
    const hint = untrusted === "ERR_TLS_CERT_ALTNAME_INVALID" ? "the broker's certificate does not name the address connected to" : "trust the CA that signed the broker's certificate (CA file)";
    return { cause: "tls", message: `TLS: the broker's certificate is not trusted (${untrusted}: ${text.replace(/^Connection error: /, "")}); ${hint}` };
  }
  const ssl = codes.find((c) => c.startsWith("ERR_SSL_") || c === "EPROTO");
  if (ssl) {
    const clientCert = /CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_UNKNOWN/.test(ssl);
    const hint = clientCert
      ? "the broker refused this client's certificate, or wants one (mutual TLS: client cert and key signed by a CA it trusts)"
      : "does the broker's listener speak TLS?";
    return { cause: "tls", message: `TLS handshake with the broker failed (${ssl}); ${hint}` };
  }
  const unreachable = codes.find((c) => UNREACHABLE.has(c));
  if (unreachable) return { cause: "connection", message: `Kafka unreachable (${unreachable}): ${text}` };
  if (chain.some((e) => e.name === "KafkaJSConnectionClosedError" || e.name === "KafkaJSConnectionError" || e.name === "KafkaJSRequestTimeoutError" || e.code === "PLT_KFK_NETWORK" || e.code === "PLT_KFK_TIMEOUT")) {
    const mode = `${security.ssl ? "TLS" : "no TLS"}, ${sasl ? `SASL ${sasl.mechanism.toUpperCase()}` : "no SASL"}`;
    return { cause: "connection", message: `Kafka connection failed: ${text} (this client: ${mode}; does it match the broker's listener?)` };
  }
  return { cause: "other", message: text };
}
