// Prometheus metrics scraped over HTTP during and after a demo run: the
// records counters match the records written, the digest counters match the
// switches' switch_stats, and the per-pair gauges hold the latest interval's
// quantiles.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import type { IoAggregateJson, RecordJson, SwitchStatsJson } from "../../contract/src/index.js";
import { runDemo } from "../../app/demo.js";
import { TelemetryMetrics } from "../../app/prometheus.js";

const dir = mkdtempSync(join(tmpdir(), "prometheus-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The text format's samples: name{labels} -> value. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

test("a demo's /metrics: records per type and topic, digest counts and pair quantiles match what it wrote", async () => {
  const metrics = new TelemetryMetrics({ maxPairs: 4 });
  const served = await metrics.listen("127.0.0.1:0");
  const during: number[] = [];
  let scraping: Promise<void> | undefined;
  const scrape = async () => parse(await (await fetch(served.url)).text());
  await runDemo({
    seed: 3, durationMs: 2500, outDir: dir, mode: "full",
    onRecord: (r) => metrics.onRecord(r),
    print: (line) => {
      // Scraped while the run goes on.
      if (line.startsWith("progress:") && !scraping) {
        scraping = scrape().then((m) => {
          during.push([...m].filter(([k]) => k.startsWith("rdma_telemetry_records_total")).reduce((a, [, v]) => a + v, 0));
          scraping = undefined;
        });
      }
    },
  });
  await scraping;
  const m = await scrape();
  await served.close();

  const records = readFileSync(join(dir, "records.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson);
  expect(during.length).toBeGreaterThan(0);
  expect(Math.max(...during)).toBeGreaterThan(0);
  expect(Math.max(...during)).toBeLessThan(records.length);
  const topic = { io: "rdma.io.v1", io_interval: "rdma.io.v1", message: "rdma.flow.v1", flow_interval: "rdma.flow.v1", alert: "rdma.alert.v1", switch_stats: "rdma.alert.v1" } as const;
  for (const type of Object.keys(topic) as Array<keyof typeof topic>) {
    const n = records.filter((r) => r.type === type).length;
    expect(m.get(`rdma_telemetry_records_total{type="${type}",topic="${topic[type]}"}`) ?? 0, type).toBe(n);
  }
  const last = new Map<string, SwitchStatsJson>();
  for (const r of records) if (r.type === "switch_stats") last.set(r.switch_id, r);
  expect(last.size).toBe(2);
  for (const [sw, s] of last) {
    expect(m.get(`rdma_telemetry_digests_received_total{switch="${sw}"}`)).toBe(s.digests_received);
    expect(m.get(`rdma_telemetry_digests_lost_total{switch="${sw}"}`)).toBe(s.digests_lost);
  }
  // The pair gauges: the latest interval of each of the 4 pairs kept (the bound), the others removed.
  const ioIntervals = records.filter((r): r is IoAggregateJson => r.type === "io_interval");
  const latest = new Map<string, IoAggregateJson>();
  for (const r of ioIntervals) {
    const k = `${r.switch_id}|${r.host}|${r.target}|${r.op}`;
    latest.delete(k);
    latest.set(k, r);
  }
  const kept = [...latest.values()].slice(-4);
  const series = [...m.keys()].filter((k) => k.startsWith("rdma_telemetry_io_latency_ns{"));
  // (A pair whose latest interval has no figure at all, all its I/Os incomplete, has no series.)
  const withFigures = kept.filter((r) => r.e2e_c_ns || r.e2e_s_ns || r.rtt_ns || r.dal_ns || r.dpl_ns);
  expect(withFigures.length).toBeGreaterThan(0);
  expect(new Set(series.map((k) => k.replace(/,figure=.*/, ""))).size).toBe(withFigures.length);
  for (const r of kept) {
    const labels = `switch="${r.switch_id}",host="${r.host}",target="${r.target}",op="${r.op}"`;
    if (r.e2e_c_ns) expect(m.get(`rdma_telemetry_io_latency_ns{${labels},figure="e2e_c",quantile="0.99"}`)).toBe(r.e2e_c_ns.p99);
    if (r.dal_ns) expect(m.get(`rdma_telemetry_io_latency_ns{${labels},figure="dal",quantile="0.5"}`)).toBe(r.dal_ns.p50);
  }
}, 120_000);

test("the Grafana dashboard in deploy/ asks only for metrics the processes serve", async () => {
  const { KafkaSink } = await import("../../exporter/src/index.js");
  const { parseConfig, TelemetryController } = await import("../../p4runtime-controller/src/index.js");
  const metrics = new TelemetryMetrics();
  metrics.watchKafka(new KafkaSink({ brokers: ["127.0.0.1:1"] }));
  metrics.watchController("tor", new TelemetryController(parseConfig({ switch: { address: "127.0.0.1:1", switch_id: "tor" }, ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }] })));
  const served = new Set((await metrics.registry.getMetricsAsJSON()).map((x) => x.name));
  const dashboard = JSON.parse(readFileSync(new URL("../../deploy/grafana-dashboard.json", import.meta.url), "utf8")) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
  const asked = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => [...t.expr.matchAll(/rdma_telemetry_[a-z0-9_]+/g)].map((m) => m[0].replace(/_bucket$/, "")))));
  expect(asked.size).toBeGreaterThan(15);
  expect([...asked].filter((n) => !served.has(n))).toEqual([]);
});
