// Prometheus metrics scraped over HTTP during and after a demo run: the
// records counters match the records written, the digest counters match the
// switches' switch_stats, the latency histograms hold every I/O and message
// and give p50/p99 near the exact figures, and the Grafana dashboard asks only
// for what is served.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import type { FlowAggregateJson, IoRecordJson, MessageRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/index.js";
import { ipText, Opcode, parseRoce, readCapture } from "../../traffic/src/index.js";
import { runDemo } from "../../app/demo.js";
import { TelemetryMetrics } from "../../app/prometheus.js";
import { bucketsOf, exactQuantile, histogramQuantile, parseSamples as parse } from "../support/promql.js";
import { servedSeries, unservedIn } from "../support/served-metrics.js";

const dir = mkdtempSync(join(tmpdir(), "prometheus-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a demo's /metrics: records per type and topic, digest counts, and latency histograms whose p50/p99 stay near the exact figures", async () => {
  const metrics = new TelemetryMetrics();
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
  // The latency histograms: every I/O's figures and every message's FCT and
  // gap, per pair and flow; p50/p99 by histogram_quantile over the whole
  // fabric (summed over switches and pairs, as a dashboard does) near the
  // exact quantiles of the records.
  const ios = records.filter((r): r is IoRecordJson => r.type === "io");
  const msgs = records.filter((r): r is MessageRecordJson => r.type === "message");
  const io1 = ios.find((r) => r.dal_ns !== null)!;
  const pair = { switch: io1.switch_id, host: io1.host, target: io1.target, op: io1.op, figure: "dal" };
  const pairCount = ios.filter((r) => r.switch_id === pair.switch && r.host === pair.host && r.target === pair.target && r.op === pair.op && r.dal_ns !== null).length;
  expect(m.get(`rdma_telemetry_io_latency_seconds_count{switch="${pair.switch}",host="${pair.host}",target="${pair.target}",op="${pair.op}",figure="dal"}`)).toBe(pairCount);
  const errors: string[] = [];
  let worst = 0;
  // FCT over the gradient messages' flows: the receivers' one-packet CTS
  // writes (their own flows) take no time, and a quantile of 0 has no relative error.
  const dataFlows = new Set(msgs.filter((r) => r.packets > 1).map((r) => `${r.switch_id}|${r.src}|${r.dst}|${r.dest_qp}`));
  const isData = (l: Record<string, string>) => dataFlows.has(`${l.switch}|${l.src}|${l.dst}|${l.dest_qp}`);
  const figures: Array<[string, Record<string, string>, number[], ((l: Record<string, string>) => boolean)?]> = [
    ...(["e2e_c", "e2e_s", "rtt", "dal", "dpl"] as const).map((f): [string, Record<string, string>, number[]] => ["rdma_telemetry_io_latency_seconds", { figure: f }, ios.map((r) => r[`${f}_ns`]).filter((v): v is number => v !== null)]),
    ["rdma_telemetry_flow_fct_seconds", {}, msgs.filter((r) => dataFlows.has(`${r.switch_id}|${r.src}|${r.dst}|${r.dest_qp}`)).map((r) => r.fct_ns), isData],
    ["rdma_telemetry_flow_gap_seconds", {}, msgs.map((r) => r.gap_ns).filter((v): v is number => v !== null)],
  ];
  for (const [name, match, ns, keep] of figures) {
    expect(ns.length, name).toBeGreaterThan(100);
    const buckets = bucketsOf(m, name, match, keep);
    expect(Math.max(...buckets.map(([, c]) => c)), name).toBe(ns.length);
    for (const q of [0.5, 0.99]) {
      const exact = exactQuantile(q, ns) / 1e9;
      const err = Math.abs(histogramQuantile(q, buckets) - exact) / exact;
      worst = Math.max(worst, err);
      errors.push(`${name.replace("rdma_telemetry_", "")}${match.figure ? `{${match.figure}}` : ""} p${q * 100} ${(err * 100).toFixed(1)}%`);
    }
  }
  console.log(`histogram_quantile against the exact quantiles: ${errors.join(", ")}`);
  // Four buckets per doubling: at most 2^(1/4)-1 (19%) by construction, under 10% on these records.
  expect(worst).toBeLessThan(0.1);
}, 300_000);

test("the Grafana dashboard in deploy/ asks only for metrics the processes serve, with their labels", async () => {
  const served = await servedSeries();
  const dashboard = JSON.parse(readFileSync(new URL("../../deploy/grafana-dashboard.json", import.meta.url), "utf8")) as { panels: Array<{ targets: Array<{ expr: string }> }>; templating: { list: Array<{ query?: string | { query: string } }> } };
  const exprs = [
    ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)),
    ...dashboard.templating.list.map((v) => (typeof v.query === "string" ? v.query : v.query?.query ?? "")).filter((q) => q.includes("rdma_telemetry_")),
  ];
  const seen = { names: 0 };
  const wrong = exprs.flatMap((expr) => unservedIn(expr, served, seen));
  expect(seen.names).toBeGreaterThan(25);
  expect(wrong).toEqual([]);
});

test("an IPv6 demo's /metrics: the I/O and flow series carry the addresses in RFC 5952 text, as the records do", async () => {
  const metrics = new TelemetryMetrics();
  const served = await metrics.listen("127.0.0.1:0");
  const out = join(dir, "ip6");
  await runDemo({ seed: 5, durationMs: 300, load: 0.1, ip: 6, outDir: out, mode: "full", onRecord: (r) => metrics.onRecord(r), print: () => {} });
  const text = await (await fetch(served.url)).text();
  await served.close();
  const records = readFileSync(join(out, "records.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson);
  const pairs = new Set(records.filter((r): r is IoRecordJson => r.type === "io").map((r) => `${r.host}|${r.target}`));
  const flows = new Set(records.filter((r): r is MessageRecordJson => r.type === "message").map((r) => `${r.src}|${r.dst}`));
  expect(pairs.size).toBeGreaterThan(0);
  expect(flows.size).toBeGreaterThan(0);
  const label = (line: string, name: string) => new RegExp(`${name}="([^"]*)"`).exec(line)?.[1];
  const seenPairs = new Set(text.split("\n").filter((l) => l.startsWith("rdma_telemetry_io_latency_seconds_count{")).map((l) => `${label(l, "host")}|${label(l, "target")}`));
  // (The data plane's overflow histogram, of flows without a histogram id, is no flow.)
  const seenFlows = new Set(text.split("\n").filter((l) => /^rdma_telemetry_\w+\{.*src="/.test(l) && !l.includes('src="overflow"')).map((l) => `${label(l, "src")}|${label(l, "dst")}`));
  expect(seenPairs).toEqual(pairs);
  expect(seenFlows).toEqual(flows);
  for (const p of [...seenPairs, ...seenFlows]) expect(p).toMatch(/^2001:db8:0:\d::[0-9a-f]+\|2001:db8:0:\d::[0-9a-f]+$/);
}, 120_000);

test("NCCL channels (four flows per host pair): the pair's CNPs counted once, as many as the capture holds, though every flow's interval record carries them", async () => {
  const metrics = new TelemetryMetrics();
  const served = await metrics.listen("127.0.0.1:0");
  const out = join(dir, "channels");
  await runDemo({ seed: 3, durationMs: 1500, load: 0.5, scale: { gradientChannels: 4 }, outDir: out, mode: "full", onRecord: (r) => metrics.onRecord(r), print: () => {} });
  const m = parse(await (await fetch(served.url)).text());
  await served.close();
  // The CNPs at the compute side's switch, by the pair whose data they slow: from the data's receiver to its sender.
  const truth = new Map<string, number>();
  for (const p of readCapture(join(out, "tor-c.pcap"))) {
    const r = parseRoce(p.data);
    if (r?.opcode !== Opcode.CNP) continue;
    const key = `${ipText(r.dst)}|${ipText(r.src)}`;
    truth.set(key, (truth.get(key) ?? 0) + 1);
  }
  expect(truth.size).toBeGreaterThan(1);
  const cnps = new Map([...m].filter(([k, v]) => k.startsWith("rdma_telemetry_pair_cnp_packets_total{") && k.includes('switch="tor-c"') && v > 0).map(([k, v]) => [`${/src="([^"]*)"/.exec(k)![1]}|${/dst="([^"]*)"/.exec(k)![1]}`, v]));
  expect(cnps).toEqual(truth);
  // Each of a pair's four data flows carries the pair's count in its interval records.
  const intervals = readFileSync(join(out, "records.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson).filter((r): r is FlowAggregateJson => r.type === "flow_interval" && r.switch_id === "tor-c" && r.cnp_packets > 0);
  const flowsPerPair = new Map<string, Set<number>>();
  for (const r of intervals) flowsPerPair.set(`${r.src}|${r.dst}`, (flowsPerPair.get(`${r.src}|${r.dst}`) ?? new Set()).add(r.dest_qp));
  expect([...flowsPerPair.values()].every((s) => s.size === 4)).toBe(true);
}, 120_000);
