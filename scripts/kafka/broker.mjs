#!/usr/bin/env node
// A single-node KRaft Kafka broker (Apache Kafka 3.9 jars from Maven Central,
// Java 17) on loopback, for tests and the demo.
//
//   node scripts/kafka/broker.mjs fetch            download the jars (mvn) into .cache/kafka/libs
//   node scripts/kafka/broker.mjs start [--port N] start a broker, print its address, stay in the foreground
//
// As a module: startBroker({ port }) -> { brokers, stop() }.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("../..", import.meta.url).pathname;
const cache = process.env.KAFKA_CACHE ?? join(root, ".cache/kafka");
const libs = join(cache, "libs");

export function fetchJars() {
  if (existsSync(libs) && readdirSync(libs).some((f) => f.startsWith("kafka_2.13-"))) return libs;
  mkdirSync(libs, { recursive: true });
  const r = spawnSync("mvn", ["-q", "-B", "-f", join(root, "scripts/kafka/pom.xml"), "dependency:copy-dependencies", `-DoutputDirectory=${libs}`, "-DincludeScope=runtime"], { stdio: "inherit" });
  if (r.status !== 0) throw new Error(`mvn could not fetch Kafka's jars (exit ${r.status}); is Maven installed?`);
  return libs;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
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

export async function startBroker({ port, logDir } = {}) {
  fetchJars();
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, "bin/java") : "java";
  const brokerPort = port ?? (await freePort());
  const controllerPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "kafka-"));
  const data = join(dir, "data");
  const props = join(dir, "server.properties");
  writeFileSync(props, [
    "process.roles=broker,controller",
    "node.id=1",
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${brokerPort},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${brokerPort}`,
    "controller.listener.names=CONTROLLER",
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "inter.broker.listener.name=PLAINTEXT",
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
  const jvm = ["-Xms256m", "-Xmx768m", "-XX:+UseG1GC", `-Dlog4j.configuration=file:${join(dir, "log4j.properties")}`, "-cp", cp];
  // As Kafka's own Uuid.randomUuid(): never starting with "-", which StorageTool would take for an option.
  let clusterId;
  do clusterId = randomBytes(16).toString("base64url").slice(0, 22);
  while (clusterId.startsWith("-"));
  const fmt = spawnSync(java, [...jvm, "kafka.tools.StorageTool", "format", "-t", clusterId, "-c", props], { encoding: "utf8" });
  if (fmt.status !== 0) throw new Error(`formatting Kafka storage failed: ${fmt.stderr || fmt.stdout}`);
  const out = logDir ? join(logDir, "kafka.log") : join(dir, "kafka.log");
  const { openSync } = await import("node:fs");
  const fd = openSync(out, "a");
  const launch = () => spawn(java, [...jvm, "kafka.Kafka", props], { stdio: ["ignore", fd, fd], detached: false });
  let child = launch();
  await waitForPort(brokerPort, 90_000, child);
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
    await waitForPort(brokerPort, 90_000, child);
  };
  return { brokers, port: brokerPort, stop, restart, dir };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const cmd = process.argv[2] ?? "start";
  if (cmd === "fetch") {
    console.log(`Kafka jars in ${fetchJars()}`);
  } else if (cmd === "start") {
    const i = process.argv.indexOf("--port");
    const b = await startBroker({ port: i > 0 ? Number(process.argv[i + 1]) : undefined });
    console.log(`Kafka broker at ${b.brokers} (Ctrl-C stops it)`);
    const stop = async () => { await b.stop(); process.exit(0); };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  } else {
    console.error("usage: broker.mjs fetch | start [--port N]");
    process.exit(2);
  }
}
