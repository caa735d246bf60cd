// The exporter: digest batches from any number of switches in, records out
// to every sink (JSON lines, Kafka, the live summary), with alerts.
import type { DigestBatch } from "@rdma-telemetry/contract";
import { AlertEngine, DEFAULT_ALERT_RULES, type AlertRule } from "./alerts.js";
import { MetricsEngine, type MetricsOptions } from "./metrics.js";
import type { RecordJson } from "@rdma-telemetry/contract";

export type Sink = (rec: RecordJson) => void;

export interface ExporterOptions extends Partial<MetricsOptions> {
  alertRules?: readonly AlertRule[];
}

export class Exporter {
  readonly metrics: MetricsEngine;
  readonly alerts: AlertEngine;
  private readonly sinks: Sink[] = [];
  readonly counts = new Map<RecordJson["type"], number>();
  /** which interval aggregates the alerts evaluate (all when unset): an exporter group member skips those an earlier owner of its partition evaluated */
  alertFilter: ((r: RecordJson) => boolean) | undefined;

  constructor(options: ExporterOptions = {}) {
    this.alerts = new AlertEngine(options.alertRules ?? DEFAULT_ALERT_RULES, (a) => this.deliver(a));
    this.metrics = new MetricsEngine((r) => {
      this.deliver(r);
      if (!this.alertFilter || this.alertFilter(r)) this.alerts.observe(r);
    }, options);
  }

  addSink(s: Sink): void {
    this.sinks.push(s);
  }

  private deliver(r: RecordJson): void {
    this.counts.set(r.type, (this.counts.get(r.type) ?? 0) + 1);
    for (const s of this.sinks) s(r);
  }

  onBatch(b: DigestBatch): void {
    this.metrics.onDigestList(b.switchId, b.listTimestampNs, b.digests, b.badDigests, b.session || undefined, b.endpoints);
  }

  /** Flushes everything still open (end of a replay or shutdown). */
  finish(): void {
    this.metrics.finish();
    this.alerts.flush();
  }
}
