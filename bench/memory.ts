// memory, replay-memory and soak: the exporter's and the replay's memory, and the demo as a long run.
import { fork, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { MetricsEngine } from "@rdma-telemetry/exporter";
import type { TelemetryDigest } from "@rdma-telemetry/contract";
import { Topology } from "../app/topology.js";
import { generateTraffic } from "@rdma-telemetry/traffic";
import { PcapWriter } from "@rdma-telemetry/traffic";
import { replayCaptures } from "../app/replay.js";
import { compiled, here, print } from "./common.js";

export async function benchMemory(): Promise<void> {
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

export async function benchReplayMemory(): Promise<void> {
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
export async function benchSoak(): Promise<void> {
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
