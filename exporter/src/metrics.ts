// Turns decoded digests into records (SPEC §3-§6): per-I/O records with RTT
// from correlating the compute-side and storage-side halves of an I/O, per-
// message records, and per-interval aggregates. Time comes from the digests
// (switch clocks mapped to the wall clock), so a replay is deterministic.
import { ipv4Text } from "../../traffic/src/roce.js";
import {
  IO_EVENT_CMD,
  IO_FLAG_DATA_SEEN,
  IO_FLAG_RR_SEEN,
  IO_OP_WRITE,
  MSG_FLAG_GAP_VALID,
  VANTAGE_C,
  VANTAGE_S,
  type IoDigest,
  type MsgDigest,
  type TelemetryDigest,
} from "./digests.js";
import { modeName, type FlowAggregateJson, type IoAggregateJson, type IoRecordJson, type MessageRecordJson, type RecordJson, type StatsJson, type SwitchStatsJson } from "./records.js";
import { SeqTracker } from "./seq-tracker.js";
import { QuantileSketch } from "./sketch.js";

/** The switch counters a switch_stats record carries (read by the controller). */
export interface SwitchCounterFigures {
  untracked_flows: number;
  untracked_ios: number;
  ioref_overwritten: number;
  parser_errors: number;
  unknown_opcodes: number;
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

/** Maps a switch's 48-bit ns clock to the wall clock, unwrapping it. */
class SwitchClock {
  private offset: bigint | undefined;
  private last = 0n;
  private wraps = 0n;

  /** Calibrates on the first digest list: its timestamp is the wall-clock time of its newest sample. */
  calibrate(listTimestampNs: bigint, newestTs: number): void {
    if (this.offset === undefined) this.offset = listTimestampNs - this.unwrap(newestTs);
  }

  private unwrap(ts: number): bigint {
    const t = BigInt(ts);
    if (t + TS_MOD / 2n < this.last) this.wraps++;
    const abs = this.wraps * TS_MOD + t;
    if (t > this.last || abs > this.last) this.last = t;
    return abs;
  }

  toUnix(ts: number): bigint {
    return (this.offset ?? 0n) + this.unwrap(ts);
  }
}


/** One vantage's view of an I/O. */
interface IoHalf {
  switchId: string;
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
  private readonly seqs = new Map<string, SeqTracker>();
  private readonly outstanding = new Map<string, Outstanding>();
  private readonly halves = new Map<string, IoHalf[]>();
  private readonly ioAggs = new Map<bigint, Map<string, IoAgg>>();
  private readonly flowAggs = new Map<bigint, Map<string, FlowAgg>>();
  private readonly switchIntervals = new Map<bigint, Map<string, { incomplete: number; mode: number }>>();
  /** CNPs per (switch, host pair) per interval, spread over the pair's flows */
  private readonly pairCnp = new Map<bigint, Map<string, number>>();
  /** per switch: the newest list timestamp seen (each switch's digests lag differently) */
  private readonly watermarks = new Map<string, bigint>();
  private watermark = 0n;
  private lastScan = -(1n << 62n);
  badDigests = 0;
  private readonly counters = new Map<string, SwitchCounterFigures>();

  /** The switch's own counters (read by the controller), carried on its switch_stats records. */
  setSwitchCounters(switchId: string, c: SwitchCounterFigures): void {
    this.counters.set(switchId, c);
  }
  coverage: ((switchId: string) => { measured_flows: number; known_flows: number; ratio: number } | null) | undefined;

  constructor(private readonly sink: RecordSink, options: Partial<MetricsOptions> = {}) {
    this.options = { ...DEFAULT_METRICS_OPTIONS, ...options };
  }

  private clock(switchId: string): SwitchClock {
    let c = this.clocks.get(switchId);
    if (!c) this.clocks.set(switchId, (c = new SwitchClock()));
    return c;
  }

  private intervalOf(unixNs: bigint): bigint {
    return unixNs - (((unixNs % this.options.intervalNs) + this.options.intervalNs) % this.options.intervalNs);
  }

  /** Feeds one digest list from one switch. */
  onDigestList(switchId: string, listTimestampNs: bigint, digests: readonly TelemetryDigest[]): void {
    // (A digest of the switch's very first packet has timestamp 0: still a time.)
    const newest = digests.reduce((m, d) => Math.max(m, d.kind === "io" ? d.ts : d.kind === "msg" ? d.first_ts + d.fct_ns : -1), -1);
    if (newest >= 0) this.clock(switchId).calibrate(listTimestampNs, newest);
    for (const d of digests) this.onDigest(switchId, d);
    if (listTimestampNs > (this.watermarks.get(switchId) ?? 0n)) this.watermarks.set(switchId, listTimestampNs);
    this.advance(listTimestampNs);
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

  private trackSeq(switchId: string, seq: number): void {
    let s = this.seqs.get(switchId);
    if (!s) this.seqs.set(switchId, (s = new SeqTracker()));
    s.add(seq);
  }

  onDigest(switchId: string, d: TelemetryDigest): void {
    this.trackSeq(switchId, d.seq);
    if (d.kind === "io") this.onIo(switchId, d);
    else if (d.kind === "msg") this.onMsg(switchId, d);
  }

  private ioKey(d: { host: number; target: number; cid: number }): string {
    return `${d.host}|${d.target}|${d.cid}`;
  }

  private onIo(switchId: string, d: IoDigest): void {
    const clock = this.clock(switchId);
    const at = clock.toUnix(d.ts);
    const key = this.ioKey(d);
    if (d.event === IO_EVENT_CMD) {
      this.outstanding.set(`${switchId}|${key}`, { switchId, digest: d, cmdUnixNs: at });
      return;
    }
    this.outstanding.delete(`${switchId}|${key}`);
    const write = d.op === IO_OP_WRITE;
    const dataSeen = (d.flags & IO_FLAG_DATA_SEEN) !== 0;
    const rrSeen = (d.flags & IO_FLAG_RR_SEEN) !== 0;
    const lastSeen = write ? rrSeen : dataSeen;
    const half: IoHalf = {
      switchId,
      vantage: d.vantage,
      op: write ? "write" : "read",
      bytes: d.bytes,
      status: d.status,
      mode: d.mode,
      e2e: d.e2e_ns,
      // DAL needs both the first and the last data event at the storage side.
      dal: d.vantage & VANTAGE_S && dataSeen && lastSeen ? d.to_data_ns + d.from_data_ns : null,
      dpl: d.vantage & VANTAGE_C && write && dataSeen && rrSeen ? d.host_prep_ns : null,
      incomplete: false,
      cmdUnixNs: at - BigInt(d.e2e_ns),
      atUnixNs: at,
    };
    this.addHalf(key, half);
  }

  private addHalf(key: string, half: IoHalf): void {
    if ((half.vantage & (VANTAGE_C | VANTAGE_S)) === (VANTAGE_C | VANTAGE_S)) {
      this.emitIo(key, half, half);
      return;
    }
    const list = this.halves.get(key) ?? [];
    const idx = list.findIndex((h) => (h.vantage & half.vantage) === 0 && h.switchId !== half.switchId);
    if (idx >= 0) {
      const other = list.splice(idx, 1)[0]!;
      if (list.length === 0) this.halves.delete(key);
      const c = half.vantage & VANTAGE_C ? half : other;
      const s = half.vantage & VANTAGE_C ? other : half;
      this.emitIo(key, c, s);
    } else {
      list.push(half);
      this.halves.set(key, list);
    }
  }

  private emitIo(key: string, c: IoHalf | undefined, s: IoHalf | undefined): void {
    const [host, target, cid] = key.split("|").map(Number) as [number, number, number];
    const first = c ?? s!;
    const incomplete = (c?.incomplete ?? false) || (s?.incomplete ?? false);
    const e2eC = c && !c.incomplete ? c.e2e : null;
    const e2eS = s && !s.incomplete ? s.e2e : null;
    const rtt = e2eC !== null && e2eS !== null ? e2eC - e2eS : null;
    const cmdUnix = c ? c.cmdUnixNs : s!.cmdUnixNs;
    const at = c ? c.atUnixNs : s!.atUnixNs;
    const interval = this.intervalOf(at);
    const switchId = first.switchId;
    const rec: IoRecordJson = {
      type: "io",
      switch_id: switchId,
      interval_start_unix_ns: interval.toString(),
      host: ipv4Text(host),
      target: ipv4Text(target),
      cid,
      op: first.op,
      bytes: first.bytes,
      nvme_status: (c && !c.incomplete ? c.status : s?.status) ?? 0,
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
    const aggs = this.bucket(this.ioAggs, interval);
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

  private onMsg(switchId: string, d: MsgDigest): void {
    const clock = this.clock(switchId);
    const firstUnix = clock.toUnix(d.first_ts);
    const endUnix = firstUnix + BigInt(d.fct_ns);
    const interval = this.intervalOf(endUnix);
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
    const aggs = this.bucket(this.flowAggs, interval);
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
    const pairs = this.bucket(this.pairCnp, interval);
    const pkey = `${switchId}|${d.src}|${d.dst}`;
    pairs.set(pkey, (pairs.get(pkey) ?? 0) + d.cnp);
  }

  /** A command that got no response: an incomplete half of its I/O, counted for its switch. */
  private timeOut(key: string, o: Outstanding): void {
    this.outstanding.delete(key);
    const d = o.digest;
    const atUnixNs = o.cmdUnixNs + this.options.ioTimeoutNs;
    const sw = this.bucket(this.switchIntervals, this.intervalOf(atUnixNs));
    const s = sw.get(o.switchId) ?? { incomplete: 0, mode: d.mode };
    s.incomplete++;
    sw.set(o.switchId, s);
    this.addHalf(this.ioKey(d), {
      switchId: o.switchId, vantage: d.vantage, op: d.op === IO_OP_WRITE ? "write" : "read", bytes: d.bytes, status: 0, mode: d.mode,
      e2e: null, dal: null, dpl: null, incomplete: true, cmdUnixNs: o.cmdUnixNs, atUnixNs,
    });
  }

  /** Moves time forward: emits I/Os that timed out and intervals that are over. */
  advance(nowUnixNs: bigint): void {
    if (nowUnixNs > this.watermark) this.watermark = nowUnixNs;
    const now = this.watermark;
    // Timeouts and windows are scanned every 10 ms of digest time, not per list.
    if (now - this.lastScan < 10_000_000n) return;
    this.lastScan = now;
    const low = this.lowWatermark();
    for (const [k, o] of this.outstanding) {
      const own = this.watermarks.get(o.switchId) ?? now;
      if (own - o.cmdUnixNs > this.options.ioTimeoutNs) this.timeOut(k, o);
    }
    for (const [k, list] of this.halves) {
      const keep = list.filter((h) => {
        if (low - h.atUnixNs <= this.options.correlationWindowNs) return true;
        this.emitIo(k, h.vantage & VANTAGE_C ? h : undefined, h.vantage & VANTAGE_C ? undefined : h);
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
    for (const [k, o] of this.outstanding) this.timeOut(k, o);
    for (const [k, list] of this.halves) {
      for (const h of list) this.emitIo(k, h.vantage & VANTAGE_C ? h : undefined, h.vantage & VANTAGE_C ? undefined : h);
    }
    this.halves.clear();
    this.flushIntervals(() => true);
  }

  private flushIntervals(closed: (start: bigint) => boolean): void {
    const starts = new Set([...this.ioAggs.keys(), ...this.flowAggs.keys(), ...this.switchIntervals.keys()]);
    for (const start of [...starts].sort((a, b) => (a < b ? -1 : 1))) {
      if (!closed(start)) continue;
      const end = start + this.options.intervalNs;
      for (const a of this.ioAggs.get(start)?.values() ?? []) {
        const rec: IoAggregateJson = {
          type: "io_interval", switch_id: a.switchId, interval_start_unix_ns: start.toString(), interval_end_unix_ns: end.toString(),
          host: a.host, target: a.target, op: a.op, count: a.count, incomplete: a.incomplete, bytes: a.bytes, errors: a.errors,
          e2e_c_ns: a.e2eC.json(), e2e_s_ns: a.e2eS.json(), rtt_ns: a.rtt.json(), dal_ns: a.dal.json(), dpl_ns: a.dpl.json(), mode: modeName(a.mode),
        };
        this.sink(rec);
      }
      const cnps = this.pairCnp.get(start);
      for (const a of this.flowAggs.get(start)?.values() ?? []) {
        const rec: FlowAggregateJson = {
          type: "flow_interval", switch_id: a.switchId, interval_start_unix_ns: start.toString(), interval_end_unix_ns: end.toString(),
          src: ipv4Text(a.src), dst: ipv4Text(a.dst), dest_qp: a.destQp, messages: a.messages, bytes: a.bytes, packets: a.packets,
          retransmitted: a.retransmitted, fnr: a.packets > 0 ? a.retransmitted / a.packets : 0,
          fct_ns: a.fct.json(), fet_bps: a.fet.json(), ecn_ce_packets: a.ecn,
          cnp_packets: cnps?.get(`${a.switchId}|${a.src}|${a.dst}`) ?? 0,
          gap_ns: a.gap.json(), mode: modeName(a.mode), straddled_messages: a.straddled,
          coverage: this.coverage?.(a.switchId) ?? null,
        };
        this.sink(rec);
      }
      const switches = new Set<string>([...this.seqs.keys()]);
      for (const sw of switches) {
        const seq = this.seqs.get(sw)!;
        const si = this.switchIntervals.get(start)?.get(sw);
        const c = this.counters.get(sw);
        const rec: SwitchStatsJson = {
          type: "switch_stats", switch_id: sw, interval_start_unix_ns: start.toString(), interval_end_unix_ns: end.toString(),
          digests_received: seq.received, digests_lost: seq.lost, digests_duplicated: seq.duplicated, bad_digests: this.badDigests,
          incomplete_ios: si?.incomplete ?? 0,
          untracked_flows: c?.untracked_flows ?? null, untracked_ios: c?.untracked_ios ?? null, io_references_lost: c?.ioref_overwritten ?? null,
          parser_errors: c?.parser_errors ?? null, unknown_opcodes: c?.unknown_opcodes ?? null,
          mode: modeName(si?.mode ?? 0),
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
