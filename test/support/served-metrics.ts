// Every series name the processes can serve at /metrics, with its label
// names, and a check of a PromQL expression against them: what the Grafana
// dashboard and the alerting rules in deploy/ may ask for.
import { ExporterGroupMember, KafkaSink, MetricsEngine } from "../../exporter/src/index.js";
import { parseConfig, TelemetryController } from "../../p4runtime-controller/src/index.js";
import { TelemetryMetrics } from "../../app/prometheus.js";

/** Series names as served (histograms as _bucket, _sum, _count) -> label names: a controller's, an exporter group member's, the Kafka sink's and the exporter's families together. */
export async function servedSeries(): Promise<Map<string, Set<string>>> {
  const metrics = new TelemetryMetrics();
  metrics.watchKafka(new KafkaSink({ brokers: ["127.0.0.1:1"] }));
  metrics.watchController("tor", new TelemetryController(parseConfig({ switch: { address: "127.0.0.1:1", switch_id: "tor" }, ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }] })));
  metrics.watchExporterGroup(new ExporterGroupMember({ brokers: ["127.0.0.1:1"] }));
  metrics.watchEngine(new MetricsEngine(() => {}));
  const served = new Map<string, Set<string>>();
  for (const fam of await metrics.families()) {
    const labels = new Set(fam.labelNames);
    if (fam.type === "histogram") {
      served.set(`${fam.name}_bucket`, new Set([...labels, "le"]));
      for (const s of ["_sum", "_count"]) served.set(fam.name + s, labels);
    } else served.set(fam.name, labels);
  }
  return served;
}

/**
 * What in `expr` the processes do not serve: a metric name, a label one of
 * its selectors matches on, a label it groups by (by/without), or
 * histogram_quantile over series without `le`. Also counts the names it
 * checked into `seen`.
 */
export function unservedIn(expr: string, served: Map<string, Set<string>>, seen: { names: number } = { names: 0 }): string[] {
  const wrong: string[] = [];
  for (const [, name, matchers] of expr.matchAll(/\b(rdma_telemetry_[a-z0-9_]+)(\{[^}]*\})?/g)) {
    seen.names++;
    const labels = served.get(name!);
    if (!labels) {
      wrong.push(`${name} (in ${expr})`);
      continue;
    }
    for (const [, label] of (matchers ?? "").matchAll(/([a-z_]+)\s*(?:=~|!~|!=|=)/g)) if (!labels.has(label!)) wrong.push(`${name} has no label ${label}`);
  }
  // Grouping labels (by/without) exist on some metric of the expression.
  const own = new Set([...expr.matchAll(/\brdma_telemetry_[a-z0-9_]+/g)].flatMap((m) => [...(served.get(m[0]) ?? [])]));
  for (const [, list] of expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)) for (const l of list!.split(",").map((x) => x.trim())) if (!own.has(l)) wrong.push(`no label ${l} to group by in ${expr}`);
  // histogram_quantile only over _bucket series, which carry le.
  if (expr.includes("histogram_quantile") && !/_bucket\{/.test(expr)) wrong.push(`histogram_quantile without buckets: ${expr}`);
  return wrong;
}
