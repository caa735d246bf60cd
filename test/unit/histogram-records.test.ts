// The data plane's histogram reads into records: summed per switch, pair, op
// and figure over the interval the read closes, the overflow kept apart,
// quantiles from the buckets; the same through protobuf and in Prometheus.
import { describe, expect, test } from "vitest";
import { MetricsEngine } from "../../exporter/src/metrics.js";
import { encodeRecord, DEFAULT_TOPICS } from "../../exporter/src/kafka/encode.js";
import { recordFromMessage } from "../../exporter/src/kafka/decode.js";
import { TelemetryMetrics } from "../../app/prometheus.js";
import { bucketOf, type HistogramRead, type IoHistogramJson, type FlowHistogramJson, type RecordJson } from "../../contract/src/index.js";

const T0 = 1_800_000_000_000_000_000n;
const S = 1_000_000_000n;
const host = 0x0a000101;
const target = 0x0a000201;

const read = (over: Partial<HistogramRead>): HistogramRead => ({ io: [], fct: [], pairs: 1, flows: 1, pairsRefused: 0, flowsRefused: 0, ...over });

describe("data-plane histogram records", () => {
  test("reads sum into their interval; the overflow is apart; quantiles come from the buckets", () => {
    const out: RecordJson[] = [];
    const m = new MetricsEngine((r) => out.push(r), { intervalNs: S });
    const b40 = bucketOf(40_000);
    const b90 = bucketOf(90_000);
    // Two reads in the first interval (the second at its end exactly), one at the end of the next.
    m.addHistograms("tor", read({ io: [{ host, target, op: "read", figure: "e2e_c", buckets: [[b40, 98]] }] }), T0 + S / 2n);
    m.addHistograms("tor", read({
      io: [{ host, target, op: "read", figure: "e2e_c", buckets: [[b90, 2]] }, { host: null, target: null, op: "write", figure: "dal", buckets: [[b40, 5]] }],
      fct: [{ src: host, dst: target, destQp: 17, buckets: [[bucketOf(21_000), 3]] }],
    }), T0 + S);
    m.addHistograms("tor", read({ io: [{ host, target, op: "read", figure: "e2e_c", buckets: [[b90, 1]] }] }), T0 + 2n * S);
    m.finish();
    const io = out.filter((r): r is IoHistogramJson => r.type === "io_histogram");
    expect(io.map((r) => [r.interval_start_unix_ns, r.host, r.op, r.figure, r.count])).toEqual([
      [T0.toString(), "10.0.1.1", "read", "e2e_c_ns", 100],
      [T0.toString(), null, "write", "dal_ns", 5],
      [(T0 + S).toString(), "10.0.1.1", "read", "e2e_c_ns", 1],
    ]);
    const first = io[0]!;
    expect(first.p50_ns).toBeCloseTo(40_000, -4);
    expect(Math.abs(first.p50_ns - 40_000) / 40_000).toBeLessThanOrEqual(1 / 16);
    expect(Math.abs(first.p99_ns - 90_000) / 90_000).toBeLessThanOrEqual(1 / 16);
    expect(first.buckets.map((b) => b.count)).toEqual([98, 2]);
    expect(first.buckets[0]!.lower_ns).toBeLessThanOrEqual(40_000);
    expect(first.buckets[0]!.upper_ns!).toBeGreaterThan(40_000);
    const fct = out.filter((r): r is FlowHistogramJson => r.type === "flow_histogram");
    expect(fct.map((r) => [r.src, r.dst, r.dest_qp, r.count])).toEqual([["10.0.1.1", "10.0.2.1", 17, 3]]);
    // Each survives protobuf unchanged, on the pair's (or the overflow's) key.
    for (const r of [...io, ...fct]) {
      const msg = encodeRecord(r, DEFAULT_TOPICS, "protobuf", S);
      expect(recordFromMessage(msg.headers.type, msg.value)).toEqual(r);
      expect(msg.key).toBe(r.type === "io_histogram" ? (r.host === null ? "overflow|tor" : "10.0.1.1|10.0.2.1") : "10.0.1.1|10.0.2.1|17");
      expect(msg.topic).toBe(r.type === "io_histogram" ? "rdma.io.v1" : "rdma.flow.v1");
    }
  });

  test("a read after its interval closed counts in the oldest open one", () => {
    const out: RecordJson[] = [];
    const m = new MetricsEngine((r) => out.push(r), { intervalNs: S, correlationWindowNs: 1n, ioTimeoutNs: 1n });
    m.addHistograms("tor", read({ io: [{ host, target, op: "read", figure: "e2e_s", buckets: [[10, 1]] }] }), T0 + S);
    m.advance(T0 + 3n * S);
    expect(out.filter((r) => r.type === "io_histogram")).toHaveLength(1);
    m.addHistograms("tor", read({ io: [{ host, target, op: "read", figure: "e2e_s", buckets: [[10, 4]] }] }), T0 + S);
    m.finish();
    const io = out.filter((r): r is IoHistogramJson => r.type === "io_histogram");
    expect(io.map((r) => r.count)).toEqual([1, 4]);
    expect(BigInt(io[1]!.interval_start_unix_ns)).toBeGreaterThan(BigInt(io[0]!.interval_start_unix_ns));
  });

  test("Prometheus: exact cumulative counts on the data plane's bounds", async () => {
    const p = new TelemetryMetrics();
    const rec: IoHistogramJson = {
      type: "io_histogram", switch_id: "tor", interval_start_unix_ns: T0.toString(), interval_end_unix_ns: (T0 + S).toString(),
      host: "10.0.1.1", target: "10.0.2.1", op: "read", figure: "e2e_c_ns", count: 10, p50_ns: 0, p99_ns: 0, mode: "full",
      buckets: [{ bucket: bucketOf(1500), lower_ns: 1408, upper_ns: 1536, count: 3 }, { bucket: bucketOf(5_000_000_000), lower_ns: 2 ** 32, upper_ns: null, count: 7 }],
    };
    p.onRecord(rec);
    p.onRecord(rec);
    const text = await p.text();
    const line = (le: string) => text.split("\n").find((l) => l.startsWith("rdma_telemetry_dataplane_io_latency_seconds_bucket{") && l.includes('figure="e2e_c"') && l.includes(`le="${le}"`));
    expect(line("0.000001024")).toMatch(/ 0$/);
    expect(line("0.000001536")).toMatch(/ 6$/);
    expect(line("4.294967296")).toMatch(/ 6$/);
    expect(line("+Inf")).toMatch(/ 20$/);
    expect(text).toMatch(/rdma_telemetry_dataplane_io_latency_seconds_count\{[^}]*figure="e2e_c"\} 20/);
  });
});
