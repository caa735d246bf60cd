// The latency histograms as written out: the same samples as prom-client's
// own Histogram for the same observations, and the per-pair bound.
import { Histogram, Registry } from "prom-client";
import { describe, expect, test } from "vitest";
import type { IoRecordJson } from "../../contract/src/index.js";
import { LabeledHistogram } from "../../app/prometheus-histogram.js";
import { LATENCY_BUCKETS_SECONDS, TelemetryMetrics } from "../../app/prometheus.js";
import { parseSamples } from "../support/promql.js";

describe("latency histograms", () => {
  test("written as prom-client writes the same histogram: cumulative buckets, +Inf, sum, count, escaped labels", async () => {
    const registry = new Registry();
    const reference = new Histogram({ name: "h_seconds", help: "h", labelNames: ["a", "b"], buckets: [...LATENCY_BUCKETS_SECONDS], registers: [registry] });
    const ours = new LabeledHistogram("h_seconds", "h", ["a", "b"], LATENCY_BUCKETS_SECONDS);
    const values = [0, 1e-6, 1.5e-6, 2e-5, 2e-5, 0.00083, 0.5, 1.048576, 3, 7e-4];
    for (const [i, v] of values.entries()) {
      const labels = { a: i % 2 ? 'x"y\\z' : "p", b: "q\nr" };
      reference.observe(labels, v);
      ours.observe(labels, v);
    }
    // The same series whatever the order of their labels.
    const sorted = (samples: Map<string, number>) => new Map([...samples].map(([k, v]) => {
      const i = k.indexOf("{");
      const labels = k.slice(i + 1, -1).match(/\w+="(?:[^"\\]|\\.)*"/g) ?? [];
      return [`${k.slice(0, i)}{${labels.sort().join(",")}}`, v] as const;
    }));
    const want = sorted(parseSamples(await registry.metrics()));
    const got = sorted(parseSamples(ours.text()));
    expect(got.size).toBe(2 * (LATENCY_BUCKETS_SECONDS.length + 3));
    // Values equal (sums to rounding).
    for (const [k, v] of want) expect(got.get(k), k).toBeCloseTo(v, 12);
  });

  test("a pair beyond maxPairs: the oldest pair's series removed, the newest kept", async () => {
    const m = new TelemetryMetrics({ maxPairs: 2 });
    const io = (host: string): IoRecordJson => ({
      type: "io", switch_id: "tor", interval_start_unix_ns: "0", host, target: "10.0.2.1", host_qp: 1, target_qp: 2, cid: 1, cmd_psn: 1, op: "read", bytes: 4096, in_capsule: false, nvme_status: 0,
      e2e_c_ns: 50_000, e2e_s_ns: 40_000, rtt_ns: 6_000, dal_ns: 30_000, dpl_ns: null, incomplete: false, mode: "full", c_switch_id: "tor", s_switch_id: null, cmd_unix_ns: "0",
    });
    for (const host of ["10.0.1.1", "10.0.1.2", "10.0.1.1", "10.0.1.3"]) m.onRecord(io(host));
    const s = parseSamples(await m.text());
    const count = (host: string, figure: string) => s.get(`rdma_telemetry_io_latency_seconds_count{switch="tor",host="${host}",target="10.0.2.1",op="read",figure="${figure}"}`);
    expect(count("10.0.1.1", "dal")).toBe(2);
    expect(count("10.0.1.3", "e2e_c")).toBe(1);
    expect(count("10.0.1.3", "dpl")).toBeUndefined(); // no DPL seen: no series
    expect([...s.keys()].some((k) => k.includes('host="10.0.1.2"'))).toBe(false);
    expect(s.get(`rdma_telemetry_io_latency_seconds_bucket{switch="tor",host="10.0.1.1",target="10.0.2.1",op="read",figure="rtt",le="+Inf"}`)).toBe(2);
  });
});
