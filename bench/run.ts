// Benchmarks: print figures, assert nothing. Run with `npm run bench [-- NAME...]`.
//   pipeline   packets/s through the telemetry program on the software switch (one core)
//   digests    digests/s from the switch through P4Runtime to the exporter
//   writes     table writes/s (batched) and the time to rotate a 1024-entry watchlist
//   kafka      records/s from the exporter into Kafka with each client, both codecs, Kafka 4.4 and 3.9, beside the Java producer (bench/kafka.ts)
//   memory     the exporter's peak RSS with 1,000,000 flows in one interval
//   replay-memory  packets/s and peak RSS replaying a capture of BENCH_CAPTURE_MB (streamed)
//   soak       the demo for BENCH_SOAK_S seconds of traffic (default 3600) at BENCH_SOAK_LOAD (default 0.3), its RSS every 10 s
// Environment: KAFKA_BROKERS (use that broker), BENCH_KAFKA_* (see bench/kafka.ts),
// BENCH_CPU_PROF (a directory: CPU profiles of the switch process),
// BENCH_CAPTURE_MB (the replayed capture's size, default 1024), BENCH_SOAK_S.
import { fork, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { P4Info } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import { SetForwardingPipelineConfigRequest_Action, Update_Type, type Update } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { Rig } from "../app/rig.js";
import { Pipeline } from "@rdma-telemetry/switch";
import { parseConfig } from "@rdma-telemetry/controller";
import { TelemetryController } from "@rdma-telemetry/controller";
import { Exporter } from "@rdma-telemetry/exporter";
import { benchKafkaMatrix } from "./kafka.js";
import { MetricsEngine } from "@rdma-telemetry/exporter";
import type { TelemetryDigest } from "@rdma-telemetry/contract";
import { ipv4Source, Topology } from "../app/topology.js";
import { P4RuntimeClient, toUint128 } from "@rdma-telemetry/p4runtime";
import { tableEntity } from "@rdma-telemetry/p4runtime";
import { P4Schema } from "@rdma-telemetry/p4runtime";
import { generateTraffic } from "@rdma-telemetry/traffic";
import { PcapWriter, writePcap } from "@rdma-telemetry/traffic";
import { replayCaptures } from "../app/replay.js";

// Run from bench/ (tsx) or from dist/bench/ (npm run bench: the built code users run).
const here = dirname(fileURLToPath(import.meta.url));
const compiled = import.meta.url.endsWith(".js");
const root = compiled ? join(here, "../..") : join(here, "..");
const print = (s: string) => process.stdout.write(s + "\n");

/** The bundled trace: the generator's default traffic, seed 42, single switch. */
function trace(durationMs: number) {
  return generateTraffic({ seed: 42, layout: "single", durationNs: durationMs * 1e6, hosts: 4, targets: 2, ioRate: 20_000 });
}

async function benchPipeline(): Promise<void> {
  const t = trace(1000);
  const sw = t.switches[0]!;
  const rig = new Rig({ name: "bench", topology: Topology.parse(sw.topology) });
  let digests = 0;
  await rig.start((b) => (digests += b.digests.length));
  const packets = sw.packets;
  const ports = packets.map((p) => rig.options.topology.portOf(ipv4Source(p.data)!)!);
  // Warm up, then time the pipeline alone (the switch's own work per packet).
  const run = (n: number) => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const p = packets[i % packets.length]!;
      rig.sw.process({ port: ports[i % packets.length]!, data: p.data, unixNs: p.timestampNs + BigInt(Math.floor(i / packets.length)) * 2_000_000_000n, wireLength: p.originalLength });
    }
    return performance.now() - t0;
  };
  run(50_000);
  const n = Math.max(packets.length, 500_000);
  const ms = run(n);
  await rig.drain();
  print(`pipeline: ${n} packets in ${ms.toFixed(0)} ms = ${Math.round((n / ms) * 1000).toLocaleString("en")} packets/s on one core, digests to the P4Runtime stream included (trace: ${packets.length} packets, ${digests} digests delivered)`);
  // The compiled program alone: parse, ingress, egress, deparse, learn (no digest lists, no gRPC).
  const pipeline = rig.sw.program ? new Pipeline(rig.sw.program) : undefined;
  if (pipeline) {
    // Packets as a port delivers them: ns since the switch started, as numbers.
    const start = packets[0]!.timestampNs;
    const offsets = packets.map((p) => Number(p.timestampNs - start));
    const alone = (reps: number) => {
      const t0 = performance.now();
      for (let r = 0; r < reps; r++) {
        for (let i = 0; i < packets.length; i++) {
          const p = packets[i]!;
          pipeline.process({ port: ports[i]!, data: p.data, timestampNs: offsets[i]! + r * 2e9, wireLength: p.originalLength });
        }
      }
      return performance.now() - t0;
    };
    alone(1);
    const ms2 = alone(3);
    print(`pipeline (program alone): ${3 * packets.length} packets in ${ms2.toFixed(0)} ms = ${Math.round(((3 * packets.length) / ms2) * 1000).toLocaleString("en")} packets/s on one core (target >= 1,000,000; BMv2's own notes give about 80,000)`);
  }
  await rig.stop();
  await benchBmv2(packets.slice(0, 200_000), rig.options.topology);
}

/** BMv2 simple_switch_grpc on the same trace, where it and tcpreplay are installed (root, veth pairs). */
async function benchBmv2(packets: ReadonlyArray<{ timestampNs: bigint; data: Buffer; originalLength: number }>, topology: Topology): Promise<void> {
  const bmv2 = [process.env.SIMPLE_SWITCH_GRPC, "/opt/p4/bin/simple_switch_grpc"].find((p) => p && existsSync(p));
  const tcpreplay = spawnSync("tcpreplay", ["--version"]).status === 0;
  if (!bmv2 || !tcpreplay || process.getuid?.() !== 0) {
    print(`pipeline (BMv2): not measured (${!bmv2 ? "simple_switch_grpc not installed" : !tcpreplay ? "tcpreplay not installed" : "needs root for veth pairs"})`);
    return;
  }
  const ports = topology.ports.map((p) => p.port);
  const ip = (...a: string[]) => spawnSync("ip", a);
  for (const p of ports) {
    ip("link", "del", `bnsw${p}`);
    ip("link", "add", `bnsw${p}`, "type", "veth", "peer", "name", `bnh${p}`);
    for (const d of [`bnsw${p}`, `bnh${p}`]) {
      spawnSync("sysctl", ["-qw", `net.ipv6.conf.${d}.disable_ipv6=1`]);
      ip("link", "set", d, "mtu", "9000");
      ip("link", "set", d, "up");
    }
  }
  const grpcPort = 52000 + Math.floor(Math.random() * 1000);
  const sw = spawn(bmv2, ["--no-p4", "--device-id", "1", "--log-level", "error", ...ports.flatMap((p) => ["-i", `${p}@bnsw${p}`]), "--", "--grpc-server-addr", `127.0.0.1:${grpcPort}`, "--cpu-port", "510"], { stdio: "ignore" });
  try {
    await new Promise((r) => setTimeout(r, 1500));
    const controller = new TelemetryController(parseConfig({
      switch: { address: `127.0.0.1:${grpcPort}`, switch_id: "bmv2", timestamp_unit_ns: 1000 },
      ports: topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
      digest: { max_list_size: 1024, max_timeout_us: 1000 },
    }));
    let digests = 0;
    controller.on("digests", (b) => (digests += b.digests.length));
    controller.start();
    await controller.ready(20_000);
    // Everything enters on the first compute port, as fast as tcpreplay sends.
    const file = join(tmpdir(), `bmv2-bench-${process.pid}.pcap`);
    writePcap(file, packets);
    const rx = () => ports.reduce((a, p) => a + Number(readFileSync(`/sys/class/net/bnh${p}/statistics/rx_packets`, "utf8")), 0);
    const before = rx();
    const t0 = performance.now();
    const replay = spawnSync("tcpreplay", ["--topspeed", "-q", "-i", `bnh${ports[0]}`, file], { encoding: "utf8" });
    let last = rx();
    let lastChange = performance.now();
    while (performance.now() - lastChange < 1000) {
      await new Promise((r) => setTimeout(r, 50));
      const now = rx();
      if (now !== last) {
        last = now;
        lastChange = performance.now();
      }
    }
    const seconds = (lastChange - t0) / 1000;
    const forwarded = last - before;
    print(`pipeline (BMv2 simple_switch_grpc, same trace, same program, same run): ${forwarded} of ${packets.length} packets forwarded in ${seconds.toFixed(1)} s = ${Math.round(forwarded / seconds).toLocaleString("en")} packets/s (tcpreplay ${replay.status === 0 ? "--topspeed" : "failed"}; ${digests} digests)`);
    await controller.stop();
    rmSync(file, { force: true });
  } finally {
    sw.kill("SIGKILL");
    for (const p of ports) ip("link", "del", `bnsw${p}`);
  }
}

/** The software switch in a child process (bench/switch-worker.ts); resolves with its P4Runtime port. */
async function switchProcess(clock: "virtual" | "live"): Promise<{ worker: ChildProcess; port: number }> {
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const worker = fork(join(here, `switch-worker.${compiled ? "js" : "ts"}`), [clock], { execArgv: [...profile, ...(compiled ? [] : ["--conditions=source", "--import", "tsx"])] });
  const port = await new Promise<number>((resolve) => worker.once("message", (m: { port: number }) => resolve(m.port)));
  return { worker, port };
}

async function benchDigests(): Promise<void> {
  // The switch runs in a child process (a switch is a process of its own); its
  // digest lists cross P4Runtime to the controller (decode, ack) and the exporter (records).
  const n = 300_000;
  const { worker, port } = await switchProcess("virtual");
  const topology = Topology.parse({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }] });
  const controller = new TelemetryController(parseConfig({
    switch: { address: `127.0.0.1:${port}`, switch_id: "bench", timestamp_unit_ns: 1 },
    ports: topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
    digest: { max_list_size: 1024, max_timeout_us: 1000 },
  }));
  const exporter = new Exporter({ perEventRecords: true });
  let records = 0;
  let digests = 0;
  exporter.addSink(() => records++);
  controller.on("digests", (b) => {
    digests += b.digests.length;
    exporter.onBatch(b);
  });
  controller.start();
  await controller.ready();
  const t0 = performance.now();
  worker.send({ digests: n, digestId: controller.schema.digests.get("msg_digest_t").preamble!.id });
  while (digests < n) await new Promise((r) => setTimeout(r, 1));
  const ms = performance.now() - t0;
  print(`digests: ${n} message digests from the switch (its own process) over P4Runtime to the controller and into the exporter (${records} records) in ${ms.toFixed(0)} ms = ${Math.round((n / ms) * 1000).toLocaleString("en")} digests/s (target >= 200,000)`);
  await controller.stop();
  worker.disconnect();
}

async function benchWrites(): Promise<void> {
  const p4infoText = readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8");
  const schema = P4Schema.fromJson(p4infoText);
  // The switch in its own process: the figures are the controller's writes and
  // the switch's answers, not both sharing one event loop and one heap.
  const { worker, port } = await switchProcess("live");
  const c = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n });
  const ch = c.streamChannel();
  ch.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(1n), status: undefined } } });
  for await (const m of ch) if (m.update?.$case === "arbitration") break;
  await c.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info: P4Info.fromJSON(JSON.parse(p4infoText)), p4DeviceConfig: readFileSync(join(root, "p4/build/telemetry.json")), cookie: { cookie: 1n } } });
  const watch = (i: number, type: Update_Type, round: number): Update => ({
    type,
    entity: tableEntity(schema, { table: "flow_tracker.flow_watchlist", match: { src: 0x0a000000 + (i >> 8), dst: 0x0a010000 + (i & 255), dest_qp: round * 4096 + i }, action: { name: "flow_tracker.watch", params: { flow_slot: i, flow_epoch: round } } }),
  });
  for (const batch of [1, 64, 1024]) {
    // 1024 inserts then 1024 deletes (the table holds 1024 entries).
    const round = 100 + batch;
    const t0 = performance.now();
    for (const type of [Update_Type.INSERT, Update_Type.DELETE]) {
      for (let i = 0; i < 1024; i += batch) {
        await c.write(Array.from({ length: batch }, (_, k) => watch(i + k, type, round)), 1n);
      }
    }
    const ms = performance.now() - t0;
    print(`writes: 2048 table writes (1024 inserts, 1024 deletes) in batches of ${batch}: ${Math.round((2048 / ms) * 1000).toLocaleString("en")} writes/s`);
  }
  // A rotation: delete the 1024 entries of the window, insert the next 1024, in one write.
  let round = 1;
  await c.write(Array.from({ length: 1024 }, (_, i) => watch(i, Update_Type.INSERT, round)), 1n);
  // A controller rotates every period for as long as it runs: the first five
  // rotations warm up (JIT), the next thousand are timed.
  const times: number[] = [];
  for (let r = 0; r < 1005; r++) {
    const updates = [...Array.from({ length: 1024 }, (_, i) => watch(i, Update_Type.DELETE, round)), ...Array.from({ length: 1024 }, (_, i) => watch(i, Update_Type.INSERT, round + 1))];
    const t0 = performance.now();
    await c.write(updates, 1n);
    if (r >= 5) times.push(performance.now() - t0);
    round++;
  }
  times.sort((a, b) => a - b);
  const q = (f: number) => times[Math.min(times.length - 1, Math.floor(f * times.length))]!.toFixed(1);
  const within = times.filter((t) => t <= 20).length / times.length;
  print(`rotation: swap a 1024-entry watchlist (1024 deletes + 1024 inserts, one write), ${times.length} rotations: median ${q(0.5)} ms, p90 ${q(0.9)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms; ${(within * 100).toFixed(1)} % within 20 ms (target <= 20 ms)`);
  ch.close();
  c.close();
  // The same writes from finsy (PyPI) against the same server, in the same run.
  // (Asynchronously: the server answering finsy runs in this process.)
  const py = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn("python3", [join(root, "bench/finsy_writes.py"), `127.0.0.1:${port}`, join(root, "p4/build/telemetry.p4info.txtpb"), join(root, "p4/build/telemetry.json")]);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.on("error", (err) => resolve({ code: -1, stdout, stderr: err.message }));
  });
  if (py.code === 0) print(py.stdout.trim());
  else print(`finsy: not measured (${/No module named 'finsy'/.test(py.stderr) ? "pip install finsy" : py.stderr.trim().split("\n").slice(-1)[0]})`);
  worker.disconnect();
}

async function benchKafka(): Promise<void> {
  await benchKafkaMatrix(print);
}

async function benchMemory(): Promise<void> {
  // One interval with 1,000,000 distinct flows, one message each: the exporter's peak RSS.
  const engine = new MetricsEngine(() => {}, { perEventRecords: false });
  const base = 1_800_000_000_000_000_000n;
  let peak = process.memoryUsage().rss;
  const n = 1_000_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i += 1000) {
    const list: TelemetryDigest[] = [];
    for (let k = i; k < i + 1000; k++) {
      list.push({ kind: "msg", seq: k, mode: 1, flags: 0, src: 0x0a000000 + (k >> 12), dst: 0x0b000000 + ((k >> 6) & 63), dest_qp: k & 0xfff, first_psn: 0, last_psn: 63, bytes: 262144, packets: 64, retransmitted: 0, ecn_ce: 0, first_ts: 1000 + k, fct_ns: 21000, gap_ns: 0, extra_packets: 0, extra_retransmitted: 0, extra_ecn_ce: 0, straddled: 0, cnp: 0 });
    }
    engine.onDigestList("tor", base + BigInt(i) * 1000n, list);
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  engine.finish();
  peak = Math.max(peak, process.memoryUsage().rss);
  print(`memory: ${n.toLocaleString("en")} flows tracked in one interval by one exporter: peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB (${((performance.now() - t0) / 1000).toFixed(1)} s); flow state is released when the interval closes`);
}

/**
 * A capture of about `mb` MB, written as a stream: a 200 ms two-ToR workload
 * generated once, its compute-side packets written again and again, each
 * copy later by the workload's span. Returns that switch's topology and the packets written.
 */
function writeLargeCapture(file: string, mb: number): { topology: unknown; packets: number } {
  const traffic = generateTraffic({ seed: 42, durationNs: 200_000_000 });
  const sw = traffic.switches.find((s) => s.name === "tor-c")!;
  const first = sw.packets[0]!.timestampNs;
  const span = sw.packets.at(-1)!.timestampNs - first + 1_000_000n;
  const out = new PcapWriter(file, { snaplen: 128, blockBytes: 4 << 20 });
  try {
    for (let shift = 0n; out.bytes < mb * 1e6; shift += span) {
      for (const p of sw.packets) out.write({ timestampNs: p.timestampNs + shift, data: p.data, originalLength: p.originalLength });
    }
  } finally {
    out.close();
  }
  return { topology: sw.topology, packets: out.packets };
}

async function benchReplayMemory(): Promise<void> {
  const capture = process.env.BENCH_REPLAY_CAPTURE;
  if (capture) {
    await replayLargeCapture(capture, process.env.BENCH_REPLAY_TOPOLOGY!);
    return;
  }
  const mb = Number(process.env.BENCH_CAPTURE_MB ?? 1024);
  const dir = mkdtempSync(join(tmpdir(), "replay-memory-"));
  try {
    const file = join(dir, "tor-c.pcap");
    const t0 = performance.now();
    const { topology, packets } = writeLargeCapture(file, mb);
    writeFileSync(join(dir, "tor-c.topology.json"), JSON.stringify(topology));
    print(`replay-memory: wrote ${packets.toLocaleString("en")} packets, ${(statSync(file).size / 1e6).toFixed(0)} MB, through PcapWriter in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    // The replay in a process of its own: its peak RSS is the replay's, not the generator's.
    const child = fork(join(here, `run.${compiled ? "js" : "ts"}`), ["replay-memory"], {
      execArgv: compiled ? [] : ["--conditions=source", "--import", "tsx"],
      env: { ...process.env, BENCH_REPLAY_CAPTURE: file, BENCH_REPLAY_TOPOLOGY: join(dir, "tor-c.topology.json") },
    });
    const code = await new Promise<number | null>((r) => child.on("exit", r));
    if (code !== 0) process.exitCode = 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function replayLargeCapture(file: string, topologyFile: string): Promise<void> {
  const out = join(dirname(file), "records.jsonl");
  let midRss = 0;
  const t0 = performance.now();
  const r = await replayCaptures([{ path: file, topology: Topology.load(topologyFile) }], {
    out,
    onProgress: (done, total) => {
      if (!midRss && done >= total / 2) midRss = process.memoryUsage().rss;
    },
  });
  const s = (performance.now() - t0) / 1000;
  const peak = process.resourceUsage().maxRSS / 1024;
  print(`replay-memory: ${r.packets.toLocaleString("en")} packets of a ${(statSync(file).size / 1e6).toFixed(0)} MB capture replayed in ${s.toFixed(1)} s = ${Math.round(r.packets / s).toLocaleString("en")} packets/s (${r.digests.toLocaleString("en")} digests, ${r.records.toLocaleString("en")} records, ${(statSync(out).size / 1e6).toFixed(0)} MB of JSON lines); peak RSS ${peak.toFixed(0)} MiB (RSS half-way ${(midRss / 2 ** 20).toFixed(0)} MiB)`);
}

/**
 * The demo as a long run: BENCH_SOAK_S seconds of generated traffic through
 * both software switches, controllers and the exporter, in a process of its
 * own; its RSS sampled every 10 s, and the growth from the first minute on.
 */
async function benchSoak(): Promise<void> {
  const seconds = Number(process.env.BENCH_SOAK_S ?? 3600);
  // A share of the default traffic, so that an hour of traffic runs in about an hour on a small machine.
  const load = process.env.BENCH_SOAK_LOAD ?? "0.3";
  const dir = mkdtempSync(join(tmpdir(), "soak-"));
  const bin = join(here, compiled ? "../bin/rdma-telemetry.js" : "../bin/rdma-telemetry.ts");
  const t0 = performance.now();
  const child = spawn(process.execPath, [...(compiled ? [] : ["--conditions=source", "--import", "tsx"]), bin, "demo", "--duration-ms", String(seconds * 1000), "--load", load, "--out-dir", dir], { stdio: ["ignore", "pipe", "inherit"] });
  let lastLine = "";
  let selfCheck = "";
  child.stdout!.on("data", (d: Buffer) => {
    for (const line of d.toString().split("\n")) {
      if (line.startsWith("self-check")) selfCheck = line;
      if (line.trim()) lastLine = line;
    }
  });
  const samples: Array<{ s: number; mib: number }> = [];
  const rssMib = () => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
      return m ? Number(m[1]) / 1024 : undefined;
    } catch {
      return undefined;
    }
  };
  const timer = setInterval(() => {
    const mib = rssMib();
    if (mib === undefined) return;
    const s = Math.round((performance.now() - t0) / 1000);
    samples.push({ s, mib });
    print(`soak: ${s} s, RSS ${mib.toFixed(0)} MiB (${lastLine.slice(0, 80)})`);
  }, 10_000);
  const code = await new Promise<number | null>((r) => child.on("exit", r));
  clearInterval(timer);
  rmSync(dir, { recursive: true, force: true });
  // The demo generates its captures, then replays them: growth is read over the second half of the run.
  const after = samples.slice(Math.floor(samples.length / 2));
  const growth = after.length >= 2 ? after[after.length - 1]!.mib - after[0]!.mib : NaN;
  print(`soak: ${seconds} s of traffic at load ${load} in ${((performance.now() - t0) / 1000).toFixed(0)} s (exit ${code}); RSS min ${Math.min(...samples.map((x) => x.mib)).toFixed(0)} MiB, max ${Math.max(...samples.map((x) => x.mib)).toFixed(0)} MiB, growth over the second half ${Number.isNaN(growth) ? "n/a" : `${growth.toFixed(0)} MiB`}`);
  if (selfCheck) print(`soak: ${selfCheck.slice(0, 300)}`);
}

const all: Record<string, () => Promise<void>> = { pipeline: benchPipeline, digests: benchDigests, writes: benchWrites, kafka: benchKafka, memory: benchMemory, "replay-memory": benchReplayMemory, soak: benchSoak };
const chosen = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const names = chosen.length ? chosen : Object.keys(all);
const unknown = names.filter((n) => !all[n]);
if (unknown.length) {
  print(`unknown benchmark '${unknown[0]}' (have: ${Object.keys(all).join(", ")})`);
  process.exitCode = 2;
} else if (names.length === 1) {
  await all[names[0]!]!();
} else {
  // Each benchmark in a fresh process: no heap left over from the one before
  // (a trace of 800,000 packets) slows the next one's garbage collection, and
  // peak RSS is the exporter's own.
  for (const name of names) {
    const child = fork(join(here, `run.${compiled ? "js" : "ts"}`), [name], { execArgv: compiled ? [] : ["--conditions=source", "--import", "tsx"] });
    await new Promise((r) => child.on("exit", r));
  }
}
