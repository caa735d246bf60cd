// Prometheus metrics of a controller or exporter process (--metrics-listen):
// what it received, lost and published, its Kafka queue and spill, its
// switch's P4Runtime state, rotation and coverage, the switch's own
// counters, and latency histograms per host–target pair and per flow.
// Served as text at /metrics. Names follow Prometheus's conventions: base
// units (seconds, bytes), `_total` on counters, `_ratio` on ratios.
//
// Cardinality: the per-pair and per-flow series keep the `maxPairs` and
// `maxFlows` (default 500 each) most recently updated label sets; an older
// one is removed from the registry when a new one comes. A pair has 420
// series (5 figures x 84: 82 buckets, sum, count), a flow 173 (FCT and gap
// histograms, FET, FNR, 3 counters); everything else is per switch or per
// record type.
import { createServer, type Server } from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { bucketValue, type HistogramBucketJson, type RecordJson, type SwitchStatsJson } from "@rdma-telemetry/contract";
import { modeCode, type TelemetryController } from "@rdma-telemetry/controller";
import { DEFAULT_TOPICS, type ExporterGroupMember, type ExporterGroupStats, type KafkaSink, type MetricsEngine, type TopicNames } from "@rdma-telemetry/exporter";
import { LabeledHistogram } from "./prometheus-histogram.js";

export interface TelemetryMetricsOptions {
  /** host–target pairs (with op) whose latency histograms are kept (the newest) */
  maxPairs?: number;
  /** flows whose histograms, gauges and counters are kept (the newest) */
  maxFlows?: number;
  topics?: TopicNames;
}

/** The switch counters of switch_stats, by metric name. */
const SWITCH_COUNTERS = ["untracked_ios", "untracked_flows", "io_references_lost", "parser_errors", "unknown_opcodes", "io_replaced", "io_unpaired_responses", "queue_pairs_learned", "cnp_untracked", "reserved_address_packets", "ipv6_ext_header_packets", "unknown_endpoint_packets"] as const;
const DIGEST_COUNTS = ["digests_received", "digests_lost", "digests_duplicated", "bad_digests", "switch_restarts", "late_records", "late_responses"] as const;
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

/**
 * The latency histograms' bucket bounds, in seconds, the same in every
 * process so that switches aggregate with `histogram_quantile`: 1 µs to
 * about 1 s, four buckets per doubling (each bound 2^(1/4), about 19%, above
 * the one before). On the demo's records p50 and p99 estimated from them are
 * within a few % of the exact figure (test/e2e/prometheus.test.ts measures it).
 */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = Array.from({ length: 81 }, (_, i) => Number((1e-6 * 2 ** (i / 4)).toPrecision(6)));

/**
 * The data plane's histograms (io_histogram and flow_histogram records) in
 * Prometheus: four bounds per octave from 1,024 ns to 2^32 ns, each a bound
 * of the data plane's own buckets (contract/src/histogram.ts), so every
 * count is exact and every switch has the same bounds. The records carry
 * the full resolution (eight per octave).
 */
export const DATAPLANE_BUCKETS_SECONDS: readonly number[] = Array.from({ length: 22 * 4 }, (_, i) => (((8 + 2 * (i % 4)) * 2 ** (10 + Math.floor(i / 4))) / 8) / 1e9).concat([2 ** 32 / 1e9]);

export class TelemetryMetrics {
  readonly registry = new Registry();
  private readonly topics: TopicNames;
  private readonly records: Counter<"type" | "topic">;
  private readonly latestStats = new Map<string, SwitchStatsJson>();
  private readonly incomplete = new Map<string, number>();
  private readonly unknownEndpoints = new Map<string, number>();
  private readonly answerLost = new Map<string, number>();
  private readonly pairingConfused = new Map<string, number>();
  private readonly ioLatency: LabeledHistogram;
  private readonly flowLatency: Record<"fct" | "gap", LabeledHistogram>;
  private readonly dataplane: Record<"io" | "fct", LabeledHistogram>;
  private readonly flowGauges: Record<"fet" | "fnr", Gauge<string>>;
  private readonly flowCounters: Record<"ecn" | "messages", Counter<string>>;
  /**
   * CNPs per host pair: every flow of a pair carries the pair's count of the
   * interval (SPEC §4), counted here once per pair and interval.
   */
  private readonly pairCnp: Counter<string>;
  private readonly pairCnpCounted = new Map<string, string>();
  private readonly cnpPairs: BoundedSeries;
  private readonly pairs: BoundedSeries;
  private readonly flows: BoundedSeries;
  private readonly rotation: Histogram<"switch">;

  constructor(o: TelemetryMetricsOptions = {}) {
    const register = this.registry;
    this.topics = o.topics ?? DEFAULT_TOPICS;
    collectDefaultMetrics({ register, prefix: "rdma_telemetry_" });
    // prom-client's gauges of active handles, requests and resources in all end in _total, which names
    // counters (`promtool check metrics` rejects them); their per-type gauges stay, and sum to the same.
    for (const kind of ["handles", "requests", "resources"]) register.removeSingleMetric(`rdma_telemetry_nodejs_active_${kind}_total`);
    this.records = new Counter({ name: "rdma_telemetry_records_total", help: "Records written, by type and the Kafka topic they go to", labelNames: ["type", "topic"], registers: [register] });
    const stats = this.latestStats;
    for (const name of DIGEST_COUNTS) {
      new Counter({
        name: `rdma_telemetry_${name}_total`, help: `switch_stats ${name}: counted by the exporter from the switch's digests, as of the latest closed interval, since its totals_since_unix_ns (continued across restarts on a journal)`, labelNames: ["switch"], registers: [register],
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
    // Sums over the closed intervals' switch_stats, per switch.
    const perSwitch = (name: string, help: string, sums: ReadonlyMap<string, number>) =>
      new Counter({
        name, help, labelNames: ["switch"], registers: [register],
        collect() {
          this.reset();
          for (const [sw, n] of sums) this.inc({ switch: sw }, n);
        },
      });
    perSwitch("rdma_telemetry_incomplete_ios_total", "I/Os without a response, summed over the closed intervals (switch_stats incomplete_ios)", this.incomplete);
    perSwitch("rdma_telemetry_ios_answer_lost_total", "I/Os with no response seen whose answer is unknown: digests the switch sent after the command were lost on the way (switch_stats ios_answer_lost)", this.answerLost);
    perSwitch("rdma_telemetry_ios_pairing_confused_total", "Responses the switch matched through another queue's pairing (a Tofino build keys queue pairs by QP number): neither I/O gets figures from it (switch_stats ios_pairing_confused)", this.pairingConfused);
    perSwitch("rdma_telemetry_unknown_endpoint_digests_total", "Digests dropped because an endpoint key in them had no IPv6 address from the switch's controller (switch_stats unknown_endpoint_digests)", this.unknownEndpoints);
    const buckets = LATENCY_BUCKETS_SECONDS;
    this.ioLatency = new LabeledHistogram("rdma_telemetry_io_latency_seconds", "I/O figures (figure: e2e_c, e2e_s, rtt, dal, dpl) of every I/O record, per host–target pair and op", ["switch", "host", "target", "op", "figure"], buckets);
    const flowLabels = ["switch", "src", "dst", "dest_qp"];
    this.flowLatency = {
      fct: new LabeledHistogram("rdma_telemetry_flow_fct_seconds", "FCT of every message record, per flow", flowLabels, buckets),
      gap: new LabeledHistogram("rdma_telemetry_flow_gap_seconds", "Gap (GPU idle) before every message record that has one, per flow", flowLabels, buckets),
    };
    this.dataplane = {
      io: new LabeledHistogram("rdma_telemetry_dataplane_io_latency_seconds", "I/O figures (figure: e2e_c, e2e_s, dal, dpl) counted in the switch's data plane, every I/O it measured, per host–target pair and op (host and target 'overflow': pairs without a histogram id); _sum from the buckets' midpoints", ["switch", "host", "target", "op", "figure"], DATAPLANE_BUCKETS_SECONDS),
      fct: new LabeledHistogram("rdma_telemetry_dataplane_flow_fct_seconds", "Message FCT counted in the switch's data plane, every message it measured, per flow (src 'overflow': flows without a histogram id); _sum from the buckets' midpoints", flowLabels, DATAPLANE_BUCKETS_SECONDS),
    };
    this.flowGauges = {
      fet: new Gauge({ name: "rdma_telemetry_flow_fet_bytes_per_second", help: "Latest closed interval's median FET per flow", labelNames: flowLabels, registers: [register] }),
      fnr: new Gauge({ name: "rdma_telemetry_flow_fnr_ratio", help: "Latest closed interval's FNR (retransmitted / packets) per flow", labelNames: flowLabels, registers: [register] }),
    };
    this.flowCounters = {
      ecn: new Counter({ name: "rdma_telemetry_flow_ecn_ce_packets_total", help: "ECN-CE packets of the flow, summed over its closed intervals", labelNames: flowLabels, registers: [register] }),
      messages: new Counter({ name: "rdma_telemetry_flow_messages_total", help: "Messages of the flow, summed over its closed intervals", labelNames: flowLabels, registers: [register] }),
    };
    this.pairCnp = new Counter({ name: "rdma_telemetry_pair_cnp_packets_total", help: "CNPs of the host pair (src: the data's sender, which the CNPs go to; dst: its receiver, which sent them), summed over its closed intervals", labelNames: ["switch", "src", "dst"], registers: [register] });
    this.cnpPairs = new BoundedSeries(o.maxFlows ?? 500, (l) => {
      this.pairCnp.remove(l);
      this.pairCnpCounted.delete(`${l.switch}|${l.src}|${l.dst}`);
    });
    this.pairs = new BoundedSeries(o.maxPairs ?? 500, (l) => {
      this.ioLatency.remove(l);
      this.dataplane.io.remove(l);
    });
    this.flows = new BoundedSeries(o.maxFlows ?? 500, (l) => {
      for (const m of [...Object.values(this.flowLatency), ...Object.values(this.flowGauges), ...Object.values(this.flowCounters), this.dataplane.fct]) m.remove(l);
    });
    this.rotation = new Histogram({ name: "rdma_telemetry_rotation_duration_seconds", help: "Polling rotation: the window's move to the switch's acknowledgement", labelNames: ["switch"], buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1], registers: [register] });
  }

  /** The text format of every metric: prom-client's registry, then the latency histograms. */
  async text(): Promise<string> {
    return (await this.registry.metrics()) + this.ownHistograms().map((h) => h.text()).join("");
  }

  /** Every metric family served, with its type and label names. */
  async families(): Promise<Array<{ name: string; type: string; labelNames: string[] }>> {
    const own = (await this.registry.getMetricsAsJSON()).map((f) => ({ name: f.name, type: String(f.type), labelNames: [...((this.registry.getSingleMetric(f.name) as unknown as { labelNames?: string[] }).labelNames ?? [])] }));
    return [...own, ...this.ownHistograms().map((h) => ({ name: h.name, type: "histogram", labelNames: [...h.labelNames] }))];
  }

  private ownHistograms(): LabeledHistogram[] {
    return [this.ioLatency, this.flowLatency.fct, this.flowLatency.gap, this.dataplane.io, this.dataplane.fct];
  }

  /** A data-plane histogram's buckets into its series. */
  private observeHistogram(h: LabeledHistogram, labels: Record<string, string>, buckets: HistogramBucketJson[]): void {
    for (const b of buckets) h.observeBucket(labels, b.upper_ns === null ? Infinity : b.upper_ns / 1e9, b.count, (bucketValue(b.bucket) / 1e9) * b.count);
  }

  private topicOf(r: RecordJson): string {
    if (r.type === "io" || r.type === "io_interval" || r.type === "io_histogram") return this.topics.io;
    if (r.type === "message" || r.type === "flow_interval" || r.type === "flow_histogram") return this.topics.flow;
    return this.topics.alert;
  }

  /** Every record the exporter writes. */
  onRecord(r: RecordJson): void {
    this.records.inc({ type: r.type, topic: this.topicOf(r) });
    if (r.type === "switch_stats") {
      this.latestStats.set(r.switch_id, r);
      this.incomplete.set(r.switch_id, (this.incomplete.get(r.switch_id) ?? 0) + r.incomplete_ios);
      this.unknownEndpoints.set(r.switch_id, (this.unknownEndpoints.get(r.switch_id) ?? 0) + (r.unknown_endpoint_digests ?? 0));
      this.answerLost.set(r.switch_id, (this.answerLost.get(r.switch_id) ?? 0) + (r.ios_answer_lost ?? 0));
      this.pairingConfused.set(r.switch_id, (this.pairingConfused.get(r.switch_id) ?? 0) + (r.ios_pairing_confused ?? 0));
    } else if (r.type === "io") {
      const base = { switch: r.switch_id, host: r.host, target: r.target, op: r.op };
      for (const [figure, field] of IO_FIGURES) {
        const v = r[field];
        if (v !== null) this.ioLatency.observe({ ...base, figure }, v / 1e9);
      }
      this.pairs.touch(`${r.switch_id}|${r.host}|${r.target}|${r.op}`, IO_FIGURES.map(([figure]) => ({ ...base, figure })));
    } else if (r.type === "message") {
      const labels = this.flowLabels(r.switch_id, r.src, r.dst, r.dest_qp);
      this.flowLatency.fct.observe(labels, r.fct_ns / 1e9);
      if (r.gap_ns !== null) this.flowLatency.gap.observe(labels, r.gap_ns / 1e9);
    } else if (r.type === "io_histogram") {
      const labels = { switch: r.switch_id, host: r.host ?? "overflow", target: r.target ?? "overflow", op: r.op, figure: r.figure.replace(/_ns$/, "") };
      this.observeHistogram(this.dataplane.io, labels, r.buckets);
      this.pairs.touch(`dp|${r.switch_id}|${labels.host}|${labels.target}|${r.op}|${labels.figure}`, [labels]);
    } else if (r.type === "flow_histogram") {
      const labels = r.src === null ? { switch: r.switch_id, src: "overflow", dst: "overflow", dest_qp: "" } : this.flowLabels(r.switch_id, r.src, r.dst!, r.dest_qp!);
      this.observeHistogram(this.dataplane.fct, labels, r.buckets);
    } else if (r.type === "flow_interval") {
      const labels = this.flowLabels(r.switch_id, r.src, r.dst, r.dest_qp);
      if (r.fet_bps) this.flowGauges.fet.set(labels, r.fet_bps.p50 / 8);
      this.flowGauges.fnr.set(labels, r.fnr);
      this.flowCounters.ecn.inc(labels, r.ecn_ce_packets);
      const pair = `${r.switch_id}|${r.src}|${r.dst}`;
      const pairLabels = { switch: r.switch_id, src: r.src, dst: r.dst };
      this.cnpPairs.touch(pair, [pairLabels]);
      if (this.pairCnpCounted.get(pair) !== r.interval_start_unix_ns) {
        this.pairCnpCounted.set(pair, r.interval_start_unix_ns);
        this.pairCnp.inc(pairLabels, r.cnp_packets);
      }
      this.flowCounters.messages.inc(labels, r.messages);
    }
  }

  /** A flow's labels, the flow kept among the `maxFlows` newest. */
  private flowLabels(sw: string, src: string, dst: string, destQp: number): Record<string, string> {
    const labels = { switch: sw, src, dst, dest_qp: String(destQp) };
    this.flows.touch(`${sw}|${src}|${dst}|${destQp}`, [labels]);
    return labels;
  }

  /** The Kafka sink's queue, spill and delivery. */
  watchKafka(sink: KafkaSink): void {
    const register = [this.registry];
    new Gauge({ name: "rdma_telemetry_kafka_pending_messages", help: "Messages not yet acknowledged by Kafka (in memory and spilled)", registers: register, collect() { this.set(sink.pending); } });
    new Gauge({ name: "rdma_telemetry_kafka_spilled_messages", help: "Messages waiting in the spill files", registers: register, collect() { this.set(sink.stats.spilledNow); } });
    new Gauge({ name: "rdma_telemetry_kafka_spill_bytes", help: "Bytes in the spill files", registers: register, collect() { this.set(sink.spilledBytes); } });
    new Counter({ name: "rdma_telemetry_kafka_sent_total", help: "Messages acknowledged by Kafka", registers: register, collect() { this.reset(); this.inc(sink.stats.sent); } });
    new Counter({ name: "rdma_telemetry_kafka_dropped_total", help: "Messages lost because Kafka was away and the spill was full or could not be written", registers: register, collect() { this.reset(); this.inc(sink.stats.dropped); } });
    new Counter({ name: "rdma_telemetry_kafka_set_aside_total", help: "Spilled messages set aside, not sent: their spill segment did not parse, or names topics Kafka does not create", registers: register, collect() { this.reset(); this.inc(sink.stats.setAside); } });
    new Counter({ name: "rdma_telemetry_kafka_send_failures_total", help: "Failed attempts to connect or send", registers: register, collect() { this.reset(); this.inc(sink.stats.sendFailures); } });
  }

  /** An exporter group member's counters (ExporterGroupStats), as rdma_telemetry_exporter_group_<name>_total. */
  watchExporterGroup(member: ExporterGroupMember): void {
    const register = [this.registry];
    const help: Record<keyof ExporterGroupStats, string> = {
      digests: "Digests consumed and joined", records: "Records published (committed)", transactions: "Transactions committed", aborted: "Transactions aborted (the partition is taken on again from its last commit)",
      concurrentRetries: "Offsets sent again because the coordinator was still finishing the partition's previous transaction (CONCURRENT_TRANSACTIONS)",
      badDigests: "Digests that could not be decoded, dropped", unknownSwitch: "Digests of a switch not in --switch-id, dropped", duplicateDigests: "Digests received twice, taken once",
      lateDigests: "Digests older than what was settled (their interval aggregates were out)", suppressedRecords: "Records an earlier owner of the partition had committed, not published again",
      replayedDigests: "Digests re-read after taking a partition over", takeovers: "Partitions taken over with open digests to re-read",
      givenUpSilentSwitch: "I/O commands given up because the switch that saw them sent nothing for --silent-switch-ms, or the run ended, within their I/O timeout (recorded without that switch's figures, not incomplete)",
      flowOnlyDigests: "Digests of RDMA WRITE packets outside any message, added to their flow's interval figures with no message record (not counting those re-read after a takeover)",
      clockNotes: "Switch clock notes taken: a controller's word that its switch's time moved on, sent to every partition (a partition its switch sends nothing to moves on with it)",
      alertsNotCarried: "Raised alerts of partitions taken on that did not fit in the offset metadata (they may be raised again, or not cleared)",
    };
    for (const [k, h] of Object.entries(help) as Array<[keyof ExporterGroupStats, string]>) {
      const name = `rdma_telemetry_exporter_group_${k.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase())}_total`;
      new Counter({ name, help: h, registers: register, collect() { this.reset(); this.inc(member.stats[k]); } });
    }
    new Gauge({ name: "rdma_telemetry_exporter_group_partitions", help: "Digest partitions this member holds", registers: register, collect() { this.set(member.assigned.size); } });
    new Gauge({
      name: "rdma_telemetry_exporter_group_switch_known", help: "1 for each switch this member awaits in every partition it holds: named by --switch-id, or seen in one of its partitions", labelNames: ["switch"], registers: register,
      collect() { for (const sw of member.knownSwitches) this.set({ switch: sw }, 1); },
    });
  }

  /** The in-process engine's own counts (those not carried on switch_stats records). */
  watchEngine(engine: MetricsEngine): void {
    new Counter({
      name: "rdma_telemetry_given_up_silent_switch_total", help: "I/O commands given up because the switch that saw them sent nothing for the silent-switch time, or the controller stopped, within their I/O timeout (recorded without that switch's figures, not incomplete)", labelNames: ["switch"], registers: [this.registry],
      collect() { this.reset(); for (const [sw, n] of engine.givenUpSilent) this.inc({ switch: sw }, n); },
    });
    new Counter({
      name: "rdma_telemetry_flow_only_digests_total", help: "Digests of RDMA WRITE packets counted outside any message (late or retransmitted after their message's last packet, or of a message whose first packet was never seen), added to their flow's interval figures; no message record", labelNames: ["switch"], registers: [this.registry],
      collect() { this.reset(); for (const [sw, n] of engine.flowOnlyDigests) this.inc({ switch: sw }, n); },
    });
  }

  /** A controller's P4Runtime state, rotation and watchlist coverage. */
  watchController(switchId: string, controller: TelemetryController): void {
    const register = [this.registry];
    const labels = { switch: switchId };
    new Gauge({ name: "rdma_telemetry_p4runtime_connected", help: "1 while the StreamChannel to the switch is up", labelNames: ["switch"], registers: register, collect() { this.set(labels, controller.stats.connected ? 1 : 0); } });
    new Gauge({ name: "rdma_telemetry_p4runtime_primary", help: "1 while this controller is the switch's primary", labelNames: ["switch"], registers: register, collect() { this.set(labels, controller.stats.primary ? 1 : 0); } });
    new Gauge({
      name: "rdma_telemetry_controller_role", help: "1 for this controller's role on the switch: primary, backup (another controller is primary) or disconnected", labelNames: ["switch", "role"], registers: register,
      collect() {
        for (const role of ["primary", "backup", "disconnected"]) this.set({ ...labels, role }, controller.stats.role === role ? 1 : 0);
      },
    });
    new Gauge({ name: "rdma_telemetry_mode", help: "The switch's mode: 1 full, 2 polling, 3 summary", labelNames: ["switch"], registers: register, collect() { this.set(labels, modeCode(controller.currentMode)); } });
    new Gauge({
      name: "rdma_telemetry_watchlist_coverage_ratio", help: "Flows measured in the current polling window over the flows known (1 in full mode)", labelNames: ["switch"], registers: register,
      collect() { this.set(labels, controller.coverage().ratio); },
    });
    new Gauge({ name: "rdma_telemetry_watchlist_known_flows", help: "Flows the controller knows of", labelNames: ["switch"], registers: register, collect() { this.set(labels, controller.coverage().known_flows); } });
    const hist = controller.histograms;
    if (hist) {
      new Gauge({ name: "rdma_telemetry_histogram_ids", help: "Histogram ids held (kind: pair, flow; 1,023 each on v1model)", labelNames: ["switch", "kind"], registers: register, collect() { this.set({ ...labels, kind: "pair" }, hist.pairCount); this.set({ ...labels, kind: "flow" }, hist.flowCount); } });
      new Counter({ name: "rdma_telemetry_histogram_ids_refused_total", help: "Pairs and flows refused a histogram id (every id taken, none idle): their I/Os and messages count in the overflow histograms", labelNames: ["switch", "kind"], registers: register, collect() { this.reset(); this.inc({ ...labels, kind: "pair" }, hist.pairsRefused); this.inc({ ...labels, kind: "flow" }, hist.flowsRefused); } });
      new Counter({ name: "rdma_telemetry_histogram_ids_reused_total", help: "Histogram ids taken back from pairs and flows idle for histograms.id_idle_ms and given to newcomers (what the old holder counted is read out as its own first)", labelNames: ["switch", "kind"], registers: register, collect() { this.reset(); this.inc({ ...labels, kind: "pair" }, hist.pairsReleased); this.inc({ ...labels, kind: "flow" }, hist.flowsReleased); } });
    }
    controller.on("rotated", (r) => this.rotation.observe(labels, r.durationMs / 1000));
    new Counter({
      name: "rdma_telemetry_rotations_missed_total", help: "Polling rotations not made as scheduled (why: skipped, a period passed while the last rotation's write was under way; failed, the write failed and the next rotation writes the window)", labelNames: ["switch", "why"], registers: register,
      collect() { this.reset(); this.inc({ ...labels, why: "skipped" }, controller.stats.rotationsSkipped); this.inc({ ...labels, why: "failed" }, controller.stats.rotationsFailed); },
    });
    if (hist) {
      const readTime = new Histogram({ name: "rdma_telemetry_histogram_read_duration_seconds", help: "Reading the data plane's histograms at an interval's end: the three counter reads (activity, ranges, buckets of what moved)", labelNames: ["switch"], buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers: register });
      const cells = new Counter({ name: "rdma_telemetry_histogram_cells_read_total", help: "Counter cells read for the data plane's histograms", labelNames: ["switch"], registers: register });
      const lower = new Counter({ name: "rdma_telemetry_histogram_cells_lower_total", help: "Histogram counter cells read lower than the read before (why: wrap, a Tofino cell's 32 bits wrapped and taken modulo 2^32; unexplained, a cell that counted nothing for that read)", labelNames: ["switch", "why"], registers: register });
      const wrapped = { ...labels, why: "wrap" };
      const unexplained = { ...labels, why: "unexplained" };
      lower.inc(wrapped, 0);
      lower.inc(unexplained, 0);
      controller.on("histograms-read", (r) => {
        readTime.observe(labels, r.durationMs / 1000);
        cells.inc(labels, r.cells);
        lower.inc(wrapped, r.wrapped);
        lower.inc(unexplained, r.decreased);
      });
    }
  }

  /** Serves /metrics on `listen` (HOST:PORT; port 0 for any). */
  async listen(listen: string): Promise<{ url: string; close: () => Promise<void> }> {
    const i = listen.lastIndexOf(":");
    const host = i > 0 ? listen.slice(0, i) : "127.0.0.1";
    const port = Number(listen.slice(i + 1));
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError("not HOST:PORT with a port from 0 to 65535"); // the caller names the option and its value
    const server: Server = createServer((req, res) => {
      if (req.url !== "/metrics") {
        res.writeHead(404).end("only /metrics here\n");
        return;
      }
      this.text().then(
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
