#!/usr/bin/env node
// A single-node KRaft Kafka broker (Apache Kafka's jars from Maven Central,
// Java 17) on loopback, for tests and the demo. Kafka 4.4 unless KAFKA_VERSION
// (or --version) names another, e.g. 3.9.1.
//
//   node scripts/kafka/broker.mjs fetch [--version V]    download the jars (mvn) into .cache/kafka/V/libs
//   node scripts/kafka/broker.mjs start [--port N] [--security sasl_ssl] [--version V]
//                                                  start a broker, print its address, stay in the foreground
//
// As a module: startBroker({ port }) -> { brokers, stop() }, a PLAINTEXT listener.
// startBroker({ security: "sasl_ssl" }) -> also { caFile, username, password,
// mechanisms, mtlsBrokers, clientCertFile, clientKeyFile }: a SASL_SSL listener
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and an SSL listener that requires a
// client certificate, with a throwaway CA, certificates and passwords made
// by openssl into the broker's temporary directory. For tests only.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../ports.mjs";

const root = new URL("../..", import.meta.url).pathname;
const cache = process.env.KAFKA_CACHE ?? join(root, ".cache/kafka");
/** The version the tests and the demo use by default: the current Kafka 4. */
export const DEFAULT_KAFKA_VERSION = "4.4.0";

export function fetchJars(version = process.env.KAFKA_VERSION || DEFAULT_KAFKA_VERSION) {
  if (!/^\d+\.\d+\.\d+$/.test(version)) throw new Error(`not a Kafka version: '${version}'`);
  const libs = join(cache, version, "libs");
  if (existsSync(libs) && readdirSync(libs).some((f) => f === `kafka_2.13-${version}.jar`)) return libs;
  mkdirSync(libs, { recursive: true });
  const r = spawnSync("mvn", ["-q", "-B", "-f", join(root, "scripts/kafka/pom.xml"), "dependency:copy-dependencies", `-Dkafka.version=${version}`, `-DoutputDirectory=${libs}`, "-DincludeScope=runtime"], { stdio: "inherit" });
  if (r.status !== 0) throw new Error(`mvn could not fetch Kafka ${version}'s jars (exit ${r.status}); is Maven installed?`);
  return libs;
}

function waitForPort(port, timeoutMs, child) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`the Kafka broker exited with code ${child.exitCode}`));
      const sock = createConnection({ host: "127.0.0.1", port }, () => {
        sock.end();
        resolve();
      });
      sock.on("error", () => {
        sock.destroy();
        if (Date.now() > deadline) reject(new Error(`the Kafka broker did not listen on ${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 200);
      });
    };
    attempt();
  });
}

/**
 * Resolves once the broker on `port` (PLAINTEXT) answers a Kafka request
 * whole: an ApiVersions (v0) with error 0 and the request's correlation id.
 * A listening port alone is not a broker ready to serve, nor, after a
 * restart, necessarily the broker (another process may have taken the port).
 */
export function waitForKafka(port, timeoutMs, child = { exitCode: null }) {
  const deadline = Date.now() + timeoutMs;
  const clientId = Buffer.from("broker-probe");
  return new Promise((resolve, reject) => {
    let correlation = 0x5eed;
    const attempt = (why) => {
      if (child.exitCode !== null) return reject(new Error(`the Kafka broker exited with code ${child.exitCode}`));
      if (Date.now() > deadline) return reject(new Error(`the Kafka broker on ${port} did not answer ApiVersions within ${timeoutMs} ms (${why})`));
      setTimeout(probe, 200);
    };
    const probe = () => {
      const id = ++correlation;
      const req = Buffer.alloc(4 + 2 + 2 + 4 + 2 + clientId.length);
      req.writeInt32BE(req.length - 4, 0);
      req.writeInt16BE(18, 4); // ApiVersions
      req.writeInt16BE(0, 6);
      req.writeInt32BE(id, 8);
      req.writeInt16BE(clientId.length, 12);
      clientId.copy(req, 14);
      let buf = Buffer.alloc(0);
      let done = false;
      const finish = (ok, why) => {
        if (done) return;
        done = true;
        sock.destroy();
        if (ok) resolve();
        else attempt(why);
      };
      const sock = createConnection({ host: "127.0.0.1", port }, () => sock.write(req));
      sock.setTimeout(5000, () => finish(false, "no answer in 5 s"));
      sock.on("data", (b) => {
        buf = Buffer.concat([buf, b]);
        if (buf.length < 4) return;
        const size = buf.readInt32BE(0);
        if (size < 6 || size > 1 << 20) return finish(false, `a frame of ${size} bytes`);
        if (buf.length < 4 + size) return;
        const ok = buf.readInt32BE(4) === id && buf.readInt16BE(8) === 0;
        finish(ok, `correlation ${buf.readInt32BE(4)}, error ${buf.readInt16BE(8)}`);
      });
      sock.on("error", (e) => finish(false, e.message));
      sock.on("close", () => finish(false, "closed"));
    };
    probe();
  });
}

/** A test CA, a broker certificate for 127.0.0.1/localhost (PKCS12) and a client certificate, in `dir`. */
function makePki(dir, storePassword) {
  const openssl = (...args) => {
    const r = spawnSync("openssl", args, { cwd: dir, encoding: "utf8" });
    if (r.error) throw new Error(`openssl is needed for a TLS broker: ${r.error.message}`);
    if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr}`);
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl("req", "-x509", ...ec, "-days", "2", "-subj", "/CN=rdma-telemetry test CA", "-keyout", "ca.key", "-out", "ca.pem");
  const issue = (name, cn, ext) => {
    openssl("req", ...ec, "-subj", `/CN=${cn}`, "-keyout", `${name}.key`, "-out", `${name}.csr`);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2", "-extfile", `${name}.ext`, "-out", `${name}.pem`);
  };
  issue("broker", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n");
  issue("client", "rdma-telemetry-test-client", "extendedKeyUsage=clientAuth\n");
  openssl("pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.key", "-certfile", "ca.pem", "-name", "broker", "-out", "broker.p12", "-passout", `pass:${storePassword}`);
  return { caFile: join(dir, "ca.pem"), keystore: join(dir, "broker.p12"), clientCertFile: join(dir, "client.pem"), clientKeyFile: join(dir, "client.key") };
}

const SASL_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

export async function startBroker({ port, logDir, security = "plaintext", version = process.env.KAFKA_VERSION || DEFAULT_KAFKA_VERSION } = {}) {
  if (security !== "plaintext" && security !== "sasl_ssl") throw new Error(`security must be plaintext or sasl_ssl (got ${security})`);
  const libs = fetchJars(version);
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, "bin/java") : "java";
  const brokerPort = port ?? (await freePort());
  const controllerPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "kafka-"));
  const data = join(dir, "data");
  const props = join(dir, "server.properties");
  const secret = () => randomBytes(12).toString("hex");
  let listeners;
  let secured = {};
  const scram = [];
  if (security === "plaintext") {
    listeners = [
      `listeners=PLAINTEXT://127.0.0.1:${brokerPort},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${brokerPort}`,
      "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
      "inter.broker.listener.name=PLAINTEXT",
    ];
  } else {
    const mtlsPort = await freePort();
    const username = "exporter";
    const password = secret();
    const storePassword = secret();
    const adminPassword = secret();
    let pki;
    try {
      pki = makePki(dir, storePassword);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    const jaas = (module, options) => `${module} required ${Object.entries(options).map(([k, v]) => `${k}="${v}"`).join(" ")};`;
    listeners = [
      `listeners=SASL_SSL://127.0.0.1:${brokerPort},MTLS://127.0.0.1:${mtlsPort},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=SASL_SSL://127.0.0.1:${brokerPort},MTLS://127.0.0.1:${mtlsPort}`,
      "listener.security.protocol.map=SASL_SSL:SASL_SSL,MTLS:SSL,CONTROLLER:PLAINTEXT",
      "inter.broker.listener.name=SASL_SSL",
      `sasl.enabled.mechanisms=${SASL_MECHANISMS.join(",")}`,
      "sasl.mechanism.inter.broker.protocol=PLAIN",
      `listener.name.sasl_ssl.plain.sasl.jaas.config=${jaas("org.apache.kafka.common.security.plain.PlainLoginModule", { username: "admin", password: adminPassword, user_admin: adminPassword, [`user_${username}`]: password })}`,
      "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
      "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
      "listener.name.mtls.ssl.client.auth=required",
      "ssl.keystore.type=PKCS12",
      `ssl.keystore.location=${pki.keystore}`,
      `ssl.keystore.password=${storePassword}`,
      `ssl.key.password=${storePassword}`,
      "ssl.truststore.type=PEM",
      `ssl.truststore.location=${pki.caFile}`,
    ];
    // SCRAM credentials live in the cluster metadata: written when the storage is formatted.
    for (const m of SASL_MECHANISMS.filter((x) => x.startsWith("SCRAM"))) scram.push("--add-scram", `${m}=[name=${username},password=${password}]`);
    secured = {
      caFile: pki.caFile,
      username,
      password,
      mechanisms: SASL_MECHANISMS.map((m) => m.toLowerCase()),
      mtlsPort,
      mtlsBrokers: `127.0.0.1:${mtlsPort}`,
      clientCertFile: pki.clientCertFile,
      clientKeyFile: pki.clientKeyFile,
    };
  }
  writeFileSync(props, [
    "process.roles=broker,controller",
    "node.id=1",
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    ...listeners,
    "controller.listener.names=CONTROLLER",
    `log.dirs=${data}`,
    "num.partitions=4",
    "offsets.topic.replication.factor=1",
    "offsets.topic.num.partitions=4",
    "transaction.state.log.replication.factor=1",
    "transaction.state.log.min.isr=1",
    "group.initial.rebalance.delay.ms=0",
    "auto.create.topics.enable=true",
    "log.flush.interval.messages=9223372036854775807",
    "",
  ].join("\n"));
  writeFileSync(join(dir, "log4j.properties"), [
    "log4j.rootLogger=WARN, stderr",
    "log4j.appender.stderr=org.apache.log4j.ConsoleAppender",
    "log4j.appender.stderr.Target=System.err",
    "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout",
    "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n",
    "",
  ].join("\n"));
  const cp = `${libs}/*`;
  const common = [`-Dlog4j.configuration=file:${join(dir, "log4j.properties")}`, "-cp", cp];
  // The quick JIT and a small heap about halve the CPU time of a start: for
  // the one-shot storage tool, and for the secured broker, which only serves
  // tests (the plaintext one also serves the benchmarks).
  const light = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", ...common];
  const jvm = security === "plaintext" ? ["-Xms256m", "-Xmx768m", "-XX:+UseG1GC", ...common] : light;
  // A leading '-' would read as an option of the storage tool.
  let clusterId;
  do clusterId = randomBytes(16).toString("base64url").slice(0, 22);
  while (clusterId.startsWith("-"));
  const fmt = spawnSync(java, [...light, "kafka.tools.StorageTool", "format", "-t", clusterId, "-c", props, ...scram], { encoding: "utf8" });
  if (fmt.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`formatting Kafka storage failed: ${fmt.stderr || fmt.stdout}`);
  }
  const out = logDir ? join(logDir, "kafka.log") : join(dir, "kafka.log");
  const { openSync } = await import("node:fs");
  const fd = openSync(out, "a");
  const launch = () => spawn(java, [...jvm, "kafka.Kafka", props], { stdio: ["ignore", fd, fd], detached: false });
  const ports = secured.mtlsPort ? [brokerPort, secured.mtlsPort] : [brokerPort];
  // The plaintext listener is up when it answers a request; a TLS one when it accepts a connection.
  const listening = async () => {
    for (const p of ports) await (security === "plaintext" ? waitForKafka : waitForPort)(p, 90_000, child);
  };
  let child = launch();
  try {
    await listening();
  } catch (err) {
    child.kill("SIGKILL");
    throw new Error(`${err.message}; its log: ${out}`);
  }
  const brokers = `127.0.0.1:${brokerPort}`;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((r) => {
        const t = setTimeout(() => { child.kill("SIGKILL"); r(); }, 15_000);
        child.once("exit", () => { clearTimeout(t); r(); });
      });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  /** Kills the broker (SIGKILL) and starts it again on the same port and data. */
  const restart = async ({ downMs = 0 } = {}) => {
    child.kill("SIGKILL");
    await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
    if (downMs) await new Promise((r) => setTimeout(r, downMs));
    child = launch();
    await listening();
  };
  return { brokers, port: brokerPort, stop, restart, dir, security, version, ...secured };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const cmd = process.argv[2] ?? "start";
  const arg = (name) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  if (cmd === "fetch") {
    console.log(`Kafka jars in ${fetchJars(arg("--version"))}`);
  } else if (cmd === "start") {
    const port = arg("--port");
    const b = await startBroker({ port: port === undefined ? undefined : Number(port), security: arg("--security") ?? "plaintext", version: arg("--version") });
    console.log(`Kafka ${b.version} broker at ${b.brokers} (Ctrl-C stops it)`);
    if (b.security === "sasl_ssl") {
      console.log(`SASL_SSL (${b.mechanisms.join(", ")}): user ${b.username}, password ${b.password}, CA ${b.caFile}`);
      console.log(`SSL with client certificates at ${b.mtlsBrokers}: cert ${b.clientCertFile}, key ${b.clientKeyFile}`);
    }
    const stop = async () => { await b.stop(); process.exit(0); };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  } else {
    console.error("usage: broker.mjs fetch [--version V] | start [--port N] [--security plaintext|sasl_ssl] [--version V]");
    process.exit(2);
  }
}
