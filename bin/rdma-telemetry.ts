#!/usr/bin/env node
// rdma-telemetry: the command line. Environment variables are read here only.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { consume, NoSuchTopicError } from "../app/consume.js";
import { KafkaSink } from "@rdma-telemetry/exporter";
import { kafkaClientName, kafkaMaxInFlight, KafkaConnectError, type KafkaClientName, type KafkaSecurity, type TopicNames } from "@rdma-telemetry/exporter";
import { KAFKA_SECURITY_FLAGS, kafkaSecurity, topicNames } from "../app/kafka-options.js";
import { runController } from "../app/run-controller.js";
import { runExporterGroup } from "../app/exporter-command.js";
import { runDemo } from "../app/demo.js";
import { parsePcapIn, runSwitch, SwitchOptionError } from "../app/switch-command.js";
import { TelemetryMetrics } from "../app/prometheus.js";
import { runDashboard } from "../app/dashboard/run.js";
import { ListenError, parseListen, startDashboardServer, type DashboardServer } from "../app/dashboard/server.js";
import { DashboardStore } from "../app/dashboard/store.js";
import { createLogger, isLogLevel, type LogLevel } from "../app/logger.js";
import { terminalProgress } from "../app/progress.js";
import { replayCaptures } from "../app/replay.js";
import { Topology } from "../app/topology.js";
import { loadOptions, TRUTH_FILE, writeTrafficStream } from "@rdma-telemetry/traffic";
import { ConfigError } from "@rdma-telemetry/controller";
import { CaptureError } from "@rdma-telemetry/traffic";
import { OutputError } from "@rdma-telemetry/exporter";

const USAGE = `rdma-telemetry — per-I/O and per-message telemetry for RoCEv2 fabrics

Usage:
  rdma-telemetry [demo] [--duration-ms N] [--seed N] [--load F] [--out-dir DIR] [--mode full|polling]
                 [--dashboard [--listen 127.0.0.1:8080]]
      The main job: generated RoCEv2 traffic through two software switches,
      their controllers and the exporter, with a live summary. --load scales
      the traffic (1: the default fabric, 0.25: a quarter of its I/Os and
      messages per second). --dashboard serves the web dashboard of the run's
      records (no Kafka needed) and keeps it up after the run until Ctrl-C.
  rdma-telemetry replay CAPTURE [CAPTURE...] --topology FILE [--topology FILE...]
                 --out RECORDS.jsonl [--mode full|polling] [--switch-id NAME...]
      Replays pcap/pcapng captures through the P4 program, controller and
      exporter. Each capture is one switch with its own clock; the i-th
      topology belongs to the i-th capture (one serves all when only one is
      given). RTT needs a compute-side and a storage-side capture. Switches
      are named after their capture files unless --switch-id names them.
  rdma-telemetry generate --out-dir DIR [--duration-ms N] [--seed N] [--load F] [--layout two-tor|single]
      Writes generated captures, topologies and their ground truth.
  rdma-telemetry controller --config FILE [--out RECORDS.jsonl [--append]] [--journal DIR]
                 [--kafka-brokers HOST:PORT,...] [--digests-only]
      Runs the controller and exporter against a switch (BMv2 simple_switch_grpc
      or the software switch). Env KAFKA_BROKERS if --kafka-brokers is not given.
      With --journal, digest lists are acknowledged once journaled and fsync'd,
      and a controller restarted on the same journal (and --out --append)
      replays what an earlier run had not settled, writing no record twice.
      With --digests-only it publishes the raw digests (rdma.digest.v1) and
      its switch's switch_stats, and no other record: an exporter group makes
      them (for fabrics whose I/Os cross switches driven by other controllers).
  rdma-telemetry exporter [--kafka-brokers HOST:PORT,...] [--group ID] [--switch-id NAME...]
      A member of an exporter group: consumes the digests that controllers
      publish with --digests-only (rdma.digest.v1) in consumer group ID
      (default rdma-telemetry-exporter), joins both vantages of each I/O and
      publishes the records exactly once (Kafka transactions). Run as many as
      the digest topic has partitions. With --switch-id, digests of other
      switches are counted and dropped. Prints a summary line at SIGTERM.
  rdma-telemetry switch [--listen 127.0.0.1:9559] [--p4info F --device-config F] [--device-id N]
                 [--cpu-port N] [--pcap-in PORT=FILE...] [--pcap-out DIR]
                 [--topology FILE --pcap-in FILE] [--capture-clock] [--pcap-delay-ms N]
      The software switch as a standalone P4Runtime target (as simple_switch_grpc),
      for any controller; captures replayed in on ports, one capture out per port.
      A capture given without PORT= enters on the ports of its packets' source
      addresses in --topology (a capture of generate). Captures are replayed
      once a pipeline is set, --pcap-delay-ms after; with --capture-clock the
      switch measures on the captures' clock (as replay does).
  rdma-telemetry mode full|polling [--control 127.0.0.1:PORT]
      Switches the mode of a running controller (its config's control_port).
  rdma-telemetry consume --topic TOPIC [--kafka-brokers HOST:PORT,...] [--from-beginning]
      Tails a topic and prints its records decoded, one JSON object a line.
  rdma-telemetry dashboard [--kafka-brokers HOST:PORT,...] [--listen 127.0.0.1:8080]
                 [--from-beginning] [--group ID]
      Web dashboard of rdma.io.v1, rdma.flow.v1 and rdma.alert.v1 (or those of
      --kafka-topic-prefix): per pair
      and flow percentiles over time, where the time went, alerts, switch
      health, updated live. Reads in a consumer group of its own (default
      rdma-telemetry-dashboard-HOST-PID) from now on, or from the topics'
      beginning; keeps the last 300 intervals, 128 pairs and 128 flows in memory.

Demo, replay, controller and exporter take --metrics-listen HOST:PORT to serve
Prometheus metrics at /metrics (docs/operations.md lists them).

An --out file that already holds records is refused unless --append is given
(a second process writing the same file is always refused). Demo and replay also take --kafka-brokers (or env KAFKA_BROKERS) to publish
records on Kafka; replay takes --forwarded FILE.pcap to write the packets the
switch forwarded.

The exporter publishes with --kafka-client platformatic|kafkajs (env KAFKA_CLIENT;
default platformatic, i.e. @platformatic/kafka; see docs/operations.md), with
up to KAFKA_MAX_IN_FLIGHT produce requests in flight (1 to 5, default 5;
kafkajs takes one at a time).

Kafka TLS and SASL, for every command that takes --kafka-brokers (environment
variable in brackets; a flag wins over its variable):
  --kafka-ca FILE            PEM CA certificates that verify the brokers, instead of
                             the system's; implies TLS (KAFKA_CA_FILE)
  --kafka-tls                TLS, brokers verified by the system's CAs (KAFKA_TLS=true)
  --kafka-cert FILE --kafka-key FILE
                             client certificate and its unencrypted key, PEM, for
                             mutual TLS (KAFKA_CERT_FILE, KAFKA_KEY_FILE)
  --kafka-sasl-mechanism plain|scram-sha-256|scram-sha-512   (KAFKA_SASL_MECHANISM)
  --kafka-sasl-username NAME                                 (KAFKA_SASL_USERNAME)
  --kafka-sasl-password-file FILE                            (KAFKA_SASL_PASSWORD_FILE)
                             or the password itself in KAFKA_SASL_PASSWORD; there is
                             no password flag (a command line is visible to all users)
  --kafka-topic-prefix P     topics P.io.v1, P.flow.v1, P.alert.v1, P.digest.v1 instead
                             of rdma.* (KAFKA_TOPIC_PREFIX)

Options:
  --version                                  the package version
  --log-level debug|info|warn|error|silent   (default warn; env RDMA_TELEMETRY_LOG_LEVEL)
  -h, --help

Exit codes: 0 ok, 1 failure, 2 bad usage or bad input (config, capture, topology).`;

class UsageError extends Error {}

const COMMANDS = ["demo", "replay", "generate", "controller", "exporter", "mode", "consume", "dashboard"] as const;

/** `<command> --help`: that command's usage; the whole text otherwise. */
function commandHelp(command: string | undefined): string {
  if (!command || !(COMMANDS as readonly string[]).includes(command)) return USAGE;
  const lines = USAGE.split("\n");
  const start = lines.findIndex((l) => l.startsWith(`  rdma-telemetry ${command === "demo" ? "[demo]" : command}`));
  let end = start + 1;
  while (end < lines.length && lines[end]!.startsWith("   ")) end++;
  return [...lines.slice(start, end).map((l) => l.slice(2)), "", "See rdma-telemetry --help for the Kafka, logging and output options."].join("\n");
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL(import.meta.url.includes("/dist/") ? "../../package.json" : "../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

function int(v: string | undefined, name: string, def: number): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a non-negative integer (got '${v}')`);
  return n;
}

function positive(n: number, name: string): number {
  if (n <= 0) throw new UsageError(`--${name} must be at least 1 (got ${n})`);
  return n;
}

function load(v: string | undefined): number {
  if (v === undefined) return 1;
  const n = Number(v);
  if (!(n > 0 && n <= 10)) throw new UsageError(`--load must be a number above 0 and at most 10 (got '${v}')`);
  return n;
}

function mode(v: string | undefined): "full" | "polling" {
  if (v === undefined || v === "full" || v === "polling") return v ?? "full";
  throw new UsageError(`--mode must be full or polling (got '${v}')`);
}

const SPILL_DIR = ".cache/kafka-spill";
const DEFAULT_LISTEN = "127.0.0.1:8080";

function parseListenArg(text: string) {
  try {
    return parseListen(text);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The demo's dashboard: a store fed by the in-process exporter, and its server. */
async function demoDashboard(listen: string, print: (t: string) => void): Promise<{ store: DashboardStore; server: DashboardServer }> {
  const store = new DashboardStore("the demo's exporter");
  const server = await startDashboardServer({ store, listen: parseListenArg(listen) });
  store.setStatus({ state: "consuming", detail: "records of the demo's run, as its exporter writes them" });
  print(`dashboard: ${server.url}`);
  return { store, server };
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}

/** Closes a Kafka sink and says what became of its records: published, or kept on disk for the next run. */
async function closeKafka(kafka: KafkaSink, print: (t: string) => void): Promise<void> {
  const left = await kafka.close(5_000);
  const sent = kafka.stats.sent;
  if (left === 0) print(`Kafka: ${sent} records and digests published`);
  else print(`Kafka: ${sent} records and digests published; ${kafka.stats.spilledNow} not acknowledged${kafka.stats.lastError ? ` (${kafka.stats.lastError})` : ""} are kept in ${SPILL_DIR} and go out first the next time a command reaches Kafka${kafka.stats.dropped ? `; ${kafka.stats.dropped} dropped (spill full)` : ""}`);
}

async function kafkaSink(brokers: string | undefined, security: () => KafkaSecurity, topics: TopicNames, logger: ReturnType<typeof createLogger>, client: KafkaClientName): Promise<KafkaSink | undefined> {
  if (!brokers) return undefined;
  const sink = new KafkaSink({ brokers: brokers.split(",").filter(Boolean), client, ...security(), topics, logger, spillDir: SPILL_DIR });
  await sink.start();
  return sink;
}

/** Prometheus metrics on `listen`, when given (the Kafka sink's too). */
async function metricsServer(listen: string | undefined, kafka: KafkaSink | undefined, print: (t: string) => void): Promise<{ metrics: TelemetryMetrics; close: () => Promise<void> } | undefined> {
  if (!listen) return undefined;
  const metrics = new TelemetryMetrics();
  if (kafka) metrics.watchKafka(kafka);
  const served = await metrics.listen(listen).catch((err: unknown) => {
    throw new UsageError(`--metrics-listen ${listen}: ${(err as NodeJS.ErrnoException).code === "EADDRINUSE" ? "already in use" : (err as Error).message}`);
  });
  print(`metrics: ${served.url}`);
  return { metrics, close: served.close };
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      help: { type: "boolean", short: "h" },
      version: { type: "boolean" },
      "log-level": { type: "string" },
      "duration-ms": { type: "string" },
      seed: { type: "string" },
      load: { type: "string" },
      "out-dir": { type: "string" },
      out: { type: "string" },
      topology: { type: "string", multiple: true },
      mode: { type: "string" },
      layout: { type: "string" },
      config: { type: "string" },
      "kafka-brokers": { type: "string" },
      "metrics-listen": { type: "string" },
      listen: { type: "string" },
      p4info: { type: "string" },
      "device-config": { type: "string" },
      "device-id": { type: "string" },
      "cpu-port": { type: "string" },
      "pcap-in": { type: "string", multiple: true },
      "pcap-out": { type: "string" },
      "kafka-client": { type: "string" },
      control: { type: "string" },
      topic: { type: "string" },
      "from-beginning": { type: "boolean" },
      forwarded: { type: "string" },
      append: { type: "boolean" },
      journal: { type: "string" },
      "switch-id": { type: "string", multiple: true },
      dashboard: { type: "boolean" },
      group: { type: "string" },
      "kafka-topic-prefix": { type: "string" },
      "digests-only": { type: "boolean" },
      "capture-clock": { type: "boolean" },
      "pcap-delay-ms": { type: "string" },
      ...KAFKA_SECURITY_FLAGS,
    },
  });
  if (values.version) {
    process.stdout.write(`rdma-telemetry ${packageVersion()}\n`);
    return 0;
  }
  if (values.help) {
    process.stdout.write(commandHelp(positionals[0]) + "\n");
    return 0;
  }
  const levelText = values["log-level"] ?? process.env.RDMA_TELEMETRY_LOG_LEVEL ?? "warn";
  if (!isLogLevel(levelText)) throw new UsageError(`--log-level must be debug, info, warn, error or silent (got '${levelText}')`);
  const logger = createLogger(levelText as LogLevel);
  const print = (t: string) => process.stdout.write(t + "\n");
  const [command = "demo", ...rest] = positionals;
  const security = () => kafkaSecurity(values, process.env, (m) => logger.warn(m));
  const client = (): KafkaClientName => {
    try {
      kafkaMaxInFlight(process.env.KAFKA_MAX_IN_FLIGHT); // refused here, before anything starts
      return values["kafka-client"] !== undefined ? kafkaClientName(values["kafka-client"], "--kafka-client") : kafkaClientName(process.env.KAFKA_CLIENT);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  };

  const topics = () =>
    values["kafka-topic-prefix"] !== undefined ? topicNames(values["kafka-topic-prefix"]) : topicNames(process.env.KAFKA_TOPIC_PREFIX || undefined, "KAFKA_TOPIC_PREFIX");

  switch (command) {
    case "demo": {
      if (values.listen && !values.dashboard) throw new UsageError("--listen is for --dashboard");
      const kafka = await kafkaSink(values["kafka-brokers"] ?? process.env.KAFKA_BROKERS, security, topics(), logger, client());
      const metrics = await metricsServer(values["metrics-listen"], kafka, print);
      const board = values.dashboard ? await demoDashboard(values.listen ?? DEFAULT_LISTEN, print) : undefined;
      await runDemo({
        kafka,
        onRecord: metrics || board ? (r) => {
          metrics?.metrics.onRecord(r);
          board?.store.add(r);
        } : undefined,
        seed: int(values.seed, "seed", 1),
        durationMs: positive(int(values["duration-ms"], "duration-ms", 3000), "duration-ms"),
        load: load(values.load),
        outDir: values["out-dir"] ?? "demo-out",
        mode: mode(values.mode),
        logger,
        print,
      });
      if (kafka) await closeKafka(kafka, print);
      await metrics?.close();
      if (board) {
        board.store.setStatus({ state: "finished", detail: "the demo's run is over" });
        print(`the dashboard stays up at ${board.server.url}; Ctrl-C to stop`);
        await untilSignal();
        await board.server.close();
      }
      return 0;
    }
    case "dashboard": {
      const brokers = (values["kafka-brokers"] ?? process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
      if (!brokers.length) throw new UsageError("dashboard needs --kafka-brokers (or KAFKA_BROKERS); `demo --dashboard` shows one without Kafka");
      const listen = values.listen ?? DEFAULT_LISTEN;
      parseListenArg(listen);
      const ac = new AbortController();
      process.once("SIGINT", () => ac.abort());
      process.once("SIGTERM", () => ac.abort());
      const t = topics();
      await runDashboard({ brokers, ...security(), topics: [t.io, t.flow, t.alert], listen, fromBeginning: values["from-beginning"], groupId: values.group, print, signal: ac.signal });
      return 0;
    }
    case "replay": {
      if (rest.length === 0) throw new UsageError("replay needs a CAPTURE file");
      const topologies = values.topology ?? [];
      if (topologies.length === 0) throw new UsageError("replay needs --topology FILE");
      if (topologies.length !== 1 && topologies.length !== rest.length) {
        throw new UsageError(`replay got ${rest.length} captures and ${topologies.length} topologies: give one topology for all, or one per capture`);
      }
      if (!values.out) throw new UsageError("replay needs --out RECORDS.jsonl");
      const topos = topologies.map((f) => Topology.load(f));
      const ids = values["switch-id"] ?? [];
      if (ids.length > 0 && ids.length !== rest.length) throw new UsageError(`replay got ${rest.length} captures and ${ids.length} --switch-id: give one per capture`);
      const captures = rest.map((path, i) => ({ path, topology: topos[topos.length === 1 ? 0 : i]!, switchId: ids[i] }));
      const t0 = Date.now();
      const kafka = await kafkaSink(values["kafka-brokers"] ?? process.env.KAFKA_BROKERS, security, topics(), logger, client());
      const metrics = await metricsServer(values["metrics-listen"], kafka, print);
      const progress = terminalProgress("replay", "packets");
      const r = await replayCaptures(captures, {
        mode: mode(values.mode), out: values.out, outMode: values.append ? "append" : "create", logger, kafka, forwarded: values.forwarded,
        onRecord: metrics ? (rec) => metrics.metrics.onRecord(rec) : undefined,
        onProgress: (done, total) => progress?.update(done, total),
      }).finally(() => progress?.stop());
      if (kafka) await closeKafka(kafka, print);
      await metrics?.close();
      print(`${r.packets} packets, ${r.digests} digests, ${r.records} records in ${((Date.now() - t0) / 1000).toFixed(1)} s -> ${values.out}`);
      const unrouted = r.rigs.reduce((a, x) => a + x.noIngressPort, 0);
      if (unrouted) print(`${unrouted} packets had a source address outside the topology and were not replayed`);
      return 0;
    }
    case "generate": {
      const dir = values["out-dir"];
      if (!dir) throw new UsageError("generate needs --out-dir DIR");
      const layout = values.layout ?? "two-tor";
      if (layout !== "two-tor" && layout !== "single") throw new UsageError(`--layout must be two-tor or single (got '${layout}')`);
      const durationNs = positive(int(values["duration-ms"], "duration-ms", 2000), "duration-ms") * 1_000_000;
      const progress = terminalProgress("generate", "ms of traffic");
      const g = writeTrafficStream(dir, { seed: int(values.seed, "seed", 1), durationNs, layout, ...loadOptions(load(values.load)) }, (simNs) => progress?.update(Math.floor(simNs / 1e6), durationNs / 1e6));
      progress?.stop();
      print(`wrote ${g.switches.map((s) => `${s.name}.pcap (${s.packets} packets)`).join(", ")} and ${TRUTH_FILE} (${g.ios} I/Os, ${g.messages} messages) to ${dir}`);
      return 0;
    }
    case "controller": {
      if (!values.config) throw new UsageError("controller needs --config FILE");
      const brokers = values["kafka-brokers"] ?? process.env.KAFKA_BROKERS;
      await runController({ digestsOnly: values["digests-only"], configFile: values.config, metricsListen: values["metrics-listen"], out: values.out, append: values.append, journal: values.journal, brokers: brokers ? brokers.split(",") : undefined, kafkaSecurity: brokers ? security() : undefined, kafkaClient: brokers ? client() : undefined, topics: topics(), logger, print });
      return 0;
    }
    case "exporter": {
      if (rest.length) throw new UsageError(`exporter takes no arguments (got '${rest[0]}')`);
      const brokers = (values["kafka-brokers"] ?? process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
      if (!brokers.length) throw new UsageError("exporter needs --kafka-brokers (or KAFKA_BROKERS)");
      if (values.group !== undefined && !/^[A-Za-z0-9._-]{1,200}$/.test(values.group)) throw new UsageError(`--group: a group id is letters, digits, '.', '_' and '-' (got '${values.group}')`);
      const ac = new AbortController();
      process.once("SIGINT", () => ac.abort());
      process.once("SIGTERM", () => ac.abort());
      await runExporterGroup({ brokers, ...security(), topics: topics(), groupId: values.group, switchIds: values["switch-id"], metricsListen: values["metrics-listen"], logger, print, signal: ac.signal });
      // Out of the group, everything committed: a partition still being taken on (reading back) commits nothing, and is not waited for.
      await new Promise((r) => process.stdout.write("", r));
      process.exit(0);
    }
    case "consume": {
      if (!values.topic) throw new UsageError("consume needs --topic TOPIC");
      const brokers = (values["kafka-brokers"] ?? process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
      if (!brokers.length) throw new UsageError("consume needs --kafka-brokers (or KAFKA_BROKERS)");
      const ac = new AbortController();
      process.once("SIGINT", () => ac.abort());
      process.once("SIGTERM", () => ac.abort());
      await consume({ brokers, ...security(), topic: values.topic, fromBeginning: values["from-beginning"] ?? false, print, signal: ac.signal });
      return 0;
    }
    case "switch": {
      const ac = new AbortController();
      process.once("SIGINT", () => ac.abort());
      process.once("SIGTERM", () => ac.abort());
      await runSwitch({
        listen: values.listen ?? "127.0.0.1:9559",
        deviceId: BigInt(int(values["device-id"], "device-id", 1)),
        cpuPort: int(values["cpu-port"], "cpu-port", 510),
        p4info: values.p4info,
        deviceConfig: values["device-config"],
        pcapIn: (values["pcap-in"] ?? []).map(parsePcapIn),
        topology: values.topology?.length ? Topology.load(values.topology[0]!) : undefined,
        captureClock: values["capture-clock"],
        pcapDelayMs: int(values["pcap-delay-ms"], "pcap-delay-ms", 0),
        pcapOut: values["pcap-out"],
        logger,
        print,
        signal: ac.signal,
      });
      return 0;
    }
    case "mode": {
      const m = rest[0];
      if (m !== "full" && m !== "polling") throw new UsageError("mode needs full or polling");
      const target = values.control ?? "127.0.0.1:9660";
      const res = await fetch(`http://${target}/mode`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ mode: m }) }).catch((err: unknown) => {
        throw new UsageError(`no controller answers at ${target}: ${(err as Error).message}`);
      });
      const body = await res.text();
      if (!res.ok) throw new UsageError(`controller refused: ${body.trim()}`);
      print(body.trim());
      return 0;
    }
    default:
      throw new UsageError(`unknown command '${command}' (see --help)`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError || err instanceof SwitchOptionError || err instanceof ConfigError || err instanceof CaptureError || err instanceof OutputError || err instanceof NoSuchTopicError || (err as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      process.stderr.write(`rdma-telemetry: ${(err as Error).message}\n`);
      process.exitCode = 2;
    } else if (err instanceof KafkaConnectError || err instanceof ListenError) {
      process.stderr.write(`rdma-telemetry: ${err.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`rdma-telemetry: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    }
  },
);
