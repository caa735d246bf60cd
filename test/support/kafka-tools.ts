// Kafka's own command-line tools (the broker's jars, run with java): what an
// operator reads the topics and the consumer groups with, independently of
// this project's clients; and a broker of a test's own, to kill and restart.
import { spawn } from "node:child_process";
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js"; // kafkajs reads gzip only without these plugins
import { recordFromMessage } from "../../exporter/src/kafka/decode.js";
import type { RecordJson } from "../../contract/src/records.js";
import { join } from "node:path";

const root = join(import.meta.dirname, "../..");

/** A single-node broker of the test's own (scripts/kafka/broker.mjs), of the suite's version. */
export interface OwnBroker {
  brokers: string;
  /** SIGKILLs it and starts it again on the same port and log directories, `downMs` later */
  restart(o?: { downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

export async function ownBroker(): Promise<OwnBroker> {
  // @ts-expect-error -- plain ESM script without types
  const { startBroker } = (await import("../../scripts/kafka/broker.mjs")) as { startBroker: () => Promise<OwnBroker> };
  return startBroker();
}

/** Runs one of Kafka's tool classes with the broker's jars; resolves with its exit code and output. */
function tool(cls: string, args: string[], timeoutMs: number): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const libs = join(root, ".cache/kafka", process.env.KAFKA_VERSION || "4.4.0", "libs");
  return new Promise((resolve) => {
    const p = spawn("java", ["-Xmx256m", "-cp", `${libs}/*`, cls, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
    p.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/**
 * Every record of `topic` as Kafka's Java console consumer reads it
 * read_committed, from the beginning, until nothing more comes for
 * `idleMs`: partition, offset and `type` header of each.
 */
export async function javaCommitted(brokers: string, topic: string, idleMs = 10_000): Promise<Array<{ partition: number; offset: number; type: string }>> {
  const r = await tool("org.apache.kafka.tools.consumer.ConsoleConsumer", [
    "--bootstrap-server", brokers, "--topic", topic, "--from-beginning", "--isolation-level", "read_committed", "--timeout-ms", String(idleMs),
    "--property", "print.partition=true", "--property", "print.offset=true", "--property", "print.headers=true", "--property", "print.value=false",
  ], 120_000);
  // (It exits 0 once it has waited idleMs for a record, saying how many it processed.)
  if (!/Processed a total of \d+ messages/.test(r.stderr)) throw new Error(`ConsoleConsumer on ${topic}: ${r.stderr.slice(-1500)}`);
  return [...r.stdout.matchAll(/Partition:(\d+)\s+Offset:(\d+)\s+(\S*)/g)].map((m) => ({ partition: Number(m[1]), offset: Number(m[2]), type: /(?:^|,)type:([^,\s]+)/.exec(m[3]!)?.[1] ?? "" }));
}

/** A consumer group's committed offsets as Kafka's kafka-consumer-groups tool describes them: per topic partition, its lag. */
export async function groupLag(brokers: string, group: string): Promise<Array<{ topic: string; partition: number; current: number | null; end: number; lag: number | null }>> {
  const r = await tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", ["--bootstrap-server", brokers, "--describe", "--group", group], 60_000);
  if (r.status !== 0) throw new Error(`kafka-consumer-groups --describe ${group}: ${r.stderr.slice(-1500)}`);
  const rows: Array<{ topic: string; partition: number; current: number | null; end: number; lag: number | null }> = [];
  for (const line of r.stdout.split("\n")) {
    // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
    const f = line.trim().split(/\s+/);
    if (f.length < 6 || f[0] !== group || !/^\d+$/.test(f[2]!)) continue;
    const num = (s: string) => (/^\d+$/.test(s) ? Number(s) : null);
    rows.push({ topic: f[1]!, partition: Number(f[2]), current: num(f[3]!), end: Number(f[4]), lag: num(f[5]!) });
  }
  return rows;
}

/**
 * Every record on the topics (raw digests left out), read from the start by a consumer group of its own until at
 * least `atLeast` have come and none for `idleMs` (at most 60 s).
 */
export async function readAllRecords(brokers: string, topics: string[], idleMs = 4000, atLeast = 1): Promise<RecordJson[]> {
  const kafka = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING, clientId: "test-reader" });
  const consumer = kafka.consumer({ groupId: `reader-${Date.now()}` });
  await consumer.connect();
  for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true });
  const out: RecordJson[] = [];
  let last = Date.now();
  await consumer.run({
    eachMessage: async ({ message }) => {
      last = Date.now();
      const r = recordFromMessage(message.headers?.type?.toString(), message.value!);
      if (r.type !== "raw_digest") out.push(r);
    },
  });
  const deadline = Date.now() + 60_000;
  while ((Date.now() - last < idleMs || out.length < atLeast) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  await consumer.disconnect();
  return out;
}
