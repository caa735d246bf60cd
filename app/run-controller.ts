// The controller and exporter against a live switch, until SIGINT/SIGTERM.
import { Exporter } from "@rdma-telemetry/exporter";
import { JsonlSink } from "@rdma-telemetry/exporter";
import { rawDigestMessages } from "@rdma-telemetry/exporter";
import { encodeRecord } from "@rdma-telemetry/exporter";
import { KafkaSink } from "@rdma-telemetry/exporter";
import type { KafkaClientName, KafkaSecurity, TopicNames } from "@rdma-telemetry/exporter";
import type { Logger } from "@rdma-telemetry/p4runtime";
import { join } from "node:path";
import { recordFromMessage } from "@rdma-telemetry/exporter";
import { readTopicTails } from "@rdma-telemetry/exporter";
import type { RecordJson } from "@rdma-telemetry/contract";
import type { DigestBatch } from "@rdma-telemetry/contract";
import { DigestJournal, recordKey, RecordDedupe } from "./digest-journal.js";
import { TelemetryMetrics } from "./prometheus.js";
import { ConfigError, loadConfig } from "@rdma-telemetry/controller";
import { TelemetryController } from "@rdma-telemetry/controller";
import { startControlServer } from "./control-server.js";

export interface RunControllerOptions {
  configFile: string;
  out?: string;
  /** add to an `out` file that already holds records (otherwise refused) */
  append?: boolean;
  /**
   * A directory for the digest journal: lists are acknowledged to the switch
   * once journaled and fsync'd, and a restart replays what is not settled.
   */
  journal?: string;
  brokers?: string[];
  /** TLS and SASL for Kafka */
  kafkaSecurity?: KafkaSecurity;
  /** Prometheus metrics on HOST:PORT */
  metricsListen?: string;
  /** the Kafka client (default: KAFKA_CLIENT, else kafkajs) */
  kafkaClient?: KafkaClientName;
  /** the topics to publish on (default rdma.io.v1, ...) */
  topics?: TopicNames;
  /**
   * Publish the raw digests and the switch's switch_stats only: the records
   * made from digests come from an exporter group (`rdma-telemetry exporter`).
   */
  digestsOnly?: boolean;
  logger: Logger;
  print: (t: string) => void;
}

export async function runController(o: RunControllerOptions): Promise<void> {
  const config = loadConfig(o.configFile);
  if (o.digestsOnly && !o.brokers?.length) throw new ConfigError("--digests-only publishes on Kafka: it needs --kafka-brokers (or KAFKA_BROKERS)");
  if (o.digestsOnly && o.out) throw new ConfigError("--digests-only writes no records: drop --out (the exporter group makes the records)");
  const controller = new TelemetryController(config, { logger: o.logger, deferAck: o.journal !== undefined });
  // Everything that can be refused is checked before any work starts.
  const control = config.controlPort
    ? await startControlServer(controller, config.controlPort).catch((err: unknown) => {
        const code = (err as NodeJS.ErrnoException).code;
        throw new ConfigError(`control_port ${config.controlPort}: ${code === "EADDRINUSE" ? "already in use (another controller?)" : (err as Error).message}`);
      })
    : undefined;
  const metrics = o.metricsListen ? new TelemetryMetrics() : undefined;
  const served = metrics
    ? await metrics.listen(o.metricsListen!).catch((err: unknown) => {
        control?.close();
        throw new ConfigError(`--metrics-listen ${o.metricsListen}: ${(err as NodeJS.ErrnoException).code === "EADDRINUSE" ? "already in use" : (err as Error).message}`);
      })
    : undefined;
  if (served) o.print(`metrics: ${served.url}`);
  metrics?.watchController(config.switch.switchId, controller);
  // Digests only: this controller still tracks its switch's sequence, losses and
  // counters (it alone sees the whole sequence) and publishes them as switch_stats.
  const exporter = new Exporter(o.digestsOnly ? { perEventRecords: false } : {});
  exporter.metrics.coverage = () => controller.coverage();
  let jsonl: JsonlSink | undefined;
  try {
    jsonl = o.out ? new JsonlSink(o.out, o.append ? "append" : "create") : undefined;
  } catch (err) {
    control?.close();
    throw err;
  }
  const journal = o.journal ? new DigestJournal(o.journal) : undefined;
  // What an earlier run left unsettled is replayed below; the records it had
  // already written (to the file, or to Kafka) are recognised and not written again.
  const oldest = journal?.oldestUnsettled();
  const jsonlDedupe = oldest !== undefined ? new RecordDedupe().addJsonlTail(o.out) : undefined;
  let kafka: KafkaSink | undefined;
  let kafkaDedupe: RecordDedupe | undefined;
  if (o.brokers?.length) {
    // With a journal, the spill lives beside it: both are replayed by the next run on that directory.
    kafka = new KafkaSink({ brokers: o.brokers, client: o.kafkaClient, ...o.kafkaSecurity, topics: o.topics, logger: o.logger, spillDir: o.journal ? join(o.journal, "kafka-spill") : ".cache/kafka-spill" });
    if (oldest !== undefined) kafkaDedupe = await publishedSince(kafka, oldest, o);
    await kafka.start();
  }
  // A journal segment is let go once the records of its lists are in the file (synced) and delivered to Kafka.
  const releases: Array<{ settledBefore: bigint; kafkaMark: number }> = [];
  const release = () => {
    while (releases.length && (!kafka || kafka.settled >= releases[0]!.kafkaMark)) journal?.release(releases.shift()!.settledBefore);
  };
  if (kafka) metrics?.watchKafka(kafka);
  exporter.addSink((r) => {
    metrics?.onRecord(r);
    if (jsonl && !jsonlDedupe?.written(r)) jsonl.write(r);
    if (kafka && !kafkaDedupe?.written(r) && (!o.digestsOnly || r.type === "switch_stats")) kafka.push(encodeRecord(r, kafka.topicNames, "protobuf", exporter.metrics.options.intervalNs));
    if (r.type === "switch_stats" && journal) {
      // An interval closed: its records are made durable, and what they settle can leave the journal.
      jsonl?.sync();
      journal.rotate();
      journal.saveSequence(exporter.metrics.sequencePositions());
      releases.push({ settledBefore: exporter.metrics.settledBefore, kafkaMark: kafka?.accepted ?? 0 });
      release();
    }
  });
  const publishDigests = (b: DigestBatch) => {
    if (!kafka) return;
    for (const m of rawDigestMessages(b, kafka.topicNames)) {
      if (kafkaDedupe && kafkaDedupe.written(recordFromMessage(m.headers.type, m.value))) continue;
      kafka.push(m);
    }
  };
  if (journal && oldest === undefined) {
    // Stopped cleanly before: continue each switch's digest sequence from where it stood, so that the gap counts as lost.
    for (const p of journal.loadSequence()) exporter.metrics.resumeSequence(p.switchId, p.session, p.next);
  }
  if (journal) {
    const n = journal.replayInto((b) => {
      exporter.onBatch(b);
      publishDigests(b);
    });
    if (n) o.logger.info("replayed the digest journal of an earlier run", { lists: n, dir: o.journal, already_written: (jsonlDedupe?.size ?? 0) + (kafkaDedupe?.size ?? 0) });
  }
  controller.on("digests", (b) => {
    journal?.append(b); // acknowledged to the switch once fsync'd
    exporter.onBatch(b);
    publishDigests(b);
  });
  controller.on("bad-digest", ({ message }) => o.logger.warn("bad digest", { message }));
  controller.on("primary", () => o.print(`primary on ${config.switch.address}; mode ${controller.currentMode}`));
  controller.on("backup", () => o.print(`backup on ${config.switch.address}`));
  const tick = setInterval(() => {
    exporter.metrics.advance(BigInt(Date.now()) * 1_000_000n);
    release();
  }, 250);
  // The switch's own counters (untracked I/Os and flows, parser errors, ...) ride on every interval's switch_stats.
  const intervalMs = Number(exporter.metrics.options.intervalNs / 1_000_000n);
  let reading = false;
  const counters = setInterval(() => {
    if (!controller.stats.primary || reading) return;
    reading = true;
    controller.readCounters()
      .then((c) => exporter.metrics.setSwitchCounters(config.switch.switchId, c))
      .catch((err: unknown) => o.logger.warn("reading the switch counters failed", { error: (err as Error).message }))
      .finally(() => (reading = false));
    exporter.metrics.setSwitchMode(config.switch.switchId, controller.currentMode === "polling" ? 2 : 1);
  }, Math.max(100, intervalMs / 2));
  controller.start();
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  clearInterval(tick);
  clearInterval(counters);
  control?.close();
  await controller.stop();
  exporter.finish();
  journal?.rotate();
  journal?.saveSequence(exporter.metrics.sequencePositions());
  await jsonl?.close();
  const undelivered = (await kafka?.close()) ?? 0;
  // Stopped cleanly with everything written and delivered: the journal holds nothing to replay.
  if (undelivered === 0) journal?.release(END_OF_TIME);
  journal?.close();
  await served?.close();
}

const END_OF_TIME = 1n << 64n;

/**
 * The records an earlier run published: those Kafka has from a little before
 * the oldest unsettled digest list on, and those waiting in the spill.
 */
async function publishedSince(kafka: KafkaSink, oldestListNs: bigint, o: RunControllerOptions): Promise<RecordDedupe> {
  const dedupe = new RecordDedupe();
  const add = (m: { headers: Record<string, string>; value: Buffer }) => {
    try {
      const r = m.headers.encoding === "json" ? (JSON.parse(m.value.toString("utf8")) as RecordJson) : recordFromMessage(m.headers.type, m.value);
      dedupe.add(recordKey(r));
    } catch {
      // not a record of ours
    }
  };
  for (const m of kafka.spilledMessages()) add(m);
  // Records are published after their lists arrive; the margin covers the switch's and this host's clocks disagreeing.
  const sinceMs = Number(oldestListNs / 1_000_000n) - 120_000;
  try {
    const n = await readTopicTails({ brokers: o.brokers!, ...o.kafkaSecurity, topics: [...new Set(Object.values(kafka.topicNames))], sinceMs, onMessage: add });
    o.logger.info("read back what an earlier run published", { messages: n, since: new Date(sinceMs).toISOString() });
  } catch (err) {
    o.logger.warn("could not read back what an earlier run published: records replayed from the journal may reach Kafka twice", { error: (err as Error).message });
  }
  return dedupe;
}
