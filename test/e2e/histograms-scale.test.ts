// The data plane's histograms on a ToR with more host-target pairs than
// histogram ids (1,280 pairs, 1,023 ids), whose jobs end and start during
// the capture: pairs refused an id count in the overflow, pairs idle for
// `histograms.id_idle_ms` give their ids to newcomers, and through all of
// it every pair's histogram equals the truth's bucket by bucket (no count of
// an old holder is read as a newcomer's), the overflow too.
import { expect, test } from "vitest";
import type { IoHistogramJson } from "../../contract/src/index.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { expectedIo, measuredIo, run, sorted } from "../support/histogram-truth.js";

test("more pairs than ids, jobs ending and starting: refused pairs in the overflow, idle ids reused, every histogram exact", async () => {
  const traffic = generateTraffic({
    seed: 31, durationNs: 5_000_000_000, hosts: 40, targets: 32, queuesPerHost: 1, ioRate: 60, burstMax: 2,
    connectDuringCapture: 0, jobTurnover: 0.5, ioSizes: [4096],
    gradientBytes: 16384, gradientGapNs: 50_000_000, // a light gradient sync: the storage pairs are what this is about
  });
  const { records, digests, ids } = await run(traffic, "full", { histogramIdIdleMs: 1000 });
  const { counts, responses } = expectedIo(traffic, records, digests);
  const measured = measuredIo(records);
  expect(sorted(measured)).toEqual(sorted(counts));
  for (const sw of ["tor-c", "tor-s"]) {
    const c = ids.get(sw)!;
    // More pairs than ids: some refused; the ended jobs' pairs gave theirs to the new jobs' pairs.
    expect(c.pairsRefused, `${sw} pairs refused`).toBeGreaterThan(0);
    expect(c.pairsReleased, `${sw} ids reused`).toBeGreaterThan(0);
    expect(c.pairs).toBeLessThanOrEqual(1023);
  }
  // Hosts of the jobs started at 60 % got ids of their own: their histograms name them.
  const hs = records.filter((r): r is IoHistogramJson => r.type === "io_histogram");
  const seen = traffic.ios.filter((t) => t.cmdCNs !== null);
  const t0 = seen.reduce((a, t) => (t.cmdCNs! < a ? t.cmdCNs! : a), seen[0]!.cmdCNs!);
  const at = (t: (typeof seen)[number]) => Number(t.cmdCNs! - t0) / 1e9;
  const busy = (from: number, to: number) => { const n = new Map<string, number>(); for (const t of seen) if (at(t) >= from && at(t) < to) n.set(t.host, (n.get(t.host) ?? 0) + 1); return n; };
  const [before, after] = [busy(0.5, 2.9), busy(3.2, 5)];
  const lateHosts = [...after].filter(([h, n]) => n >= 5 && (before.get(h) ?? 0) <= 2).map(([h]) => h);
  expect(lateHosts.length, "hosts whose job starts at 60 %").toBe(10);
  const named = new Set(hs.filter((h) => h.host !== null && h.switch_id === "tor-c").map((h) => h.host));
  expect(lateHosts.filter((h) => named.has(h)).length, "late hosts with histograms of their own").toBeGreaterThan(0);
  const inOverflow = [...measured].filter(([k]) => k.includes("|overflow|")).reduce((a, [, h]) => a + [...h.values()].reduce((x, y) => x + y, 0), 0);
  const all = [...measured.values()].reduce((a, h) => a + [...h.values()].reduce((x, y) => x + y, 0), 0);
  console.log(`histograms at scale: ${responses} responses, ${all} figures counted (${inOverflow} in the overflow); ids ${JSON.stringify(Object.fromEntries(ids))}`);
}, 600_000);
