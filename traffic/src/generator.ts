// Seeded RoCEv2 traffic with its own ground truth (SPEC §3-§4).
//
// The simulated fabric: compute hosts behind a compute-side ToR ("tor-c"),
// NVMe targets behind a storage-side ToR ("tor-s"), joined by a fabric link
// with a one-way delay. Each packet gets the time it enters each ToR it
// crosses; each ToR's packets form one capture. With `layout: "single"` one
// switch has both the hosts and the targets.
//
// Traffic: NVMe over RoCE as real hosts send it (nvme-workload.ts: a queue
// per CPU with per-queue CIDs, in-capsule writes, RDMA CM set-up, responses
// missing from a capture, NVMe errors), and gradient-sync RDMA WRITE messages
// in a ring between hosts, with optional faults (slow target, fabric
// congestion, slow host, GPU idle, lossy flow).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateNvme, type FabricModel } from "./nvme-workload.js";
import type { Fault, GeneratedTraffic, GeneratorOptions, IoTruth, MessageTruth, SwitchCapture } from "./types.js";

export type { Fault, GeneratedTraffic, GeneratorOptions, IoTruth, MessageTruth, PortSpec, SwitchCapture, Topology } from "./types.js";
import { writePcap } from "./pcap.js";
import { buildFrame, ipv4, ipv4Text, Opcode, type RoceFrame } from "./roce.js";

export const DEFAULT_GENERATOR_OPTIONS: GeneratorOptions = {
  seed: 1,
  durationNs: 2_000_000_000,
  epochNs: 1_800_000_000_000_000_000n,
  layout: "two-tor",
  hosts: 4,
  targets: 2,
  queuesPerHost: 4,
  queueDepth: 32,
  ioRate: 2000,
  burstMax: 12,
  inlineDataBytes: 4096,
  responseLoss: 0.002,
  errorRate: 0.003,
  connectDuringCapture: 0.5,
  ioSizes: [4096, 16384, 65536],
  readFraction: 0.7,
  gradientBytes: 256 << 10,
  gradientGapNs: 4_000_000,
  mtu: 4096,
  linkBps: 100e9,
  fabricDelayNs: 3_000,
  mediaReadNs: 60_000,
  mediaWriteNs: 20_000,
  targetPrepNs: 4_000,
  hostPrepNs: 3_000,
  faults: [],
  snaplen: 128,
};

/** mulberry32: small, fast, seeded. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Qp {
  /** next PSN this side sends */
  psn: number;
  qpn: number;
  /** the time its send queue is free (at the sender's ToR) */
  busyUntil: number;
}

export function generateTraffic(opts: Partial<GeneratorOptions> = {}): GeneratedTraffic {
  const o: GeneratorOptions = { ...DEFAULT_GENERATOR_OPTIONS, ...opts };
  const rand = rng(o.seed);
  const single = o.layout === "single";
  const hostIp = (i: number) => ipv4(`10.0.1.${i + 1}`);
  const targetIp = (j: number) => ipv4(single ? `10.0.1.${101 + j}` : `10.0.2.${j + 1}`);
  const torC: SwitchCapture = { name: single ? "tor" : "tor-c", topology: { ports: [] }, packets: [] };
  const torS: SwitchCapture = single ? torC : { name: "tor-s", topology: { ports: [] }, packets: [] };
  for (let i = 0; i < o.hosts; i++) torC.topology.ports.push({ port: i + 1, role: "compute", prefixes: [`${ipv4Text(hostIp(i))}/32`] });
  for (let j = 0; j < o.targets; j++) torS.topology.ports.push({ port: 33 + j, role: "storage", prefixes: [`${ipv4Text(targetIp(j))}/32`] });
  if (!single) {
    torC.topology.ports.push({ port: 64, role: "fabric", prefixes: ["0.0.0.0/0"] });
    torS.topology.ports.push({ port: 64, role: "fabric", prefixes: ["0.0.0.0/0"] });
  }
  const rows: Array<{ sw: SwitchCapture; t: number; seq: number; frame: RoceFrame }> = [];
  let seq = 0;
  const emit = (sw: SwitchCapture, t: number, frame: RoceFrame) => {
    const row = { sw, t: Math.round(t), seq: seq++, frame };
    rows.push(row);
    return row;
  };
  const ser = (bytes: number) => Math.ceil(((bytes + 78) * 8 * 1e9) / o.linkBps);
  const active = <K extends Fault["kind"]>(kind: K, t: number, match?: (f: Extract<Fault, { kind: K }>) => boolean) =>
    o.faults.filter((f): f is Extract<Fault, { kind: K }> => f.kind === kind && t >= f.fromNs && t < f.toNs && (!match || match(f as Extract<Fault, { kind: K }>)));
  const fabric = (t: number) => (single ? 0 : o.fabricDelayNs + Math.floor(rand() * 200) + active("congestion", t).reduce((a, f) => a + f.extraNs, 0));
  const ecnAt = (t: number) => active("congestion", t).some((f) => rand() < f.ecnFraction);
  const abs = (t: number) => o.epochNs + BigInt(Math.round(t));

  // ---- NVMe I/O ---------------------------------------------------------------
  const model: FabricModel = { single, torC, torS, rand, emit, fabric, ser, active, abs };
  const ios = generateNvme(model, o, hostIp, targetIp);
  const PSN_MASK = 0xffffff;
  const nextPsn = (qp: Qp, n = 1) => {
    const p = qp.psn;
    qp.psn = (qp.psn + n) & PSN_MASK;
    return p;
  };

  // ---- Gradient sync: RDMA WRITE ring ----------------------------------------------
  const messages: MessageTruth[] = [];
  let cnps = 0;
  if (o.hosts >= 2) {
    for (let i = 0; i < o.hosts; i++) {
      const src = hostIp(i);
      const dst = hostIp((i + 1) % o.hosts);
      const qp: Qp = { psn: Math.floor(rand() * PSN_MASK), qpn: 0x2000 + i, busyUntil: 0 };
      const senderQpn = 0x3000 + i;
      let t = Math.round(rand() * 1e6);
      let prevEnd: number | null = null;
      while (t < o.durationNs - 50e6) {
        const n = Math.ceil(o.gradientBytes / o.mtu);
        const psn0 = nextPsn(qp, n);
        const sends: Array<{ k: number; t: number; retx: boolean; ce: boolean }> = [];
        let k = 0;
        let ts = t;
        const lossP = (at: number) => active("loss", at, (f) => f.host === i).reduce((a, f) => Math.max(a, f.probability), 0);
        let guard = 0;
        let highest = -1;
        while (k < n && guard++ < 100_000) {
          // Send from k until the end or until a NAK stops us.
          let lostAt = -1;
          let nakAt = Infinity;
          for (let m = k; m < n; m++) {
            if (ts >= nakAt) break;
            const ce = ecnAt(ts);
            sends.push({ k: m, t: ts, retx: m <= highest, ce });
            highest = Math.max(highest, m);
            if (lostAt < 0 && rand() < lossP(ts)) {
              lostAt = m;
              // The receiver NAKs on the next packet; a lost last packet waits for the timeout.
              nakAt = m === n - 1 ? ts + 100_000 : ts + ser(o.mtu) + 2 * o.fabricDelayNs + 2_000;
            }
            ts += ser(o.mtu);
          }
          if (lostAt < 0) {
            k = n;
          } else {
            ts = Math.max(ts, nakAt);
            k = lostAt;
          }
        }
        const firstLast = sends.findIndex((s) => s.k === n - 1);
        const inMsg = sends.slice(0, firstLast + 1);
        const late = sends.slice(firstLast + 1);
        for (const s of sends) {
          const opcode = n === 1 ? Opcode.WRITE_ONLY : s.k === 0 ? Opcode.WRITE_FIRST : s.k === n - 1 ? Opcode.WRITE_LAST : Opcode.WRITE_MIDDLE;
          const len = Math.min(o.mtu, o.gradientBytes - s.k * o.mtu);
          const fr: RoceFrame = { src, dst, opcode, destQp: qp.qpn, psn: (psn0 + s.k) & PSN_MASK, ecn: s.ce ? 3 : 2, payloadLength: len };
          if (s.k === 0) fr.reth = { va: 0x7f0000000000n + BigInt(i) * 0x100000000n, rkey: 0x5000 + i, length: o.gradientBytes };
          emit(torC, s.t, fr);
          if (s.ce) {
            // The receiver answers a CE mark with a CNP to the sender's QP.
            emit(torC, s.t + 4_000, { src: dst, dst: src, opcode: Opcode.CNP, destQp: senderQpn, psn: 0, payload: Buffer.alloc(16) });
            cnps++;
          }
        }
        const first = inMsg[0]!;
        const last = inMsg[inMsg.length - 1]!;
        const fct = Math.round(last.t) - Math.round(first.t);
        const retx = inMsg.filter((s) => s.retx).length;
        messages.push({
          switch: torC.name, src: ipv4Text(src), dst: ipv4Text(dst), dest_qp: qp.qpn,
          first_psn: psn0, last_psn: (psn0 + n - 1) & PSN_MASK, bytes: o.gradientBytes,
          packets: inMsg.length, retransmitted: retx, fct_ns: fct,
          fet_bps: fct > 0 ? (o.gradientBytes * 8 * 1e9) / fct : null,
          fnr: retx / inMsg.length,
          ecn_ce: inMsg.filter((s) => s.ce).length,
          gap_ns: prevEnd === null ? null : Math.round(first.t) - Math.round(prevEnd),
          firstNs: abs(first.t),
          late_retransmitted: late.length,
        });
        prevEnd = last.t;
        const end = sends[sends.length - 1]!.t;
        const idle = active("gpu-idle", end, (f) => f.host === i).reduce((a, f) => a + f.extraNs, 0);
        t = end + ser(o.mtu) + Math.round(o.gradientGapNs * (0.8 + 0.4 * rand())) + idle;
      }
    }
  }

  rows.sort((a, b) => a.t - b.t || a.seq - b.seq);
  const frames = new Map<RoceFrame, { data: Buffer; wireLength: number }>();
  for (const r of rows) {
    let built = frames.get(r.frame);
    if (!built) {
      built = buildFrame(r.frame, o.snaplen);
      frames.set(r.frame, built);
    }
    r.sw.packets.push({ timestampNs: abs(r.t), data: built.data, originalLength: built.wireLength });
  }
  const cmdAt = (t: IoTruth) => t.cmdCNs ?? t.cmdSNs ?? 0n;
  ios.sort((a, b) => (cmdAt(a) < cmdAt(b) ? -1 : cmdAt(a) > cmdAt(b) ? 1 : 0));
  messages.sort((a, b) => (a.firstNs < b.firstNs ? -1 : a.firstNs > b.firstNs ? 1 : 0));
  return { options: o, switches: single ? [torC] : [torC, torS], ios, messages, cnps };
}

/** Writes each switch's capture (snap length 128) and topology, and the ground truth, into `dir`. */
export function writeTraffic(dir: string, traffic: GeneratedTraffic): void {
  mkdirSync(dir, { recursive: true });
  for (const sw of traffic.switches) {
    writePcap(join(dir, `${sw.name}.pcap`), sw.packets, 128);
    writeFileSync(join(dir, `${sw.name}.topology.json`), JSON.stringify(sw.topology, null, 2) + "\n");
  }
  const truth = { ios: traffic.ios, messages: traffic.messages };
  writeFileSync(join(dir, "ground-truth.json"), JSON.stringify(truth, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) + "\n");
}
