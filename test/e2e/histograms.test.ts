// The data plane's histograms through the compiled program on the software
// switch: every pair's histogram of every figure equals, bucket by bucket,
// the histogram of the ground truth's figures of the I/Os the switch counted
// under that pair's id; the I/Os it counted before the pair had an id (the
// response digest says so) are in the overflow histogram, exactly; the same
// for message FCT per flow. In summary mode the histograms are the same
// while the digests cover the watchlist only.
import { describe, expect, test } from "vitest";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import { ioTruthKey } from "../../app/self-check.js";
import { bucketOf, histogramQuantile, HIST_RELATIVE_ERROR, IO_EVENT_RSP, IO_FLAG_HIST_UNPAIRED, MSG_FLAG_HIST_UNFLOWED, type FlowHistogramJson, type IoHistogramJson, type IoRecordJson, type MessageRecordJson, type RecordJson, type TelemetryDigest } from "../../contract/src/index.js";
import { generateTraffic, type GeneratedTraffic } from "../../traffic/src/generator.js";
import type { IoTruth } from "../../traffic/src/types.js";

type Counts = Map<string, Map<number, number>>;

function add(m: Counts, key: string, bucket: number, n = 1): void {
  let h = m.get(key);
  if (!h) m.set(key, (h = new Map()));
  h.set(bucket, (h.get(bucket) ?? 0) + n);
}

const sorted = (m: Counts) => Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, h]) => [k, Object.fromEntries([...h].sort((a, b) => a[0] - b[0]))]));

async function run(traffic: GeneratedTraffic, mode: "full" | "summary" = "full") {
  const records: RecordJson[] = [];
  const digests: Array<{ sw: string; d: TelemetryDigest }> = [];
  await replaySwitches(
    traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })),
    {
      onRecord: (r) => records.push(r),
      mode,
      polling: { ioPairCapacity: 2, flowCapacity: 2, rotationPeriodMs: 50 },
      beforeFeed: (rigs) => {
        for (const r of rigs) r.controller.on("digests", (b) => { for (const d of b.digests) digests.push({ sw: r.options.name, d }); });
      },
    },
  );
  return { records, digests };
}

/** What the switches' histograms must hold: per (switch, pair or overflow, op, figure), from the truth. */
function expectedIo(traffic: GeneratedTraffic, records: RecordJson[], digests: Array<{ sw: string; d: TelemetryDigest }>): { counts: Counts; responses: number } {
  const truth = new Map<string, IoTruth>(traffic.ios.map((t) => [ioTruthKey(t), t]));
  const recs = new Map(records.filter((r): r is IoRecordJson => r.type === "io").map((r) => [`${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn}`, r]));
  const counts: Counts = new Map();
  let responses = 0;
  for (const { sw, d } of digests) {
    if (d.kind !== "io" || d.event !== IO_EVENT_RSP) continue;
    responses++;
    const r = recs.get(`${ipText(d.host)}|${ipText(d.target)}|${d.target_qp}|${d.cid}|${d.cmd_psn}`);
    expect(r, `a record for the response ${sw} ${ipText(d.host)} cid ${d.cid}`).toBeDefined();
    const t = truth.get(`${r!.host}|${r!.target}|${r!.target_qp}|${r!.cid}|${r!.cmd_psn}`);
    expect(t).toBeDefined();
    const pair = d.flags & IO_FLAG_HIST_UNPAIRED ? "overflow" : `${r!.host}|${r!.target}`;
    const figures: Array<[string, number | null, number | null]> = sw === "tor-c"
      ? [["e2e_c_ns", t!.e2e_c_ns, r!.e2e_c_ns], ["dpl_ns", t!.dpl_ns, r!.dpl_ns]]
      : [["e2e_s_ns", t!.e2e_s_ns, r!.e2e_s_ns], ["dal_ns", t!.dal_ns, r!.dal_ns]];
    for (const [figure, want, got] of figures) {
      // A figure the switch had (the record has it) counts, at the truth's value.
      if (got === null) continue;
      expect(got, `${figure} of ${ioTruthKey(t!)}`).toBe(want);
      add(counts, `${sw}|${pair}|${r!.op}|${figure}`, bucketOf(want!));
    }
  }
  return { counts, responses };
}

/** The truth's values behind each expected histogram (same keys as expectedIo). */
function expectedValues(traffic: GeneratedTraffic, records: RecordJson[], digests: Array<{ sw: string; d: TelemetryDigest }>): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const truth = new Map<string, IoTruth>(traffic.ios.map((t) => [ioTruthKey(t), t]));
  const recs = new Map(records.filter((r): r is IoRecordJson => r.type === "io").map((r) => [`${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn}`, r]));
  for (const { sw, d } of digests) {
    if (d.kind !== "io" || d.event !== IO_EVENT_RSP) continue;
    const r = recs.get(`${ipText(d.host)}|${ipText(d.target)}|${d.target_qp}|${d.cid}|${d.cmd_psn}`)!;
    const t = truth.get(`${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn}`)!;
    const pair = d.flags & IO_FLAG_HIST_UNPAIRED ? "overflow" : `${r.host}|${r.target}`;
    const figures: Array<[string, number | null, number | null]> = sw === "tor-c" ? [["e2e_c_ns", t.e2e_c_ns, r.e2e_c_ns], ["dpl_ns", t.dpl_ns, r.dpl_ns]] : [["e2e_s_ns", t.e2e_s_ns, r.e2e_s_ns], ["dal_ns", t.dal_ns, r.dal_ns]];
    for (const [figure, want, got] of figures) {
      if (got === null) continue;
      const k = `${sw}|${pair}|${r.op}|${figure}`;
      out.set(k, [...(out.get(k) ?? []), want!]);
    }
  }
  return out;
}

function ipText(v: number): string {
  return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join(".");
}

function measuredIo(records: RecordJson[]): Counts {
  const counts: Counts = new Map();
  for (const r of records) {
    if (r.type !== "io_histogram") continue;
    const h = r as IoHistogramJson;
    expect(h.count).toBe(h.buckets.reduce((a, b) => a + b.count, 0));
    for (const b of h.buckets) add(counts, `${h.switch_id}|${h.host === null ? "overflow" : `${h.host}|${h.target}`}|${h.op}|${h.figure}`, b.bucket, b.count);
  }
  return counts;
}

function expectedFct(traffic: GeneratedTraffic, digests: Array<{ sw: string; d: TelemetryDigest }>): Counts {
  const truth = new Map(traffic.messages.map((m) => [`${m.src}|${m.dst}|${m.dest_qp}|${m.first_psn}`, m]));
  const counts: Counts = new Map();
  for (const { sw, d } of digests) {
    if (d.kind !== "msg" || d.packets === 0) continue;
    const t = truth.get(`${ipText(d.src)}|${ipText(d.dst)}|${d.dest_qp}|${d.first_psn}`);
    expect(t, `message ${ipText(d.src)} qp ${d.dest_qp} psn ${d.first_psn}`).toBeDefined();
    const flow = d.flags & MSG_FLAG_HIST_UNFLOWED ? "overflow" : `${t!.src}|${t!.dst}|${t!.dest_qp}`;
    add(counts, `${sw}|${flow}`, bucketOf(t!.fct_ns));
  }
  return counts;
}

function measuredFct(records: RecordJson[]): Counts {
  const counts: Counts = new Map();
  for (const r of records) {
    if (r.type !== "flow_histogram") continue;
    const h = r as FlowHistogramJson;
    for (const b of h.buckets) add(counts, `${h.switch_id}|${h.src === null ? "overflow" : `${h.src}|${h.dst}|${h.dest_qp}`}`, b.bucket, b.count);
  }
  return counts;
}

/** The histograms summed over pairs and the overflow: per (switch, op, figure). */
function whole(m: Counts): Counts {
  const out: Counts = new Map();
  for (const [k, h] of m) {
    const parts = k.split("|");
    const key = parts[1] === "overflow" ? `${parts[0]}|${parts[2]}|${parts[3]}` : `${parts[0]}|${parts[3]}|${parts[4]}`;
    for (const [b, n] of h) add(out, key, b, n);
  }
  return out;
}

describe("data-plane histograms", () => {
  const traffic = generateTraffic({
    seed: 29, durationNs: 1_500_000_000, hosts: 3, targets: 2, ioRate: 800,
    faults: [{ kind: "slow-host", host: 1, fromNs: 0, toNs: 700_000_000, extraNs: 30_000 }],
  });

  test("full mode: every pair's histogram equals the truth's, bucket by bucket; the rest is in the overflow", async () => {
    const { records, digests } = await run(traffic);
    const { counts, responses } = expectedIo(traffic, records, digests);
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
    const values = expectedValues(traffic, records, digests);
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
