// The data plane's histograms through the compiled program on the software
// switch: every pair's histogram of every figure equals, bucket by bucket,
// the histogram of the ground truth's figures of the I/Os the switch counted
// under that pair's id; the I/Os it counted before the pair had an id (the
// response digest says so) are in the overflow histogram, exactly; the same
// for message FCT per flow. In summary mode the histograms are the same
// while the digests cover the watchlist only.
import { describe, expect, test } from "vitest";
import { histogramQuantile, HIST_RELATIVE_ERROR, type IoHistogramJson, type MessageRecordJson } from "../../contract/src/index.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { add, expectedFct, expectedIo, measuredFct, measuredIo, run, sorted, whole, type Counts } from "../support/histogram-truth.js";

describe("data-plane histograms", () => {
  const traffic = generateTraffic({
    seed: 29, durationNs: 1_500_000_000, hosts: 3, targets: 2, ioRate: 800,
    faults: [{ kind: "slow-host", host: 1, fromNs: 0, toNs: 700_000_000, extraNs: 30_000 }],
  });

  test("full mode: every pair's histogram equals the truth's, bucket by bucket; the rest is in the overflow", async () => {
    const { records, digests } = await run(traffic);
    const { counts, values, responses } = expectedIo(traffic, records, digests);
    const measured = measuredIo(records);
    expect(responses).toBeGreaterThan(1000);
    expect(sorted(measured)).toEqual(sorted(counts));
    // Pairs got ids early: most I/Os are counted under their own pair.
    const inOverflow = [...measured].filter(([k]) => k.includes("|overflow|")).reduce((a, [, h]) => a + [...h.values()].reduce((x, y) => x + y, 0), 0);
    const all = [...measured.values()].reduce((a, h) => a + [...h.values()].reduce((x, y) => x + y, 0), 0);
    expect(inOverflow).toBeLessThan(all / 4);
    expect(sorted(measuredFct(records))).toEqual(sorted(expectedFct(traffic, digests)));
    // Each histogram record is one interval of one pair, op and figure, and more than one interval was read.
    const hs = records.filter((r): r is IoHistogramJson => r.type === "io_histogram");
    expect(new Set(hs.map((h) => h.interval_start_unix_ns)).size).toBeGreaterThan(1);
    expect(new Set(hs.map((h) => `${h.switch_id}|${h.interval_start_unix_ns}|${h.host}|${h.target}|${h.op}|${h.figure}`)).size).toBe(hs.length);
    const msgs = records.filter((r): r is MessageRecordJson => r.type === "message");
    expect(msgs.length).toBe(traffic.messages.length);
    // Quantiles read from each pair's whole-run histogram, against the exact ones of the truth's values.
    let worst = 0;
    for (const [k, h] of measured) {
      const v = values.get(k);
      if (!v || v.length < 50) continue;
      v.sort((a, b) => a - b);
      for (const q of [0.5, 0.99]) {
        const exact = v[Math.ceil(q * v.length) - 1]!;
        const est = histogramQuantile([...h], q)!;
        worst = Math.max(worst, Math.abs(est - exact) / exact);
      }
    }
    expect(worst).toBeLessThanOrEqual(HIST_RELATIVE_ERROR);
    console.log(`histograms: ${responses} responses, ${all} figures counted (${inOverflow} in the overflow), ${measured.size} histograms; worst p50/p99 error ${(worst * 100).toFixed(2)} %`);
  }, 300_000);

  test("summary mode: the same histograms, digests for the watchlist only", async () => {
    const full = await run(traffic);
    const summary = await run(traffic, "summary");
    expect(sorted(whole(measuredIo(summary.records)))).toEqual(sorted(whole(measuredIo(full.records))));
    const fctWhole = (m: Counts) => { const o: Counts = new Map(); for (const [k, h] of m) for (const [b, n] of h) add(o, k.split("|")[0]!, b, n); return o; };
    expect(sorted(fctWhole(measuredFct(summary.records)))).toEqual(sorted(fctWhole(measuredFct(full.records))));
    const ioDigests = (ds: typeof full.digests) => ds.filter(({ d }) => d.kind === "io").length;
    expect(ioDigests(summary.digests)).toBeLessThan(ioDigests(full.digests) / 2);
    expect(summary.records.filter((r) => r.type === "io_histogram").every((r) => (r as IoHistogramJson).mode === "summary")).toBe(true);
  }, 300_000);
});
