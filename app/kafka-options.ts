// Kafka TLS and SASL settings from command-line flags and environment
// variables (a flag wins over its variable), validated with errors that name
// the flag or variable. The SASL password comes from the environment or a
// file, never from the command line.
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { isIPv4, isIPv6 } from "node:net";
import type { SASLOptions } from "kafkajs";
import type { KafkaSecurity, TopicNames } from "@rdma-telemetry/exporter";
import { ConfigError } from "@rdma-telemetry/controller";

/**
 * The topics of a prefix: PREFIX.io.v1, PREFIX.flow.v1, PREFIX.alert.v1,
 * PREFIX.digest.v1 (default prefix "rdma"), for fabrics or tests that share
 * a Kafka cluster. Throws ConfigError for a prefix Kafka would refuse.
 */
export function topicNames(prefix = "rdma", from = "--kafka-topic-prefix"): TopicNames {
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(prefix)) throw new ConfigError(`${from}: a topic prefix is letters, digits, '.', '_' and '-' (got '${prefix}')`);
  return { io: `${prefix}.io.v1`, flow: `${prefix}.flow.v1`, alert: `${prefix}.alert.v1`, digest: `${prefix}.digest.v1` };
}

/** A host name (letters, digits, '-', '_', dot-separated labels) or an IPv4 address. */
const HOST_NAME = /^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/;

/**
 * The brokers of a --kafka-brokers or KAFKA_BROKERS list: HOST:PORT entries,
 * comma-separated, an IPv6 address in brackets ([::1]:9092). Throws
 * ConfigError naming the entry at fault, so that a list that cannot work is
 * refused before any work.
 */
export function kafkaBrokers(list: string, from = "--kafka-brokers"): string[] {
  const entries = list.split(",").map((e) => e.trim());
  if (entries.every((e) => e === "")) throw new ConfigError(`${from}: no broker given (got '${list}'); brokers are HOST:PORT,...`);
  return entries.map((e) => {
    if (e === "") throw new ConfigError(`${from}: an empty entry in '${list}'; brokers are HOST:PORT,...`);
    const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):([^:]*)$/.exec(e);
    if (!m) {
      const why = !e.includes(":") || /^\[[^\]]*\]$/.test(e) ? "has no port" : !e.includes("[") && e.indexOf(":") !== e.lastIndexOf(":") ? "is not HOST:PORT (an IPv6 address goes in brackets: [::1]:9092)" : "is not HOST:PORT";
      throw new ConfigError(`${from}: broker '${e}' ${why}`);
    }
    const [, v6, host, port] = m;
    if (v6 !== undefined ? !isIPv6(v6) : !(isIPv4(host!) || HOST_NAME.test(host!))) throw new ConfigError(`${from}: broker '${e}': '${v6 ?? host}' is not a host name or IP address`);
    if (!/^\d{1,5}$/.test(port!) || Number(port) < 1 || Number(port) > 65535) throw new ConfigError(`${from}: broker '${e}': '${port}' is not a TCP port (1-65535)`);
    return e;
  });
}

/** parseArgs options of the Kafka security flags. */
export const KAFKA_SECURITY_FLAGS = {
  "kafka-tls": { type: "boolean" },
  "kafka-ca": { type: "string" },
  "kafka-cert": { type: "string" },
  "kafka-key": { type: "string" },
  "kafka-sasl-mechanism": { type: "string" },
  "kafka-sasl-username": { type: "string" },
  "kafka-sasl-password-file": { type: "string" },
} as const;

export type KafkaSecurityFlags = { [K in keyof typeof KAFKA_SECURITY_FLAGS]?: (typeof KAFKA_SECURITY_FLAGS)[K]["type"] extends "boolean" ? boolean : string };

/** Each flag's environment variable. */
const ENV = {
  "kafka-tls": "KAFKA_TLS",
  "kafka-ca": "KAFKA_CA_FILE",
  "kafka-cert": "KAFKA_CERT_FILE",
  "kafka-key": "KAFKA_KEY_FILE",
  "kafka-sasl-mechanism": "KAFKA_SASL_MECHANISM",
  "kafka-sasl-username": "KAFKA_SASL_USERNAME",
  "kafka-sasl-password-file": "KAFKA_SASL_PASSWORD_FILE",
} as const satisfies Record<keyof typeof KAFKA_SECURITY_FLAGS, string>;

const MECHANISMS = ["plain", "scram-sha-256", "scram-sha-512"];

interface Setting {
  value: string;
  /** where it came from: `--flag` or `VARIABLE` */
  from: string;
}

/**
 * The TLS and SASL options of a Kafka client; throws ConfigError naming the
 * flag or variable at fault. `warn` hears about settings that work but are unsafe.
 */
export function kafkaSecurity(flags: KafkaSecurityFlags, env: Record<string, string | undefined>, warn: (message: string) => void = () => {}): KafkaSecurity {
  const get = (name: Exclude<keyof typeof ENV, "kafka-tls">): Setting | undefined => {
    const flag = flags[name];
    if (flag !== undefined) return { value: flag, from: `--${name}` };
    const v = env[ENV[name]];
    return v ? { value: v, from: ENV[name] } : undefined;
  };
  const read = (s: Setting): string => {
    try {
      return readFileSync(s.value, "utf8");
    } catch (err) {
      throw new ConfigError(`${s.from}: cannot read ${s.value}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const certificate = (s: Setting): string => {
    const pem = read(s);
    try {
      new X509Certificate(pem);
    } catch {
      throw new ConfigError(`${s.from}: ${s.value} is not a PEM certificate`);
    }
    return pem;
  };

  let tls = flags["kafka-tls"] ?? false;
  const tlsEnv = env[ENV["kafka-tls"]];
  if (flags["kafka-tls"] === undefined && tlsEnv) {
    if (/^(1|true|yes)$/i.test(tlsEnv)) tls = true;
    else if (!/^(0|false|no)$/i.test(tlsEnv)) throw new ConfigError(`KAFKA_TLS: must be true or false (got '${tlsEnv}')`);
  }
  const caFile = get("kafka-ca");
  const certFile = get("kafka-cert");
  const keyFile = get("kafka-key");
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError(`${(certFile ?? keyFile)!.from}: mutual TLS needs both a client certificate (--kafka-cert) and its key (--kafka-key)`);
  }
  let ssl: KafkaSecurity["ssl"];
  if (caFile || certFile) {
    const opts: { ca?: string[]; cert?: string; key?: string } = {};
    if (caFile) opts.ca = [certificate(caFile)];
    if (certFile && keyFile) {
      const cert = certificate(certFile);
      const key = read(keyFile);
      let privateKey;
      try {
        privateKey = createPrivateKey(key);
      } catch {
        throw new ConfigError(`${keyFile.from}: ${keyFile.value} is not an unencrypted PEM private key`);
      }
      if (!new X509Certificate(cert).checkPrivateKey(privateKey)) throw new ConfigError(`${keyFile.from}: ${keyFile.value} is not the key of the certificate ${certFile.value}`);
      opts.cert = cert;
      opts.key = key;
    }
    ssl = opts;
  } else if (tls) {
    ssl = true;
  }

  const mechanismSetting = get("kafka-sasl-mechanism");
  const username = get("kafka-sasl-username");
  const passwordFile = get("kafka-sasl-password-file");
  const passwordEnv = env.KAFKA_SASL_PASSWORD;
  if (!mechanismSetting) {
    const stray = username?.from ?? passwordFile?.from ?? (passwordEnv ? "KAFKA_SASL_PASSWORD" : undefined);
    if (stray) throw new ConfigError(`${stray}: SASL credentials without a mechanism; set --kafka-sasl-mechanism (${MECHANISMS.join(", ")})`);
    return { ssl };
  }
  const mechanism = mechanismSetting.value.toLowerCase();
  if (!MECHANISMS.includes(mechanism)) throw new ConfigError(`${mechanismSetting.from}: must be ${MECHANISMS.join(", ")} (got '${mechanismSetting.value}')`);
  if (!username) throw new ConfigError(`SASL ${mechanism} needs a username: --kafka-sasl-username or KAFKA_SASL_USERNAME`);
  if (passwordFile && passwordEnv) throw new ConfigError(`SASL password given twice: ${passwordFile.from} and KAFKA_SASL_PASSWORD; keep one`);
  let password: string;
  if (passwordFile) {
    password = read(passwordFile).replace(/\r?\n$/, "");
    if (!password) throw new ConfigError(`${passwordFile.from}: ${passwordFile.value} is empty`);
  } else if (passwordEnv) {
    password = passwordEnv;
  } else {
    throw new ConfigError(`SASL ${mechanism} needs a password: KAFKA_SASL_PASSWORD or --kafka-sasl-password-file FILE`);
  }
  if (mechanism === "plain" && !ssl) warn("SASL PLAIN without TLS sends the Kafka password in clear; add --kafka-ca or --kafka-tls");
  const creds = { username: username.value, password };
  const sasl: SASLOptions = mechanism === "plain" ? { mechanism, ...creds } : mechanism === "scram-sha-256" ? { mechanism, ...creds } : { mechanism: "scram-sha-512", ...creds };
  return { ssl, sasl };
}
