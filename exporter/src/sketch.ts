// A mergeable quantile sketch with relative accuracy (DDSketch-style):
// values fall in logarithmic buckets, so a quantile is within `accuracy` of
// the true value, memory grows with the log of the value range, and two
// sketches merge by adding bucket counts. Count, min, max and mean are exact.

import type { StatsJson } from "@rdma-telemetry/contract";

/** What a sketch summarises into: the records' distribution. */
export type SketchSummary = StatsJson;

export class QuantileSketch {
  private readonly gamma: number;
  private readonly logGamma: number;
  private readonly pos = new Map<number, number>();
  private readonly neg = new Map<number, number>();
  private zeros = 0;
  count = 0;
  sum = 0;
  min = Infinity;
  max = -Infinity;

  constructor(readonly accuracy = 0.005) {
    if (!(accuracy > 0 && accuracy < 1)) throw new RangeError(`sketch accuracy must be in (0, 1), got ${accuracy}`);
    this.gamma = (1 + accuracy) / (1 - accuracy);
    this.logGamma = Math.log(this.gamma);
  }

  add(v: number): void {
    if (!Number.isFinite(v)) return;
    this.count++;
    this.sum += v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
    if (v === 0) this.zeros++;
    else {
      const m = v > 0 ? this.pos : this.neg;
      const k = Math.ceil(Math.log(Math.abs(v)) / this.logGamma);
      m.set(k, (m.get(k) ?? 0) + 1);
    }
  }

  merge(other: QuantileSketch): void {
    if (other.accuracy !== this.accuracy) throw new RangeError("cannot merge sketches of different accuracy");
    for (const [k, c] of other.pos) this.pos.set(k, (this.pos.get(k) ?? 0) + c);
    for (const [k, c] of other.neg) this.neg.set(k, (this.neg.get(k) ?? 0) + c);
    this.zeros += other.zeros;
    this.count += other.count;
    this.sum += other.sum;
    this.min = Math.min(this.min, other.min);
    this.max = Math.max(this.max, other.max);
  }

  /** The q-quantile (0..1), within the relative accuracy; clamped to [min, max]. */
  quantile(q: number): number {
    if (this.count === 0) return NaN;
    const rank = Math.max(0, Math.min(this.count - 1, Math.ceil(q * this.count) - 1));
    let seen = 0;
    const value = (k: number) => (2 * this.gamma ** k) / (this.gamma + 1);
    const negKeys = [...this.neg.keys()].sort((a, b) => b - a);
    for (const k of negKeys) {
      seen += this.neg.get(k)!;
      if (seen > rank) return this.clamp(-value(k));
    }
    seen += this.zeros;
    if (seen > rank) return 0;
    const posKeys = [...this.pos.keys()].sort((a, b) => a - b);
    for (const k of posKeys) {
      seen += this.pos.get(k)!;
      if (seen > rank) return this.clamp(value(k));
    }
    return this.max;
  }

  private clamp(v: number): number {
    return Math.min(this.max, Math.max(this.min, v));
  }

  summary(): SketchSummary | undefined {
    if (this.count === 0) return undefined;
    return { count: this.count, min: this.min, mean: this.sum / this.count, p50: this.quantile(0.5), p99: this.quantile(0.99), max: this.max };
  }
}
