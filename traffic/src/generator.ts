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
import { closeSync, mkdirSync, openSync, readSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { WriteFlow } from "./gradient-workload.js";
import { Heap } from "./heap.js";
import { createNvmeQueues, type FabricModel, type Source } from "./nvme-workload.js";
import type { Fault, GeneratedTraffic, GeneratorOptions, IoTruth, MessageTruth, SwitchCapture } from "./types.js";

export type { Fault, GeneratedTraffic, GeneratorOptions, IoTruth, MessageTruth, SwitchCapture, Topology } from "./types.js";
import { PcapWriter, writePcap } from "./pcap.js";
import { ipv4 } from "@rdma-telemetry/contract";
import { ipText, ipv6, type IpAddress } from "./ip.js";
import { buildFrame, ibMtuCode, Opcode, parseRoce, type RoceFrame } from "./roce.js";
import { WriteError } from "./errors.js";

/**
 * Captures keep whole packets by default, so that Wireshark decodes every
 * NVMe capsule and RDMA CM exchange in them (it hands a payload on only when
 * all of it was captured); MIN_SNAPLEN keeps every header the switch reads,
 * whatever the family: its deepest is an RDMA CM REQ over IPv6 with a VLAN
 * tag, Ethernet 14 + 802.1Q 4 + IPv6 40 + UDP 8 + BTH 12 + DETH 8 + MAD 24 +
 * the REQ's 36 bytes up to its QPN = 146 (over IPv4, 126).
 */
export const DEFAULT_SNAPLEN = 65_535;
export const MIN_SNAPLEN = 146;

export const DEFAULT_GENERATOR_OPTIONS: GeneratorOptions = {
  seed: 1,
  durationNs: 2_000_000_000,
  epochNs: 1_800_000_000_000_000_000n,
  layout: "two-tor",
  hosts: 4,
  targets: 2,
  computeTors: 1,
  storageTors: 1,
  queuesPerHost: 4,
  queueDepth: 32,
  ioRate: 2000,
  burstMax: 12,
  inlineDataBytes: 4096,
  responseLoss: 0.002,
  errorRate: 0.003,
  connectDuringCapture: 0.5,
  jobTurnover: 0,
  ioSizes: [4096, 16384, 65536],
  rdmaOpMaxBytes: 30 * 4096,
  readFraction: 0.7,
  flushShare: 0.02,
  gradientBytes: 256 << 10,
  gradientGapNs: 4_000_000,
  gradientChannels: 1,
  mtu: 4096,
  linkBps: 100e9,
  fabricDelayNs: 3_000,
  mediaReadNs: 60_000,
  mediaWriteNs: 20_000,
  targetPrepNs: 4_000,
  hostPrepNs: 3_000,
  faults: [],
  snaplen: DEFAULT_SNAPLEN,
  ip: 4,
  reorderShare: 0,
  reorderMaxDisplacement: 6,
  storageReorderShare: 0,
  storageReorderMaxDisplacement: 6,
  reorderLoss: 0,
};

/**
 * Where the generator puts hosts and targets. IPv4: hosts 10.0.1.N, targets
 * 10.0.2.N (one switch: 10.0.1.101 on). IPv6, in the documentation prefix:
 * the endpoint of 10.0.S.N is 2001:db8:0:S::N, N in hex (hosts
 * 2001:db8:0:1::1 on, targets 2001:db8:0:2::1 on, or 2001:db8:0:1::65 on one
 * switch). "mixed": hosts alternate (even-numbered IPv4, odd-numbered IPv6)
 * and targets have both addresses.
 */
export function addressPlan(o: Pick<GeneratorOptions, "ip" | "layout">): { host: (i: number) => IpAddress; target: (j: number, family: 4 | 6) => IpAddress; hostFamily: (i: number) => 4 | 6 } {
  const single = o.layout === "single";
  const hostFamily = (i: number): 4 | 6 => (o.ip === 6 || (o.ip === "mixed" && i % 2 === 1) ? 6 : 4);
  const v4Host = (i: number) => ipv4(`10.0.1.${i + 1}`);
  const v4Target = (j: number) => ipv4(single ? `10.0.1.${101 + j}` : `10.0.2.${j + 1}`);
  const v6Host = (i: number) => ipv6(`2001:db8:0:1::${(i + 1).toString(16)}`);
  const v6Target = (j: number) => (single ? ipv6(`2001:db8:0:1::${(101 + j).toString(16)}`) : ipv6(`2001:db8:0:2::${(j + 1).toString(16)}`));
  return {
    hostFamily,
    host: (i) => (hostFamily(i) === 6 ? v6Host(i) : v4Host(i)),
    target: (j, family) => (family === 6 ? v6Target(j) : v4Target(j)),
  };
}

/**
 * The generator's options for a share of the default load: `load` scales the
 * NVMe I/O rate and the gradient-sync message rate together (1 is the default
 * fabric, 0.25 a quarter of its traffic), so that a long run costs less.
 */
export function loadOptions(load: number): Pick<GeneratorOptions, "ioRate" | "gradientGapNs"> {
  if (!(load > 0 && load <= 10)) throw new RangeError(`load must be in (0, 10] (got ${load})`);
  return {
    ioRate: DEFAULT_GENERATOR_OPTIONS.ioRate * load,
    gradientGapNs: Math.round(DEFAULT_GENERATOR_OPTIONS.gradientGapNs / load),
  };
}

/** A seeded random sequence that can set numbers aside for later: `fork` continues from here, `skip` jumps past what it takes. */
interface Random {
  (): number;
  fork(): Random;
  skip(n: number): void;
}

const MULBERRY_STEP = 0x6d2b79f5;

/** mulberry32: small, fast, seeded; its state moves by a constant step per number, so skipping n is one multiplication. */
function rng(seed: number): Random {
  let a = seed >>> 0;
  const next = (() => {
    a = (a + MULBERRY_STEP) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }) as Random;
  next.fork = () => rng(a);
  next.skip = (n) => {
    a = (a + Math.imul(n, MULBERRY_STEP)) >>> 0;
  };
  return next;
}

/** What the generator produces, in capture-time order. */
export type TrafficItem =
  | { kind: "packet"; sw: SwitchCapture; timestampNs: bigint; data: Buffer; originalLength: number }
  | { kind: "io"; truth: IoTruth }
  | { kind: "message"; truth: MessageTruth };

/** The traffic source's switches and topologies (their `packets` stay empty: packets are streamed). */
export interface TrafficLayout {
  options: GeneratorOptions;
  switches: SwitchCapture[];
}

interface Row {
  sw: SwitchCapture;
  t: number;
  seq: number;
  frame: RoceFrame;
}

/**
 * The traffic, generated as it goes: every NVMe queue and every gradient
 * flow is an event source; the loop runs the earliest event of all, and a
 * packet leaves once no event still to run can put one before it (each
 * event only sends at or after its own time). Memory holds what is in
 * flight, whatever the length of the run.
 */
export function streamTraffic(opts: Partial<GeneratorOptions> = {}): TrafficLayout & Iterable<TrafficItem> {
  const o: GeneratorOptions = { ...DEFAULT_GENERATOR_OPTIONS, ...opts };
  ibMtuCode(o.mtu); // one of the IB MTUs, or a RangeError naming it
  const single = o.layout === "single";
  const plan = addressPlan(o);
  const hostIp = plan.host;
  const targetIp = plan.target;
  // The families a target answers in: its hosts'.
  const targetFamilies: Array<4 | 6> = o.ip === "mixed" ? [4, 6] : [o.ip];
  const hostPrefix = (a: IpAddress) => `${ipText(a)}/${typeof a === "bigint" ? 128 : 32}`;
  const anyPrefix = targetFamilies.map((f) => (f === 6 ? "::/0" : "0.0.0.0/0"));
  const torCount = (n: number, of: number, what: string) => {
    if (!Number.isInteger(n) || n < 1 || n > of) throw new RangeError(`${what} must be a whole number from 1 to ${of} (got ${n})`);
    if (single && n > 1) throw new RangeError(`${what} needs the two-tor layout`);
    return n;
  };
  const nC = torCount(o.computeTors, o.hosts, "compute ToRs");
  const nS = torCount(o.storageTors, o.targets, "storage ToRs");
  const tor = (name: string): SwitchCapture => ({ name, topology: { ports: [] }, packets: [] });
  const torsC = nC === 1 ? [tor(single ? "tor" : "tor-c")] : Array.from({ length: nC }, (_, k) => tor(`tor-c${k + 1}`));
  const torsS = single ? torsC : nS === 1 ? [tor("tor-s")] : Array.from({ length: nS }, (_, k) => tor(`tor-s${k + 1}`));
  const torOfHost = (i: number) => torsC[i % nC]!;
  const torOfTarget = (j: number) => torsS[j % nS]!;
  const torC = torsC[0]!;
  const torS = torsS[0]!;
  // Hosts on ports 1..; targets from 33 and the uplink on 64 while they fit, after the hosts beyond (the fabric's
  // numbering on every ToR: a host or target keeps its port whichever ToR it is under).
  const small = o.hosts <= 32 && o.targets <= 31;
  const storagePort = (j: number) => (small ? 33 + j : o.hosts + 1 + j);
  const fabricPort = small ? 64 : o.hosts + o.targets + 1;
  for (let i = 0; i < o.hosts; i++) torOfHost(i).topology.ports.push({ port: i + 1, role: "compute", prefixes: [hostPrefix(hostIp(i))] });
  for (let j = 0; j < o.targets; j++) torOfTarget(j).topology.ports.push({ port: storagePort(j), role: "storage", prefixes: targetFamilies.map((f) => hostPrefix(targetIp(j, f))) });
  if (!single) for (const t of [...torsC, ...torsS]) t.topology.ports.push({ port: fabricPort, role: "fabric", prefixes: [...anyPrefix] });
  const switches = single ? [torC] : [...torsC, ...torsS];

  function* items(): Generator<TrafficItem> {
    const rows = new Heap<Row>((x, y) => x.t < y.t || (x.t === y.t && x.seq < y.seq));
    let seq = 0;
    const ser = (bytes: number) => Math.ceil(((bytes + 78) * 8 * 1e9) / o.linkBps);
    const active = <K extends Fault["kind"]>(kind: K, t: number, match?: (f: Extract<Fault, { kind: K }>) => boolean) =>
      o.faults.filter((f): f is Extract<Fault, { kind: K }> => f.kind === kind && t >= f.fromNs && t < f.toNs && (!match || match(f as Extract<Fault, { kind: K }>)));
    const abs = (t: number) => o.epochNs + BigInt(Math.round(t));
    /** The fabric as seen by a source drawing from `rand` and placing its packets with `place` (the next sequence number). */
    const fabricModel = (rand: Random, place: () => number): FabricModel => ({
      single, torC, torS, torOfHost, torOfTarget, rand, ser, active, abs,
      emit: (sw, t, frame) => {
        const row = { sw, t: Math.round(t), seq: place(), frame };
        rows.push(row);
        return row;
      },
      fabric: (t) => (single ? 0 : o.fabricDelayNs + Math.floor(rand() * 200) + active("congestion", t).reduce((a, f) => a + f.extraNs, 0)),
      ahead: (draws, emits) => {
        // The numbers and packet places are the ones the work would take now; the shared sequence goes on past them.
        const r = rand.fork();
        rand.skip(draws);
        let next = seq;
        const end = (seq += emits);
        return fabricModel(r, () => {
          if (next >= end) throw new Error("generator: a deferred source sent more packets than it set aside");
          return next++;
        });
      },
    });
    const model = fabricModel(rng(o.seed), () => seq++);

    const { queues, keepAlives } = createNvmeQueues(model, o, hostIp, targetIp);
    const messages: MessageTruth[] = [];
    // Gradient sync: a ring through the hosts of each compute ToR (one ring per family when they are mixed), each host
    // writing to the next; a ring's messages cross its ToR only.
    const rings: Array<{ tor: SwitchCapture; hosts: number[] }> = [];
    for (const t of torsC) {
      const under = Array.from({ length: o.hosts }, (_, i) => i).filter((i) => torOfHost(i) === t);
      for (const r of o.ip === "mixed" ? [0, 1] : [undefined]) rings.push({ tor: t, hosts: r === undefined ? under : under.filter((i) => i % 2 === r) });
    }
    const flows: WriteFlow[] = [];
    for (const { tor: t, hosts: ring } of rings) {
      if (ring.length < 2) continue;
      const m = t === torC ? model : { ...model, torC: t };
      for (let c = 0; c < o.gradientChannels; c++) {
        ring.forEach((i, at) => flows.push(new WriteFlow(m, o, i, hostIp(i), hostIp(ring[(at + 1) % ring.length]!), (x) => messages.push(x), c)));
      }
    }
    const sources = new Heap<{ s: Source; t: number }>((x, y) => x.t < y.t);
    for (const s of [...queues, ...flows] as Source[]) {
      const t = s.nextTime();
      if (t !== undefined) sources.push({ s, t });
    }
    // A frame crossing both ToRs is built once.
    const built = new WeakMap<RoceFrame, { data: Buffer; wireLength: number }>();
    // Each capture's last packet so far: where its switch was last observed (the I/O truths at the end need it).
    const lastT = new Map<SwitchCapture, number>();
    const seenUntil = (sw: SwitchCapture) => lastT.get(sw) ?? -Infinity;
    const packet = (r: Row): TrafficItem => {
      lastT.set(r.sw, r.t);
      let b = built.get(r.frame);
      if (!b) built.set(r.frame, (b = buildFrame(r.frame, o.snaplen)));
      return { kind: "packet", sw: r.sw, timestampNs: abs(r.t), data: b.data, originalLength: b.wireLength };
    };
    // Keep-alives draw nothing from the shared sequence (their numbers were set
    // aside): they only need to run before any packet they could precede leaves.
    const deferred = new Heap<{ s: Source; t: number }>((x, y) => x.t < y.t);
    for (const s of keepAlives) {
      const t = s.nextTime();
      if (t !== undefined) deferred.push({ s, t });
    }
    const runDeferred = (before: number) => {
      while (deferred.size && deferred.peek()!.t < before) {
        const d = deferred.pop()!;
        d.s.step();
        const t = d.s.nextTime();
        if (t !== undefined) deferred.push({ s: d.s, t });
      }
    };
    let steps = 0;
    for (let top = sources.pop(); top; top = sources.pop()) {
      const now = top.t;
      top.s.step();
      const t = top.s.nextTime();
      if (t !== undefined) sources.push({ s: top.s, t });
      runDeferred(now);
      // Nothing still to run sends before `now`.
      while (rows.size && rows.peek()!.t < now) yield packet(rows.pop()!);
      for (const m of messages.splice(0)) yield { kind: "message", truth: m };
      if (++steps % 256 === 0) for (const q of queues) for (const truth of q.takeTruths(now, seenUntil)) yield { kind: "io", truth };
    }
    runDeferred(Infinity);
    while (rows.size) yield packet(rows.pop()!);
    for (const m of messages.splice(0)) yield { kind: "message", truth: m };
    for (const q of queues) for (const truth of q.takeTruths(Infinity, seenUntil)) yield { kind: "io", truth };
  }

  return { options: o, switches, [Symbol.iterator]: items };
}

/** The whole traffic in memory: every switch's packets, and the truth of every I/O and message. */
export function generateTraffic(opts: Partial<GeneratorOptions> = {}): GeneratedTraffic {
  const stream = streamTraffic(opts);
  const ios: IoTruth[] = [];
  const messages: MessageTruth[] = [];
  for (const item of stream) {
    if (item.kind === "packet") item.sw.packets.push({ timestampNs: item.timestampNs, data: item.data, originalLength: item.originalLength });
    else if (item.kind === "io") ios.push(item.truth);
    else messages.push(item.truth);
  }
  const cmdAt = (t: IoTruth) => t.cmdCNs ?? t.cmdSNs ?? 0n;
  ios.sort((a, b) => (cmdAt(a) < cmdAt(b) ? -1 : cmdAt(a) > cmdAt(b) ? 1 : 0));
  messages.sort((a, b) => (a.firstNs < b.firstNs ? -1 : a.firstNs > b.firstNs ? 1 : 0));
  const cnps = stream.switches[0]!.packets.filter((p) => parseRoce(p.data)?.opcode === Opcode.CNP).length;
  return { options: stream.options, switches: stream.switches, ios, messages, cnps };
}

/** The ground truth file: one JSON object a line, `{"type": "io" | "message", ...}` in the order the generator settled them. */
export const TRUTH_FILE = "ground-truth.jsonl";

const truthLine = (type: "io" | "message", t: IoTruth | MessageTruth) =>
  JSON.stringify({ type, ...t }, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) + "\n";

/** Appends lines to a file in blocks. */
class LineWriter {
  private readonly fd: number;
  private parts: string[] = [];
  private size = 0;
  private failed = false;
  constructor(private readonly path: string) {
    this.fd = openSync(path, "w");
  }
  write(line: string): void {
    this.parts.push(line);
    this.size += line.length;
    if (this.size > 1 << 20) this.flush();
  }
  flush(): void {
    const data = Buffer.from(this.parts.join(""));
    this.parts = [];
    this.size = 0;
    if (this.failed) return;
    try {
      for (let off = 0; off < data.length;) off += writeSync(this.fd, data, off, data.length - off);
    } catch (err) {
      this.failed = true;
      throw new WriteError(`cannot write ${this.path}: ${(err as Error).message}; it keeps the lines written before`, { cause: err });
    }
  }
  close(): void {
    try {
      this.flush();
    } finally {
      closeSync(this.fd);
    }
  }
}

export interface WrittenTraffic {
  switches: Array<{ name: string; packets: number; capture: string; topology: string }>;
  ios: number;
  messages: number;
}

/**
 * Generates the traffic straight into `dir`: each switch's capture (snap
 * length 128) and topology, and the ground truth (ground-truth.jsonl), in
 * memory bounded by what is in flight, whatever the duration.
 */
export function writeTrafficStream(dir: string, opts: Partial<GeneratorOptions> = {}, onProgress?: (simulatedNs: number) => void): WrittenTraffic {
  const steps = writeSteps(dir, opts, onProgress);
  for (;;) {
    const s = steps.next();
    if (s.done) return s.value;
  }
}

/**
 * writeTrafficStream that gives the event loop a turn every `sliceMs` of
 * generation, so that a process serving requests meanwhile (/metrics, the
 * control socket) keeps answering.
 */
export function writeTrafficStreamAsync(dir: string, opts: Partial<GeneratorOptions> = {}, onProgress?: (simulatedNs: number) => void, sliceMs = 10): Promise<WrittenTraffic> {
  return runInSlices(writeSteps(dir, opts, onProgress), sliceMs);
}

/** Runs a generator of steps to its end, giving the event loop a turn every `sliceMs` of work. */
export async function runInSlices<T>(steps: Generator<void, T>, sliceMs = 10): Promise<T> {
  let since = performance.now();
  for (;;) {
    const s = steps.next();
    if (s.done) return s.value;
    if (performance.now() - since >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    }
  }
}

/** The writing of writeTrafficStream, pausing (yield) every 256 items. */
function* writeSteps(dir: string, opts: Partial<GeneratorOptions>, onProgress?: (simulatedNs: number) => void): Generator<void, WrittenTraffic> {
  mkdirSync(dir, { recursive: true });
  const stream = streamTraffic(opts);
  const writers = new Map(stream.switches.map((sw) => [sw, new PcapWriter(join(dir, `${sw.name}.pcap`), { snaplen: stream.options.snaplen })]));
  for (const sw of stream.switches) writeFileSync(join(dir, `${sw.name}.topology.json`), JSON.stringify(sw.topology, null, 2) + "\n");
  const truth = new LineWriter(join(dir, TRUTH_FILE));
  let ios = 0;
  let messages = 0;
  let n = 0;
  // A write that fails (a full disk) ends the run; every file is closed with what it holds, and the first failure is thrown.
  let failure: unknown;
  let items = 0;
  try {
    for (const item of stream) {
      if (item.kind === "packet") {
        writers.get(item.sw)!.write(item);
        if (onProgress && (++n & 0xffff) === 0) onProgress(Number(item.timestampNs - stream.options.epochNs));
      } else if (item.kind === "io") {
        truth.write(truthLine("io", item.truth));
        ios++;
      } else {
        truth.write(truthLine("message", item.truth));
        messages++;
      }
      if ((++items & 0xff) === 0) yield;
    }
  } catch (err) {
    failure = err;
  }
  for (const w of [...writers.values(), truth]) {
    try {
      w.close();
    } catch (err) {
      failure ??= err;
    }
  }
  if (failure) throw failure;
  return {
    switches: stream.switches.map((sw) => ({ name: sw.name, packets: writers.get(sw)!.packets, capture: join(dir, `${sw.name}.pcap`), topology: join(dir, `${sw.name}.topology.json`) })),
    ios,
    messages,
  };
}

/** Writes in-memory traffic the way writeTrafficStream does: captures, topologies, ground-truth.jsonl. */
export function writeTraffic(dir: string, traffic: GeneratedTraffic): void {
  mkdirSync(dir, { recursive: true });
  for (const sw of traffic.switches) {
    writePcap(join(dir, `${sw.name}.pcap`), sw.packets, traffic.options.snaplen);
    writeFileSync(join(dir, `${sw.name}.topology.json`), JSON.stringify(sw.topology, null, 2) + "\n");
  }
  const truth = new LineWriter(join(dir, TRUTH_FILE));
  for (const t of traffic.ios) truth.write(truthLine("io", t));
  for (const t of traffic.messages) truth.write(truthLine("message", t));
  truth.close();
}

/** Reads a ground-truth.jsonl back, line by line (bigints restored), without holding the file. */
export function* readTruth(path: string): Generator<{ type: "io"; truth: IoTruth } | { type: "message"; truth: MessageTruth }> {
  const fd = openSync(path, "r");
  const buf = Buffer.alloc(1 << 20);
  let rest = "";
  const big = (v: unknown) => (v === null || v === undefined ? null : BigInt(v as string));
  const parse = (line: string) => {
    const o = JSON.parse(line) as Record<string, unknown> & { type: "io" | "message" };
    const { type, ...t } = o;
    if (type === "io") {
      const io = t as unknown as IoTruth;
      return { type, truth: { ...io, cmdCNs: big(io.cmdCNs), cmdSNs: big(io.cmdSNs), cmd_unix_ns: big(io.cmd_unix_ns) } } as const;
    }
    const m = t as unknown as MessageTruth;
    return { type, truth: { ...m, firstNs: BigInt(m.firstNs as unknown as string) } } as const;
  };
  try {
    for (let got = readSync(fd, buf); got > 0; got = readSync(fd, buf)) {
      const lines = (rest + buf.toString("utf8", 0, got)).split("\n");
      rest = lines.pop()!;
      for (const line of lines) if (line) yield parse(line);
    }
    if (rest) yield parse(rest);
  } finally {
    closeSync(fd);
  }
}
