// The dashboard's memory: a bounded window of the interval records (per pair,
// per flow, per switch) and the latest alerts, as the points the page charts.
//
// Bounds (DashboardBounds, all counts): the newest `intervals` interval starts
// (older ones are dropped with every point in them, and a record for an
// interval older than the window is not kept); at most `pairSeries`
// (host, target, op) series and `flowSeries` flows, the series updated least
// recently giving way to a new one; `switches` switches; the last `alerts`
// alerts. A point is a few dozen numbers: the defaults hold at most
// 300 × (128 + 128 + 32) points, measured at 63 MB of heap and a 32 MB
// snapshot for a page that connects; a fabric of tens of pairs takes a few MB.
import { histogramQuantile, type AlertJson, type FlowAggregateJson, type IoAggregateJson, type IoHistogramJson, type RecordJson, type StatsJson, type SwitchStatsJson } from "@rdma-telemetry/contract";

export interface DashboardBounds {
  intervals: number;
  pairSeries: number;
  flowSeries: number;
  switches: number;
  alerts: number;
}

export const DEFAULT_BOUNDS: DashboardBounds = { intervals: 300, pairSeries: 128, flowSeries: 128, switches: 32, alerts: 500 };

/** One (host, target, op) in one interval, the switches' aggregates merged; latencies in ns. */
export interface PairPoint {
  /** interval start, unix ns as a decimal string (the series' key) */
  start: string;
  count: number;
  incomplete: number;
  errors: number;
  bytes: number;
  e2e_p50: number | null;
  e2e_p99: number | null;
  e2e_mean: number | null;
  rtt_p50: number | null;
  rtt_p99: number | null;
  rtt_mean: number | null;
  dal_p50: number | null;
  dal_p99: number | null;
  dal_mean: number | null;
  dpl_p50: number | null;
  dpl_p99: number | null;
  dpl_mean: number | null;
  /** from the switches' data-plane histograms: every I/O they measured (also those without a record); null where none came */
  dp_count: number | null;
  dp_e2e_p50: number | null;
  dp_e2e_p99: number | null;
  dp_dal_p50: number | null;
  dp_dal_p99: number | null;
  dp_dpl_p50: number | null;
  dp_dpl_p99: number | null;
  /** the switches whose aggregates it merges */
  switches: string[];
}

/** One flow in one interval, from the switch that counted the most of its messages. */
export interface FlowPoint {
  start: string;
  switch_id: string;
  messages: number;
  bytes: number;
  retransmitted: number;
  fct_p50: number | null;
  fct_p99: number | null;
  fet_p50: number | null;
  fet_p99: number | null;
  fnr: number;
  ecn_ce_packets: number;
  cnp_packets: number;
  gap_p50: number | null;
  gap_p99: number | null;
}

export interface SwitchPoint {
  start: string;
  digests_received: number;
  digests_lost: number;
  digests_duplicated: number;
  bad_digests: number;
  late_records: number;
  switch_restarts: number;
  untracked_ios: number;
  untracked_flows: number;
  parser_errors: number;
  io_references_lost: number;
}

/** Where the records come from and how that goes, for the page's status line. */
export interface SourceStatus {
  source: string;
  state: "starting" | "waiting" | "consuming" | "reconnecting" | "finished";
  detail: string;
  records: number;
  undecodable: number;
  lastError: string | null;
  lastRecordAt: number | null;
}

export interface Snapshot {
  bounds: DashboardBounds;
  intervals: string[];
  pairs: Record<string, PairPoint[]>;
  flows: Record<string, FlowPoint[]>;
  switches: Record<string, SwitchPoint[]>;
  alerts: AlertJson[];
  status: SourceStatus;
  dropped: { tooOld: number; seriesEvicted: number; switchesRefused: number };
}

/** What changed since the last update: the points to upsert, new alerts, the window's oldest interval. */
export interface Update {
  oldest: string | null;
  pairs: Array<[string, PairPoint]>;
  flows: Array<[string, FlowPoint]>;
  switches: Array<[string, SwitchPoint]>;
  alerts: AlertJson[];
}

/** "host|target|op", the key of a pair series. */
export const pairKey = (r: { host: string; target: string; op: string }): string => `${r.host}|${r.target}|${r.op}`;
/** "src|dst|dest_qp", the key of a flow (as the alerts' scope key). */
export const flowKey = (r: { src: string; dst: string; dest_qp: number }): string => `${r.src}|${r.dst}|${r.dest_qp}`;

type StatField = "e2e_c_ns" | "e2e_s_ns" | "rtt_ns" | "dal_ns" | "dpl_ns";

/**
 * Each figure from the switch that measured it on the most I/Os (ties: the
 * first switch id in order): the compute-side switch gives RTT and DPL, the
 * storage-side one DAL. e2e is the compute side's when measured, else the
 * storage side's.
 */
export function mergePair(start: string, bySwitch: ReadonlyMap<string, IoAggregateJson>): PairPoint {
  const recs = [...bySwitch.values()].sort((a, b) => (a.switch_id < b.switch_id ? -1 : a.switch_id > b.switch_id ? 1 : 0));
  const best = (f: StatField): StatsJson | null => {
    let out: StatsJson | null = null;
    for (const r of recs) {
      const s = r[f];
      if (s && (!out || s.count > out.count)) out = s;
    }
    return out;
  };
  const e2e = best("e2e_c_ns") ?? best("e2e_s_ns");
  const rtt = best("rtt_ns");
  const dal = best("dal_ns");
  const dpl = best("dpl_ns");
  return {
    start,
    count: Math.max(0, ...recs.map((r) => r.count)),
    incomplete: Math.max(0, ...recs.map((r) => r.incomplete)),
    errors: Math.max(0, ...recs.map((r) => r.errors)),
    bytes: Math.max(0, ...recs.map((r) => r.bytes)),
    e2e_p50: e2e?.p50 ?? null, e2e_p99: e2e?.p99 ?? null, e2e_mean: e2e?.mean ?? null,
    rtt_p50: rtt?.p50 ?? null, rtt_p99: rtt?.p99 ?? null, rtt_mean: rtt?.mean ?? null,
    dal_p50: dal?.p50 ?? null, dal_p99: dal?.p99 ?? null, dal_mean: dal?.mean ?? null,
    dpl_p50: dpl?.p50 ?? null, dpl_p99: dpl?.p99 ?? null, dpl_mean: dpl?.mean ?? null,
    ...NO_DATAPLANE,
    switches: recs.map((r) => r.switch_id),
  };
}

/** Folds one more switch's aggregate into a pair's point: the same result as mergePair over all of them, in any order. */
export function foldPair(point: PairPoint | undefined, choice: PairChoice | undefined, r: IoAggregateJson): { point: PairPoint; choice: PairChoice } {
  const c: PairChoice = { ...(choice ?? {}) };
  for (const f of ["e2e_c_ns", "e2e_s_ns", "rtt_ns", "dal_ns", "dpl_ns"] as const) {
    const s = r[f];
    const had = c[f];
    if (s && (!had || s.count > had.count || (s.count === had.count && (r.switch_id < had.switch || r.switch_id === had.switch)))) c[f] = { count: s.count, switch: r.switch_id, p50: s.p50, p99: s.p99, mean: s.mean };
  }
  const e2e = c.e2e_c_ns ?? c.e2e_s_ns;
  const switches = [...new Set([...(point?.switches ?? []), r.switch_id])].sort();
  return {
    choice: c,
    point: {
      start: r.interval_start_unix_ns,
      count: Math.max(point?.count ?? 0, r.count),
      incomplete: Math.max(point?.incomplete ?? 0, r.incomplete),
      errors: Math.max(point?.errors ?? 0, r.errors),
      bytes: Math.max(point?.bytes ?? 0, r.bytes),
      e2e_p50: e2e?.p50 ?? null, e2e_p99: e2e?.p99 ?? null, e2e_mean: e2e?.mean ?? null,
      rtt_p50: c.rtt_ns?.p50 ?? null, rtt_p99: c.rtt_ns?.p99 ?? null, rtt_mean: c.rtt_ns?.mean ?? null,
      dal_p50: c.dal_ns?.p50 ?? null, dal_p99: c.dal_ns?.p99 ?? null, dal_mean: c.dal_ns?.mean ?? null,
      dpl_p50: c.dpl_ns?.p50 ?? null, dpl_p99: c.dpl_ns?.p99 ?? null, dpl_mean: c.dpl_ns?.mean ?? null,
      ...dataplaneOf(c.dp),
      switches,
    },
  };
}

/** Which switch's figure a pair's point shows, per figure (what foldPair needs to take in one more switch), and the data-plane buckets summed per figure. */
export type PairChoice = Partial<Record<StatField, { count: number; switch: string; p50: number; p99: number; mean: number }>> & { dp?: DataplaneBuckets };

/** A pair's data-plane histograms in one interval: figure -> bucket -> count, summed over switches. */
type DataplaneBuckets = Partial<Record<IoHistogramJson["figure"], Map<number, number>>>;

const NO_DATAPLANE = { dp_count: null, dp_e2e_p50: null, dp_e2e_p99: null, dp_dal_p50: null, dp_dal_p99: null, dp_dpl_p50: null, dp_dpl_p99: null };

/** The data-plane figures of a pair's point: e2e at the compute side, else the storage side's; DAL; DPL. */
function dataplaneOf(dp: DataplaneBuckets | undefined): typeof NO_DATAPLANE | Record<keyof typeof NO_DATAPLANE, number | null> {
  if (!dp) return NO_DATAPLANE;
  const q = (h: Map<number, number> | undefined, p: number) => (h ? histogramQuantile([...h], p) : null);
  const e2e = dp.e2e_c_ns ?? dp.e2e_s_ns;
  return {
    dp_count: e2e ? [...e2e.values()].reduce((a, b) => a + b, 0) : null,
    dp_e2e_p50: q(e2e, 0.5), dp_e2e_p99: q(e2e, 0.99),
    dp_dal_p50: q(dp.dal_ns, 0.5), dp_dal_p99: q(dp.dal_ns, 0.99),
    dp_dpl_p50: q(dp.dpl_ns, 0.5), dp_dpl_p99: q(dp.dpl_ns, 0.99),
  };
}

/** Folds a switch's data-plane histogram into a pair's point (a point with no record yet has only these figures). */
export function foldHistogram(point: PairPoint | undefined, choice: PairChoice | undefined, r: IoHistogramJson): { point: PairPoint; choice: PairChoice } {
  const dp: DataplaneBuckets = { ...(choice?.dp ?? {}) };
  const h = new Map(dp[r.figure] ?? []);
  for (const b of r.buckets) h.set(b.bucket, (h.get(b.bucket) ?? 0) + b.count);
  dp[r.figure] = h;
  const base: PairPoint = point ?? {
    start: r.interval_start_unix_ns, count: 0, incomplete: 0, errors: 0, bytes: 0,
    e2e_p50: null, e2e_p99: null, e2e_mean: null, rtt_p50: null, rtt_p99: null, rtt_mean: null,
    dal_p50: null, dal_p99: null, dal_mean: null, dpl_p50: null, dpl_p99: null, dpl_mean: null, ...NO_DATAPLANE, switches: [],
  };
  return { choice: { ...(choice ?? {}), dp }, point: { ...base, ...dataplaneOf(dp), switches: [...new Set([...base.switches, r.switch_id])].sort() } };
}

/** The flow as the switch that counted most of its messages saw it (ties: the first switch id). */
export function pickFlow(start: string, bySwitch: ReadonlyMap<string, FlowAggregateJson>): FlowPoint {
  let r: FlowAggregateJson | undefined;
  for (const x of bySwitch.values()) if (!r || x.messages > r.messages || (x.messages === r.messages && x.switch_id < r.switch_id)) r = x;
  if (!r) throw new Error("pickFlow: no record");
  return {
    start, switch_id: r.switch_id, messages: r.messages, bytes: r.bytes, retransmitted: r.retransmitted,
    fct_p50: r.fct_ns?.p50 ?? null, fct_p99: r.fct_ns?.p99 ?? null, fet_p50: r.fet_bps?.p50 ?? null, fet_p99: r.fet_bps?.p99 ?? null,
    fnr: r.fnr, ecn_ce_packets: r.ecn_ce_packets, cnp_packets: r.cnp_packets, gap_p50: r.gap_ns?.p50 ?? null, gap_p99: r.gap_ns?.p99 ?? null,
  };
}

function switchPoint(r: SwitchStatsJson): SwitchPoint {
  return {
    start: r.interval_start_unix_ns, digests_received: r.digests_received, digests_lost: r.digests_lost, digests_duplicated: r.digests_duplicated,
    bad_digests: r.bad_digests, late_records: r.late_records, switch_restarts: r.switch_restarts, untracked_ios: r.untracked_ios ?? 0,
    untracked_flows: r.untracked_flows ?? 0, parser_errors: r.parser_errors ?? 0, io_references_lost: r.io_references_lost ?? 0,
  };
}

/** A series: its point per interval start (and, for pairs, which switch each figure came from), and when it was last updated. */
interface Series<P, C = undefined> {
  points: Map<string, P>;
  choices: Map<string, C>;
  touched: number;
}

export class DashboardStore {
  readonly bounds: DashboardBounds;
  /** interval starts in the window, ascending (as BigInt to compare, kept as strings) */
  private intervals: bigint[] = [];
  private readonly pairs = new Map<string, Series<PairPoint, PairChoice>>();
  private readonly flows = new Map<string, Series<FlowPoint>>();
  private readonly switches = new Map<string, Map<string, SwitchPoint>>();
  private readonly alerts: AlertJson[] = [];
  private readonly dropped = { tooOld: 0, seriesEvicted: 0, switchesRefused: 0 };
  private clock = 0;
  private pending: Update = { oldest: null, pairs: [], flows: [], switches: [], alerts: [] };
  private readonly listeners = new Set<() => void>();
  status: SourceStatus;

  constructor(source: string, bounds: Partial<DashboardBounds> = {}) {
    this.bounds = { ...DEFAULT_BOUNDS, ...bounds };
    for (const [k, v] of Object.entries(this.bounds)) if (!(Number.isInteger(v) && v > 0)) throw new Error(`dashboard bound ${k} must be a positive integer (got ${v})`);
    this.status = { source, state: "starting", detail: "", records: 0, undecodable: 0, lastError: null, lastRecordAt: null };
  }

  /** Called (synchronously) after every change; the server batches them. */
  onChange(f: () => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  private changed(): void {
    for (const f of this.listeners) f();
  }

  setStatus(s: Partial<SourceStatus>): void {
    this.status = { ...this.status, ...s };
    this.changed();
  }

  /** A record could not be decoded: counted and shown, then skipped. */
  undecodable(message: string): void {
    this.status = { ...this.status, undecodable: this.status.undecodable + 1, lastError: message };
    this.changed();
  }

  /** Feeds one record; records other than the interval ones and alerts are ignored. */
  add(r: RecordJson): void {
    if (r.type !== "io_interval" && r.type !== "flow_interval" && r.type !== "switch_stats" && r.type !== "alert" && !(r.type === "io_histogram" && r.host !== null)) return;
    this.status.records++;
    this.status.lastRecordAt = Date.now();
    if (r.type === "alert") {
      this.alerts.push(r);
      if (this.alerts.length > this.bounds.alerts) this.alerts.splice(0, this.alerts.length - this.bounds.alerts);
      this.pending.alerts.push(r);
      this.changed();
      return;
    }
    const start = r.interval_start_unix_ns;
    if (!this.admitInterval(BigInt(start))) {
      this.dropped.tooOld++;
      return;
    }
    if (r.type === "io_histogram") {
      const key = pairKey({ host: r.host!, target: r.target!, op: r.op });
      const s = this.series(this.pairs, key, this.bounds.pairSeries);
      const { point, choice } = foldHistogram(s.points.get(start), s.choices.get(start), r);
      s.points.set(start, point);
      s.choices.set(start, choice);
      this.pending.pairs.push([key, point]);
    } else if (r.type === "io_interval") {
      const key = pairKey(r);
      const s = this.series(this.pairs, key, this.bounds.pairSeries);
      const { point, choice } = foldPair(s.points.get(start), s.choices.get(start), r);
      s.points.set(start, point);
      s.choices.set(start, choice);
      this.pending.pairs.push([key, point]);
    } else if (r.type === "flow_interval") {
      const key = flowKey(r);
      const s = this.series(this.flows, key, this.bounds.flowSeries);
      const have = s.points.get(start);
      // The switch that counted the most of its messages (ties: the first switch id) speaks for the flow.
      if (!have || r.messages > have.messages || (r.messages === have.messages && r.switch_id <= have.switch_id)) {
        const p = pickFlow(start, new Map([[r.switch_id, r]]));
        s.points.set(start, p);
        this.pending.flows.push([key, p]);
      }
    } else {
      let sw = this.switches.get(r.switch_id);
      if (!sw) {
        if (this.switches.size >= this.bounds.switches) {
          this.dropped.switchesRefused++;
          return;
        }
        sw = new Map();
        this.switches.set(r.switch_id, sw);
      }
      const p = switchPoint(r);
      sw.set(start, p);
      this.pending.switches.push([r.switch_id, p]);
    }
    this.changed();
  }

  /** Makes room for an interval start; false when it is older than a full window. */
  private admitInterval(start: bigint): boolean {
    const list = this.intervals;
    if (list.length && list[list.length - 1]! === start) return true;
    let i = list.length;
    while (i > 0 && list[i - 1]! > start) i--;
    if (i > 0 && list[i - 1] === start) return true;
    if (list.length >= this.bounds.intervals && i === 0) return false;
    list.splice(i, 0, start);
    while (list.length > this.bounds.intervals) this.evict(list.shift()!.toString());
    return true;
  }

  private evict(start: string): void {
    for (const all of [this.pairs, this.flows] as Array<Map<string, Series<unknown, unknown>>>) {
      for (const [k, s] of all) {
        s.choices.delete(start);
        s.points.delete(start);
        if (s.points.size === 0) all.delete(k);
      }
    }
    for (const [k, sw] of this.switches) {
      sw.delete(start);
      if (sw.size === 0) this.switches.delete(k);
    }
    this.pending.oldest = this.intervals[0]?.toString() ?? null;
  }

  private series<P, C>(all: Map<string, Series<P, C>>, key: string, max: number): Series<P, C> {
    let s = all.get(key);
    if (!s) {
      if (all.size >= max) {
        let lru: string | undefined;
        let at = Infinity;
        for (const [k, x] of all) if (x.touched < at) [lru, at] = [k, x.touched];
        all.delete(lru!);
        this.dropped.seriesEvicted++;
      }
      s = { points: new Map(), choices: new Map(), touched: 0 };
      all.set(key, s);
    }
    s.touched = ++this.clock;
    return s;
  }

  /** The changes since the last call, and forgets them. */
  takeUpdate(): Update | null {
    const u = this.pending;
    if (!u.pairs.length && !u.flows.length && !u.switches.length && !u.alerts.length && u.oldest === null) return null;
    this.pending = { oldest: null, pairs: [], flows: [], switches: [], alerts: [] };
    // A point updated twice since the last update (a second switch's aggregate) goes once, as it is now.
    const last = <P extends { start: string }>(list: Array<[string, P]>) => [...new Map(list.map(([k, p]) => [`${k}@${p.start}`, [k, p] as [string, P]])).values()];
    return { ...u, pairs: last(u.pairs), flows: last(u.flows), switches: last(u.switches) };
  }

  snapshot(): Snapshot {
    const sorted = <P extends { start: string }>(m: Map<string, P>) => [...m.values()].sort((a, b) => (BigInt(a.start) < BigInt(b.start) ? -1 : 1));
    return {
      bounds: this.bounds,
      intervals: this.intervals.map(String),
      pairs: Object.fromEntries([...this.pairs].map(([k, s]) => [k, sorted(s.points)])),
      flows: Object.fromEntries([...this.flows].map(([k, s]) => [k, sorted(s.points)])),
      switches: Object.fromEntries([...this.switches].map(([k, m]) => [k, sorted(m)])),
      alerts: [...this.alerts],
      status: { ...this.status },
      dropped: { ...this.dropped },
    };
  }
}
