// The exporter against a secured Kafka broker of its own (scripts/kafka/broker.mjs
// with security "sasl_ssl"): SASL over TLS with each mechanism, mutual TLS,
// refused credentials and untrusted certificates, and the command line's
// Kafka security options (app/kafka-options.ts), which build every client here.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js"; // kafkajs reads gzip only without these plugins
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { kafkaSecurity, type KafkaSecurityFlags } from "../../app/kafka-options.js";
import { SwitchStats } from "../../exporter/src/generated/rdma/telemetry/v1/records.js";
import { encodeRecord, type TopicNames } from "../../exporter/src/kafka/encode.js";
import { KafkaSink } from "../../exporter/src/kafka/kafka-sink.js";
import type { KafkaSecurity } from "../../exporter/src/kafka/security.js";
import type { SwitchStatsJson } from "../../contract/src/records.js";
import type { Logger } from "../../exporter/src/logger.js";
import { ConfigError } from "../../p4runtime-controller/src/config.js";
import { until } from "../support/wait.js";
import { CLI } from "../support/cli.js";

interface SecuredBroker {
  brokers: string;
  caFile: string;
  username: string;
  password: string;
  mechanisms: string[];
  mtlsBrokers: string;
  clientCertFile: string;
  clientKeyFile: string;
  stop(): Promise<void>;
}

const root = new URL("../..", import.meta.url).pathname;
const tmp = mkdtempSync(join(tmpdir(), "kafka-security-"));
let broker: SecuredBroker;

beforeAll(async () => {
  // @ts-expect-error -- plain ESM script without types
  const { startBroker } = (await import("../../scripts/kafka/broker.mjs")) as { startBroker: (o: { security: "sasl_ssl" }) => Promise<SecuredBroker> };
  broker = await startBroker({ security: "sasl_ssl" });
});
afterAll(async () => {
  await broker?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

function topics(tag: string): TopicNames {
  const id = `${tag}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  return { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
}

/** A real record: the switch_stats of switch `switchId`, numbered by digests_received. */
function stats(switchId: string, n: number): SwitchStatsJson {
  return {
    type: "switch_stats", switch_id: switchId, interval_start_unix_ns: "1000000000", interval_end_unix_ns: "2000000000",
    digests_received: n, digests_lost: 0, digests_duplicated: 0, bad_digests: 0, switch_restarts: 0, late_records: 0, late_responses: 0, totals_since_unix_ns: "0", incomplete_ios: 0, ios_left_window: 0, ios_answer_lost: 0, ios_pairing_confused: 0, untracked_flows: 0, untracked_ios: 0, io_references_lost: 0, parser_errors: 0, unknown_opcodes: 0,
    io_replaced: 0, io_unpaired_responses: 0, queue_pairs_learned: 0, cnp_untracked: 0, unknown_endpoint_digests: 0, reserved_address_packets: 0, ipv6_ext_header_packets: 0, unknown_endpoint_packets: 0, mode: "full",
  };
}

/** SASL over TLS as an operator gives it: flags, and the password in the environment. */
function sasl(mechanism: string, password = broker.password, flags: KafkaSecurityFlags = {}): KafkaSecurity {
  return kafkaSecurity({ "kafka-ca": broker.caFile, "kafka-sasl-mechanism": mechanism, "kafka-sasl-username": broker.username, ...flags }, { KAFKA_SASL_PASSWORD: password });
}

function recordingLogger(): Logger & { entries: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> } {
  const entries: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void entries.push({ level, msg, fields });
  return { entries, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}


/** Reads `count` messages of `topic` with a consumer of its own. */
async function readBack(brokers: string, security: KafkaSecurity, topic: string, count: number): Promise<SwitchStats[]> {
  const consumer = new Kafka({ brokers: [brokers], ...security, logLevel: logLevel.NOTHING }).consumer({ groupId: `reader-${topic}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const out: SwitchStats[] = [];
  await consumer.run({ eachMessage: async ({ message }) => void out.push(SwitchStats.decode(message.value!)) });
  try {
    await until(() => out.length >= count, 20_000, () => `${count} messages on ${topic} (got ${out.length})`);
  } finally {
    await consumer.disconnect();
  }
  return out;
}

describe("exporter on a SASL_SSL broker", () => {
  test("publishes with each SASL mechanism; the CLI's consume reads the records back decoded, password from a file", async () => {
    const t = topics("sasl");
    for (const mechanism of broker.mechanisms) {
      const sink = new KafkaSink({ brokers: [broker.brokers], topics: t, partitions: 1, ...sasl(mechanism) });
      await sink.start();
      for (let i = 0; i < 5; i++) sink.push(encodeRecord(stats(mechanism, i), t, "protobuf", 1_000_000_000n));
      await sink.flush(15_000);
      expect(sink.stats).toMatchObject({ sent: 5, dropped: 0, sendFailures: 0 });
      await sink.close();
    }
    const passwordFile = join(tmp, "password");
    writeFileSync(passwordFile, `${broker.password}\n`, { mode: 0o600 });
    const cli = spawn(process.execPath, [
      ...CLI, "consume", "--topic", t.alert, "--from-beginning",
      "--kafka-brokers", broker.brokers, "--kafka-ca", broker.caFile, "--kafka-sasl-mechanism", "scram-sha-256",
      "--kafka-sasl-username", broker.username, "--kafka-sasl-password-file", passwordFile,
    ], { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KAFKA_BROKERS: "", KAFKA_SASL_PASSWORD: "" } });
    let out = "";
    let err = "";
    cli.stdout.on("data", (d: Buffer) => (out += d.toString()));
    cli.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => cli.once("exit", r));
    try {
      await until(() => out.split("\n").filter(Boolean).length >= 15 || cli.exitCode !== null, 20_000, "15 records from `rdma-telemetry consume`");
    } finally {
      cli.kill("SIGTERM");
    }
    expect(await exited, err).toBe(0);
    // Printed as the JSON-lines sink writes records.
    const lines = out.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { key: string; type: string; value: { switch_id: string; digests_received: number } });
    expect(lines).toHaveLength(15);
    for (const l of lines) expect(l.type).toBe("rdma.telemetry.v1.SwitchStats");
    const seen = lines.map((l) => `${l.value.switch_id}:${l.value.digests_received}`).sort();
    expect(seen).toEqual(broker.mechanisms.flatMap((m) => [0, 1, 2, 3, 4].map((i) => `${m}:${i}`)).sort());
  }, 30_000);

  test("a wrong password is refused with an error naming it; records stay buffered, then spilled, and go out after a restart with the right one", async () => {
    const t = topics("badpw");
    const spillDir = join(tmp, "badpw-spill");
    const logger = recordingLogger();
    const bad = new KafkaSink({ brokers: [broker.brokers], topics: t, partitions: 1, spillDir, logger, ...sasl("plain", "not-the-password") });
    await bad.start();
    for (let i = 0; i < 20; i++) bad.push(encodeRecord(stats("badpw", i), t, "protobuf", 1_000_000_000n));
    await until(() => bad.stats.sendFailures >= 1, 10_000, "a refused send");
    expect(bad.stats.lastError).toMatch(/^Kafka refused the SASL credentials for user 'exporter' \(PLAIN\): .*Invalid username or password/);
    const refusals = logger.entries.filter((e) => e.fields?.cause === "authentication");
    expect(refusals.length).toBeGreaterThanOrEqual(2);
    expect(refusals.every((e) => e.level === "error")).toBe(true);
    expect(refusals[0]!.msg).toMatch(/records are buffered/);
    expect(bad.stats).toMatchObject({ sent: 0, buffered: 20, dropped: 0 });
    await bad.close(500);
    expect(bad.spillFiles().length).toBeGreaterThan(0);

    const good = new KafkaSink({ brokers: [broker.brokers], topics: t, partitions: 1, spillDir, ...sasl("plain") });
    await good.start();
    await good.flush(15_000);
    expect(good.stats).toMatchObject({ sent: 20, dropped: 0 });
    expect(good.stats.lastError).toBeUndefined();
    await good.close();
    expect(good.spillFiles()).toEqual([]);
    const got = await readBack(broker.brokers, sasl("scram-sha-512"), t.alert, 20);
    expect(got.map((s) => Number(s.digestsReceived))).toEqual([...Array(20).keys()]);
  }, 30_000);

  test("a client that does not trust the broker's CA is refused, and says so", async () => {
    const logger = recordingLogger();
    // TLS with the system's CAs only: the test CA is not among them.
    const security = kafkaSecurity({ "kafka-tls": true, "kafka-sasl-mechanism": "plain", "kafka-sasl-username": broker.username }, { KAFKA_SASL_PASSWORD: broker.password });
    expect(security.ssl).toBe(true);
    const sink = new KafkaSink({ brokers: [broker.brokers], topics: topics("untrusted"), logger, ...security });
    await sink.start();
    sink.push(encodeRecord(stats("untrusted", 0), sink.topicNames, "protobuf", 1_000_000_000n));
    await until(() => sink.stats.sendFailures >= 1, 10_000, "a refused connection");
    expect(sink.stats.lastError).toMatch(/^TLS: the broker's certificate is not trusted \(SELF_SIGNED_CERT_IN_CHAIN: .*\); trust the CA/);
    expect(logger.entries.filter((e) => e.fields?.cause === "tls" && e.level === "error").length).toBeGreaterThan(0);
    expect(sink.stats).toMatchObject({ sent: 0, buffered: 1, dropped: 0 });
    await sink.close(200);
  }, 20_000);

  test("mutual TLS: with its client certificate the exporter publishes; without one it is refused", async () => {
    const t = topics("mtls");
    const mtls = kafkaSecurity({ "kafka-ca": broker.caFile, "kafka-cert": broker.clientCertFile, "kafka-key": broker.clientKeyFile }, {});
    const sink = new KafkaSink({ brokers: [broker.mtlsBrokers], topics: t, partitions: 1, ...mtls });
    await sink.start();
    for (let i = 0; i < 3; i++) sink.push(encodeRecord(stats("mtls", i), t, "protobuf", 1_000_000_000n));
    await sink.flush(15_000);
    await sink.close();
    const got = await readBack(broker.mtlsBrokers, mtls, t.alert, 3);
    expect(got.map((s) => s.switchId)).toEqual(["mtls", "mtls", "mtls"]);

    const anonymous = new KafkaSink({ brokers: [broker.mtlsBrokers], topics: topics("mtls-none"), ...kafkaSecurity({ "kafka-ca": broker.caFile }, {}) });
    await anonymous.start();
    anonymous.push(encodeRecord(stats("mtls-none", 0), anonymous.topicNames, "protobuf", 1_000_000_000n));
    await until(() => anonymous.stats.sendFailures >= 1, 10_000, "a refused connection");
    expect(anonymous.stats.lastError).toMatch(/^TLS handshake with the broker failed \(ERR_SSL_[\w/]+\); the broker refused this client's certificate, or wants one/);
    expect(anonymous.stats.sent).toBe(0);
    await anonymous.close(200);
  }, 30_000);
});

describe("Kafka security options of the command line", () => {
  const write = (name: string, text: string) => {
    const f = join(tmp, name);
    writeFileSync(f, text);
    return f;
  };
  const invalid = (flags: KafkaSecurityFlags, env: Record<string, string>, message: RegExp) => {
    expect(() => kafkaSecurity(flags, env)).toThrow(ConfigError);
    expect(() => kafkaSecurity(flags, env)).toThrow(message);
  };

  test("files and credentials are read and checked; every mistake is named", () => {
    const user = { "kafka-sasl-username": "u" };
    expect(kafkaSecurity({}, {})).toEqual({ ssl: undefined });
    expect(kafkaSecurity({}, { KAFKA_TLS: "true" })).toEqual({ ssl: true });
    expect(kafkaSecurity({}, { KAFKA_SASL_MECHANISM: "SCRAM-SHA-512", KAFKA_SASL_USERNAME: "u", KAFKA_SASL_PASSWORD_FILE: write("pw", "s3cret\r\n"), KAFKA_CA_FILE: broker.caFile }))
      .toMatchObject({ ssl: { ca: [expect.stringContaining("BEGIN CERTIFICATE")] }, sasl: { mechanism: "scram-sha-512", username: "u", password: "s3cret" } });
    // A flag wins over its variable.
    expect(kafkaSecurity({ "kafka-sasl-username": "flag" }, { KAFKA_SASL_MECHANISM: "plain", KAFKA_SASL_USERNAME: "env", KAFKA_SASL_PASSWORD: "p", KAFKA_TLS: "1" }).sasl).toMatchObject({ username: "flag" });
    const warnings: string[] = [];
    kafkaSecurity({ "kafka-sasl-mechanism": "plain", ...user }, { KAFKA_SASL_PASSWORD: "p" }, (m) => warnings.push(m));
    expect(warnings).toEqual([expect.stringMatching(/PLAIN without TLS sends the Kafka password in clear/)]);

    invalid({}, { KAFKA_TLS: "maybe" }, /^KAFKA_TLS: must be true or false/);
    invalid({ "kafka-cert": broker.clientCertFile }, {}, /^--kafka-cert: mutual TLS needs both a client certificate \(--kafka-cert\) and its key/);
    invalid({}, { KAFKA_KEY_FILE: broker.clientKeyFile }, /^KAFKA_KEY_FILE: mutual TLS needs both/);
    invalid({ "kafka-ca": join(tmp, "missing.pem") }, {}, /^--kafka-ca: cannot read .*missing\.pem: ENOENT/);
    invalid({ "kafka-ca": write("not.pem", "hello") }, {}, /^--kafka-ca: .*not\.pem is not a PEM certificate/);
    invalid({ "kafka-cert": broker.clientCertFile, "kafka-key": broker.caFile }, {}, /^--kafka-key: .* is not an unencrypted PEM private key/);
    // The CA's key is a key, but not the client certificate's.
    invalid({ "kafka-cert": broker.clientCertFile, "kafka-key": join(broker.caFile, "../ca.key") }, {}, /^--kafka-key: .*ca\.key is not the key of the certificate/);
    invalid({ "kafka-sasl-mechanism": "gssapi", ...user }, { KAFKA_SASL_PASSWORD: "p" }, /^--kafka-sasl-mechanism: must be plain, scram-sha-256, scram-sha-512 \(got 'gssapi'\)/);
    invalid({ ...user }, { KAFKA_SASL_PASSWORD: "p" }, /^--kafka-sasl-username: SASL credentials without a mechanism/);
    invalid({}, { KAFKA_SASL_PASSWORD: "p" }, /^KAFKA_SASL_PASSWORD: SASL credentials without a mechanism/);
    invalid({ "kafka-sasl-mechanism": "plain" }, { KAFKA_SASL_PASSWORD: "p" }, /^SASL plain needs a username/);
    invalid({ "kafka-sasl-mechanism": "plain", ...user }, {}, /^SASL plain needs a password: KAFKA_SASL_PASSWORD or --kafka-sasl-password-file/);
    invalid({ "kafka-sasl-mechanism": "plain", ...user, "kafka-sasl-password-file": write("pw2", "x") }, { KAFKA_SASL_PASSWORD: "p" }, /^SASL password given twice/);
    invalid({ "kafka-sasl-mechanism": "plain", ...user, "kafka-sasl-password-file": write("empty", "\n") }, {}, /^--kafka-sasl-password-file: .*empty is empty/);
  });

  test("the command line exits 2 on a bad setting and takes no password flag", () => {
    const run = (...args: string[]) => spawnSync(process.execPath, [...CLI, "consume", "--topic", "x", "--kafka-brokers", "127.0.0.1:1", ...args], { cwd: root, encoding: "utf8", env: { ...process.env, KAFKA_SASL_PASSWORD: "" } });
    const missing = run("--kafka-sasl-mechanism", "scram-sha-256", "--kafka-sasl-username", "u");
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^rdma-telemetry: SASL scram-sha-256 needs a password/);
    const argv = run("--kafka-sasl-password", "secret");
    expect(argv.status).toBe(2);
    expect(argv.stderr).toMatch(/unknown option '--kafka-sasl-password'/i);
  }, 20_000);
});
