// The controller and exporter against a live switch, until SIGINT/SIGTERM.
import { Exporter } from "../exporter/src/exporter.js";
import { JsonlSink } from "../exporter/src/jsonl-sink.js";
import { rawDigestMessages } from "../exporter/src/kafka/digest-bus.js";
import { encodeRecord } from "../exporter/src/kafka/encode.js";
import { KafkaSink } from "../exporter/src/kafka/kafka-sink.js";
import type { KafkaSecurity } from "../exporter/src/kafka/security.js";
import type { KafkaClientName } from "../exporter/src/kafka/transport.js";
import type { Logger } from "../p4runtime-controller/src/lib/switch-connection.js";
import { DigestJournal, RecordDedupe } from "./digest-journal.js";
import { ConfigError, loadConfig } from "../p4runtime-controller/src/telemetry/config.js";
import { TelemetryController } from "../p4runtime-controller/src/telemetry/controller.js";
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
  /** the Kafka client (default: KAFKA_CLIENT, else kafkajs) */
  kafkaClient?: KafkaClientName;
  logger: Logger;
  print: (t: string) => void;
}

export async function runController(o: RunControllerOptions): Promise<void> {
  const config = loadConfig(o.configFile);
  const controller = new TelemetryController(config, { logger: o.logger, deferAck: o.journal !== undefined });
  // Everything that can be refused is checked before any work starts.
  const control = config.controlPort
    ? await startControlServer(controller, config.controlPort).catch((err: unknown) => {
        const code = (err as NodeJS.ErrnoException).code;
        throw new ConfigError(`control_port ${config.controlPort}: ${code === "EADDRINUSE" ? "already in use (another controller?)" : (err as Error).message}`);
      })
    : undefined;
  const exporter = new Exporter();
  exporter.metrics.coverage = () => controller.coverage();
  let jsonl: JsonlSink | undefined;
  try {
    jsonl = o.out ? new JsonlSink(o.out, o.append ? "append" : "create") : undefined;
  } catch (err) {
    control?.close();
    throw err;
  }
  const journal = o.journal ? new DigestJournal(o.journal) : undefined;
  // Records an earlier run wrote before it stopped are not written again when its journal is replayed.
  const dedupe = journal ? new RecordDedupe(o.out) : undefined;
  exporter.addSink((r) => {
    if (dedupe?.written(r)) return;
    jsonl?.write(r);
    if (r.type === "switch_stats") {
      // An interval closed: its records are made durable, and what they settle leaves the journal.
      jsonl?.sync();
      journal?.checkpoint(exporter.metrics.settledBefore);
    }
  });
  let kafka: KafkaSink | undefined;
  if (o.brokers?.length) {
    kafka = new KafkaSink({ brokers: o.brokers, client: o.kafkaClient, ...o.kafkaSecurity, logger: o.logger, spillDir: ".cache/kafka-spill" });
    await kafka.start();
    const k = kafka;
    exporter.addSink((r) => k.push(encodeRecord(r, k.topicNames, "protobuf", exporter.metrics.options.intervalNs)));
  }
  if (journal) {
    const n = journal.replayInto((b) => exporter.onBatch(b));
    if (n) o.logger.info("replayed the digest journal of an earlier run", { lists: n, dir: o.journal });
  }
  controller.on("digests", (b) => {
    journal?.append(b); // acknowledged to the switch once fsync'd
    exporter.onBatch(b);
    if (kafka) for (const m of rawDigestMessages(b, kafka.topicNames)) kafka.push(m);
  });
  controller.on("bad-digest", ({ message }) => o.logger.warn("bad digest", { message }));
  controller.on("primary", () => o.print(`primary on ${config.switch.address}; mode ${controller.currentMode}`));
  controller.on("backup", () => o.print(`backup on ${config.switch.address}`));
  const tick = setInterval(() => exporter.metrics.advance(BigInt(Date.now()) * 1_000_000n), 250);
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
  journal?.close();
  await jsonl?.close();
  await kafka?.close();
}
