// The data plane's histograms against the ground truth: what each switch's
// histograms must hold (per pair, op and figure, bucket by bucket), from the
// truth's values of the I/Os the switch counted and the pair its digest says
// it was counted for; what the histogram records hold.
import { expect } from "vitest";
import { replaySwitches, type ReplayOptions } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import { ioTruthKey } from "../../app/self-check.js";
import { bucketOf, IO_EVENT_RSP, IO_FLAG_HIST_UNPAIRED, MSG_FLAG_HIST_UNFLOWED, type FlowHistogramJson, type IoHistogramJson, type IoRecordJson, type RecordJson, type TelemetryDigest } from "../../contract/src/index.js";
import type { GeneratedTraffic } from "../../traffic/src/generator.js";
import type { IoTruth } from "../../traffic/src/types.js";

export interface SwitchDigest {
  sw: string;
  d: TelemetryDigest;
}

export type Counts = Map<string, Map<number, number>>;

export function add(m: Counts, key: string, bucket: number, n = 1): void {
  let h = m.get(key);
  if (!h) m.set(key, (h = new Map()));
  h.set(bucket, (h.get(bucket) ?? 0) + n);
}

export const sorted = (m: Counts) => Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, h]) => [k, Object.fromEntries([...h].sort((a, b) => a[0] - b[0]))]));

/** The histogram ids a switch's controller held, refused and took back from idle holders, at the end. */
export interface IdCounts {
  pairs: number;
  pairsRefused: number;
  pairsReleased: number;
  flows: number;
  flowsRefused: number;
  flowsReleased: number;
}

export async function run(traffic: GeneratedTraffic, mode: "full" | "summary" = "full", opts: Pick<ReplayOptions, "histogramIdIdleMs"> = {}) {
  const records: RecordJson[] = [];
  const digests: SwitchDigest[] = [];
  const ids = new Map<string, IdCounts>();
  let rigs: Parameters<NonNullable<ReplayOptions["beforeFeed"]>>[0] = [];
  await replaySwitches(
    traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })),
    {
      onRecord: (r) => records.push(r),
      mode,
      polling: { ioPairCapacity: 2, flowCapacity: 2, rotationPeriodMs: 50 },
      ...opts,
      beforeFeed: (rs) => {
        rigs = rs;
        for (const r of rs) r.controller.on("digests", (b) => { for (const d of b.digests) digests.push({ sw: r.options.name, d }); });
      },
    },
  );
  for (const r of rigs) {
    const h = r.controller.histograms!;
    ids.set(r.options.name, { pairs: h.pairCount, pairsRefused: h.pairsRefused, pairsReleased: h.pairsReleased, flows: h.flowCount, flowsRefused: h.flowsRefused, flowsReleased: h.flowsReleased });
  }
  return { records, digests, ids };
}

/**
 * What the switches' histograms must hold: per (switch, pair or overflow, op,
 * figure), the buckets of the truth's values (and the values) of the figures
 * each response's record has, under the pair its digest was counted for.
 */
export function expectedIo(traffic: GeneratedTraffic, records: RecordJson[], digests: SwitchDigest[]): { counts: Counts; values: Map<string, number[]>; responses: number } {
  const truth = new Map<string, IoTruth>(traffic.ios.map((t) => [ioTruthKey(t), t]));
  const recs = new Map(records.filter((r): r is IoRecordJson => r.type === "io").map((r) => [`${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn}`, r]));
  const counts: Counts = new Map();
  const values = new Map<string, number[]>();
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
      const k = `${sw}|${pair}|${r!.op}|${figure}`;
      add(counts, k, bucketOf(want!));
      let v = values.get(k);
      if (!v) values.set(k, (v = []));
      v.push(want!);
    }
  }
  return { counts, values, responses };
}

export function ipText(v: number): string {
  return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join(".");
}

export function measuredIo(records: RecordJson[]): Counts {
  const counts: Counts = new Map();
  for (const r of records) {
    if (r.type !== "io_histogram") continue;
    const h = r as IoHistogramJson;
    expect(h.count).toBe(h.buckets.reduce((a, b) => a + b.count, 0));
    for (const b of h.buckets) add(counts, `${h.switch_id}|${h.host === null ? "overflow" : `${h.host}|${h.target}`}|${h.op}|${h.figure}`, b.bucket, b.count);
  }
  return counts;
}

export function expectedFct(traffic: GeneratedTraffic, digests: SwitchDigest[]): Counts {
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

export function measuredFct(records: RecordJson[]): Counts {
  const counts: Counts = new Map();
  for (const r of records) {
    if (r.type !== "flow_histogram") continue;
    const h = r as FlowHistogramJson;
    for (const b of h.buckets) add(counts, `${h.switch_id}|${h.src === null ? "overflow" : `${h.src}|${h.dst}|${h.dest_qp}`}`, b.bucket, b.count);
  }
  return counts;
}

/** The histograms summed over pairs and the overflow: per (switch, op, figure). */
export function whole(m: Counts): Counts {
  const out: Counts = new Map();
  for (const [k, h] of m) {
    const parts = k.split("|");
    const key = parts[1] === "overflow" ? `${parts[0]}|${parts[2]}|${parts[3]}` : `${parts[0]}|${parts[3]}|${parts[4]}`;
    for (const [b, n] of h) add(out, key, b, n);
  }
  return out;
}

