// Prometheus's own tooling on deploy/prometheus: promtool checks the scrape
// config and the alerting rules, and runs every alert over series shaped as
// the processes serve them (promtool's rule unit tests): it fires when what it
// watches grows, with the labels and annotations an operator reads, and stays
// quiet before, after, and across a process restart (a counter back at 0).
// Every metric and label the rules ask for is one the processes serve, and
// every process docker-compose.yml gives --metrics-listen is scraped.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, expect, test } from "vitest";
import { parse, stringify } from "yaml";
import { servedSeries, unservedIn } from "../support/served-metrics.js";

const root = resolve(import.meta.dirname, "../..");
const rulesFile = join(root, "deploy/prometheus/rules.yml");
const configFile = join(root, "deploy/prometheus/prometheus.yml");
const dir = mkdtempSync(join(tmpdir(), "prometheus-rules-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const have = spawnSync("promtool", ["--version"], { encoding: "utf8" }).status === 0;
// CI installs Debian's prometheus, which has promtool (.ci/run): there the test must run, never skip.
if (!have && process.env.CI) throw new Error("promtool not found: .ci/run installs Debian's prometheus package");

interface AlertRule { alert: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
const rules: AlertRule[] = (parse(readFileSync(rulesFile, "utf8")) as { groups: Array<{ rules: AlertRule[] }> }).groups.flatMap((g) => g.rules);

const ctl = (sw: string) => ({ job: "rdma-telemetry-controller", instance: `controller-${sw.slice(-1)}:9464`, switch: sw });
const member = (n: number) => ({ job: "rdma-telemetry-exporter", instance: `exporter-${n}:9464` });
const series = (name: string, labels: Record<string, string>) => `${name}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(",")}}`;

/** One alert's case: input series at 1 min steps (promtool's notation), the minutes it must fire at (its labels and $value), and the minutes it must not. */
interface Case {
  alert: string;
  input: Array<[name: string, labels: Record<string, string>, values: string]>;
  fires: Array<{ at: number; alerts: Array<{ labels: Record<string, string>; value?: number }> }>;
  quiet: number[];
}

// Counters flat at 0 for 10 min, then grown at 11 min: increase over a window the samples cover whole is exact.
const cases: Case[] = [
  { alert: "RdmaTelemetryDigestsLost", input: [["rdma_telemetry_digests_lost_total", ctl("tor-c"), "0x10 5x10"], ["rdma_telemetry_digests_lost_total", ctl("tor-s"), "3x10 0x10"]],
    fires: [{ at: 12, alerts: [{ labels: ctl("tor-c"), value: 5 }] }], quiet: [10, 17] },
  { alert: "RdmaTelemetryKafkaRecordsDropped", input: [["rdma_telemetry_kafka_dropped_total", member(1), "0x10 2x10"], ["rdma_telemetry_kafka_dropped_total", member(2), "3x10 0x10"]],
    fires: [{ at: 12, alerts: [{ labels: member(1), value: 2 }] }], quiet: [10, 17] },
  { alert: "RdmaTelemetryExporterUnknownSwitch", input: [["rdma_telemetry_exporter_group_unknown_switch_total", member(1), "0x10 7x10"]],
    fires: [{ at: 12, alerts: [{ labels: member(1), value: 7 }] }], quiet: [10, 17] },
  { alert: "RdmaTelemetryBadDigests", input: [["rdma_telemetry_bad_digests_total", ctl("tor-c"), "0x10 1x10"], ["rdma_telemetry_exporter_group_bad_digests_total", member(2), "0x10 3x10"]],
    fires: [{ at: 12, alerts: [{ labels: ctl("tor-c"), value: 1 }, { labels: member(2), value: 3 }] }], quiet: [10, 17] },
  { alert: "RdmaTelemetryUnknownEndpointDigests", input: [["rdma_telemetry_unknown_endpoint_digests_total", ctl("tor-s"), "0x10 4x15"]],
    fires: [{ at: 12, alerts: [{ labels: ctl("tor-s"), value: 4 }] }], quiet: [10, 22] },
  { alert: "RdmaTelemetryKafkaSpillSetAside", input: [["rdma_telemetry_kafka_set_aside_total", ctl("tor-c"), "0x20 2x20"]],
    fires: [{ at: 22, alerts: [{ labels: ctl("tor-c"), value: 2 }] }], quiet: [20, 37] },
  { alert: "RdmaTelemetryTargetDown", input: [["up", member(2), "1x5 0x10"], ["up", { job: "node", instance: "host-1:9100" }, "0x15"]],
    fires: [{ at: 8, alerts: [{ labels: member(2) }] }], quiet: [5, 6] },
  { alert: "RdmaTelemetryNoPrimaryController", input: [
    ["rdma_telemetry_controller_role", { ...ctl("tor-c"), role: "primary" }, "1x5 0x10"],
    ["rdma_telemetry_controller_role", { ...ctl("tor-c"), instance: "controller-c-backup:9464", role: "primary" }, "0x15"],
    ["rdma_telemetry_controller_role", { ...ctl("tor-s"), role: "primary" }, "0x5 1x10"],
    ["rdma_telemetry_controller_role", { ...ctl("tor-s"), instance: "controller-s-backup:9464", role: "primary" }, "1x15"],
  ], fires: [{ at: 8, alerts: [{ labels: { switch: "tor-c" } }] }], quiet: [5, 6] },
  { alert: "RdmaTelemetryControllerDisconnected", input: [["rdma_telemetry_controller_role", { ...ctl("tor-c"), role: "disconnected" }, "0x5 1x5 0x5"]],
    fires: [{ at: 8, alerts: [{ labels: { ...ctl("tor-c"), role: "disconnected" } }] }], quiet: [6, 12] },
  { alert: "RdmaTelemetryKafkaSpilling", input: [["rdma_telemetry_kafka_spilled_messages", ctl("tor-c"), "0x5 120x10 0x5"]],
    fires: [{ at: 12, alerts: [{ labels: ctl("tor-c"), value: 120 }] }], quiet: [10, 17] },
  { alert: "RdmaTelemetrySwitchRestarted", input: [["rdma_telemetry_switch_restarts_total", ctl("tor-s"), "0x20 1x20"]],
    fires: [{ at: 22, alerts: [{ labels: ctl("tor-s"), value: 1 }] }], quiet: [20, 37] },
  { alert: "RdmaTelemetryExporterTransactionsAborting", input: [["rdma_telemetry_exporter_group_aborted_total", member(1), "0x10 0+2x10"], ["rdma_telemetry_exporter_group_aborted_total", member(2), "0x10 3x10"]],
    fires: [{ at: 15, alerts: [{ labels: member(1), value: 8 }] }], quiet: [12, 30] },
  { alert: "RdmaTelemetryLateRecords", input: [["rdma_telemetry_late_records_total", ctl("tor-c"), "0x10 2x10"], ["rdma_telemetry_exporter_group_late_digests_total", member(1), "0x10 6x10"]],
    fires: [{ at: 12, alerts: [{ labels: ctl("tor-c"), value: 2 }, { labels: member(1), value: 6 }] }], quiet: [10, 21] },
  { alert: "RdmaTelemetryCommandsGivenUp", input: [["rdma_telemetry_given_up_silent_switch_total", ctl("tor-s"), "0x10 9x10"], ["rdma_telemetry_exporter_group_given_up_silent_switch_total", member(2), "0x10 1x10"]],
    fires: [{ at: 12, alerts: [{ labels: ctl("tor-s"), value: 9 }, { labels: member(2), value: 1 }] }], quiet: [10, 21] },
  { alert: "RdmaTelemetryStorageLateResponses", input: [["rdma_telemetry_late_responses_total", ctl("tor-s"), "0x10 3x10"]],
    fires: [{ at: 12, alerts: [{ labels: ctl("tor-s"), value: 3 }] }], quiet: [10, 21] },
  // Held for 10 min: one burst does not page, a steady growth does.
  { alert: "RdmaTelemetryFlowSlotsTaken", input: [["rdma_telemetry_switch_untracked_flows_total", ctl("tor-c"), "0x10 0+1x30"], ["rdma_telemetry_switch_untracked_flows_total", ctl("tor-s"), "0x10 50x30"]],
    fires: [{ at: 23, alerts: [{ labels: ctl("tor-c"), value: 10 }] }], quiet: [12, 21] },
  { alert: "RdmaTelemetryIPv6EndpointsUnmeasured", input: [["rdma_telemetry_switch_unknown_endpoint_packets_total", ctl("tor-c"), "0x10 0+60x30"], ["rdma_telemetry_switch_unknown_endpoint_packets_total", ctl("tor-s"), "0x10 8x30"]],
    fires: [{ at: 23, alerts: [{ labels: ctl("tor-c") }] }], quiet: [12, 21] },
  { alert: "RdmaTelemetryHistogramCountersCleared", input: [["rdma_telemetry_histogram_cells_lower_total", { ...ctl("tor-c"), why: "unexplained" }, "0x10 40x10"], ["rdma_telemetry_histogram_cells_lower_total", { ...ctl("tor-c"), why: "wrap" }, "0x10 0+5x10"]],
    fires: [{ at: 12, alerts: [{ labels: { ...ctl("tor-c"), why: "unexplained" }, value: 40 }] }], quiet: [10, 21] },
  { alert: "RdmaTelemetryHistogramIdsExhausted", input: [["rdma_telemetry_histogram_ids_refused_total", { ...ctl("tor-c"), kind: "pair" }, "0x10 3x10"], ["rdma_telemetry_histogram_ids_refused_total", { ...ctl("tor-c"), kind: "flow" }, "0x20"]],
    fires: [{ at: 12, alerts: [{ labels: { ...ctl("tor-c"), kind: "pair" }, value: 3 }] }], quiet: [10, 21] },
];

/** Prometheus's humanize for what the cases give: numbers from 1 to 999, 4 significant digits. */
function humanize(v: number): string {
  if (!(v >= 1 && v < 1000)) throw new Error(`case value ${v}: give one from 1 to 999`);
  return String(Number(v.toPrecision(4)));
}

/** The annotations as Prometheus renders them for an alert with these labels and value: the rules use {{ $labels.NAME }} and {{ $value | humanize }} only. */
function render(text: string, labels: Record<string, string>, value: number | undefined): string {
  const out = text
    .replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, l: string) => {
      if (!(l in labels)) throw new Error(`${text}: label ${l} is not on the alert`);
      return labels[l]!;
    })
    .replace(/\{\{ \$value \| humanize \}\}/g, () => {
      if (value === undefined) throw new Error(`${text}: the case gives no value`);
      return humanize(value);
    });
  if (out.includes("{{")) throw new Error(`${text}: a template this test does not render`);
  return out;
}

test.skipIf(!have)("promtool: the scrape config and the alerting rules are valid", () => {
  const r = spawnSync("promtool", ["check", "config", configFile], { encoding: "utf8" });
  expect(r.status, r.stdout + r.stderr).toBe(0);
  expect(r.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
});

test.skipIf(!have)("promtool's rule unit tests: every alert fires on what it watches, with its labels and annotations, and only then", () => {
  const names = rules.map((r) => r.alert);
  expect(new Set(names).size).toBe(names.length);
  expect(cases.map((c) => c.alert).sort()).toEqual([...names].sort());
  const byName = new Map(rules.map((r) => [r.alert, r]));
  const tests = cases.map((c) => {
    const rule = byName.get(c.alert)!;
    const expect1 = (l: Record<string, string>, value: number | undefined) => {
      const labels = { ...l, ...rule.labels };
      return { exp_labels: labels, exp_annotations: Object.fromEntries(Object.entries(rule.annotations ?? {}).map(([k, v]) => [k, render(v, labels, value)])) };
    };
    return {
      name: c.alert,
      interval: "1m",
      input_series: c.input.map(([name, labels, values]) => ({ series: series(name, labels), values })),
      alert_rule_test: [
        ...c.fires.map((f) => ({ eval_time: `${f.at}m`, alertname: c.alert, exp_alerts: f.alerts.map((a) => expect1(a.labels, a.value)) })),
        ...c.quiet.map((at) => ({ eval_time: `${at}m`, alertname: c.alert, exp_alerts: [] })),
      ],
    };
  });
  const file = join(dir, "rules.test.yml");
  writeFileSync(file, stringify({ rule_files: [rulesFile], evaluation_interval: "1m", tests }));
  const r = spawnSync("promtool", ["test", "rules", file], { encoding: "utf8" });
  expect(r.status, r.stdout + r.stderr).toBe(0);
  expect(r.stdout).toContain("SUCCESS");
});

test("the alerting rules ask only for metrics the processes serve, with their labels", async () => {
  const served = await servedSeries();
  const seen = { names: 0 };
  const wrong = rules.flatMap((r) => unservedIn(r.expr, served, seen));
  expect(seen.names).toBeGreaterThanOrEqual(rules.length);
  expect(wrong).toEqual([]);
  // Each rule says what it means and how bad: severity, summary, description.
  for (const r of rules) {
    expect(["critical", "warning", "info"], r.alert).toContain(r.labels?.severity);
    expect(r.annotations?.summary, r.alert).toBeTruthy();
    expect(r.annotations?.description, r.alert).toBeTruthy();
  }
});

test("Prometheus in docker-compose.yml loads the rules and scrapes every service that serves /metrics, at its port", () => {
  const compose = parse(readFileSync(join(root, "docker-compose.yml"), "utf8"), { merge: true }) as { services: Record<string, { command?: string[] | string; volumes?: string[]; image?: string }> };
  const config = parse(readFileSync(configFile, "utf8")) as { rule_files: string[]; scrape_configs: Array<{ job_name: string; dns_sd_configs?: Array<{ names: string[]; port: number }> }> };
  expect(config.rule_files).toEqual(["rules.yml"]);
  const scraped = new Map(config.scrape_configs.flatMap((s) => (s.dns_sd_configs ?? []).flatMap((d) => d.names.map((n) => [n, { port: d.port, job: s.job_name }] as const))));
  const serving = Object.entries(compose.services).flatMap(([name, s]) => {
    const cmd = Array.isArray(s.command) ? s.command : [];
    const i = cmd.indexOf("--metrics-listen");
    return i >= 0 ? [{ name, port: Number(cmd[i + 1]!.split(":").pop()) }] : [];
  });
  expect(serving.map((s) => s.name).sort()).toEqual(["controller", "controller-c", "controller-s", "exporter"]);
  for (const s of serving) {
    expect(scraped.get(s.name)?.port, s.name).toBe(s.port);
    // The rules' TargetDown watches these jobs.
    expect(scraped.get(s.name)!.job).toMatch(/^rdma-telemetry/);
  }
  const prom = compose.services.prometheus!;
  expect(prom.image).toMatch(/^prom\/prometheus:v[\d.]+$/);
  expect(prom.volumes).toContain("./deploy/prometheus:/etc/prometheus:ro");
});
