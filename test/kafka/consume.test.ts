// `rdma-telemetry consume` with each Kafka client: the same lines for the same
// topic, read_committed (a record of an aborted transaction is never printed),
// every record decoded as the exporter wrote it.
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";
import { afterAll, expect, inject, test } from "vitest";
import { spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_TOPICS, encodeRecord } from "../../exporter/src/kafka/encode.js";
import type { RecordJson } from "../../contract/src/records.js";
import { writeAbortedTransactions } from "../support/aborted-transactions.js";
import { startCli } from "../support/cli.js";
import { until } from "../support/wait.js";
import { createTopics } from "../support/topics.js";

const brokers = inject("kafkaBrokers");
const root = join(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "consume-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

const iv = { interval_start_unix_ns: "1800000000000000000" };
const io = (cid: number, host: string): RecordJson => ({ type: "io", switch_id: "tor-c", ...iv, host, target: "10.0.2.1", host_qp: 0x101, target_qp: 0x801, cid, cmd_psn: 77 + cid, op: "write", bytes: 4096, in_capsule: false,
  nvme_status: 0, e2e_c_ns: 70_000, e2e_s_ns: 64_000, rtt_ns: 6_000, dal_ns: 50_000, dpl_ns: 3_000, incomplete: false, mode: "full", c_switch_id: "tor-c", s_switch_id: "tor-s", cmd_unix_ns: `18000000000001${String(cid).padStart(5, "0")}` });

test("both clients print the same committed records, decoded; an aborted transaction's are not printed", async () => {
  const topic = `consume-${Date.now()}`;
  const topics = { ...DEFAULT_TOPICS, io: topic };
  const kafka = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING, clientId: "test-consume" });
  await createTopics(brokers, [topic], 3);
  const producer = kafka.producer({ transactionalId: `${topic}-tx`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const committed = [io(1, "10.0.1.1"), io(2, "10.0.1.2"), io(3, "2001:db8::1")];
  const send = async (rs: RecordJson[], end: "commit" | "abort") => {
    const tx = await producer.transaction();
    await tx.send({ topic, messages: rs.map((r) => encodeRecord(r, topics, "protobuf", 1_000_000_000n)).map((m) => ({ key: m.key, value: m.value, headers: m.headers })) });
    await (end === "commit" ? tx.commit() : tx.abort());
  };
  await send(committed.slice(0, 2), "commit");
  await send([io(9, "10.0.1.9")], "abort");
  await send(committed.slice(2), "commit");
  await producer.disconnect();

  const read = async (client: string) => {
    const p = startCli(["consume", "--topic", topic, "--from-beginning", "--kafka-brokers", brokers, "--kafka-client", client], dir, children);
    await until(() => p.out().split("\n").filter((l) => l.startsWith("{")).length >= committed.length || p.child.exitCode !== null, 60_000, () => `${client}: ${p.out()}`, 100);
    // What an aborted record would take to arrive, had it been let through.
    await new Promise((r) => setTimeout(r, 1000));
    p.child.kill("SIGTERM");
    expect(await p.exited, p.out()).toBe(0);
    return p.out().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { partition: number; offset: string; key: string; type: string; value: RecordJson });
  };
  const byPlatformatic = await read("platformatic");
  const byKafkajs = await read("kafkajs");
  const order = (ls: Array<{ partition: number; offset: string }>) => [...ls].sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
  expect(order(byPlatformatic)).toEqual(order(byKafkajs));
  expect(byPlatformatic.map((l) => l.value).sort((a, b) => (a as { cid: number }).cid - (b as { cid: number }).cid)).toEqual(committed);
  for (const l of byPlatformatic) expect(l.type).toBe("rdma.telemetry.v1.IoRecord");
}, 120_000);

// The exporter group's record topics after a member was killed -9: aborted
// transactions overlapping one another and committed ones
// (test/support/aborted-transactions.ts). Either client's read_committed let
// some of the aborted records through; `consume` prints exactly the committed
// ones, in offset order, the offsets Kafka's own Java consumer reads.
test("consume prints exactly the committed records where aborted transactions overlap one another and committed ones", async () => {
  const topic = `consume-aborts-${Date.now()}`;
  const topics = { ...DEFAULT_TOPICS, io: topic };
  await createTopics(brokers, [topic]);
  const written = await writeAbortedTransactions(brokers, topic, (i) => {
    const m = encodeRecord(io(100 + i, "10.0.1.1"), topics, "protobuf", 1_000_000_000n);
    return { key: m.key, value: m.value, headers: m.headers };
  });
  expect(written.end, "every marker written").toBe(19n);
  // Kafka's own Java console consumer, read_committed: the offsets of the committed records.
  const java = spawnSync("java", ["-Xmx256m", "-cp", `${join(root, ".cache/kafka", process.env.KAFKA_VERSION || "4.4.0", "libs")}/*`, "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "--bootstrap-server", brokers, "--topic", topic, "--from-beginning", "--isolation-level", "read_committed", "--max-messages", String(written.committed.length), "--timeout-ms", "30000",
    "--property", "print.offset=true", "--property", "print.value=false"], { encoding: "utf8", timeout: 90_000 });
  expect(java.status, java.stderr).toBe(0);
  const javaOffsets = [...java.stdout.matchAll(/Offset:(\d+)/g)].map((m) => m[1]);
  expect(javaOffsets).toHaveLength(written.committed.length);
  for (const client of ["platformatic", "kafkajs"]) {
    const p = startCli(["consume", "--topic", topic, "--from-beginning", "--kafka-brokers", brokers, "--kafka-client", client], dir, children);
    const lines = () => p.out().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { offset: string; value: { cid: number } });
    const cids = () => lines().map((l) => l.value.cid - 100);
    await until(() => cids().includes(12) || p.child.exitCode !== null, 60_000, () => `${client}: ${p.out()}`, 100);
    // What a record behind the last one would take to arrive.
    await new Promise((r) => setTimeout(r, 500));
    p.child.kill("SIGTERM");
    expect(await p.exited, p.out()).toBe(0);
    expect(cids(), `${client}: the committed records, in offset order`).toEqual(written.committed);
    expect(lines().map((l) => l.offset), `${client}: the offsets Kafka's Java consumer reads`).toEqual(javaOffsets);
  }
}, 120_000);
