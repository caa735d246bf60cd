// Every compression codec Kafka users choose (compression.type) round-trips
// through the broker: what the exporter publishes with it, Kafka's own Java
// console consumer reads back, record for record, and the broker's log holds
// the batches with that codec (Kafka's DumpLogSegments says which).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, test } from "vitest";
import type { IoRecordJson } from "../../contract/src/records.js";
import { encodeRecord, type TopicNames } from "../../exporter/src/kafka/encode.js";
import { KafkaSink } from "../../exporter/src/kafka/kafka-sink.js";
import { KAFKA_COMPRESSIONS } from "../../exporter/src/kafka/transport.js";

const root = new URL("../..", import.meta.url).pathname;
const brokers = [inject("kafkaBrokers")];
const version = process.env.KAFKA_VERSION || "4.4.0";
const libs = join(root, ".cache/kafka", version, "libs");
const tmp = mkdtempSync(join(tmpdir(), "kafka-codecs-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function topics(tag: string): TopicNames {
  const id = `${tag}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  return { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
}

const record = (i: number): IoRecordJson => ({
  type: "io", switch_id: "tor-c", interval_start_unix_ns: "1800000000000000000", host: `10.0.1.${1 + (i % 7)}`, target: "10.0.2.1", host_qp: 0x101 + i, target_qp: 0x4001,
  cid: i & 0xffff, cmd_psn: 1000 + i, op: i % 3 ? "read" : "write", bytes: 4096 << (i % 3), in_capsule: false, nvme_status: 0, e2e_c_ns: 40_000 + i, e2e_s_ns: 34_000 + i,
  rtt_ns: 6_000, dal_ns: 30_000 + i, dpl_ns: null, incomplete: false, mode: "full", c_switch_id: "tor-c", s_switch_id: "tor-s", cmd_unix_ns: String(1_800_000_000_000_000_000n + BigInt(i) * 1000n),
});

/** The codec of the batches the managed broker wrote for a topic, by DumpLogSegments ("compresscodec: LZ4"). */
function storedCodecs(topic: string): Set<string> | undefined {
  for (const d of readdirSync(tmpdir()).filter((n) => n.startsWith("kafka-"))) {
    const part = join(tmpdir(), d, "data", `${topic}-0`);
    if (!existsSync(part)) continue;
    const log = readdirSync(part).find((f) => f.endsWith(".log"));
    const cls = version.startsWith("3.") ? "kafka.tools.DumpLogSegments" : "org.apache.kafka.tools.DumpLogSegments";
    const r = spawnSync("java", ["-Xmx256m", "-cp", `${libs}/*`, cls, "--files", join(part, log!)], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    return new Set([...r.stdout.matchAll(/compresscodec: (\w+)/g)].map((m) => m[1]!.toLowerCase()));
  }
  return undefined;
}

describe("Kafka compression codecs", () => {
  for (const codec of KAFKA_COMPRESSIONS) {
    test(`${codec}: Kafka's console consumer (Java) reads back every record the exporter published`, async () => {
      const t = topics(`codec-${codec}`);
      const sink = new KafkaSink({ brokers, topics: t, partitions: 1, compression: codec, spillDir: join(tmp, `${codec}-spill`) });
      await sink.start();
      const sent = Array.from({ length: 300 }, (_, i) => record(i));
      for (const r of sent) sink.push(encodeRecord(r, t, "json", 1_000_000_000n));
      await sink.flush();
      await sink.close();
      const java = spawnSync("java", ["-Xmx256m", "-cp", `${libs}/*`, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", brokers[0]!, "--topic", t.io,
        "--from-beginning", "--max-messages", String(sent.length), "--timeout-ms", "30000", "--property", "print.key=true", "--property", "key.separator=\t"], { encoding: "utf8", timeout: 90_000 });
      expect(java.status, java.stderr).toBe(0);
      const lines = java.stdout.trim().split("\n").filter((l) => l.includes("\t"));
      if (lines.length !== sent.length) console.log(java.stdout.split("\n").filter((l) => !l.includes("\t")));
      expect(lines.length).toBe(sent.length);
      const got = lines.map((l) => {
        const [key, value] = l.split("\t");
        return { key, record: JSON.parse(value!) as IoRecordJson };
      });
      expect(got.map((g) => g.record)).toEqual(sent);
      expect(got.map((g) => g.key)).toEqual(sent.map((r) => `${r.host}|${r.target}`));
      if (inject("kafkaManaged")) expect(storedCodecs(t.io)).toEqual(new Set([codec]));
    }, 120_000);
  }
});
