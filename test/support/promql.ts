// What Prometheus computes from a /metrics text: its samples, and
// histogram_quantile over classic buckets (Prometheus's bucketQuantile:
// linear interpolation inside the bucket, 0 as the first bucket's lower bound).

/** The text format's samples: `name{labels}` -> value. */
export function parseSamples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

/** histogram_quantile(q, buckets): `buckets` as [upper bound, cumulative count], any order, +Inf among them. */
export function histogramQuantile(q: number, buckets: Array<[number, number]>): number {
  const b = [...buckets].sort((x, y) => x[0] - y[0]);
  if (b.length < 2 || b[b.length - 1]![0] !== Infinity) return NaN;
  const total = b[b.length - 1]![1];
  if (total === 0) return NaN;
  let rank = q * total;
  const i = b.findIndex(([, c]) => c >= rank);
  if (i === b.length - 1) return b[b.length - 2]![0];
  if (i === 0 && b[0]![0] <= 0) return b[0]![0];
  let start = 0;
  let count = b[i]![1];
  if (i > 0) {
    start = b[i - 1]![0];
    count -= b[i - 1]![1];
    rank -= b[i - 1]![1];
  }
  return start + (b[i]![0] - start) * (rank / count);
}

/**
 * The buckets of one histogram series, summed over every series of `name`
 * whose labels include `match` (as `sum by (le)` does), and pass `keep`.
 */
export function bucketsOf(samples: Map<string, number>, name: string, match: Record<string, string> = {}, keep: (labels: Record<string, string>) => boolean = () => true): Array<[number, number]> {
  const byLe = new Map<number, number>();
  for (const [k, v] of samples) {
    if (!k.startsWith(`${name}_bucket{`)) continue;
    const labels = Object.fromEntries([...k.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    if (Object.entries(match).some(([l, want]) => labels[l] !== want) || !keep(labels)) continue;
    const le = labels.le === "+Inf" ? Infinity : Number(labels.le);
    byLe.set(le, (byLe.get(le) ?? 0) + v);
  }
  return [...byLe];
}

/** The exact q-quantile of `values` (nearest rank). */
export function exactQuantile(q: number, values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil(q * s.length) - 1)]!;
}
