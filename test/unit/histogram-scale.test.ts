// The data plane's histogram scale: the generated P4 table (p4/include/control/hist_bucket.p4)
// and the control plane's bucketOf agree on every entry, the buckets tile the
// line, and a quantile read from them is within the stated error.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { bucketBounds, bucketOf, bucketValue, histogramQuantile, HIST_BUCKETS_USED, HIST_OVERFLOW_BUCKET, HIST_RELATIVE_ERROR } from "../../contract/src/histogram.js";
// @ts-expect-error: a plain ES module script
import { HIST_FILE, renderHistBucket } from "../../scripts/gen-hist-buckets.mjs";

const entries = () => [...readFileSync(HIST_FILE, "utf8").matchAll(/48w0x([0-9a-f]+) &&& 48w0x([0-9a-f]+) : set_bucket\((\d+)\);/g)]
  .map((m) => ({ value: BigInt(`0x${m[1]}`), mask: BigInt(`0x${m[2]}`), bucket: Number(m[3]) }));

describe("histogram scale", () => {
  test("the committed P4 table is the generator's", () => {
    expect(readFileSync(HIST_FILE, "utf8")).toBe(renderHistBucket());
  });

  test("every ternary entry matches exactly the values bucketOf puts in its bucket", () => {
    const es = entries();
    expect(es.length).toBe(256);
    const all = (1n << 48n) - 1n;
    for (const e of es) {
      // The smallest and largest value the entry matches, and one beside each.
      const lo = e.value;
      const hi = e.value | (~e.mask & all);
      expect(bucketOf(lo), `entry ${e.value.toString(16)}`).toBe(e.bucket);
      if (e.bucket !== HIST_OVERFLOW_BUCKET) expect(bucketOf(hi)).toBe(e.bucket);
      const [blo, bhi] = bucketBounds(e.bucket);
      if (e.bucket !== HIST_OVERFLOW_BUCKET) expect([Number(lo), Number(hi) + 1]).toEqual([blo, bhi]);
    }
    // No two entries overlap unless they name the same bucket (the overflow's bits).
    for (let i = 0; i < es.length; i++) {
      for (let j = i + 1; j < es.length; j++) {
        const a = es[i]!;
        const b = es[j]!;
        const common = a.mask & b.mask;
        if ((a.value & common) === (b.value & common)) expect(a.bucket).toBe(b.bucket);
      }
    }
  });

  test("the buckets tile [0, 2^32) in order, and the overflow takes the rest", () => {
    let next = 0;
    for (let b = 0; b < HIST_OVERFLOW_BUCKET; b++) {
      const [lo, hi] = bucketBounds(b);
      expect(lo).toBe(next);
      next = hi!;
    }
    expect(next).toBe(2 ** 32);
    expect(bucketBounds(HIST_OVERFLOW_BUCKET)).toEqual([2 ** 32, null]);
    expect(HIST_BUCKETS_USED).toBe(HIST_OVERFLOW_BUCKET + 1);
    expect(bucketOf(2 ** 32 - 1)).toBe(239);
    expect(bucketOf(2n ** 47n)).toBe(HIST_OVERFLOW_BUCKET);
    expect(() => bucketOf(-1)).toThrow(/negative/);
  });

  test("a value read back from its bucket is within 6.25 %", () => {
    let worst = 0;
    for (let v = 1; v < 2 ** 32; v = Math.floor(v * 1.0007) + 1) {
      const err = Math.abs(bucketValue(bucketOf(v)) - v) / v;
      worst = Math.max(worst, err);
    }
    expect(worst).toBeLessThanOrEqual(HIST_RELATIVE_ERROR);
    expect(worst).toBeGreaterThan(0.05);
  });

  test("quantiles of a histogram are within the error of the exact nearest-rank quantiles", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const values = Array.from({ length: 5000 }, () => Math.round(20_000 * Math.exp(2 * rnd())));
    const counts = new Map<number, number>();
    for (const v of values) counts.set(bucketOf(v), (counts.get(bucketOf(v)) ?? 0) + 1);
    const sorted = [...values].sort((a, b) => a - b);
    for (const q of [0.5, 0.99]) {
      const exact = sorted[Math.ceil(q * sorted.length) - 1]!;
      const est = histogramQuantile([...counts], q)!;
      expect(Math.abs(est - exact) / exact).toBeLessThanOrEqual(HIST_RELATIVE_ERROR);
    }
    expect(histogramQuantile([], 0.5)).toBeNull();
  });
});
