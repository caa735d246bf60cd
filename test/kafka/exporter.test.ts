// The exporter on a real Kafka broker (started by test/setup/kafka.ts unless
// KAFKA_BROKERS is set). Every test uses topics of its own.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js"; // kafkajs reads gzip only without these plugins
import { afterAll, describe, expect, inject, test } from "vitest";
import { IoRecord, RawDigest } from "../../exporter/src/generated/rdma/telemetry/v1/records.js";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import { MetricsEngine } from "../../exporter/src/metrics.js";
import { DigestConsumer, rawDigestMessages } from "../../exporter/src/kafka/digest-bus.js";
import { encodeRecord, encodeRawDigest, type TopicNames } from "../../exporter/src/kafka/encode.js";
import { KafkaSink } from "../../exporter/src/kafka/kafka-sink.js";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { ioMismatches, ioRecordKey, ioTruthKey } from "../../app/self-check.js";
import { ownBroker } from "../support/kafka-tools.js";
import { until } from "../support/wait.js";

const brokers = [inject("kafkaBrokers")];
const tmp = mkdtempSync(join(tmpdir(), "kafka-test-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function topics(tag: string): TopicNames {
  const id = `${tag}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  return { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
}

async function consumeAll(topic: string, count: number, timeoutMs = 60_000, on: string[] = brokers): Promise<Array<{ key: string; value: Buffer; partition: number; type: string }>> {
  const kafka = new Kafka({ brokers: on, logLevel: logLevel.NOTHING, clientId: "test-reader" });
  const consumer = kafka.consumer({ groupId: `reader-${topic}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const out: Array<{ key: string; value: Buffer; partition: number; type: string }> = [];
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`only ${out.length} of ${count} messages on ${topic} after ${timeoutMs} ms`)), timeoutMs);
    void consumer.run({
      eachMessage: async ({ message, partition }) => {
        out.push({ key: message.key!.toString(), value: message.value!, partition, type: String(message.headers?.type ?? "") });
        if (out.length >= count) {
          clearTimeout(t);
          resolve();
        }
      },
    });
  });
  // Anything beyond `count` would be a duplicate: give it a moment to show up.
  await new Promise((r) => setTimeout(r, 500));
  await consumer.disconnect();
  return out;
}

describe("exporter on Kafka", () => {
  test("records of a generated workload arrive keyed by pair, as protobuf, with the ground truth's values", async () => {
    const t = topics("truth");
    const sink = new KafkaSink({ brokers, topics: t, partitions: 4, spillDir: join(tmp, "truth-spill") });
    await sink.start();
    const traffic = generateTraffic({ seed: 3, layout: "single", durationNs: 80_000_000, hosts: 2, targets: 2, ioRate: 2000 });
    await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
      onRecord: (r: RecordJson) => {
        if (r.type === "io") sink.push(encodeRecord(r, t, "protobuf", 1_000_000_000n));
      },
    });
    await sink.flush();
    await sink.close();
    const expected = traffic.ios.filter((x) => x.record);
    const msgs = await consumeAll(t.io, expected.length);
    expect(msgs.length).toBe(expected.length);
    const partitionOfKey = new Map<string, number>();
    for (const m of msgs) {
      expect(m.type).toBe("rdma.telemetry.v1.IoRecord");
      const seen = partitionOfKey.get(m.key);
      if (seen !== undefined) expect(m.partition).toBe(seen);
      partitionOfKey.set(m.key, m.partition);
    }
    const records = msgs.map((m) => IoRecord.decode(m.value));
    const num = (v: bigint | undefined) => (v === undefined ? null : Number(v));
    for (const truth of expected) {
      const r = records.find((x) => x.host === truth.host && x.target === truth.target && x.targetQp === truth.target_qp && x.cid === truth.cid && x.cmdPsn === truth.cmd_psn);
      expect(r).toBeDefined();
      expect(num(r!.e2eSNs)).toBe(truth.e2e_s_ns);
      expect(num(r!.dalNs)).toBe(truth.dal_ns);
      expect(num(r!.dplNs)).toBe(truth.dpl_ns);
      expect([r!.hostQp, r!.inCapsule, r!.nvmeStatus, r!.incomplete]).toEqual([truth.host_qp, truth.in_capsule, truth.status, truth.incomplete]);
      expect(`${r!.host}|${r!.target}`).toBe(msgs[records.indexOf(r!)]!.key);
    }
  }, 120_000);

  test("Kafka unreachable for a whole replay: the run ends with its records spilled, and the next run delivers them", async () => {
    const t = topics("away");
    const spillDir = join(tmp, "away-spill");
    // Nothing listens on this port.
    const away = new KafkaSink({ brokers: ["127.0.0.1:1"], topics: t, partitions: 2, spillDir });
    await away.start();
    const traffic = generateTraffic({ seed: 4, layout: "single", durationNs: 120_000_000, hosts: 2, targets: 1, ioRate: 2000 });
    let n = 0;
    await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
      kafkaWaitMs: 300,
      onRecord: (r: RecordJson) => {
        if (r.type === "io") {
          away.push(encodeRecord(r, t, "protobuf", 1_000_000_000n));
          n++;
        }
      },
    });
    const left = await away.close(300);
    expect(n).toBeGreaterThan(20);
    expect(left).toBe(n);
    expect(away.spillFiles().length).toBeGreaterThan(0);
    // The next run on the same spill directory reaches Kafka: everything goes out, and the spill is emptied.
    const back = new KafkaSink({ brokers, topics: t, partitions: 2, spillDir });
    await back.start();
    await back.flush(60_000);
    expect(await back.close()).toBe(0);
    expect(back.spillFiles()).toEqual([]);
    const msgs = await consumeAll(t.io, n);
    expect(msgs.length).toBe(n);
  }, 120_000);

  test("the broker is killed and restarted mid-stream: no record lost or duplicated", async () => {
    const broker = await ownBroker();
    try {
      const t = topics("restart");
      // Small batches: several produce requests are in flight when the broker dies (on a client that allows it).
      // What the sink says (the client's retries included), printed if the records do not all go out.
      const said: string[] = [];
      const note = (level: string) => (msg: string, fields?: object) => void said.push(`${new Date().toISOString()} ${level} ${msg} ${JSON.stringify(fields ?? {})}`);
      const logger = { debug: note("debug"), info: note("info"), warn: note("warn"), error: note("error") };
      const sink = new KafkaSink({ brokers: [broker.brokers], topics: t, partitions: 4, spillDir: join(tmp, "restart-spill"), maxBuffered: 2000, batchSize: 100, logger });
      await sink.start();
      const N = 12_000;
      const restarting = (async () => {
        await new Promise((r) => setTimeout(r, 300));
        await broker.restart({ downMs: 3000 });
      })();
      for (let seq = 0; seq < N; seq++) {
        const raw = RawDigest.fromPartial({ switchId: "tor-test", digest: "io_digest_t", seq: BigInt(seq), listTimestampNs: BigInt(seq) });
        sink.push(encodeRawDigest(raw, `k${seq % 64}`, t));
        if (seq % 500 === 499) await new Promise((r) => setTimeout(r, 40));
      }
      await restarting;
      said.push(`${new Date().toISOString()} the broker is back`);
      await sink.flush(120_000).catch((err: unknown) => {
        console.log(`the sink's log:\n${said.slice(-200).join("\n")}`);
        throw err;
      });
      const stats = { ...sink.stats };
      await sink.close();
      expect(stats.dropped).toBe(0);
      expect(stats.spilledTotal + stats.sendFailures).toBeGreaterThan(0);
      expect(sink.inFlightPeak).toBe(sink.client === "platformatic" ? 5 : 1);
      const kafka = new Kafka({ brokers: [broker.brokers], logLevel: logLevel.NOTHING });
      const consumer = kafka.consumer({ groupId: "restart-reader" });
      await consumer.connect();
      await consumer.subscribe({ topic: t.digest, fromBeginning: true });
      const seqs: number[] = [];
      await new Promise<void>((resolve) => {
        void consumer.run({ eachMessage: async ({ message }) => {
          seqs.push(Number(RawDigest.decode(message.value!).seq));
          if (seqs.length >= N) setTimeout(resolve, 1000);
        } });
      });
      await consumer.disconnect();
      expect(seqs.length).toBe(N);
      expect(new Set(seqs).size).toBe(N);
      // Each key's records in the order they were pushed (a key stays in one partition).
      const lastOfKey = new Map<number, number>();
      const outOfOrder = seqs.filter((seq) => {
        const before = lastOfKey.get(seq % 64) ?? -1;
        lastOfKey.set(seq % 64, seq);
        return seq < before;
      });
      expect(outOfOrder).toEqual([]);
    } finally {
      await broker.stop();
    }
  }, 240_000);

  test("two exporters in one consumer group share the digest partitions, and RTT still comes out right, over IPv4 and IPv6 (each raw digest with its endpoint entries)", async () => {
    const t = topics("group");
    const sink = new KafkaSink({ brokers, topics: t, partitions: 6 });
    await sink.start();
    // Both exporters join the group (and get their partitions) before the digests flow.
    const ios: IoRecordJson[] = [];
    const engines = [0, 1].map(() => new MetricsEngine((r) => { if (r.type === "io") ios.push(r); }, { correlationWindowNs: 10_000_000_000n }));
    const consumers = engines.map((e, i) => new DigestConsumer({ brokers, groupId: `exporters-${t.digest}`, topic: t.digest, clientId: `exporter-${i}`, onBatch: (b) => e.onDigestList(b.switchId, b.listTimestampNs, b.digests, 0, undefined, b.endpoints) }));
    await Promise.all(consumers.map((c) => c.start()));
    await until(() => consumers.every((c) => c.assigned.size > 0) && consumers.reduce((a, c) => a + c.assigned.size, 0) === 6, 60_000, () => `both exporters to get their partitions (${consumers.map((c) => c.assigned.size).join(" + ")} of 6)`, 100);
    expect(consumers.map((c) => c.assigned.size).sort()).toEqual([3, 3]);
    const traffic = generateTraffic({ seed: 8, ip: "mixed", durationNs: 80_000_000, hosts: 3, targets: 2, ioRate: 1500 });
    let published = 0;
    await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
      exporter: { perEventRecords: false },
      beforeFeed: (rigs) => {
        for (const r of rigs) {
          r.controller.on("digests", (b) => {
            for (const m of rawDigestMessages(b, t)) {
              sink.push(m);
              published++;
            }
          });
        }
      },
    });
    await sink.flush();
    await sink.close();
    await until(() => consumers.reduce((a, c) => a + c.received, 0) >= published, 60_000, () => `${published} digests consumed (got ${consumers.reduce((a, c) => a + c.received, 0)})`, 100);
    await Promise.all(consumers.map((c) => c.stop()));
    expect(consumers.reduce((a, c) => a + c.received, 0)).toBe(published);
    expect(consumers.every((c) => c.received > 0)).toBe(true);
    for (const e of engines) e.finish();
    const byKey = new Map(ios.map((r) => [ioRecordKey(r), r]));
    expect(byKey.size, "no I/O reported twice").toBe(ios.length);
    const expected = traffic.ios.filter((t) => t.record);
    expect(ios.length).toBe(expected.length);
    for (const truth of expected) {
      const r = byKey.get(ioTruthKey(truth))!;
      // Each exporter places the switches' clocks from the digests' list times (µs-close); every duration is exact.
      expect(ioMismatches(truth, r).filter((m) => !m.startsWith("cmd_unix_ns"))).toEqual([]);
    }
    expect(ios.some((r) => r.host.includes(":")) && ios.some((r) => !r.host.includes(":"))).toBe(true);
  }, 180_000);

  test("bad digests on the digest topic are counted, the good ones still exported", async () => {
    const t = topics("bad");
    const sink = new KafkaSink({ brokers, topics: t, partitions: 1 });
    await sink.start();
    const good = (seq: number) => RawDigest.fromPartial({
      switchId: "s", digest: "learn_digest_t", seq: BigInt(seq), listTimestampNs: 1n,
      fields: [["seq", [seq]], ["kind", [1]], ["src", [10, 0, 0, 1]], ["dst", [10, 0, 0, 2]], ["dest_qp", [0, 0, 7]], ["addr", new Array(16).fill(0)]].map(([name, v]) => ({ name: name as string, value: Buffer.from(v as number[]) })),
    });
    const wide = good(2);
    wide.fields[1]!.value = Buffer.from([1, 0]);
    sink.push(encodeRawDigest(good(1), "k", t));
    sink.push(encodeRawDigest(wide, "k", t));
    sink.push(encodeRawDigest(RawDigest.fromPartial({ switchId: "s", digest: "nonsense_t", seq: 3n }), "k", t));
    sink.push(encodeRawDigest(good(4), "k", t));
    await sink.flush();
    await sink.close();
    const bad: string[] = [];
    const got: number[] = [];
    const c = new DigestConsumer({ brokers, groupId: `bad-${t.digest}`, topic: t.digest, onBatch: (b) => got.push(b.digests[0]!.seq), onBad: (m) => bad.push(m) });
    await c.start();
    await until(() => got.length + bad.length >= 4, 30_000, () => `4 digests consumed (got ${got.length} good, ${bad.length} bad)`, 100);
    await c.stop();
    expect(got, JSON.stringify(bad)).toEqual([1, 4]);
    expect(bad).toHaveLength(2);
    expect(bad[0]).toMatch(/member 'kind': value 256 does not fit in 8 bits/);
    expect(bad[1]).toMatch(/unknown digest 'nonsense_t'/);
  }, 60_000);

  test("with Kafka unreachable, records spill to disk within the bound and the overflow is counted", async () => {
    const sink = new KafkaSink({ brokers: ["127.0.0.1:1"], topics: topics("down"), maxBuffered: 10, spillDir: join(tmp, "down-spill"), maxSpillBytes: 4000 });
    // No start(): the broker is unreachable, pushing must still not block or throw.
    for (let i = 0; i < 200; i++) sink.push({ topic: "x", key: `k${i}`, value: Buffer.alloc(20, i), headers: {} });
    expect(sink.stats.buffered).toBe(10);
    expect(sink.stats.spilledNow).toBeGreaterThan(0);
    expect(sink.stats.dropped).toBe(200 - 10 - sink.stats.spilledNow);
    expect(sink.stats.dropped).toBeGreaterThan(0);
    expect(sink.spillFiles().length).toBeGreaterThan(0);
  });
});
