// A labelled classic histogram kept and written out without prom-client:
// bucket counts in one typed array per label set, the text format written
// by plain concatenation. A pair's five latency histograms are 420 series;
// prom-client's Histogram takes tens of ms to write a few thousand of them,
// this one a few ms.

interface Series {
  /** `name_bucket{labels,le="` with the label values escaped */
  labels: string;
  counts: Float64Array;
  sum: number;
  count: number;
}

const escape = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');

export class LabeledHistogram {
  private readonly series = new Map<string, Series>();
  private readonly le: string[];

  /** `buckets`: upper bounds, ascending, without +Inf. */
  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly string[], readonly buckets: readonly number[]) {
    this.le = [...buckets.map((b) => String(b)), "+Inf"];
  }

  private key(labels: Record<string, string>): string {
    return this.labelNames.map((n) => labels[n] ?? "").join("\u0000");
  }

  private seriesOf(labels: Record<string, string>): Series {
    const key = this.key(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels: this.labelNames.map((n) => `${n}="${escape(labels[n] ?? "")}"`).join(","), counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    return s;
  }

  /** `n` observations at most `upper` (a bucket bound, or Infinity), summing to `sum`. */
  observeBucket(labels: Record<string, string>, upper: number, n: number, sum: number): void {
    const s = this.seriesOf(labels);
    let i = this.buckets.findIndex((b) => b >= upper);
    if (i < 0) i = this.buckets.length;
    s.counts[i]! += n;
    s.sum += sum;
    s.count += n;
  }

  observe(labels: Record<string, string>, value: number): void {
    const s = this.seriesOf(labels);
    // The first bucket whose bound is at least `value` (the last: +Inf).
    let lo = 0;
    let hi = this.buckets.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.buckets[mid]! >= value) hi = mid;
      else lo = mid + 1;
    }
    s.counts[lo]!++;
    s.sum += value;
    s.count++;
  }

  remove(labels: Record<string, string>): void {
    this.series.delete(this.key(labels));
  }

  get size(): number {
    return this.series.size;
  }

  /** The text format: HELP, TYPE, then every series' cumulative buckets, sum and count. */
  text(): string {
    const out: string[] = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const s of this.series.values()) {
      const sep = s.labels ? "," : "";
      let cumulative = 0;
      for (let i = 0; i < this.le.length; i++) {
        cumulative += s.counts[i]!;
        out.push(`${this.name}_bucket{${s.labels}${sep}le="${this.le[i]}"} ${cumulative}`);
      }
      out.push(`${this.name}_sum{${s.labels}} ${s.sum}`, `${this.name}_count{${s.labels}} ${s.count}`);
    }
    return out.join("\n") + "\n";
  }
}
