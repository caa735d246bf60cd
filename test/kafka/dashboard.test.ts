// The web dashboard end to end: the demo publishes to a real broker, the
// `dashboard` command consumes the metric topics, and headless Chromium loads
// its page. The charts of a pair and a flow must hold the values of the
// records the demo wrote, the workload's alerts must be listed, and an
// interval must appear while the page is open. Screenshot:
// test-artifacts/dashboard.png.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js"; // kafkajs reads gzip only without these plugins
import { afterAll, expect, inject, test } from "vitest";
import { encodeRecord } from "../../exporter/src/kafka/encode.js";
import type { AlertJson, FlowAggregateJson, IoAggregateJson, IoHistogramJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { histogramQuantile } from "../../contract/src/histogram.js";
import { flowKey, mergePair, pairKey, pickFlow } from "../../app/dashboard/store.js";
import { findChromium, launchBrowser, type Browser } from "../support/browser.js";
import { startCli, type CliProcess } from "../support/cli.js";
import { waitFor } from "../support/wait.js";

const root = join(import.meta.dirname, "../..");
const brokers = inject("kafkaBrokers");
// Topics of the test's own: the demo's traffic stays off the topics other tests read from their beginning.
const prefix = `dashboard-test-${Date.now()}`;
const topics = { io: `${prefix}.io.v1`, flow: `${prefix}.flow.v1`, alert: `${prefix}.alert.v1`, digest: `${prefix}.digest.v1` };
const chromium = findChromium();
const artifacts = join(root, "test-artifacts");
const dir = mkdtempSync(join(tmpdir(), "dashboard-test-"));
const children: ChildProcess[] = [];
let browser: Browser | undefined;
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The CLI, run from the test's directory (the demo's Kafka spill goes there, not into the repository). */
const cli = (args: string[]): CliProcess => startCli(args, dir, children);

const secs = (start: string) => Number(BigInt(start) / 1_000_000n) / 1000;

/** A chart's values by interval start (unix seconds), as the page holds them. */
type ChartData = number[][];
function at(data: ChartData, start: string, series: number): number | null | undefined {
  const i = data[0]!.indexOf(secs(start));
  return i < 0 ? undefined : data[series]![i];
}

function expectClose(got: number | null | undefined, want: number | null, what: string): void {
  if (want === null) expect(got ?? null, what).toBeNull();
  else {
    expect(got, what).toBeTypeOf("number");
    expect(Math.abs(got! - want), `${what}: ${got} vs ${want}`).toBeLessThanOrEqual(Math.abs(want) * 1e-9 + 1e-9);
  }
}

test.skipIf(!chromium)(
  chromium ? "dashboard: the demo on Kafka, charted in headless Chromium, live" : "dashboard in a browser: skipped, no Chromium (apt-get install chromium, or set CHROMIUM)",
  async () => {
    mkdirSync(artifacts, { recursive: true });
    const board = cli(["dashboard", "--kafka-brokers", brokers, "--kafka-topic-prefix", prefix, "--listen", "127.0.0.1:0", "--group", prefix]);
    const url = await waitFor(() => /dashboard: (http:\/\/\S+\/)/.exec(board.out())?.[1] ?? (board.child.exitCode !== null ? Promise.reject(new Error(board.out())) : undefined), 30_000, "the dashboard's address");
    // Subscribed (or waiting for topics the demo will make, which it then reads from their start) before the demo publishes.
    await waitFor(async () => {
      const s = (await (await fetch(`${url}api/snapshot`)).json()) as { status: { state: string } };
      return s.status.state === "consuming" || s.status.state === "waiting";
    }, 60_000, "the dashboard's consumer");

    browser = await launchBrowser(chromium!);
    const t0 = Date.now();
    const page = await browser.open(url!);
    await page.waitFor("window.dashboard && document.getElementById('live').classList.contains('live')", 10_000, "the page's event stream");
    const loadMs = Date.now() - t0;
    await page.evaluate("window.notReloaded = true");

    const out = join(dir, "demo-out");
    const demo = cli(["demo", "--kafka-brokers", brokers, "--kafka-topic-prefix", prefix, "--out-dir", out, "--duration-ms", "4000", "--load", "0.1", "--seed", "7"]);

    // The page, open before the demo published anything, gets its records as they come.
    await page.waitFor<number>("dashboard.state.intervals.length", 120_000, "a first interval on the page");
    expect(await demo.exited, demo.out()).toBe(0);
    const records = readFileSync(join(out, "records.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson);
    const io = records.filter((r): r is IoAggregateJson => r.type === "io_interval");
    const flows = records.filter((r): r is FlowAggregateJson => r.type === "flow_interval");
    const alerts = records.filter((r): r is AlertJson => r.type === "alert");
    const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
    expect(io.length).toBeGreaterThan(0);
    expect(flows.length).toBeGreaterThan(0);
    expect(alerts.some((a) => a.state === "raised")).toBe(true);

    // Every interval record of the demo has reached the page, which was never reloaded.
    const starts = [...new Set([...io, ...flows].map((r) => r.interval_start_unix_ns))];
    await page.waitFor(`${JSON.stringify(starts)}.every((s) => dashboard.state.intervals.includes(s)) && dashboard.state.alerts.length >= ${alerts.length}`, 60_000, "all the demo's intervals and alerts on the page");
    expect(await page.evaluate("window.notReloaded")).toBe(true);

    // A pair named by a raised pair alert, reached through the alert's link.
    const alert = alerts.find((a) => a.state === "raised" && a.scope === "pair") ?? alerts.find((a) => a.state === "raised")!;
    // (the page renders within 100 ms of a change: wait for the row)
    const link = await page.waitFor<string | null>(`(() => {
      const row = [...document.querySelectorAll("#alert-list tr")].find((tr) => tr.dataset.metric === ${JSON.stringify(alert.metric)} && tr.dataset.key === ${JSON.stringify(alert.scope_key)} && tr.dataset.state === "raised");
      const a = row && row.querySelector("a.alert-link");
      if (!a) return null;
      a.click();
      return a.getAttribute("href");
    })()`, 10_000, "the raised alert's row and link");
    expect(link, "the raised alert's row and link").toBeTruthy();
    await page.waitFor(`dashboard.view.pair && location.hash === ${JSON.stringify(link)}`, 5_000, "the alert's pair selected");
    // Its marker on its own figure's chart only (an RTT alert on the RTT chart, not on DAL's or DPL's).
    const own = { rtt_ns: "rtt", dal_ns: "dal", dpl_ns: "dpl" }[alert.metric.split(".")[0]!] ?? "e2e";
    const drawn = `Object.fromEntries(["e2e", "rtt", "dal", "dpl"].map((id) => [id, dashboard.charts[id].alertsDrawn || []]))`;
    await page.waitFor(`${drawn}[${JSON.stringify(own)}].includes(${JSON.stringify(alert.metric)})`, 10_000, `the ${alert.metric} alert marked on the ${own} chart`);
    for (const [id, metrics] of Object.entries(await page.evaluate<Record<string, string[]>>(drawn))) {
      if (id !== own) expect(metrics, `alerts marked on the ${id} chart`).not.toContain(alert.metric);
    }
    const pair = await page.evaluate<string>("dashboard.view.pair");
    if (alert.scope === "pair") expect(pair.startsWith(`${alert.scope_key}|`)).toBe(true);
    await new Promise((r) => setTimeout(r, 300)); // the page renders within 100 ms of a change

    const mine = io.filter((r) => pairKey(r) === pair);
    expect(mine.length, `records of ${pair}`).toBeGreaterThan(0);
    const charts = await page.evaluate<Record<string, ChartData>>("Object.fromEntries(Object.entries(dashboard.charts).map(([k, u]) => [k, u.data]))");
    for (const start of new Set(mine.map((r) => r.interval_start_unix_ns))) {
      const p = mergePair(start, new Map(mine.filter((r) => r.interval_start_unix_ns === start).map((r) => [r.switch_id, r])));
      const ns = (v: number | null) => (v === null ? null : v / 1e3);
      expectClose(at(charts.e2e!, start, 1), ns(p.e2e_p50), `${pair} e2e p50 @${start}`);
      expectClose(at(charts.e2e!, start, 2), ns(p.e2e_p99), `${pair} e2e p99 @${start}`);
      expectClose(at(charts.rtt!, start, 1), ns(p.rtt_p50), `${pair} RTT p50 @${start}`);
      expectClose(at(charts.rtt!, start, 2), ns(p.rtt_p99), `${pair} RTT p99 @${start}`);
      expectClose(at(charts.dal!, start, 1), ns(p.dal_p50), `${pair} DAL p50 @${start}`);
      expectClose(at(charts.dal!, start, 2), ns(p.dal_p99), `${pair} DAL p99 @${start}`);
      expectClose(at(charts.dpl!, start, 1), ns(p.dpl_p50), `${pair} DPL p50 @${start}`);
      expectClose(at(charts.dpl!, start, 2), ns(p.dpl_p99), `${pair} DPL p99 @${start}`);
    }
    // The dashed series: every I/O of the pair, from the switches' data-plane histograms (e2e at the compute side, else the storage side's; DAL).
    const hist = records.filter((r): r is IoHistogramJson => r.type === "io_histogram" && r.host !== null && pairKey({ host: r.host, target: r.target!, op: r.op }) === pair);
    expect(hist.length, `histograms of ${pair}`).toBeGreaterThan(0);
    for (const start of new Set(hist.map((h) => h.interval_start_unix_ns))) {
      const of = (figure: IoHistogramJson["figure"]) => {
        const m = new Map<number, number>();
        for (const h of hist) if (h.interval_start_unix_ns === start && h.figure === figure) for (const b of h.buckets) m.set(b.bucket, (m.get(b.bucket) ?? 0) + b.count);
        return m.size ? [...m] : undefined;
      };
      const q = (b: Array<[number, number]> | undefined, f: number) => (b ? histogramQuantile(b, f)! / 1e3 : null);
      const e2e = of("e2e_c_ns") ?? of("e2e_s_ns");
      expectClose(at(charts.e2e!, start, 3), q(e2e, 0.5), `${pair} e2e p50 of all I/Os @${start}`);
      expectClose(at(charts.e2e!, start, 4), q(e2e, 0.99), `${pair} e2e p99 of all I/Os @${start}`);
      expectClose(at(charts.dal!, start, 3), q(of("dal_ns"), 0.5), `${pair} DAL p50 of all I/Os @${start}`);
      expectClose(at(charts.dal!, start, 4), q(of("dal_ns"), 0.99), `${pair} DAL p99 of all I/Os @${start}`);
    }
    // Where the time went, for the alert's interval: storage, network, compute from the means.
    const breakdown = await page.evaluate<{ start: string; segments: string[] }>(`({ start: document.getElementById("breakdown-table")?.dataset.start, segments: [...document.querySelectorAll("#breakdown-bar div")].map((d) => d.className) })`);
    expect(breakdown.start).toBe(alert.interval_start_unix_ns);
    expect(breakdown.segments).toContain("seg-storage");
    expect(breakdown.segments).toContain("seg-network");

    // A flow, chosen in its selector: the one with a raised alert if there is one.
    const flowAlert = alerts.find((a) => a.scope === "flow" && a.state === "raised");
    const fkey = flowAlert?.scope_key ?? flowKey(flows[0]!);
    await page.evaluate(`(() => { const s = document.getElementById("flow"); s.value = ${JSON.stringify(fkey)}; s.dispatchEvent(new Event("change")); })()`);
    await page.waitFor(`dashboard.view.flow === ${JSON.stringify(fkey)}`, 5_000, "the flow selected");
    await new Promise((r) => setTimeout(r, 300));
    const fcharts = await page.evaluate<Record<string, ChartData>>("Object.fromEntries(Object.entries(dashboard.charts).map(([k, u]) => [k, u.data]))");
    const fmine = flows.filter((r) => flowKey(r) === fkey);
    expect(fmine.length).toBeGreaterThan(0);
    for (const start of new Set(fmine.map((r) => r.interval_start_unix_ns))) {
      const f = pickFlow(start, new Map(fmine.filter((r) => r.interval_start_unix_ns === start).map((r) => [r.switch_id, r])));
      const div = (v: number | null, by: number) => (v === null ? null : v / by);
      expectClose(at(fcharts.fct!, start, 1), div(f.fct_p50, 1e3), `${fkey} FCT p50 @${start}`);
      expectClose(at(fcharts.fct!, start, 2), div(f.fct_p99, 1e3), `${fkey} FCT p99 @${start}`);
      expectClose(at(fcharts.fet!, start, 1), div(f.fet_p50, 1e9), `${fkey} FET p50 @${start}`);
      expectClose(at(fcharts.fnr!, start, 1), f.fnr * 100, `${fkey} FNR @${start}`);
      expectClose(at(fcharts.ecn!, start, 1), f.ecn_ce_packets, `${fkey} ECN CE @${start}`);
      expectClose(at(fcharts.ecn!, start, 2), f.cnp_packets, `${fkey} CNP @${start}`);
      expectClose(at(fcharts.gap!, start, 1), div(f.gap_p50, 1e6), `${fkey} gap p50 @${start}`);
      expectClose(at(fcharts.gap!, start, 2), div(f.gap_p99, 1e6), `${fkey} gap p99 @${start}`);
    }

    // Every alert of the workload is listed.
    const rows = await page.evaluate<Array<{ metric: string; key: string; state: string }>>(`[...document.querySelectorAll("#alert-list tr[data-metric]")].map((tr) => ({ metric: tr.dataset.metric, key: tr.dataset.key, state: tr.dataset.state }))`);
    for (const a of alerts) expect(rows, `${a.state} ${a.metric} ${a.scope_key}`).toContainEqual({ metric: a.metric, key: a.scope_key, state: a.state });

    // Switch health: each switch's latest totals.
    const health = await page.evaluate<Record<string, string>>(`Object.fromEntries([...document.querySelectorAll("#health-list tr[data-switch]")].map((tr) => [tr.dataset.switch, tr.children[2].textContent]))`);
    for (const sw of new Set(stats.map((s) => s.switch_id))) {
      const last = stats.filter((s) => s.switch_id === sw).sort((a, b) => (BigInt(a.interval_start_unix_ns) < BigInt(b.interval_start_unix_ns) ? -1 : 1)).pop()!;
      expect(health[sw], `digests received at ${sw}`).toBe(String(last.digests_received));
    }

    // Live: an undecodable message is counted and shown, and a new interval of the pair, published after it, is charted on the open page.
    const last = mine.sort((a, b) => (BigInt(a.interval_start_unix_ns) < BigInt(b.interval_start_unix_ns) ? -1 : 1)).at(-1)!;
    const next = String(BigInt(starts.sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)).at(-1)!) + 1_000_000_000n);
    const fresh: IoAggregateJson = { ...last, interval_start_unix_ns: next, interval_end_unix_ns: String(BigInt(next) + 1_000_000_000n), dal_ns: { count: 10, min: 1000, mean: 200_000, p50: 123_456, p99: 654_321, max: 700_000 } };
    const producer = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING, clientId: "dashboard-test" }).producer();
    await producer.connect();
    await producer.send({ topic: topics.io, messages: [{ key: "bad", value: Buffer.from("not a record"), headers: { type: "rdma.telemetry.v1.NoSuchRecord" } }] });
    const sent = Date.now();
    const m = encodeRecord(fresh, topics, "protobuf", 1_000_000_000n);
    await producer.send({ topic: m.topic, messages: [{ key: m.key, value: m.value, headers: m.headers }] });
    await producer.disconnect();
    await page.waitFor(`(() => { const d = dashboard.charts.dal.data; const i = d[0].indexOf(${secs(next)}); return i >= 0 && Math.abs(d[1][i] - 123.456) < 1e-9 && Math.abs(d[2][i] - 654.321) < 1e-9; })()`, 30_000, "the new interval charted");
    const updateMs = Date.now() - sent;
    expect(await page.evaluate("window.notReloaded")).toBe(true);
    await page.waitFor(`dashboard.state.status.undecodable >= 1 && /undecodable/.test(document.getElementById("status-text").textContent)`, 10_000, "the undecodable message shown");

    await page.evaluate(`document.getElementById("storage").scrollIntoView()`);
    await page.screenshot(join(artifacts, "dashboard.png"));
    expect(page.errors).toEqual([]);
    console.log(`dashboard: page live ${loadMs} ms after opening; a published interval charted ${updateMs} ms after it was sent; screenshot ${join(artifacts, "dashboard.png")}`);

    board.child.kill("SIGINT");
    expect(await board.exited, board.out()).toBe(0);
  },
  240_000,
);
