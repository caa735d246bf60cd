// Prometheus metrics of a controller or exporter process (--metrics-listen):
// what it received, lost and published, its Kafka queue and spill, its
// switch's P4Runtime state, rotation and coverage, the switch's own
// counters, and the latest interval quantiles per host–target pair and per
// flow. Served as text at /metrics.
//
// Cardinality: the per-pair and per-flow gauges keep the `maxPairs` and
// `maxFlows` (default 500 each) most recently updated label sets; an older
// one is removed from the registry when a new one comes. A pair has 10
// series (5 figures x p50/p99 per op), a flow 9; everything else is per
// switch or per record type.
import { createServer, type Server } from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { RecordJson, SwitchStatsJson } from "@rdma-telemetry/contract";
import type { TelemetryController } from "@rdma-telemetry/controller";
import { DEFAULT_TOPICS, type ExporterGroupMember, type ExporterGroupStats, type KafkaSink, type TopicNames } from "@rdma-telemetry/exporter";

export interface TelemetryMetricsOptions {
  /** host–target pairs (with op) whose latest interval quantiles are kept as gauges */
  maxPairs?: number;
  /** flows whose latest interval figures are kept as gauges */
  maxFlows?: number;
  topics?: TopicNames;
}

/** The switch counters of switch_stats, by metric name. */
const SWITCH_COUNTERS = ["untracked_ios", "untracked_flows", "io_references_lost", "parser_errors", "unknown_opcodes", "io_replaced", "io_unpaired_responses", "queue_pairs_learned", "cnp_untracked"] as const;
const DIGEST_COUNTS = ["digests_received", "digests_lost", "digests_duplicated", "bad_digests", "switch_restarts", "late_records"] as const;
const IO_FIGURES = [["e2e_c", "e2e_c_ns"], ["e2e_s", "e2e_s_ns"], ["rtt", "rtt_ns"], ["dal", "dal_ns"], ["dpl", "dpl_ns"]] as const;

/** Label sets of a gauge family, the newest kept, the oldest removed beyond `max`. */
class BoundedSeries {
  private readonly keys = new Map<string, Array<Record<string, string>>>();
  constructor(private readonly max: number, private readonly remove: (labels: Record<string, string>) => void) {}
  touch(key: string, labels: Array<Record<string, string>>): void {
    this.keys.delete(key);
    this.keys.set(key, labels);
    while (this.keys.size > this.max) {
      const [oldest, sets] = this.keys.entries().next().value as [string, Array<Record<string, string>>];
      this.keys.delete(oldest);
      for (const l of sets) this.remove(l);
    }
  }
  get size(): number {
    return this.keys.size;
  }
}

export class TelemetryMetrics {
  readonly registry = new Registry();
  private readonly topics: TopicNames;
  private readonly records: Counter<"type" | "topic">;
  private readonly latestStats = new Map<string, SwitchStatsJson>();
  private readonly ioQuantiles: Gauge<"switch" | "host" | "target" | "op" | "figure" | "quantile">;
  private readonly flowGauges: Record<"fct" | "gap" | "fet" | "fnr" | "ecn" | "cnp" | "messages", Gauge<string>>;
  private readonly pairs: BoundedSeries;
  private readonly flows: BoundedSeries;
  private readonly rotation: Histogram<"switch">;

  constructor(o: TelemetryMetricsOptions = {}) {
    const register = this.registry;
    this.topics = o.topics ?? DEFAULT_TOPICS;
    collectDefaultMetrics({ register, prefix: "rdma_telemetry_" });
    this.records = new Counter({ name: "rdma_telemetry_records_total", help: "Records written, by type and the Kafka topic they go to", labelNames: ["type", "topic"], registers: [register] });
    const stats = this.latestStats;
    for (const name of DIGEST_COUNTS) {
      new Counter({
        name: `rdma_telemetry_${name}_total`, help: `switch_stats ${name}: counted by the exporter from the switch's digests, since it started`, labelNames: ["switch"], registers: [register],
        collect() {
          this.reset();
          for (const [sw, s] of stats) this.inc({ switch: sw }, s[name] ?? 0);
        },
      });
    }
    for (const name of SWITCH_COUNTERS) {
      new Counter({
        name: `rdma_telemetry_switch_${name}_total`, help: `The switch's own ${name} counter (read by the controller every interval)`, labelNames: ["switch"], registers: [register],
        collect() {
          this.reset();
          for (const [sw, s] of stats) if (s[name] !== null && s[name] !== undefined) this.inc({ switch: sw }, s[name]);
        },
      });
    }
    new Gauge({
      name: "rdma_telemetry_incomplete_ios", help: "I/Os without a response in the latest closed interval", labelNames: ["switch"], registers: [register],
      collect() {
        for (const [sw, s] of stats) this.set({ switch: sw }, s.incomplete_ios);
      },
    });
    this.ioQuantiles = new Gauge({ name: "rdma_telemetry_io_latency_ns", help: "Latest closed interval's quantile of an I/O figure (e2e_c, e2e_s, rtt, dal, dpl) per host–target pair and op", labelNames: ["switch", "host", "target", "op", "figure", "quantile"], registers: [register] });
    const flowLabels = ["switch", "src", "dst", "dest_qp"];
    this.flowGauges = {
      fct: new Gauge({ name: "rdma_telemetry_flow_fct_ns", help: "Latest closed interval's FCT quantile per flow", labelNames: [...flowLabels, "quantile"], registers: [register] }),
      gap: new Gauge({ name: "rdma_telemetry_flow_gap_ns", help: "Latest closed interval's gap (GPU idle) quantile per flow", labelNames: [...flowLabels, "quantile"], registers: [register] }),
      fet: new Gauge({ name: "rdma_telemetry_flow_fet_bps", help: "Latest closed interval's median FET per flow", labelNames: flowLabels, registers: [register] }),
      fnr: new Gauge({ name: "rdma_telemetry_flow_fnr", help: "Latest closed interval's FNR (retransmitted / packets) per flow", labelNames: flowLabels, registers: [register] }),
      ecn: new Gauge({ name: "rdma_telemetry_flow_ecn_ce_packets", help: "ECN-CE packets of the flow in the latest closed interval", labelNames: flowLabels, registers: [register] }),
      cnp: new Gauge({ name: "rdma_telemetry_flow_cnp_packets", help: "CNPs of the flow's host pair in the latest closed interval", labelNames: flowLabels, registers: [register] }),
      messages: new Gauge({ name: "rdma_telemetry_flow_messages", help: "Messages of the flow in the latest closed interval", labelNames: flowLabels, registers: [register] }),
    };
    this.pairs = new BoundedSeries(o.maxPairs ?? 500, (l) => this.ioQuantiles.remove(l));
    this.flows = new BoundedSeries(o.maxFlows ?? 500, (l) => {
      for (const [name, g] of Object.entries(this.flowGauges)) {
        if (name === "fct" || name === "gap") for (const quantile of ["0.5", "0.99"]) g.remove({ ...l, quantile });
        else g.remove(l);
      }
    });
    this.rotation = new Histogram({ name: "rdma_telemetry_rotation_duration_seconds", help: "Polling rotation: the window's move to the switch's acknowledgement", labelNames: ["switch"], buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1], registers: [register] });
  }

  private topicOf(r: RecordJson): string {
    if (r.type === "io" || r.type === "io_interval") return this.topics.io;
    if (r.type === "message" || r.type === "flow_interval") return this.topics.flow;
    return this.topics.alert;
  }

  /** Every record the exporter writes. */
  onRecord(r: RecordJson): void {
    this.records.inc({ type: r.type, topic: this.topicOf(r) });
    if (r.type === "switch_stats") this.latestStats.set(r.switch_id, r);
    else if (r.type === "io_interval") {
      const base = { switch: r.switch_id, host: r.host, target: r.target, op: r.op };
      const sets: Array<Record<string, string>> = [];
      for (const [figure, field] of IO_FIGURES) {
        const st = r[field];
        for (const [q, v] of [["0.5", st?.p50], ["0.99", st?.p99]] as const) {
          const labels = { ...base, figure, quantile: q };
          sets.push(labels);
          if (v === undefined) this.ioQuantiles.remove(labels);
          else this.ioQuantiles.set(labels, v);
        }
      }
      this.pairs.touch(`${r.switch_id}|${r.host}|${r.target}|${r.op}`, sets);
    } else if (r.type === "flow_interval") {
      const labels = { switch: r.switch_id, src: r.src, dst: r.dst, dest_qp: String(r.dest_qp) };
      const g = this.flowGauges;
      const q = (gauge: Gauge<string>, st: { p50: number; p99: number } | null) => {
        if (st) {
          gauge.set({ ...labels, quantile: "0.5" }, st.p50);
          gauge.set({ ...labels, quantile: "0.99" }, st.p99);
        }
      };
      q(g.fct, r.fct_ns);
      q(g.gap, r.gap_ns);
      if (r.fet_bps) g.fet.set(labels, r.fet_bps.p50);
      g.fnr.set(labels, r.fnr);
      g.ecn.set(labels, r.ecn_ce_packets);
      g.cnp.set(labels, r.cnp_packets);
      g.messages.set(labels, r.messages);
      this.flows.touch(`${labels.switch}|${labels.src}|${labels.dst}|${labels.dest_qp}`, [labels]);
    }
  }

  /** The Kafka sink's queue, spill and delivery. */
  watchKafka(sink: KafkaSink): void {
    const register = [this.registry];
    new Gauge({ name: "rdma_telemetry_kafka_pending_messages", help: "Messages not yet acknowledged by Kafka (in memory and spilled)", registers: register, collect() { this.set(sink.pending); } });
    new Gauge({ name: "rdma_telemetry_kafka_spilled_messages", help: "Messages waiting in the spill files", registers: register, collect() { this.set(sink.stats.spilledNow); } });
    new Gauge({ name: "rdma_telemetry_kafka_spill_bytes", help: "Bytes in the spill files", registers: register, collect() { this.set(sink.spilledBytes); } });
    new Counter({ name: "rdma_telemetry_kafka_sent_total", help: "Messages acknowledged by Kafka", registers: register, collect() { this.reset(); this.inc(sink.stats.sent); } });
    new Counter({ name: "rdma_telemetry_kafka_dropped_total", help: "Messages dropped because Kafka was away and the spill was full", registers: register, collect() { this.reset(); this.inc(sink.stats.dropped); } });
    new Counter({ name: "rdma_telemetry_kafka_send_failures_total", help: "Failed attempts to connect or send", registers: register, collect() { this.reset(); this.inc(sink.stats.sendFailures); } });
  }

  /** An exporter group member's counters (ExporterGroupStats), as rdma_telemetry_exporter_group_<name>_total. */
  watchExporterGroup(member: ExporterGroupMember): void {
    const register = [this.registry];
    const help: Record<keyof ExporterGroupStats, string> = {
      digests: "Digests consumed and joined", records: "Records published (committed)", transactions: "Transactions committed", aborted: "Transactions aborted (the partition is taken on again from its last commit)",
      badDigests: "Digests that could not be decoded, dropped", unknownSwitch: "Digests of a switch not in --switch-id, dropped", duplicateDigests: "Digests received twice, taken once",
      lateDigests: "Digests older than what was settled (their interval aggregates were out)", suppressedRecords: "Records an earlier owner of the partition had committed, not published again",
      replayedDigests: "Digests re-read after taking a partition over", takeovers: "Partitions taken over with open digests to re-read",
    };
    for (const [k, h] of Object.entries(help) as Array<[keyof ExporterGroupStats, string]>) {
      const name = `rdma_telemetry_exporter_group_${k.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase())}_total`;
      new Counter({ name, help: h, registers: register, collect() { this.reset(); this.inc(member.stats[k]); } });
    }
    new Gauge({ name: "rdma_telemetry_exporter_group_partitions", help: "Digest partitions this member holds", registers: register, collect() { this.set(member.assigned.size); } });
  }

  /** A controller's P4Runtime state, rotation and watchlist coverage. */
  watchController(switchId: string, controller: TelemetryController): void {
    const register = [this.registry];
    const labels = { switch: switchId };
    new Gauge({ name: "rdma_telemetry_p4runtime_connected", help: "1 while the StreamChannel to the switch is up", labelNames: ["switch"], registers: register, collect() { this.set(labels, controller.stats.connected ? 1 : 0); } });
    new Gauge({ name: "rdma_telemetry_p4runtime_primary", help: "1 while this controller is the switch's primary", labelNames: ["switch"], registers: register, collect() { this.set(labels, controller.stats.primary ? 1 : 0); } });
    new Gauge({ name: "rdma_telemetry_mode", help: "The switch's mode: 1 full, 2 polling", labelNames: ["switch"], registers: register, collect() { this.set(labels, controller.currentMode === "polling" ? 2 : 1); } });
    new Gauge({
      name: "rdma_telemetry_watchlist_coverage_ratio", help: "Flows measured in the current polling window over the flows known (1 in full mode)", labelNames: ["switch"], registers: register,
      collect() { this.set(labels, controller.coverage().ratio); },
    });
    new Gauge({ name: "rdma_telemetry_watchlist_known_flows", help: "Flows the controller knows of", labelNames: ["switch"], registers: register, collect() { this.set(labels, controller.coverage().known_flows); } });
    controller.on("rotated", (r) => this.rotation.observe(labels, r.durationMs / 1000));
  }

  /** Serves /metrics on `listen` (HOST:PORT; port 0 for any). */
  async listen(listen: string): Promise<{ url: string; close: () => Promise<void> }> {
    const i = listen.lastIndexOf(":");
    const host = i > 0 ? listen.slice(0, i) : "127.0.0.1";
    const port = Number(listen.slice(i + 1));
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`--metrics-listen: '${listen}' is not HOST:PORT`);
    const server: Server = createServer((req, res) => {
      if (req.url !== "/metrics") {
        res.writeHead(404).end("only /metrics here\n");
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": this.registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
    const addr = server.address();
    const bound = typeof addr === "object" && addr ? addr.port : port;
    return { url: `http://${host}:${bound}/metrics`, close: () => new Promise((r) => server.close(() => r())) };
  }
}
