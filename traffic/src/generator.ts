// Seeded RoCEv2 traffic with its own ground truth (SPEC §3-§4).
//
// The simulated fabric: compute hosts behind a compute-side ToR ("tor-c"),
// NVMe targets behind a storage-side ToR ("tor-s"), joined by a fabric link
// with a one-way delay. Each packet gets the time it enters each ToR it
// crosses; each ToR's packets form one capture. With `layout: "single"` one
// switch has both the hosts and the targets.
//
// Traffic: NVMe reads and writes over several queue pairs per host, and
// gradient-sync RDMA WRITE messages in a ring between hosts, with optional
// faults (slow target, fabric congestion, slow host, GPU idle, lossy flow).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { writePcap } from "./pcap.js";
import { buildFrame, ipv4, ipv4Text, nvmeCqe, nvmeSqe, Opcode, type RoceFrame } from "./roce.js";

export type Fault =
  | { kind: "slow-target"; target: number; fromNs: number; toNs: number; extraNs: number }
  | { kind: "congestion"; fromNs: number; toNs: number; extraNs: number; ecnFraction: number }
  | { kind: "slow-host"; host: number; fromNs: number; toNs: number; extraNs: number }
  | { kind: "gpu-idle"; host: number; fromNs: number; toNs: number; extraNs: number }
  | { kind: "loss"; host: number; fromNs: number; toNs: number; probability: number };

export interface GeneratorOptions {
  seed: number;
  /** simulated time span */
  durationNs: number;
  /** capture clock at simulated time 0, ns since the epoch */
  epochNs: bigint;
  layout: "two-tor" | "single";
  hosts: number;
  targets: number;
  queuesPerHost: number;
  /** NVMe I/Os per second per host */
  ioRate: number;
  ioSizes: readonly number[];
  readFraction: number;
  /** gradient-sync message size and count per ring step */
  gradientBytes: number;
  gradientGapNs: number;
  mtu: number;
  /** link speed in bit/s (serialization of each packet) */
  linkBps: number;
  fabricDelayNs: number;
  mediaReadNs: number;
  mediaWriteNs: number;
  targetPrepNs: number;
  hostPrepNs: number;
  faults: readonly Fault[];
  /** bytes of each packet kept in the captures (the rest is counted, not stored) */
  snaplen: number;
}

export const DEFAULT_GENERATOR_OPTIONS: GeneratorOptions = {
  seed: 1,
  durationNs: 2_000_000_000,
  epochNs: 1_800_000_000_000_000_000n,
  layout: "two-tor",
  hosts: 4,
  targets: 2,
  queuesPerHost: 2,
  ioRate: 2000,
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

export interface PortSpec {
  port: number;
  role: "compute" | "storage" | "fabric";
  prefixes: string[];
}

export interface Topology {
  ports: PortSpec[];
}

export interface SwitchCapture {
  name: string;
  topology: Topology;
  packets: Array<{ timestampNs: bigint; data: Buffer; originalLength: number }>;
}

export interface IoTruth {
  host: string;
  target: string;
  cid: number;
  op: "read" | "write";
  bytes: number;
  status: number;
  /** ingress times at the compute-side / storage-side switch (ns since epoch) */
  cmdCNs: bigint;
  cmdSNs: bigint;
  e2e_c_ns: number;
  e2e_s_ns: number;
  rtt_ns: number;
  dal_ns: number;
  dpl_ns: number | null;
}

export interface MessageTruth {
  switch: string;
  src: string;
  dst: string;
  dest_qp: number;
  first_psn: number;
  last_psn: number;
  bytes: number;
  packets: number;
  retransmitted: number;
  fct_ns: number;
  fet_bps: number | null;
  fnr: number;
  ecn_ce: number;
  /** ns since the flow's previous message ended; null for its first */
  gap_ns: number | null;
  firstNs: bigint;
  /** retransmissions of this message sent after its last PSN was first seen */
  late_retransmitted: number;
}

export interface GeneratedTraffic {
  options: GeneratorOptions;
  switches: SwitchCapture[];
  ios: IoTruth[];
  messages: MessageTruth[];
  cnps: number;
}

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

const PSN_MASK = 0xffffff;

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
  const emit = (sw: SwitchCapture, t: number, frame: RoceFrame) => rows.push({ sw, t: Math.round(t), seq: seq++, frame });
  const ser = (bytes: number) => Math.ceil(((bytes + 78) * 8 * 1e9) / o.linkBps);
  const active = <K extends Fault["kind"]>(kind: K, t: number, match?: (f: Extract<Fault, { kind: K }>) => boolean) =>
    o.faults.filter((f): f is Extract<Fault, { kind: K }> => f.kind === kind && t >= f.fromNs && t < f.toNs && (!match || match(f as Extract<Fault, { kind: K }>)));
  const fabric = (t: number) => (single ? 0 : o.fabricDelayNs + Math.floor(rand() * 200) + active("congestion", t).reduce((a, f) => a + f.extraNs, 0));
  const ecnAt = (t: number) => active("congestion", t).some((f) => rand() < f.ecnFraction);
  const abs = (t: number) => o.epochNs + BigInt(Math.round(t));

  // ---- NVMe I/O ---------------------------------------------------------------
  const ios: IoTruth[] = [];
  const hostQps: Qp[][] = [];
  const targetQps: Qp[][] = [];
  for (let i = 0; i < o.hosts; i++) {
    hostQps.push([]);
    targetQps.push([]);
    for (let q = 0; q < o.queuesPerHost; q++) {
      hostQps[i]!.push({ psn: Math.floor(rand() * PSN_MASK), qpn: 0x100 + i * 16 + q, busyUntil: 0 });
      targetQps[i]!.push({ psn: Math.floor(rand() * PSN_MASK), qpn: 0x800 + i * 16 + q, busyUntil: 0 });
    }
  }
  const nextPsn = (qp: Qp, n = 1) => {
    const p = qp.psn;
    qp.psn = (qp.psn + n) & PSN_MASK;
    return p;
  };
  let cidCounter = 0;
  for (let i = 0; i < o.hosts; i++) {
    let t = Math.round(rand() * 1e6);
    const interval = 1e9 / o.ioRate;
    while (t < o.durationNs - 50e6) {
      t += Math.round(interval * (0.5 + rand()));
      const q = Math.floor(rand() * o.queuesPerHost);
      const j = Math.floor(rand() * o.targets);
      const hq = hostQps[i]![q]!;
      const tq = targetQps[i]![q]!;
      const host = hostIp(i);
      const target = targetIp(j);
      const op = rand() < o.readFraction ? "read" : "write";
      const bytes = o.ioSizes[Math.floor(rand() * o.ioSizes.length)]!;
      const cid = cidCounter++ & 0xffff;
      const rkey = Math.floor(rand() * 0xffffffff) >>> 0;
      const va = BigInt(Math.floor(rand() * 2 ** 40)) << 12n;
      const npk = Math.max(1, Math.ceil(bytes / o.mtu));
      // Command capsule: host -> target, through C then S.
      const cmdC = Math.max(t, hq.busyUntil);
      hq.busyUntil = cmdC + ser(64);
      const cmdS = cmdC + fabric(cmdC);
      const capsule: RoceFrame = { src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: tq.qpn, psn: nextPsn(hq), ackReq: true, payload: nvmeSqe(op, cid, 1, va, bytes, rkey) };
      emit(torC, cmdC, capsule);
      if (!single) emit(torS, cmdS, capsule);
      const slowTarget = active("slow-target", cmdS, (f) => f.target === j).reduce((a, f) => a + f.extraNs, 0);
      let rspS: number;
      let truthDal: number;
      let truthDpl: number | null = null;
      if (op === "read") {
        const media = o.mediaReadNs + Math.floor(rand() * 5_000) + slowTarget;
        let ts = Math.max(cmdS + media, tq.busyUntil);
        const dFirstS = ts;
        const psn0 = nextPsn(tq, npk);
        let dLastS = ts;
        for (let k = 0; k < npk; k++) {
          const len = Math.min(o.mtu, bytes - k * o.mtu);
          const opcode = npk === 1 ? Opcode.WRITE_ONLY : k === 0 ? Opcode.WRITE_FIRST : k === npk - 1 ? Opcode.WRITE_LAST : Opcode.WRITE_MIDDLE;
          const fr: RoceFrame = { src: target, dst: host, opcode, destQp: hq.qpn, psn: (psn0 + k) & PSN_MASK, payloadLength: len };
          if (k === 0) fr.reth = { va, rkey, length: bytes };
          dLastS = ts;
          emit(torS, ts, fr);
          if (!single) emit(torC, ts + fabric(ts), fr);
          ts += ser(len);
        }
        const respond = 1_000 + Math.floor(rand() * 2_000);
        rspS = dLastS + respond;
        tq.busyUntil = rspS + ser(16);
        truthDal = dFirstS - cmdS + (rspS - dLastS);
        // The host acknowledges the data.
        const ackC = dLastS + fabric(dLastS) + 500;
        const ack: RoceFrame = { src: host, dst: target, opcode: Opcode.ACK, destQp: tq.qpn, psn: (psn0 + npk - 1) & PSN_MASK, aeth: { syndrome: 0, msn: cid } };
        emit(torC, ackC, ack);
        if (!single) emit(torS, ackC + fabric(ackC), ack);
      } else {
        const prep = o.targetPrepNs + Math.floor(rand() * 2_000) + slowTarget;
        const rreqS = Math.max(cmdS + prep, tq.busyUntil);
        tq.busyUntil = rreqS + ser(16);
        const reqPsn = nextPsn(tq, npk);
        const rreq: RoceFrame = { src: target, dst: host, opcode: Opcode.READ_REQUEST, destQp: hq.qpn, psn: reqPsn, ackReq: true, reth: { va, rkey, length: bytes } };
        emit(torS, rreqS, rreq);
        const rreqC = rreqS + fabric(rreqS);
        if (!single) emit(torC, rreqC, rreq);
        const slowHost = active("slow-host", rreqC, (f) => f.host === i).reduce((a, f) => a + f.extraNs, 0);
        const hostPrep = o.hostPrepNs + Math.floor(rand() * 1_000) + slowHost;
        let tc = Math.max(rreqC + hostPrep, hq.busyUntil);
        const rrFirstC = tc;
        let rrLastS = 0;
        for (let k = 0; k < npk; k++) {
          const len = Math.min(o.mtu, bytes - k * o.mtu);
          const opcode = npk === 1 ? Opcode.READ_RESPONSE_ONLY : k === 0 ? Opcode.READ_RESPONSE_FIRST : k === npk - 1 ? Opcode.READ_RESPONSE_LAST : Opcode.READ_RESPONSE_MIDDLE;
          const fr: RoceFrame = { src: host, dst: target, opcode, destQp: tq.qpn, psn: (reqPsn + k) & PSN_MASK, payloadLength: len };
          if (opcode !== Opcode.READ_RESPONSE_MIDDLE) fr.aeth = { syndrome: 0, msn: cid };
          emit(torC, tc, fr);
          const s = tc + fabric(tc);
          if (!single) emit(torS, s, fr);
          rrLastS = single ? tc : s;
          tc += ser(len);
        }
        hq.busyUntil = tc;
        const media = o.mediaWriteNs + Math.floor(rand() * 5_000) + slowTarget;
        rspS = Math.max(rrLastS + media, tq.busyUntil);
        tq.busyUntil = rspS + ser(16);
        truthDal = rreqS - cmdS + (rspS - rrLastS);
        truthDpl = rrFirstC - rreqC;
      }
      const rsp: RoceFrame = { src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: hq.qpn, psn: nextPsn(tq), payload: nvmeCqe(cid, q + 1, cid & 0x3f, 0) };
      emit(torS, rspS, rsp);
      const rspC = rspS + fabric(rspS);
      if (!single) emit(torC, rspC, rsp);
      const e2eC = Math.round(single ? rspS : rspC) - Math.round(cmdC);
      const e2eS = Math.round(rspS) - Math.round(single ? cmdC : cmdS);
      ios.push({
        host: ipv4Text(host), target: ipv4Text(target), cid, op, bytes, status: 0,
        cmdCNs: abs(cmdC), cmdSNs: abs(single ? cmdC : cmdS),
        e2e_c_ns: e2eC, e2e_s_ns: e2eS, rtt_ns: e2eC - e2eS,
        dal_ns: Math.round(truthDal), dpl_ns: truthDpl === null ? null : Math.round(truthDpl),
      });
    }
  }

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
  ios.sort((a, b) => (a.cmdCNs < b.cmdCNs ? -1 : a.cmdCNs > b.cmdCNs ? 1 : 0));
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
