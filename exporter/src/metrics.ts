// Turns decoded digests into records (SPEC §3-§6): per-I/O records with RTT
// from correlating the compute-side and storage-side halves of an I/O, per-
// message records, and per-interval aggregates. Time comes from the digests
// (switch clocks mapped to the wall clock), so a replay is deterministic.
import { ipv4Text } from "@rdma-telemetry/contract";
import {
  IO_EVENT_CMD,
  IO_EVENT_UNPAIRED_RSP,
  IO_FLAG_DATA_SEEN,
  IO_FLAG_IN_CAPSULE,
  IO_FLAG_RR_SEEN,
  IO_OP_WRITE,
  MSG_FLAG_GAP_VALID,
  VANTAGE_C,
  VANTAGE_S,
  type IoDigest,
  type MsgDigest,
  type TelemetryDigest,
} from "@rdma-telemetry/contract";
import { modeName, type FlowAggregateJson, type IoAggregateJson, type IoRecordJson, type MessageRecordJson, type RecordJson, type StatsJson, type SwitchStatsJson } from "@rdma-telemetry/contract";
import { SeqTracker } from "./seq-tracker.js";
import { QuantileSketch } from "./sketch.js";

/** The switch counters a switch_stats record carries (read by the controller). */
export interface SwitchCounterFigures {
  untracked_flows: number;
  untracked_ios: number;
  ioref_overwritten: number;
  parser_errors: number;
  unknown_opcodes: number;
  io_replaced: number;
  io_unpaired_responses: number;
  queue_pairs_learned: number;
  cnp_untracked: number;
}

export interface MetricsOptions {
  intervalNs: bigint;
  /** a command with no response within this time is reported incomplete */
  ioTimeoutNs: bigint;
  /** how long the first half of an I/O waits for the other vantage's half */
  correlationWindowNs: bigint;
  /** per-I/O and per-message records, besides the interval aggregates */
  perEventRecords: boolean;
  sketchAccuracy: number;
}

export const DEFAULT_METRICS_OPTIONS: MetricsOptions = {
  intervalNs: 1_000_000_000n,
  ioTimeoutNs: 1_000_000_000n,
  correlationWindowNs: 2_000_000_000n,
  perEventRecords: true,
  sketchAccuracy: 0.005,
};

const TS_BITS = 48n;
const TS_MOD = 1n << TS_BITS;

/**
 * Maps a switch's 48-bit ns clock to the wall clock, unwrapping it. The
 * offset is exact where the owner knows when the switch's clock started (a
 * replayed capture: its first packet); otherwise it is calibrated on the
 * first digest list, whose timestamp is the time of its newest sample.
 */
export class SwitchClock {
  private offset: bigint | undefined;
  /** the newest absolute (unwrapped) time seen */
  private lastAbs: bigint | undefined;

  constructor(private readonly exactStart?: () => bigint | undefined) {}

  calibrate(listTimestampNs: bigint, newestTs: number): void {
    if (this.offset !== undefined) return;
    const exact = this.exactStart?.();
    this.offset = exact ?? listTimestampNs - this.unwrap(newestTs);
  }

  /**
   * The absolute time of a 48-bit sample: of the three candidates around the
   * newest time seen (one wrap before, the same, one wrap after), the nearest,
   * so that a sample arriving out of order across a wrap lands right.
   */
  unwrap(ts: number): bigint {
    const t = BigInt(ts);
    const last = this.lastAbs;
    if (last === undefined) {
      this.lastAbs = t;
      return t;
    }
    const base = last - (last % TS_MOD);
    let best = base + t;
    for (const c of [base - TS_MOD + t, base + TS_MOD + t]) {
      if (c >= 0n && (c > last ? c - last : last - c) < (best > last ? best - last : last - best)) best = c;
    }
    if (best > last) this.lastAbs = best;
    return best;
  }

  toUnix(ts: number): bigint {
    return (this.offset ?? 0n) + this.unwrap(ts);
  }
}

/** One vantage's view of an I/O. */
interface IoHalf {
  switchId: string;
  host: number;
  target: number;
  hostQp: number;
  targetQp: number;
  cid: number;
  cmdPsn: number;
  inCapsule: boolean;
  vantage: number;
  op: "read" | "write";
  bytes: number;
  status: number;
  mode: number;
  e2e: number | null;
  dal: number | null;
  dpl: number | null;
  incomplete: boolean;
  cmdUnixNs: bigint;
  atUnixNs: bigint;
  /** atUnixNs on the engine's common clock (see setClockAlignment) */
  atAlignedNs: bigint;
}

interface Outstanding {
  switchId: string;
  digest: IoDigest;
  cmdUnixNs: bigint;
}

/** A distribution that costs one number until it has two values (most flows send one message an interval). */
class StatsAcc {
  private sketch: QuantileSketch | undefined;
  private first: number | undefined;
  constructor(private readonly accuracy: number) {}
  add(v: number | null): void {
    if (v === null || !Number.isFinite(v)) return;
    if (this.sketch) this.sketch.add(v);
    else if (this.first === undefined) this.first = v;
    else {
      this.sketch = new QuantileSketch(this.accuracy);
      this.sketch.add(this.first);
      this.sketch.add(v);
    }
  }
  json(): StatsJson | null {
    if (this.sketch) return this.sketch.summary() ?? null;
    if (this.first === undefined) return null;
    const v = this.first;
    return { count: 1, min: v, mean: v, p50: v, p99: v, max: v };
  }
}

interface IoAgg {
  switchId: string;
  host: string;
  target: string;
  op: "read" | "write";
  count: number;
  incomplete: number;
  bytes: number;
  errors: number;
  e2eC: StatsAcc;
  e2eS: StatsAcc;
  rtt: StatsAcc;
  dal: StatsAcc;
  dpl: StatsAcc;
  mode: number;
}

interface FlowAgg {
  switchId: string;
  src: number;
  dst: number;
  destQp: number;
  messages: number;
  bytes: number;
  packets: number;
  retransmitted: number;
  fct: StatsAcc;
  fet: StatsAcc;
  gap: StatsAcc;
  ecn: number;
  cnp: number;
  straddled: number;
  mode: number;
}

export type RecordSink = (r: RecordJson) => void;

export class MetricsEngine {
  readonly options: MetricsOptions;
  private readonly clocks = new Map<string, SwitchClock>();
  private readonly exactStarts = new Map<string, () => bigint | undefined>();
  /** per switch: added to its times to put them on the engine's common clock */
  private readonly alignments = new Map<string, bigint>();
  private readonly seqs = new Map<string, SeqTracker>();
  /** open commands by (switch, host, target, target QP, CID): one per queue slot of a CID */
  private readonly outstanding = new Map<string, Outstanding>();
  private readonly halves = new Map<string, IoHalf[]>();
  // Interval buckets are keyed by their start on the common clock.
  private readonly ioAggs = new Map<bigint, Map<string, IoAgg>>();
  private readonly flowAggs = new Map<bigint, Map<string, FlowAgg>>();
  private readonly switchIntervals = new Map<bigint, Map<string, { incomplete: number; untracked: number; mode: number }>>();
  /** CNPs per (switch, host pair) per interval, spread over the pair's flows */
  private readonly pairCnp = new Map<bigint, Map<string, number>>();
  /** per switch: the newest list timestamp seen, on the common clock (each switch's digests lag differently) */
  private readonly watermarks = new Map<string, bigint>();
  private watermark = 0n;
  private lastScan = -(1n << 62n);
  /** per switch: digests that could not be decoded */
  private readonly badDigests = new Map<string, number>();
  /** per switch: its session (see DigestBatch.session), restarts seen, and the digest counts of its earlier sessions */
  private readonly sessions = new Map<string, { session: number; restarts: number; received: number; lost: number; duplicated: number }>();
  /** intervals before this (common clock) are closed: nothing is added to them again */
  private closedBefore = -(1n << 62n);

  /**
   * Every digest with a time before this (common clock) is fully reflected in
   * the records emitted so far: its I/O halves joined or given up, its
   * commands answered or timed out, its intervals closed.
   */
  get settledBefore(): bigint {
    return this.closedBefore;
  }
  /** per switch: figures that arrived for an interval already closed (reported on the event records only) */
  private readonly late = new Map<string, number>();
  private readonly counters = new Map<string, SwitchCounterFigures>();
  /** per switch: the mode of its latest digest (or as its controller last said) */
  private readonly modes = new Map<string, number>();

  /**
   * A switch that was running at `atUnixNs` (its own clock): it gets a
   * switch_stats record for that interval even if it sent no digest at all
   * (a capture of nothing the program measures still has counters to report).
   */
  noteSwitch(switchId: string, atUnixNs: bigint): void {
    if (!this.seqs.has(switchId)) this.seqs.set(switchId, new SeqTracker());
    this.switchInterval(switchId, atUnixNs + this.align(switchId), this.modes.get(switchId) ?? 0);
  }

  /** The switch's mode as its controller set it (1 full, 2 polling). */
  setSwitchMode(switchId: string, mode: number): void {
    this.modes.set(switchId, mode);
  }

  /** The switch's own counters (read by the controller), carried on its switch_stats records. */
  setSwitchCounters(switchId: string, c: SwitchCounterFigures): void {
    this.counters.set(switchId, c);
  }
  coverage: ((switchId: string) => { measured_flows: number; known_flows: number; ratio: number } | null) | undefined;

  constructor(private readonly sink: RecordSink, options: Partial<MetricsOptions> = {}) {
    this.options = { ...DEFAULT_METRICS_OPTIONS, ...options };
  }

  /**
   * The wall-clock (capture-clock) time at which the switch's clock read 0,
   * where its owner knows it exactly (replay). Must be set before the
   * switch's first digest list.
   */
  setClockStart(switchId: string, start: () => bigint | undefined): void {
    this.exactStarts.set(switchId, start);
  }

  /**
   * Puts a switch whose clock differs from the others' (a capture taken with
   * another clock) on the engine's common clock: `alignNs` is added to its
   * times wherever they are compared with other switches' (correlation
   * window, timeouts, closing intervals). Records keep the switch's own
   * clock. Rounded to a whole number of intervals, so that the intervals of
   * both clocks coincide.
   */
  setClockAlignment(switchId: string, alignNs: bigint): void {
    const i = this.options.intervalNs;
    const q = alignNs >= 0n ? (alignNs + i / 2n) / i : -((-alignNs + i / 2n) / i);
    this.alignments.set(switchId, q * i);
  }

  private align(switchId: string): bigint {
    return this.alignments.get(switchId) ?? 0n;
  }

  private clock(switchId: string): SwitchClock {
    let c = this.clocks.get(switchId);
    if (!c) this.clocks.set(switchId, (c = new SwitchClock(this.exactStarts.get(switchId))));
    return c;
  }

  private intervalOf(unixNs: bigint): bigint {
    return unixNs - (((unixNs % this.options.intervalNs) + this.options.intervalNs) % this.options.intervalNs);
  }

  /**
   * Feeds one digest list from one switch; `badDigests` counts its samples
   * that could not be decoded, `session` is the switch session it came from
   * (a new one: the switch restarted or reloaded its pipeline).
   */
  onDigestList(switchId: string, listTimestampNs: bigint, digests: readonly TelemetryDigest[], badDigests = 0, session?: number): void {
    if (session !== undefined) this.checkSession(switchId, session, listTimestampNs);
    if (badDigests > 0) this.badDigests.set(switchId, (this.badDigests.get(switchId) ?? 0) + badDigests);
    if (!this.seqs.has(switchId)) this.seqs.set(switchId, new SeqTracker());
    // (A digest of the switch's very first packet has timestamp 0: still a time.)
    const newest = digests.reduce((m, d) => Math.max(m, d.kind === "io" ? d.ts : d.kind === "msg" ? d.first_ts + d.fct_ns : -1), -1);
    if (newest >= 0) this.clock(switchId).calibrate(listTimestampNs, newest);
    for (const d of digests) this.onDigest(switchId, d);
    const aligned = listTimestampNs + this.align(switchId);
    if (aligned > (this.watermarks.get(switchId) ?? -(1n << 62n))) this.watermarks.set(switchId, aligned);
    this.advance(aligned);
  }

  /** Where each switch's digest sequence stands, so that a later run can resume from it (resumeSequence). */
  sequencePositions(): Array<{ switchId: string; session: number; next: number }> {
    const out = [];
    for (const [switchId, seq] of this.seqs) {
      const session = this.sessions.get(switchId)?.session;
      if (seq.next !== undefined && session) out.push({ switchId, session, next: seq.next });
    }
    return out;
  }

  /**
   * Resumes a switch's digest sequence where an earlier run left it: what the
   * switch sent while nothing listened counts as lost, and a switch that is
   * found in another session has restarted meanwhile (counted, clock anew).
   */
  resumeSequence(switchId: string, session: number, next: number): void {
    if (this.seqs.has(switchId) || this.sessions.has(switchId)) return;
    this.sessions.set(switchId, { session, restarts: 0, received: 0, lost: 0, duplicated: 0 });
    const seq = new SeqTracker();
    seq.resumeAt(next);
    this.seqs.set(switchId, seq);
  }

  /**
   * A switch that starts a new session has a new clock, counts its digests
   * from 0 again and has lost the I/Os it held: the clock is calibrated
   * anew, the sequence tracking starts over (the earlier session's counts
   * are kept), and its open commands end as incomplete.
   */
  private checkSession(switchId: string, session: number, listTimestampNs: bigint): void {
    const s = this.sessions.get(switchId);
    if (!s) {
      this.sessions.set(switchId, { session, restarts: 0, received: 0, lost: 0, duplicated: 0 });
      return;
    }
    if (s.session === session) return;
    s.session = session;
    s.restarts++;
    this.clocks.delete(switchId);
    const seq = this.seqs.get(switchId);
    if (seq) {
      seq.finish();
      s.received += seq.received;
      s.lost += seq.lost;
      s.duplicated += seq.duplicated;
      this.seqs.set(switchId, new SeqTracker());
    }
    const at = listTimestampNs;
    for (const [k, o] of [...this.outstanding]) if (o.switchId === switchId) this.timeOut(k, o, at);
  }

  /**
   * The time up to which every switch has reported: a command is incomplete
   * when its own switch has moved on past the timeout, and an I/O half stops
   * waiting for the other vantage once all switches have moved past the window.
   * A switch that has fallen more than a minute behind the others no longer holds them up.
   */
  private lowWatermark(): bigint {
    let low = this.watermark;
    for (const w of this.watermarks.values()) if (w < low && this.watermark - w < 60_000_000_000n) low = w;
    return low;
  }

  onDigest(switchId: string, d: TelemetryDigest): void {
    let s = this.seqs.get(switchId);
    if (!s) this.seqs.set(switchId, (s = new SeqTracker()));
    s.add(d.seq);
    if (d.kind !== "learn") this.modes.set(switchId, d.mode);
    else this.modes.set(switchId, 2); // learn digests come in polling mode only
    if (d.kind === "io") this.onIo(switchId, d);
    else if (d.kind === "msg") this.onMsg(switchId, d);
  }

  /** One I/O: (host, target, queue, CID) and the command's PSN, which tells apart successive uses of the CID. */
  private static ioKey(host: number, target: number, targetQp: number, cid: number, cmdPsn: number): string {
    return `${host}|${target}|${targetQp}|${cid}|${cmdPsn}`;
  }

  private switchInterval(switchId: string, alignedNs: bigint, mode: number): { incomplete: number; untracked: number; mode: number } {
    const start = this.intervalOf(alignedNs);
    // A closed interval's switch_stats are out: count in the oldest open one.
    const sw = this.bucket(this.switchIntervals, start < this.closedBefore ? this.closedBefore : start);
    let s = sw.get(switchId);
    if (!s) sw.set(switchId, (s = { incomplete: 0, untracked: 0, mode }));
    return s;
  }

  private onIo(switchId: string, d: IoDigest): void {
    const clock = this.clock(switchId);
    const at = clock.toUnix(d.ts);
    const align = this.align(switchId);
    if (d.event === IO_EVENT_UNPAIRED_RSP) {
      // The response names the host's QP only, and the queue's pairing is
      // unknown: it cannot be attributed to a queue. It is counted, never
      // matched by guesswork; the command it answered ends as incomplete.
      this.switchInterval(switchId, at + align, d.mode).untracked++;
      return;
    }
    const outKey = `${switchId}|${d.host}|${d.target}|${d.target_qp}|${d.cid}`;
    if (d.event === IO_EVENT_CMD) {
      const open = this.outstanding.get(outKey);
      if (open && open.digest.cmd_psn === d.cmd_psn) return; // the same command reported twice
      // NVMe reuses a CID on a queue only after its completion: an open I/O
      // with this key lost its response, and is closed at once.
      if (open) this.timeOut(outKey, open, at);
      this.outstanding.set(outKey, { switchId, digest: d, cmdUnixNs: at });
      return;
    }
    const open = this.outstanding.get(outKey);
    let hostQp = d.host_qp;
    if (open && open.digest.cmd_psn === d.cmd_psn) {
      if (hostQp === 0) hostQp = open.digest.host_qp;
      this.outstanding.delete(outKey);
    }
    const write = d.op === IO_OP_WRITE;
    const inCapsule = (d.flags & IO_FLAG_IN_CAPSULE) !== 0;
    const dataSeen = (d.flags & IO_FLAG_DATA_SEEN) !== 0;
    const rrSeen = (d.flags & IO_FLAG_RR_SEEN) !== 0;
    const lastSeen = write ? rrSeen : dataSeen;
    let dal: number | null = null;
    let dpl: number | null = null;
    if (d.vantage & VANTAGE_S) {
      // DAL needs both the first and the last data event at the storage side;
      // an in-capsule write has none: all of its e2e at S is the target's.
      if (inCapsule) dal = d.e2e_ns;
      else if (dataSeen && lastSeen) dal = d.to_data_ns + d.from_data_ns;
    }
    if (d.vantage & VANTAGE_C && write && !inCapsule && dataSeen && rrSeen) dpl = d.host_prep_ns;
    const half: IoHalf = {
      switchId,
      host: d.host,
      target: d.target,
      hostQp,
      targetQp: d.target_qp,
      cid: d.cid,
      cmdPsn: d.cmd_psn,
      inCapsule,
      vantage: d.vantage,
      op: write ? "write" : "read",
      bytes: d.bytes,
      status: d.status,
      mode: d.mode,
      e2e: d.e2e_ns,
      dal,
      dpl,
      incomplete: false,
      cmdUnixNs: at - BigInt(d.e2e_ns),
      atUnixNs: at,
      atAlignedNs: at + align,
    };
    this.addHalf(MetricsEngine.ioKey(d.host, d.target, d.target_qp, d.cid, d.cmd_psn), half);
  }

  private addHalf(key: string, half: IoHalf): void {
    if ((half.vantage & (VANTAGE_C | VANTAGE_S)) === (VANTAGE_C | VANTAGE_S)) {
      this.emitIo(half, half);
      return;
    }
    const list = this.halves.get(key) ?? [];
    const idx = list.findIndex((h) => (h.vantage & half.vantage) === 0 && h.switchId !== half.switchId);
    if (idx >= 0) {
      const other = list.splice(idx, 1)[0]!;
      if (list.length === 0) this.halves.delete(key);
      const c = half.vantage & VANTAGE_C ? half : other;
      const s = half.vantage & VANTAGE_C ? other : half;
      this.emitIo(c, s);
    } else {
      list.push(half);
      this.halves.set(key, list);
    }
  }

  private emitIo(c: IoHalf | undefined, s: IoHalf | undefined): void {
    const first = c ?? s!;
    const incomplete = (c?.incomplete ?? false) || (s?.incomplete ?? false);
    const e2eC = c && !c.incomplete ? c.e2e : null;
    const e2eS = s && !s.incomplete ? s.e2e : null;
    const rtt = e2eC !== null && e2eS !== null ? e2eC - e2eS : null;
    const cmdUnix = first.cmdUnixNs;
    const at = first.atUnixNs;
    const interval = this.intervalOf(at);
    const switchId = first.switchId;
    const complete = c && !c.incomplete ? c : s && !s.incomplete ? s : undefined;
    const rec: IoRecordJson = {
      type: "io",
      switch_id: switchId,
      interval_start_unix_ns: interval.toString(),
      host: ipv4Text(first.host),
      target: ipv4Text(first.target),
      host_qp: c?.hostQp || s?.hostQp || 0,
      target_qp: first.targetQp,
      cid: first.cid,
      cmd_psn: first.cmdPsn,
      op: first.op,
      bytes: first.bytes,
      in_capsule: first.inCapsule,
      nvme_status: complete?.status ?? 0,
      e2e_c_ns: e2eC,
      e2e_s_ns: e2eS,
      rtt_ns: rtt,
      dal_ns: s && !s.incomplete ? s.dal : null,
      dpl_ns: c && !c.incomplete ? c.dpl : null,
      incomplete,
      mode: modeName(first.mode),
      c_switch_id: c ? c.switchId : null,
      s_switch_id: s ? s.switchId : null,
      cmd_unix_ns: cmdUnix.toString(),
    };
    if (this.options.perEventRecords) this.sink(rec);
    if (this.isLate(switchId, interval + this.align(switchId))) return;
    const aggs = this.bucket(this.ioAggs, interval + this.align(switchId));
    const akey = `${switchId}|${rec.host}|${rec.target}|${rec.op}`;
    let a = aggs.get(akey);
    if (!a) {
      const acc = () => new StatsAcc(this.options.sketchAccuracy);
      a = { switchId, host: rec.host, target: rec.target, op: rec.op, count: 0, incomplete: 0, bytes: 0, errors: 0, e2eC: acc(), e2eS: acc(), rtt: acc(), dal: acc(), dpl: acc(), mode: first.mode };
      aggs.set(akey, a);
    }
    a.count++;
    if (incomplete) a.incomplete++;
    a.bytes += rec.bytes;
    if (rec.nvme_status !== 0) a.errors++;
    a.e2eC.add(rec.e2e_c_ns);
    a.e2eS.add(rec.e2e_s_ns);
    a.rtt.add(rec.rtt_ns);
    a.dal.add(rec.dal_ns);
    a.dpl.add(rec.dpl_ns);
  }

  private bucket<T>(m: Map<bigint, Map<string, T>>, interval: bigint): Map<string, T> {
    let b = m.get(interval);
    if (!b) m.set(interval, (b = new Map()));
    return b;
  }

  /** True (and counted) when an interval has been closed already: its aggregates are out and are not emitted again. */
  private isLate(switchId: string, bucketStart: bigint): boolean {
    if (bucketStart >= this.closedBefore) return false;
    this.late.set(switchId, (this.late.get(switchId) ?? 0) + 1);
    return true;
  }

  private onMsg(switchId: string, d: MsgDigest): void {
    const clock = this.clock(switchId);
    const firstUnix = clock.toUnix(d.first_ts);
    const endUnix = firstUnix + BigInt(d.fct_ns);
    const interval = this.intervalOf(endUnix);
    const bucketStart = interval + this.align(switchId);
    const fet = d.fct_ns > 0 ? (d.bytes * 8 * 1e9) / d.fct_ns : null;
    const gap = d.flags & MSG_FLAG_GAP_VALID ? d.gap_ns : null;
    if (this.options.perEventRecords) {
      const rec: MessageRecordJson = {
        type: "message",
        switch_id: switchId,
        interval_start_unix_ns: interval.toString(),
        src: ipv4Text(d.src),
        dst: ipv4Text(d.dst),
        dest_qp: d.dest_qp,
        first_psn: d.first_psn,
        last_psn: d.last_psn,
        bytes: d.bytes,
        packets: d.packets,
        retransmitted: d.retransmitted,
        fct_ns: d.fct_ns,
        fet_bps: fet,
        fnr: d.packets > 0 ? d.retransmitted / d.packets : 0,
        ecn_ce_packets: d.ecn_ce,
        gap_ns: gap,
        mode: modeName(d.mode),
        first_unix_ns: firstUnix.toString(),
      };
      this.sink(rec);
    }
    if (this.isLate(switchId, bucketStart)) return;
    const aggs = this.bucket(this.flowAggs, bucketStart);
    const fkey = `${switchId}|${d.src}|${d.dst}|${d.dest_qp}`;
    let a = aggs.get(fkey);
    if (!a) {
      const acc = () => new StatsAcc(this.options.sketchAccuracy);
      a = { switchId, src: d.src, dst: d.dst, destQp: d.dest_qp, messages: 0, bytes: 0, packets: 0, retransmitted: 0, fct: acc(), fet: acc(), gap: acc(), ecn: 0, cnp: 0, straddled: 0, mode: d.mode };
      aggs.set(fkey, a);
    }
    a.messages++;
    a.bytes += d.bytes;
    // Packets outside any message since the previous digest (late retransmissions) count for the flow.
    a.packets += d.packets + d.extra_packets;
    a.retransmitted += d.retransmitted + d.extra_retransmitted;
    a.ecn += d.ecn_ce + d.extra_ecn_ce;
    a.straddled += d.straddled;
    a.fct.add(d.fct_ns);
    a.fet.add(fet);
    a.gap.add(gap);
    a.mode = d.mode;
    const pairs = this.bucket(this.pairCnp, bucketStart);
    const pkey = `${switchId}|${d.src}|${d.dst}`;
    pairs.set(pkey, (pairs.get(pkey) ?? 0) + d.cnp);
  }

  /**
   * A command that got no response: an incomplete half of its I/O, counted
   * for its switch. `atUnixNs`: when it was given up (the timeout, or a new
   * command with its key).
   */
  private timeOut(key: string, o: Outstanding, atUnixNs = o.cmdUnixNs + this.options.ioTimeoutNs): void {
    this.outstanding.delete(key);
    const d = o.digest;
    const atAligned = atUnixNs + this.align(o.switchId);
    this.switchInterval(o.switchId, atAligned, d.mode).incomplete++;
    this.addHalf(MetricsEngine.ioKey(d.host, d.target, d.target_qp, d.cid, d.cmd_psn), {
      switchId: o.switchId, host: d.host, target: d.target, hostQp: d.host_qp, targetQp: d.target_qp, cid: d.cid, cmdPsn: d.cmd_psn,
      inCapsule: (d.flags & IO_FLAG_IN_CAPSULE) !== 0, vantage: d.vantage, op: d.op === IO_OP_WRITE ? "write" : "read", bytes: d.bytes, status: 0, mode: d.mode,
      e2e: null, dal: null, dpl: null, incomplete: true, cmdUnixNs: o.cmdUnixNs, atUnixNs, atAlignedNs: atAligned,
    });
  }

  /** Moves time forward (on the common clock): emits I/Os that timed out and intervals that are over. */
  advance(nowAlignedNs: bigint): void {
    if (nowAlignedNs > this.watermark) this.watermark = nowAlignedNs;
    const now = this.watermark;
    // Timeouts and windows are scanned every 10 ms of digest time, not per list.
    if (now - this.lastScan < 10_000_000n) return;
    this.lastScan = now;
    const low = this.lowWatermark();
    for (const [k, o] of this.outstanding) {
      const own = this.watermarks.get(o.switchId) ?? now;
      if (own - (o.cmdUnixNs + this.align(o.switchId)) > this.options.ioTimeoutNs) this.timeOut(k, o);
    }
    for (const [k, list] of this.halves) {
      const keep = list.filter((h) => {
        if (low - h.atAlignedNs <= this.options.correlationWindowNs) return true;
        this.emitIo(h.vantage & VANTAGE_C ? h : undefined, h.vantage & VANTAGE_C ? undefined : h);
        return false;
      });
      if (keep.length) this.halves.set(k, keep);
      else this.halves.delete(k);
    }
    // An interval is closed once the correlation window past its end has passed.
    const closeBefore = low - this.options.correlationWindowNs - this.options.ioTimeoutNs;
    this.flushIntervals((start) => start + this.options.intervalNs <= closeBefore);
  }

  /** Emits everything still pending (end of a replay). */
  finish(): void {
    for (const s of this.seqs.values()) s.finish();
    for (const [k, o] of [...this.outstanding]) this.timeOut(k, o);
    for (const list of this.halves.values()) {
      for (const h of list) this.emitIo(h.vantage & VANTAGE_C ? h : undefined, h.vantage & VANTAGE_C ? undefined : h);
    }
    this.halves.clear();
    this.flushIntervals(() => true);
  }

  private flushIntervals(closed: (start: bigint) => boolean): void {
    const starts = new Set([...this.ioAggs.keys(), ...this.flowAggs.keys(), ...this.switchIntervals.keys()]);
    for (const start of [...starts].sort((a, b) => (a < b ? -1 : 1))) {
      if (!closed(start)) continue;
      if (start + this.options.intervalNs > this.closedBefore) this.closedBefore = start + this.options.intervalNs;
      // Each record in its switch's own clock.
      const own = (switchId: string) => {
        const s = start - this.align(switchId);
        return { interval_start_unix_ns: s.toString(), interval_end_unix_ns: (s + this.options.intervalNs).toString() };
      };
      for (const a of this.ioAggs.get(start)?.values() ?? []) {
        const rec: IoAggregateJson = {
          type: "io_interval", switch_id: a.switchId, ...own(a.switchId),
          host: a.host, target: a.target, op: a.op, count: a.count, incomplete: a.incomplete, bytes: a.bytes, errors: a.errors,
          e2e_c_ns: a.e2eC.json(), e2e_s_ns: a.e2eS.json(), rtt_ns: a.rtt.json(), dal_ns: a.dal.json(), dpl_ns: a.dpl.json(), mode: modeName(a.mode),
        };
        this.sink(rec);
      }
      const cnps = this.pairCnp.get(start);
      for (const a of this.flowAggs.get(start)?.values() ?? []) {
        const rec: FlowAggregateJson = {
          type: "flow_interval", switch_id: a.switchId, ...own(a.switchId),
          src: ipv4Text(a.src), dst: ipv4Text(a.dst), dest_qp: a.destQp, messages: a.messages, bytes: a.bytes, packets: a.packets,
          retransmitted: a.retransmitted, fnr: a.packets > 0 ? a.retransmitted / a.packets : 0,
          fct_ns: a.fct.json(), fet_bps: a.fet.json(), ecn_ce_packets: a.ecn,
          cnp_packets: cnps?.get(`${a.switchId}|${a.src}|${a.dst}`) ?? 0,
          gap_ns: a.gap.json(), mode: modeName(a.mode), straddled_messages: a.straddled,
          coverage: this.coverage?.(a.switchId) ?? null,
        };
        this.sink(rec);
      }
      for (const [sw, seq] of this.seqs) {
        const si = this.switchIntervals.get(start)?.get(sw);
        const c = this.counters.get(sw);
        const ses = this.sessions.get(sw);
        const rec: SwitchStatsJson = {
          type: "switch_stats", switch_id: sw, ...own(sw),
          digests_received: seq.received + (ses?.received ?? 0), digests_lost: seq.lost + (ses?.lost ?? 0),
          digests_duplicated: seq.duplicated + (ses?.duplicated ?? 0), bad_digests: this.badDigests.get(sw) ?? 0,
          switch_restarts: ses?.restarts ?? 0, late_records: this.late.get(sw) ?? 0,
          incomplete_ios: si?.incomplete ?? 0,
          untracked_flows: c?.untracked_flows ?? null, untracked_ios: c?.untracked_ios ?? null, io_references_lost: c?.ioref_overwritten ?? null,
          parser_errors: c?.parser_errors ?? null, unknown_opcodes: c?.unknown_opcodes ?? null,
          io_replaced: c?.io_replaced ?? null, io_unpaired_responses: c ? c.io_unpaired_responses : si ? si.untracked : null,
          queue_pairs_learned: c?.queue_pairs_learned ?? null, cnp_untracked: c?.cnp_untracked ?? null,
          mode: modeName(this.modes.get(sw) ?? si?.mode ?? 0),
        };
        this.sink(rec);
      }
      this.ioAggs.delete(start);
      this.flowAggs.delete(start);
      this.pairCnp.delete(start);
      this.switchIntervals.delete(start);
    }
  }
}
