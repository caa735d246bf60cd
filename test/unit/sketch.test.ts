import { expect, test } from "vitest";
import { QuantileSketch } from "../../exporter/src/sketch.js";

test("quantiles stay within the sketch's relative accuracy, and sketches merge", () => {
  const a = new QuantileSketch(0.01);
  const b = new QuantileSketch(0.01);
  const all: number[] = [];
  let x = 12345;
  for (let i = 0; i < 20000; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const v = 1000 + (x % 1_000_000);
    all.push(v);
    (i % 2 ? a : b).add(v);
  }
  a.merge(b);
  all.sort((p, q) => p - q);
  for (const q of [0.5, 0.99]) {
    const truth = all[Math.ceil(q * all.length) - 1]!;
    expect(Math.abs(a.quantile(q) - truth) / truth).toBeLessThanOrEqual(0.01);
  }
  const s = a.summary()!;
  expect(s.count).toBe(20000);
  expect(s.min).toBe(all[0]);
  expect(s.max).toBe(all[all.length - 1]);
});

test("zeros and negative values are kept in order", () => {
  const s = new QuantileSketch();
  for (const v of [-50, 0, 0, 10, 20]) s.add(v);
  expect(s.quantile(0)).toBeCloseTo(-50, -1);
  expect(s.quantile(0.5)).toBe(0);
  expect(s.summary()!.mean).toBe(-4);
});
