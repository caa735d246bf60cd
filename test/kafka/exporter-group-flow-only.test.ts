// An exporter group member counts the flow-only digests it takes (RDMA WRITE
// packets outside any message: after their message's last PSN over a
// reordering path, or resent after it), as the in-process engine does, and
// puts their packets in their flow's interval figures; a transaction that
// fails (the member fenced) neither loses nor counts twice the digests it
// held; a member fenced while its controllers' clocks run ahead publishes
// each record once (test/setup/kafka.ts starts the broker).
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";
import { describe, expect, inject, test } from "vitest";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import { isFlowOnly } from "../../contract/src/digests.js";
import type { FlowAggregateJson, RecordJson } from "../../contract/src/records.js";
import { ExporterGroupMember } from "../../exporter/src/group/exporter-group.js";
import { recordKey } from "../../exporter/src/group/record-key.js";
import { rawDigestMessages } from "../../exporter/src/kafka/digest-bus.js";
import type { KafkaMessageOut, TopicNames } from "../../exporter/src/kafka/encode.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { until } from "../support/wait.js";

const brokers = [inject("kafkaBrokers")];
// Short windows, an idle partition moved on by the wall clock after 200 ms, and a switch silent for 1 s let go: every interval closes soon after the last digest.
const engine = { perEventRecords: false, intervalNs: 100_000_000n, correlationWindowNs: 100_000_000n, ioTimeoutNs: 200_000_000n, silentSwitchNs: 1_000_000_000n };
const packets = (rs: RecordJson[]) => rs.filter((r): r is FlowAggregateJson => r.type === "flow_interval").reduce((a, r) => a + r.packets, 0);

/** A reordered two-ToR workload's digests, their flow-only count, and the in-process exporter's records of them. */
async function workload(topics: TopicNames, options = engine): Promise<{ digests: KafkaMessageOut[]; flowOnly: number; inProcess: RecordJson[] }> {
  const traffic = generateTraffic({ seed: 11, durationNs: 400_000_000, hosts: 2, targets: 1, ioRate: 200, reorderShare: 0.5, reorderMaxDisplacement: 6, reorderLoss: 0.5 });
  const digests: KafkaMessageOut[] = [];
  let flowOnly = 0;
  const inProcess: RecordJson[] = [];
  await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
    exporter: options,
    onRecord: (r: RecordJson) => inProcess.push(r),
    beforeFeed: (rigs) => {
      for (const r of rigs) {
        r.controller.on("digests", (b) => {
          for (const d of b.digests) if (d.kind === "msg" && isFlowOnly(d)) flowOnly++;
          digests.push(...rawDigestMessages(b, topics));
        });
      }
    },
  });
  expect(flowOnly, "the workload has packets outside any message").toBeGreaterThan(0);
  expect(packets(inProcess)).toBeGreaterThan(0);
  return { digests, flowOnly, inProcess };
}

function topicsOf(name: string): { id: string; topics: TopicNames } {
  const id = `${name}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  return { id, topics: { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` } };
}

/**
 * A member on its own group and topics (one partition), with a producer of digests: `body` publishes and waits;
 * the member stops and the producer disconnects after it, whatever happens.
 */
async function withMember(id: string, topics: TopicNames, threads: number, body: (o: { kafka: Kafka; member: ExporterGroupMember; records: RecordJson[]; send: (ms: KafkaMessageOut[]) => Promise<unknown> }) => Promise<void>, options = engine): Promise<{ member: ExporterGroupMember; records: RecordJson[] }> {
  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING, clientId: `${id}-test` });
  const producer = kafka.producer();
  await producer.connect();
  const records: RecordJson[] = [];
  const member = new ExporterGroupMember({ brokers, groupId: id, topics, partitions: 1, clientId: "m", engine: options, idleMs: 200, threads, onRecord: (r) => records.push(r) });
  const send = (ms: KafkaMessageOut[]) => producer.send({ topic: topics.digest, messages: ms.map((m) => ({ key: m.key, value: m.value, headers: m.headers })) });
  try {
    await member.start();
    await until(() => member.assigned.size === 1, 60_000, () => "the member to get the partition", 50);
    await body({ kafka, member, records, send });
  } finally {
    await member.stop();
    await producer.disconnect();
  }
  return { member, records };
}

// The digests go out in one request: the switches' time of the whole workload reaches the member at once, as a
// controller's would over 400 ms (published in pieces with pauses of over a second, the silent-switch time here,
// the member would rightly move on without the rest).
const ioRecords = (rs: RecordJson[]) => rs.filter((r) => r.type === "io").map((r) => JSON.stringify(r)).sort();

// With the engines in the member's thread, and on an engine thread of their own (--threads 1).
describe.each([0, 1])("engine threads: %i", (threads) => {
  test("a group member counts the flow-only digests it takes, and their packets are in the flows' interval figures as in process", async () => {
    const { id, topics } = topicsOf("flow-only");
    const { digests, flowOnly, inProcess } = await workload(topics);
    const { member, records } = await withMember(id, topics, threads, async ({ member, records, send }) => {
      await send(digests);
      await until(() => member.stats.digests >= digests.length, 60_000, () => `the member to take ${digests.length} digests (${member.stats.digests})`, 50);
      await until(() => packets(records) >= packets(inProcess), 60_000, () => `the member's flow intervals to hold ${packets(inProcess)} packets (${packets(records)})`, 50);
    });
    expect(member.stats.digests).toBe(digests.length);
    expect(member.stats.lateDigests).toBe(0);
    expect(member.stats.flowOnlyDigests).toBe(flowOnly);
    expect(packets(records)).toBe(packets(inProcess));
    // Every I/O record as the in-process exporter makes it.
    expect(ioRecords(records)).toEqual(ioRecords(inProcess));
  }, 180_000);

  test("a member whose transaction fails (fenced) counts the digests it re-reads once, and loses none", async () => {
    const { id, topics } = topicsOf("fenced");
    const { digests, flowOnly, inProcess } = await workload(topics);
    const half = Math.floor(digests.length / 2);
    const { member, records } = await withMember(id, topics, threads, async ({ kafka, member, records, send }) => {
      await send(digests.slice(0, half));
      await until(() => member.stats.digests === half, 60_000, () => `the member to take ${half} digests (${member.stats.digests})`, 50);
      // Another producer with the partition's transactional id fences the member's: its next transaction fails.
      const fencer = kafka.producer({ transactionalId: `${id}.${topics.digest}.0`, idempotent: true, maxInFlightRequests: 1 });
      await fencer.connect();
      await (await fencer.transaction()).abort(); // kafkajs sends InitProducerId at a producer's first transaction
      await send(digests.slice(half));
      await until(() => member.stats.aborted > 0 && member.stats.digests - member.stats.replayedDigests >= digests.length, 60_000, () => `a transaction to fail (${member.stats.aborted}) and the member to take ${digests.length} digests (${member.stats.digests})`, 50);
      await fencer.disconnect().catch(() => undefined);
      await until(() => packets(records) >= packets(inProcess), 60_000, () => `the member's flow intervals to hold ${packets(inProcess)} packets (${packets(records)})`, 50);
    });
    // The digests of the failed transaction are taken again and counted once; those re-read as open state (if any) are counted as re-read.
    expect(member.stats.aborted).toBeGreaterThan(0);
    expect(member.stats.digests - member.stats.replayedDigests).toBe(digests.length);
    expect(member.stats.flowOnlyDigests).toBe(flowOnly);
    expect(packets(records)).toBe(packets(inProcess));
    const ios = (rs: RecordJson[]) => rs.filter((r) => r.type === "io").length;
    expect(ios(records)).toBe(ios(inProcess));
  }, 180_000);
});

test("an engine thread lost mid-run: its partitions are taken on again from their last commit, no digest lost or counted twice", async () => {
  const { id, topics } = topicsOf("engine-lost");
  const { digests, flowOnly, inProcess } = await workload(topics);
  const half = Math.floor(digests.length / 2);
  const { member, records } = await withMember(id, topics, 1, async ({ member, records, send }) => {
    await send(digests.slice(0, half));
    await until(() => member.stats.digests === half, 60_000, () => `the member to take ${half} digests (${member.stats.digests})`, 50);
    // The thread ends as a crashed one would (an uncaught error, out of memory): its engines and their open state are gone.
    const threads = (member as unknown as { engines: { threads: Array<{ worker: { terminate(): Promise<number> } }> } }).engines.threads;
    await threads[0]!.worker.terminate();
    await send(digests.slice(half));
    await until(() => member.stats.takeovers > 0 && member.stats.digests - member.stats.replayedDigests >= digests.length, 60_000, () => `the partition to be taken on again (${member.stats.takeovers}) and the member to take ${digests.length} digests (${member.stats.digests})`, 50);
    await until(() => packets(records) >= packets(inProcess), 60_000, () => `the member's flow intervals to hold ${packets(inProcess)} packets (${packets(records)})`, 50);
  });
  expect(member.stats.digests - member.stats.replayedDigests).toBe(digests.length);
  expect(member.stats.flowOnlyDigests).toBe(flowOnly);
  expect(packets(records)).toBe(packets(inProcess));
  expect(ioRecords(records)).toEqual(ioRecords(inProcess));
}, 180_000);

// A controller's clock is not the member's: a switch's CPU or a controller host off NTP may run minutes ahead. The
// read-back of what earlier owners committed (records since the open digests began) is bounded by the member's own
// clock when it took each digest, not by the digests' Kafka timestamps (the producer's clock): with those, a
// partition taken on after a failed transaction read back nothing its owner had committed, and published it again.
test("digests stamped 10 minutes ahead (a controller's clock): a member fenced mid-run publishes each I/O record once", async () => {
  const { id, topics } = topicsOf("clock-ahead");
  // I/O and message records as well as intervals: records of the first half are committed before the fence.
  const perEvent = { ...engine, perEventRecords: true };
  const { digests, inProcess } = await workload(topics, perEvent);
  const ahead = String(Date.now() + 600_000);
  const half = Math.floor(digests.length / 2);
  const { member, records } = await withMember(id, topics, 0, async ({ kafka, member, records }) => {
    const producer = kafka.producer();
    await producer.connect();
    const send = (ms: KafkaMessageOut[]) => producer.send({ topic: topics.digest, messages: ms.map((m) => ({ key: m.key, value: m.value, headers: m.headers, timestamp: ahead })) });
    try {
      await send(digests.slice(0, half));
      await until(() => member.stats.digests === half && member.stats.transactions > 0, 60_000, () => `the member to take ${half} digests (${member.stats.digests})`, 50);
      const fencer = kafka.producer({ transactionalId: `${id}.${topics.digest}.0`, idempotent: true, maxInFlightRequests: 1 });
      await fencer.connect();
      await (await fencer.transaction()).abort();
      await send(digests.slice(half));
      await until(() => member.stats.aborted > 0 && member.stats.digests - member.stats.replayedDigests >= digests.length, 60_000, () => `a transaction to fail (${member.stats.aborted}) and the member to take ${digests.length} digests (${member.stats.digests})`, 50);
      await fencer.disconnect().catch(() => undefined);
      await until(() => packets(records) >= packets(inProcess), 60_000, () => `the member's flow intervals to hold ${packets(inProcess)} packets (${packets(records)})`, 50);
    } finally {
      await producer.disconnect();
    }
  }, perEvent);
  // The partition was taken on with open digests to re-read: what its owner had committed came back from Kafka.
  expect(member.stats.takeovers).toBeGreaterThan(0);
  expect(member.stats.suppressedRecords).toBeGreaterThan(0);
  // Each I/O once, the in-process exporter's I/Os (the command's wall-clock time is placed from digest list times: keys compared).
  const keys = (rs: RecordJson[]) => rs.filter((r) => r.type === "io").map(recordKey).sort();
  expect(keys(records)).toEqual(keys(inProcess));
}, 180_000);
