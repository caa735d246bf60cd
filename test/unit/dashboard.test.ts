// The dashboard's store (merging the switches' aggregates, its bounds) and
// its server (assets from the package, snapshot and live updates by SSE).
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { runInNewContext } from "node:vm";
import { describe, expect, test } from "vitest";
import type { AlertJson, FlowAggregateJson, IoAggregateJson, StatsJson } from "../../contract/src/records.js";
import { DashboardStore, foldPair, mergePair, type PairChoice, type PairPoint } from "../../app/dashboard/store.js";
import { parseListen, startDashboardServer } from "../../app/dashboard/server.js";
import { topicNames } from "../../app/kafka-options.js";
import { dashboardFlags } from "../../app/dashboard/flags.js";
import { CLI } from "../support/cli.js";

const stats = (count: number, p50: number): StatsJson => ({ count, min: p50 / 2, mean: p50 * 1.1, p50, p99: p50 * 3, max: p50 * 4 });
const start = (i: number) => String(1_800_000_000_000_000_000n + BigInt(i) * 1_000_000_000n);

function io(i: number, sw: string, o: Partial<IoAggregateJson> = {}, host = "10.0.1.1"): IoAggregateJson {
  return {
    type: "io_interval", switch_id: sw, interval_start_unix_ns: start(i), interval_end_unix_ns: start(i + 1), host, target: "10.0.2.1", op: "read",
    count: 10, incomplete: 0, bytes: 40960, errors: 0, e2e_c_ns: null, e2e_s_ns: null, rtt_ns: null, dal_ns: null, dpl_ns: null, mode: "full", coverage: null, ...o,
  };
}

function flow(i: number, sw: string, messages: number, src = "10.0.1.1"): FlowAggregateJson {
  return {
    type: "flow_interval", switch_id: sw, interval_start_unix_ns: start(i), interval_end_unix_ns: start(i + 1), src, dst: "10.0.1.2", dest_qp: 8192,
    messages, bytes: messages * 1000, packets: messages, retransmitted: 0, fnr: 0, fct_ns: stats(messages, 20_000), fet_bps: stats(messages, 1e11),
    ecn_ce_packets: 1, cnp_packets: 2, gap_ns: stats(messages, 4e6), mode: "full", straddled_messages: 0, coverage: null,
  };
}

describe("dashboard store", () => {
  test("IPv6 pairs and flows: the store keys them by the records' text, and the page labels them whole", async () => {
    const store = new DashboardStore("test");
    store.add(io(0, "tor-c", { e2e_c_ns: stats(10, 50_000) }, "2001:db8:0:1::1"));
    store.add({ ...io(0, "tor-s", { e2e_s_ns: stats(10, 44_000) }, "2001:db8:0:1::1"), target: "2001:db8:0:2::1" });
    store.add(flow(0, "tor-c", 3, "2001:db8:0:1::a"));
    const snap = store.snapshot();
    expect(Object.keys(snap.pairs).sort()).toEqual(["2001:db8:0:1::1|10.0.2.1|read", "2001:db8:0:1::1|2001:db8:0:2::1|read"]);
    expect(Object.keys(snap.flows)).toEqual(["2001:db8:0:1::a|10.0.1.2|8192"]);
    // The page's labels (app/dashboard/static/app.js), as the browser runs them.
    const { readFileSync } = await import("node:fs");
    const page = readFileSync(join(import.meta.dirname, "../../app/dashboard/static/app.js"), "utf8");
    const labels = /const pairLabel = [\s\S]*?\n};\nconst flowLabel = [\s\S]*?\n};/.exec(page)![0];
    const [pairLabel, flowLabel] = runInNewContext(`${labels}; [pairLabel, flowLabel]`) as Array<(k: string) => string>;
    expect(pairLabel!("2001:db8:0:1::1|2001:db8:0:2::1|read")).toBe("2001:db8:0:1::1 → 2001:db8:0:2::1 read");
    expect(flowLabel!("2001:db8:0:1::a|10.0.1.2|8192")).toBe("2001:db8:0:1::a → 10.0.1.2 qp 8192");
  });

  test("a pair's point takes RTT and DPL from the compute side, DAL from the storage side, whatever the order", () => {
    const c = io(0, "tor-c", { e2e_c_ns: stats(10, 50_000), rtt_ns: stats(10, 6_000), dpl_ns: stats(4, 3_000), e2e_s_ns: stats(3, 44_000) });
    const s = io(0, "tor-s", { e2e_s_ns: stats(10, 44_000), dal_ns: stats(10, 30_000), count: 12, incomplete: 1 });
    const merged = mergePair(start(0), new Map([["tor-c", c], ["tor-s", s]]));
    expect(merged).toMatchObject({ e2e_p50: 50_000, rtt_p50: 6_000, dpl_p50: 3_000, dal_p50: 30_000, count: 12, incomplete: 1, switches: ["tor-c", "tor-s"] });
    for (const order of [[c, s], [s, c]]) {
      let p: PairPoint | undefined;
      let ch: PairChoice | undefined;
      for (const r of order) ({ point: p, choice: ch } = foldPair(p, ch, r));
      expect(p).toEqual(merged);
    }
  });

  test("the window keeps the newest intervals; series, switches and alerts are bounded", () => {
    const store = new DashboardStore("test", { intervals: 3, pairSeries: 2, flowSeries: 1, switches: 1, alerts: 2 });
    for (let i = 0; i < 5; i++) store.add(io(i, "tor-c", { dal_ns: stats(10, 1000 * (i + 1)) }));
    let snap = store.snapshot();
    expect(snap.intervals).toEqual([start(2), start(3), start(4)]);
    expect(snap.pairs["10.0.1.1|10.0.2.1|read"]!.map((p) => p.dal_p50)).toEqual([3000, 4000, 5000]);
    store.add(io(0, "tor-c"));
    expect(store.snapshot().dropped.tooOld).toBe(1);
    // A third pair: the least recently updated one gives way.
    store.add(io(4, "tor-c", {}, "10.0.1.2"));
    store.add(io(4, "tor-c", {}, "10.0.1.3"));
    snap = store.snapshot();
    expect(Object.keys(snap.pairs).sort()).toEqual(["10.0.1.2|10.0.2.1|read", "10.0.1.3|10.0.2.1|read"]);
    expect(snap.dropped.seriesEvicted).toBe(1);
    // The flow as the switch that counted most of its messages saw it.
    store.add(flow(4, "tor-c", 5));
    store.add(flow(4, "tor-s", 9));
    store.add(flow(4, "tor-a", 9));
    expect(store.snapshot().flows["10.0.1.1|10.0.1.2|8192"]![0]).toMatchObject({ switch_id: "tor-a", messages: 9 });
    const alert = (n: number): AlertJson => ({ type: "alert", switch_id: "tor-c", interval_start_unix_ns: start(4), metric: "fnr", scope: "flow", scope_key: `k${n}`, state: "raised", value: 1, raise_threshold: 0.5, clear_threshold: 0.1, at_unix_ns: start(5) });
    for (let n = 0; n < 3; n++) store.add(alert(n));
    expect(store.snapshot().alerts.map((a) => a.scope_key)).toEqual(["k1", "k2"]);
    const sw = (id: string) => ({ type: "switch_stats" as const, switch_id: id, interval_start_unix_ns: start(4), interval_end_unix_ns: start(5), digests_received: 1, digests_lost: 0, digests_duplicated: 0, bad_digests: 0, switch_restarts: 0, late_records: 0, late_responses: 0, totals_since_unix_ns: "0", incomplete_ios: 0, ios_left_window: 0, ios_answer_lost: 0, ios_pairing_confused: 0, untracked_flows: 0, untracked_ios: 0, io_references_lost: 0, parser_errors: 0, unknown_opcodes: 0, io_replaced: 0, io_unpaired_responses: 0, queue_pairs_learned: 0, cnp_untracked: 0, unknown_endpoint_digests: 0, reserved_address_packets: null, ipv6_ext_header_packets: null, unknown_endpoint_packets: null, mode: "full" as const });
    store.add(sw("tor-c"));
    store.add(sw("tor-s"));
    expect(Object.keys(store.snapshot().switches)).toEqual(["tor-c"]);
    expect(store.snapshot().dropped.switchesRefused).toBe(1);
    // A new interval evicts the oldest from every series.
    store.add(io(5, "tor-c", {}, "10.0.1.3"));
    expect(store.snapshot().intervals).toEqual([start(3), start(4), start(5)]);
  });

  test("--kafka-topic-prefix: the four topics of a prefix, rdma.* by default; a name Kafka refuses is refused", () => {
    expect(topicNames()).toEqual({ io: "rdma.io.v1", flow: "rdma.flow.v1", alert: "rdma.alert.v1", digest: "rdma.digest.v1" });
    expect(topicNames("lab-2").io).toBe("lab-2.io.v1");
    expect(() => topicNames("a b")).toThrow(/--kafka-topic-prefix/);
  });

  test("--listen: HOST:PORT, [IPv6]:PORT, PORT", () => {
    expect(parseListen("0.0.0.0:8080")).toEqual({ host: "0.0.0.0", port: 8080 });
    expect(parseListen("[::1]:0")).toEqual({ host: "::1", port: 0 });
    expect(parseListen("9000")).toEqual({ host: "127.0.0.1", port: 9000 });
    expect(() => parseListen("localhost")).toThrow(/HOST:PORT/);
    expect(() => parseListen("h:70000")).toThrow(/HOST:PORT/);
  });
});

describe("dashboard server", () => {
  test("serves the page with uPlot from the package, a snapshot on connect and the changes live", async () => {
    const store = new DashboardStore("test");
    const server = await startDashboardServer({ store, listen: { host: "127.0.0.1", port: 0 }, updateMs: 50 });
    try {
      const page = await (await fetch(server.url)).text();
      expect(page).toContain(`src="/vendor/uPlot.iife.min.js"`);
      expect(page).not.toMatch(/https?:\/\//);
      for (const asset of ["/vendor/uPlot.iife.min.js", "/vendor/uPlot.min.css", "/app.js", "/app.css"]) expect((await fetch(new URL(asset, server.url))).status, asset).toBe(200);
      expect((await fetch(new URL("/nope", server.url))).status).toBe(404);

      store.add(io(0, "tor-c", { dal_ns: stats(10, 1000) }));
      const ac = new AbortController();
      const res = await fetch(new URL("/api/events", server.url), { signal: ac.signal });
      expect(res.headers.get("content-type")).toBe("text/event-stream");
      const reader = res.body!.getReader();
      let text = "";
      const next = async (event: string) => {
        for (;;) {
          const m = new RegExp(`event: ${event}\\ndata: (.*)\\n\\n`).exec(text);
          if (m) {
            text = text.slice(m.index + m[0].length);
            return JSON.parse(m[1]!) as Record<string, unknown>;
          }
          const { value, done } = await reader.read();
          if (done) throw new Error("stream ended");
          text += new TextDecoder().decode(value);
        }
      };
      const snap = await next("snapshot");
      expect(Object.keys(snap.pairs as object)).toEqual(["10.0.1.1|10.0.2.1|read"]);
      store.add(io(1, "tor-c", { dal_ns: stats(10, 2000) }));
      // The change comes in an update (one already due, with the first record's pair again, may come before it).
      const points = async () => ((await next("update")).pairs as Array<[string, PairPoint]>).map(([k, p]) => [k, p.dal_p50]);
      let got = await points();
      for (let i = 0; i < 5 && !got.some(([, v]) => v === 2000); i++) got = await points();
      expect(got).toContainEqual(["10.0.1.1|10.0.2.1|read", 2000]);
      ac.abort();
    } finally {
      await server.close();
    }
  });
});

describe("dashboard alert markers", () => {
  test("each alert is marked on its own figure's chart only: RTT on RTT, DAL on DAL, a flow's gap on the gap chart", async () => {
    const server = await startDashboardServer({ store: new DashboardStore("test"), listen: { host: "127.0.0.1", port: 0 } });
    try {
      // The script as the page loads it (before app.js).
      expect(await (await fetch(server.url)).text()).toMatch(/<script src="\/alert-charts.js"><\/script>\s*<script src="\/app.js">/);
      const code = await (await fetch(new URL("/alert-charts.js", server.url))).text();
      const alertChart = runInNewContext(`${code}; alertChart`) as (a: Pick<AlertJson, "metric" | "scope">) => string;
      const PAIR_CHARTS = ["e2e", "rtt", "dal", "dpl"];
      const FLOW_CHARTS = ["fct", "fet", "fnr", "ecn", "gap"];
      const on = (metric: string, scope: AlertJson["scope"]) => (scope === "flow" ? FLOW_CHARTS : PAIR_CHARTS).filter((id) => alertChart({ metric, scope }) === id);
      // The exporter's default rules (exporter/src/alerts.ts), and the other figures an alert may name.
      expect(on("rtt_ns.p99", "pair")).toEqual(["rtt"]);
      expect(on("dal_ns.p99", "target")).toEqual(["dal"]);
      expect(on("dpl_ns.p99", "host")).toEqual(["dpl"]);
      expect(on("incomplete", "pair")).toEqual(["e2e"]);
      expect(on("e2e_c_ns.p50", "pair")).toEqual(["e2e"]);
      expect(on("fnr", "flow")).toEqual(["fnr"]);
      expect(on("gap_ns.p50", "flow")).toEqual(["gap"]);
      expect(on("fct_ns.p99", "flow")).toEqual(["fct"]);
      expect(on("fet_bps.p50", "flow")).toEqual(["fet"]);
      expect(on("cnp_packets", "flow")).toEqual(["ecn"]);
      // A figure no chart shows: on its scope's first chart, not lost.
      expect(on("something_new", "pair")).toEqual(["e2e"]);
      expect(on("something_new", "flow")).toEqual(["fct"]);
    } finally {
      await server.close();
    }
  });
});

describe("dashboard flags", () => {
  test("the bounds and the window read again at start, defaulted, each set by its flag", () => {
    expect(dashboardFlags({})).toEqual({ bounds: { intervals: 300, pairSeries: 128, flowSeries: 128, switches: 32, alerts: 500 }, rereadMs: 300_000 });
    expect(dashboardFlags({ intervals: "60", "max-pairs": "8", "max-flows": "9", "max-switches": "2", "max-alerts": "50" })).toEqual({ bounds: { intervals: 60, pairSeries: 8, flowSeries: 9, switches: 2, alerts: 50 }, rereadMs: 60_000 });
    expect(dashboardFlags({ "reread-seconds": "0" }).rereadMs).toBe(0);
    expect(dashboardFlags({ "reread-seconds": "90", intervals: "10" }).rereadMs).toBe(90_000);
  });

  test.each([
    [["--max-pairs", "0"], /^rdma-telemetry: --max-pairs must be an integer from 1 to 100000 \(got '0'\)/],
    [["--intervals", "1e3"], /--intervals must be an integer from 1 to 100000 \(got '1e3'\)/],
    [["--max-flows=-4"], /--max-flows must be an integer from 1 to 100000 \(got '-4'\)/],
    [["--max-alerts", "many"], /--max-alerts must be an integer from 1 to 1000000 \(got 'many'\)/],
    [["--reread-seconds", "2.5"], /--reread-seconds must be an integer from 0 to 604800 \(got '2.5'\)/],
  ])("rdma-telemetry dashboard %j: one line naming the flag, exit 2, nothing started", (flags, message) => {
    const r = spawnSync(process.execPath, [...CLI, "dashboard", "--kafka-brokers", "127.0.0.1:1", "--listen", "127.0.0.1:0", ...flags], {
      encoding: "utf8", timeout: 30_000, env: { ...process.env, KAFKA_BROKERS: "" },
    });
    expect(r.status, r.stdout + r.stderr).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe("");
  });
});
