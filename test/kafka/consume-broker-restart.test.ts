// `rdma-telemetry consume` tailing a topic while its broker restarts (a
// rolling upgrade, a crash): it says in one line that the broker is lost and
// in one that it is back, and prints every record once, those published
// before the outage and those after, as Kafka's own console consumer goes on
// through an outage. (It stopped at the third failed fetch.)
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, expect, test } from "vitest";
import { DEFAULT_TOPICS, encodeRecord } from "../../exporter/src/kafka/encode.js";
import type { RecordJson } from "../../contract/src/records.js";
import { startCli } from "../support/cli.js";
import { ownBroker } from "../support/kafka-tools.js";
import { createTopics } from "../support/topics.js";
import { until } from "../support/wait.js";

const dir = mkdtempSync(join(tmpdir(), "consume-restart-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});


const io = (cid: number): RecordJson => ({ type: "io", switch_id: "tor-c", interval_start_unix_ns: "1800000000000000000", host: `10.0.1.${1 + (cid % 8)}`, target: "10.0.2.1", host_qp: 0x101, target_qp: 0x801, cid, cmd_psn: 77 + cid, op: "read", bytes: 4096,
  in_capsule: false, nvme_status: 0, e2e_c_ns: 70_000, e2e_s_ns: 64_000, rtt_ns: 6_000, dal_ns: 50_000, dpl_ns: null, incomplete: false, mode: "full", c_switch_id: "tor-c", s_switch_id: "tor-s", cmd_unix_ns: `18000000000001${String(cid).padStart(5, "0")}` });

test("consume waits for a broker that restarts and prints every record once, before the outage and after", async () => {
  const broker = await ownBroker();
  try {
    const topic = `consume-restart-${Date.now()}`;
    const topics = { ...DEFAULT_TOPICS, io: topic };
    await createTopics(broker.brokers, [topic], 3);
    const publish = async (cids: number[]) => {
      const kafka = new Kafka({ brokers: [broker.brokers], logLevel: logLevel.NOTHING, clientId: "test-consume-restart" });
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      await producer.send({ topic, messages: cids.map((c) => encodeRecord(io(c), topics, "protobuf", 1_000_000_000n)).map((m) => ({ key: m.key, value: m.value, headers: m.headers })) });
      await producer.disconnect();
    };
    await publish([...Array(50).keys()]);
    const p = startCli(["consume", "--topic", topic, "--from-beginning", "--kafka-brokers", broker.brokers], dir, children);
    const cids = () => p.out().split("\n").filter((l) => l.startsWith("{")).map((l) => (JSON.parse(l) as { value: { cid: number } }).value.cid);
    await until(() => cids().length >= 50 || p.child.exitCode !== null, 60_000, () => p.out(), 100);
    await broker.restart({ downMs: 3000 });
    await publish([...Array(50).keys()].map((i) => 50 + i));
    await until(() => cids().length >= 100 || p.child.exitCode !== null, 90_000, () => p.out().slice(-3000), 100);
    // What a record more would take to arrive.
    await new Promise((r) => setTimeout(r, 1000));
    expect(p.child.exitCode, p.out().split("\n").filter((l) => !l.startsWith("{")).join("\n")).toBeNull();
    p.child.kill("SIGTERM");
    expect(await p.exited).toBe(0);
    expect([...cids()].sort((a, b) => a - b)).toEqual([...Array(100).keys()]);
    expect(p.out()).toMatch(/^consume: lost the broker \(.*\); reading on from where it was once it is back$/m);
    expect(p.out()).toMatch(/^consume: the broker is back$/m);
  } finally {
    await broker.stop();
  }
}, 240_000);
