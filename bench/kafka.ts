// `npm run bench -- kafka`: records/s from the exporter into Kafka with each
// Kafka client and each codec (none, gzip, snappy, lz4, zstd), on each broker version, beside Kafka's
// Java producer on the same broker, in one run. The exporter is measured as it
// runs: each record encoded (encodeRecord) and pushed into the real sink,
// timed until Kafka acknowledged the last one (acks=all, idempotent). Each
// exporter measurement runs in a process of its own (no heap or JIT state
// shared between clients). The Java producer sends the very same keys, values
// and headers (scripts/kafka/KeyedProducerPerf.java), same partition count,
// acks=all, idempotent; Kafka's stock ProducerPerformance (unkeyed, same
// record size) is printed too.
//
// Environment: BENCH_KAFKA_VERSIONS (default 4.4.0,3.9.1), BENCH_KAFKA_CLIENTS
// (default kafkajs,platformatic), BENCH_KAFKA_COMPRESSION (codecs, comma-separated;
// default all five), BENCH_KAFKA_RECORDS (default 300000), BENCH_KAFKA_REPEAT (runs of
// each, best kept; default 2), BENCH_KAFKA_BATCH (records per produce request;
// default: the sink's), KAFKA_MAX_IN_FLIGHT (the sink's requests in flight; default 5), BENCH_KAFKA_JAVA=0 (no Java producer), BENCH_CPU_PROF (a directory: CPU profiles of the
// exporter processes), KAFKA_BROKERS (use that broker, of any version, instead).
import { fork, spawn } from "node:child_process";
import { mkdtempSync, openSync, rmSync, writeSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { performance } from "node:perf_hooks";
import { encodeRecord, KAFKA_COMPRESSIONS, KafkaSink, kafkaClientName, kafkaCompression, kafkaMaxInFlight, type KafkaClientName, type KafkaCompression, type TopicNames } from "@rdma-telemetry/exporter";
import type { IoRecordJson } from "@rdma-telemetry/contract";

const here = dirname(fileURLToPath(import.meta.url));
const compiled = import.meta.url.endsWith(".js");
const root = compiled ? join(here, "../..") : join(here, "..");
const PARTITIONS = 8;

/** The i-th I/O record of the benchmark: 2,048 host-target keys. */
export function benchRecord(i: number): IoRecordJson {
  return {
    type: "io", switch_id: "tor-c", interval_start_unix_ns: "1800000000000000000", host: `10.0.1.${i & 255}`, target: `10.0.2.${(i >> 8) & 7}`, host_qp: 0x100 + (i & 7), target_qp: 0x800 + (i & 7), cid: i & 0x7f, cmd_psn: i & 0xffffff,
    op: i & 1 ? "read" : "write", bytes: 4096, in_capsule: false, nvme_status: 0, e2e_c_ns: 70_000 + (i % 997), e2e_s_ns: 64_000, rtt_ns: 6_000 + (i % 97), dal_ns: 63_000, dpl_ns: i & 1 ? null : 3_500,
    incomplete: false, mode: "full", c_switch_id: "tor-c", s_switch_id: "tor-s", cmd_unix_ns: String(1_800_000_000_000_000_000n + BigInt(i) * 1000n),
  };
}

const topicsOf = (id: string): TopicNames => ({ io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` });
const INTERVAL_NS = 1_000_000_000n;

interface ExporterResult {
  recordsPerS: number;
  /** the exporter process's CPU time (user + system) per record, µs */
  cpuUsPerRecord: number;
  ms: number;
  bytes: number;
}

/** One exporter measurement (in this process): n records encoded and pushed through the sink until acknowledged. */
async function measureExporter(brokers: string, client: KafkaClientName, compression: KafkaCompression, n: number, batchSize: number | undefined): Promise<ExporterResult> {
  const topics = topicsOf(`bench-${client}-${compression}-${Date.now()}-${process.pid}`);
  const sink = new KafkaSink({ brokers: [brokers], client, topics, partitions: PARTITIONS, compression, maxBuffered: n + 1, ...(batchSize ? { batchSize } : {}) });
  await sink.start();
  // Warm-up (JIT, connections), not timed.
  for (let i = 0; i < 20_000; i++) sink.push(encodeRecord(benchRecord(i), topics, "protobuf", INTERVAL_NS));
  await sink.flush(300_000);
  let bytes = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const m = encodeRecord(benchRecord(i), topics, "protobuf", INTERVAL_NS);
    bytes += m.value.length;
    sink.push(m);
    // The records come from the exporter's event loop in bursts: let the sink's pump run between them.
    if ((i & 4095) === 4095) await new Promise((r) => setImmediate(r));
  }
  await sink.flush(600_000);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const failures = sink.stats.sendFailures;
  await sink.close();
  if (failures) process.stderr.write(`kafka bench: ${failures} send failures (${sink.stats.lastError})\n`);
  return { recordsPerS: (n / ms) * 1000, cpuUsPerRecord: (cpu.user + cpu.system) / n, ms, bytes };
}

/** Runs measureExporter in a child process (this file, "exporter" mode). */
function exporterProcess(brokers: string, client: KafkaClientName, compression: KafkaCompression, n: number): Promise<ExporterResult> {
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, `--cpu-prof-name=exporter-${client}-${compression}-${Date.now()}.cpuprofile`] : [];
  const child = fork(fileURLToPath(import.meta.url), ["exporter", brokers, client, compression, String(n)], { execArgv: [...profile, ...(compiled ? [] : ["--import", "tsx"])], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  return new Promise((resolve, reject) => {
    let result: ExporterResult | undefined;
    child.on("message", (m: ExporterResult) => (result = m));
    child.on("exit", (code) => (result ? resolve(result) : reject(new Error(`exporter bench process exited with ${code}`))));
  });
}

/** The benchmark's records as the Java producer reads them: count, then key, value and both header values, each length-prefixed. */
function writeRecordsFile(file: string, n: number): number {
  const topics = topicsOf("file");
  const fd = openSync(file, "w");
  const chunks: Buffer[] = [];
  let size = 0;
  let bytes = 0;
  const int = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    return b;
  };
  const flush = () => {
    writeSync(fd, Buffer.concat(chunks));
    chunks.length = 0;
    size = 0;
  };
  chunks.push(int(n));
  for (let i = 0; i < n; i++) {
    const m = encodeRecord(benchRecord(i), topics, "protobuf", INTERVAL_NS);
    bytes += m.value.length;
    for (const b of [Buffer.from(m.key), m.value, Buffer.from(m.headers.type!), Buffer.from(m.headers.encoding!)]) {
      chunks.push(int(b.length), b);
      size += b.length + 4;
    }
    if (size > 1 << 20) flush();
  }
  flush();
  closeSync(fd);
  return Math.round(bytes / n);
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args);
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("close", () => resolve(out));
    child.on("error", (err) => resolve(`error: ${err.message}`));
  });
}

/** records/s from a Java tool's last "records sent" line. */
function javaRate(out: string): number {
  const line = out.trim().split("\n").filter((l) => /records sent/.test(l)).pop();
  const m = line && /records sent, ([\d.]+) records\/sec/.exec(line);
  if (!m) throw new Error(`the Java producer printed no figure: ${out.trim().split("\n").slice(-3).join(" | ")}`);
  return Number(m[1]);
}

interface Row {
  version: string;
  compression: KafkaCompression;
  producer: string;
  recordsPerS: number;
  cpuUsPerRecord?: number;
}

export async function benchKafkaMatrix(print: (s: string) => void): Promise<void> {
  const { startBroker, fetchJars } = (await import(pathToFileURL(join(root, "scripts/kafka/broker.mjs")).href)) as {
    startBroker: (o?: { version?: string }) => Promise<{ brokers: string; stop(): Promise<void> }>;
    fetchJars: (v?: string) => string;
  };
  const n = Number(process.env.BENCH_KAFKA_RECORDS ?? 300_000);
  const repeat = Math.max(1, Number(process.env.BENCH_KAFKA_REPEAT ?? 2));
  const only = process.env.BENCH_KAFKA_COMPRESSION;
  const codecs: readonly KafkaCompression[] = only ? only.split(",").map((c) => kafkaCompression(c, "BENCH_KAFKA_COMPRESSION")) : KAFKA_COMPRESSIONS;
  const clients = (process.env.BENCH_KAFKA_CLIENTS ?? "kafkajs,platformatic").split(",").map((c) => kafkaClientName(c, "BENCH_KAFKA_CLIENTS"));
  const external = process.env.KAFKA_BROKERS;
  const versions = external ? [process.env.KAFKA_VERSION ?? "4.4.0"] : (process.env.BENCH_KAFKA_VERSIONS ?? "4.4.0,3.9.1").split(",");
  const dir = mkdtempSync(join(tmpdir(), "kafka-bench-"));
  const recordsFile = join(dir, "records.bin");
  const size = writeRecordsFile(recordsFile, n);
  print(`kafka: ${n.toLocaleString("en")} IoRecords (protobuf, ${size} bytes each on average, 2 headers, 2,048 keys over ${PARTITIONS} partitions), acks=all, idempotent; best of ${repeat} runs each; exporter = encodeRecord + KafkaSink.push until acknowledged, up to ${kafkaMaxInFlight(process.env.KAFKA_MAX_IN_FLIGHT)} produce requests in flight (kafkajs: 1)`);
  const rows: Row[] = [];
  const add = (r: Row) => {
    rows.push(r);
    print(`kafka ${r.version} ${r.compression.padEnd(6)} ${r.producer.padEnd(34)} ${Math.round(r.recordsPerS).toLocaleString("en").padStart(9)} records/s${r.cpuUsPerRecord ? `, ${r.cpuUsPerRecord.toFixed(1)} µs CPU/record` : ""}`);
  };
  try {
    for (const version of versions) {
      const broker = external ? undefined : await startBroker({ version });
      const brokers = external ?? broker!.brokers;
      const libs = fetchJars(version);
      try {
        for (const compression of codecs) {
          const best = new Map<string, number>();
          const cpu = new Map<string, number>();
          const keep = (k: string, v: number, cpuUs?: number) => {
            best.set(k, Math.max(best.get(k) ?? 0, v));
            if (cpuUs !== undefined) cpu.set(k, Math.min(cpu.get(k) ?? Infinity, cpuUs));
          };
          // Interleaved, so that a burst of load from elsewhere on the machine does not fall on one producer only.
          for (let r = 0; r < repeat; r++) {
            const tag = `bench-${version}-${compression}-${Date.now()}-${r}`;
            if (process.env.BENCH_KAFKA_JAVA !== "0") {
              const java = await run("java", ["-Xmx1g", "-cp", `${libs}/*`, join(root, "scripts/kafka/KeyedProducerPerf.java"), brokers, `${tag}.java`, String(PARTITIONS), recordsFile, compression]);
              keep("Java KafkaProducer (same records)", javaRate(java));
              const perf = await run("java", ["-Xmx512m", "-cp", `${libs}/*`, "org.apache.kafka.tools.ProducerPerformance", "--topic", `${tag}.perf`, "--num-records", String(n), "--record-size", String(size), "--throughput", "-1",
                "--producer-props", `bootstrap.servers=${brokers}`, "acks=all", "enable.idempotence=true", `compression.type=${compression}`, "batch.size=262144", "linger.ms=5"]);
              keep("Java ProducerPerformance (unkeyed)", javaRate(perf));
            }
            for (const client of clients) {
              const e = await exporterProcess(brokers, client, compression, n);
              keep(`exporter, ${client === "platformatic" ? "@platformatic/kafka" : "kafkajs"}`, e.recordsPerS, e.cpuUsPerRecord);
            }
          }
          for (const [producer, recordsPerS] of best) add({ version, compression, producer, recordsPerS, cpuUsPerRecord: cpu.get(producer) });
        }
      } finally {
        await broker?.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // The table: each exporter against the Java producer on the same records, same broker, same codec.
  print("");
  print("| Kafka | codec | producer | records/s | × Java (same records) | exporter CPU µs/record |");
  print("|---|---|---|---:|---:|---:|");
  for (const r of rows) {
    const java = rows.find((x) => x.version === r.version && x.compression === r.compression && x.producer.startsWith("Java KafkaProducer"))?.recordsPerS;
    print(`| ${r.version} | ${r.compression} | ${r.producer} | ${Math.round(r.recordsPerS).toLocaleString("en")} | ${java ? (r.recordsPerS / java).toFixed(2) : "-"} | ${r.cpuUsPerRecord ? r.cpuUsPerRecord.toFixed(1) : ""} |`);
  }
}

if (process.argv[2] === "exporter" && process.send) {
  const [, , , brokers, client, compression, n] = process.argv;
  const batch = process.env.BENCH_KAFKA_BATCH ? Number(process.env.BENCH_KAFKA_BATCH) : undefined;
  const r = await measureExporter(brokers!, client as KafkaClientName, compression as KafkaCompression, Number(n), batch);
  process.send(r, () => process.disconnect());
}
