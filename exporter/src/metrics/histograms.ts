// The data plane's histograms (read by the controller as deltas) summed per
// switch and interval, and their records: one per pair, op and figure
// (io_histogram) and one per flow (flow_histogram), with the buckets that
// counted and the quantiles read from them.
import { bucketBounds, histogramQuantile, modeName, type FlowHistogramJson, type HistogramBucketJson, type HistogramRead, type IoHistogramJson } from "@rdma-telemetry/contract";

const FIGURE_FIELD = { e2e_c: "e2e_c_ns", e2e_s: "e2e_s_ns", dal: "dal_ns", dpl: "dpl_ns" } as const;

interface Accum {
  switchId: string;
  mode: number;
  io?: { host: string | null; target: string | null; op: "read" | "write"; figure: IoHistogramJson["figure"] };
  flow?: { src: string | null; dst: string | null; destQp: number | null };
  buckets: Map<number, number>;
}

export class HistogramIntervals {
  /** interval start (aligned clock) -> histogram key -> counts */
  private readonly byStart = new Map<bigint, Map<string, Accum>>();

  /** Adds a read; `text` names a switch's endpoint key (undefined: no address for it). Returns the histograms left out for want of an address. */
  add(start: bigint, switchId: string, mode: number, read: HistogramRead, text: (key: number) => string | undefined): number {
    let unnamed = 0;
    let m = this.byStart.get(start);
    if (!m) this.byStart.set(start, (m = new Map()));
    const into = (key: string, make: () => Accum, buckets: Array<[number, number]>) => {
      let a = m.get(key);
      if (!a) m.set(key, (a = make()));
      for (const [b, c] of buckets) a.buckets.set(b, (a.buckets.get(b) ?? 0) + c);
    };
    for (const d of read.io) {
      const host = d.host === null ? null : text(d.host);
      const target = d.target === null ? null : text(d.target);
      if (host === undefined || target === undefined) {
        unnamed++;
        continue;
      }
      const figure = FIGURE_FIELD[d.figure];
      into(`io|${switchId}|${host}|${target}|${d.op}|${figure}`, () => ({ switchId, mode, io: { host, target, op: d.op, figure }, buckets: new Map() }), d.buckets);
    }
    for (const d of read.fct) {
      const src = d.src === null ? null : text(d.src);
      const dst = d.dst === null ? null : text(d.dst);
      if (src === undefined || dst === undefined) {
        unnamed++;
        continue;
      }
      into(`flow|${switchId}|${src}|${dst}|${d.destQp}`, () => ({ switchId, mode, flow: { src, dst, destQp: d.destQp }, buckets: new Map() }), d.buckets);
    }
    return unnamed;
  }

  starts(): bigint[] {
    return [...this.byStart.keys()].sort((a, b) => (a < b ? -1 : 1));
  }

  /** The records of an interval (removed); `own` gives each switch's interval bounds in its own clock. */
  take(start: bigint, own: (switchId: string) => { interval_start_unix_ns: string; interval_end_unix_ns: string }): Array<IoHistogramJson | FlowHistogramJson> {
    const m = this.byStart.get(start);
    if (!m) return [];
    this.byStart.delete(start);
    const out: Array<IoHistogramJson | FlowHistogramJson> = [];
    for (const a of m.values()) {
      const pairs = [...a.buckets].filter(([, c]) => c > 0).sort((x, y) => x[0] - y[0]);
      if (pairs.length === 0) continue;
      const buckets: HistogramBucketJson[] = pairs.map(([b, count]) => {
        const [lower_ns, upper_ns] = bucketBounds(b);
        return { bucket: b, lower_ns, upper_ns, count };
      });
      const common = {
        switch_id: a.switchId, ...own(a.switchId),
        count: pairs.reduce((x, [, c]) => x + c, 0), buckets,
        p50_ns: histogramQuantile(pairs, 0.5)!, p99_ns: histogramQuantile(pairs, 0.99)!, mode: modeName(a.mode),
      };
      if (a.io) out.push({ type: "io_histogram", ...common, host: a.io.host, target: a.io.target, op: a.io.op, figure: a.io.figure });
      else out.push({ type: "flow_histogram", ...common, src: a.flow!.src, dst: a.flow!.dst, dest_qp: a.flow!.destQp, figure: "fct_ns" });
    }
    return out;
  }
}
