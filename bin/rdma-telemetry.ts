#!/usr/bin/env node
// rdma-telemetry: the command line. Environment variables are read here only.
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { consume, NoSuchTopicError } from "../app/consume.js";
import { KafkaSink } from "@rdma-telemetry/exporter";
import { kafkaClientName, kafkaCompression, kafkaMaxInFlight, KafkaConnectError, type KafkaClientName, type KafkaCompression, type KafkaSecurity, type TopicNames } from "@rdma-telemetry/exporter";
import { KAFKA_SECURITY_FLAGS, kafkaBrokers, kafkaSecurity, topicNames } from "../app/kafka-options.js";
import { closeKafka } from "../app/kafka-close.js";
import { runController } from "../app/run-controller.js";
import { runExporterGroup } from "../app/exporter-command.js";
import { runDemo } from "../app/demo.js";
import { parsePcapIn, parsePcapInStart, runSwitch, SwitchOptionError } from "../app/switch-command.js";
import { TelemetryMetrics } from "../app/prometheus.js";
import { runDashboard } from "../app/dashboard/run.js";
import { DASHBOARD_BOUND_FLAGS, DashboardFlagError, dashboardFlags } from "../app/dashboard/flags.js";
import { ListenError, parseListen, startDashboardServer, type DashboardServer } from "../app/dashboard/server.js";
import { DashboardStore } from "../app/dashboard/store.js";
import { createLogger, isLogLevel, type LogLevel } from "../app/logger.js";
import { terminalProgress } from "../app/progress.js";
import { durationText } from "../app/summary.js";
import { replayCaptures } from "../app/replay.js";
import { Topology } from "../app/topology.js";
import { DEFAULT_GENERATOR_OPTIONS, DEFAULT_SNAPLEN, IB_MTUS, loadOptions, MIN_SNAPLEN, TRUTH_FILE, writeTrafficStream } from "@rdma-telemetry/traffic";
import { ConfigError, loadConfig } from "@rdma-telemetry/controller";
import { CaptureError, WriteError } from "@rdma-telemetry/traffic";
import { OutputError } from "@rdma-telemetry/exporter";
import { clientToken, ControlTokenError, defaultTokenFile, TOKEN_ENV, type TokenSource } from "../app/control-token.js";
import { controlRequest, ControlUnreachableError, controlUrl } from "../app/control-client.js";
import { prepareOutDir } from "../app/output-dir.js";

const USAGE = `rdma-telemetry — per-I/O and per-message telemetry for RoCEv2 fabrics

Usage:
  rdma-telemetry [demo] [--duration-ms N] [--seed N] [--load F] [--out-dir DIR [--force]] [--mode full|polling|summary]
                 [--snaplen BYTES] [--config FILE] [--hosts N] [--targets N] [--queues-per-host N] [--channels N] [--ip 4|6|mixed]
                 [--reorder SHARE[:MAXDISP] [--reorder-loss SHARE]] [--job-turnover SHARE] [--mtu BYTES] [--io-sizes LIST] [--storage-reorder SHARE[:MAXDISP]] [--response-loss SHARE]
                 [--dashboard [--listen 127.0.0.1:8080]] [--silent-switch-ms N]
      The main job: generated RoCEv2 traffic through two software switches,
      their controllers and the exporter, with a live summary. --load scales
      the traffic (1: the default fabric, 0.25: a quarter of its I/Os and
      messages per second). --dashboard serves the web dashboard of the run's
      records (no Kafka needed) and keeps it up after the run until Ctrl-C.
      The captures keep whole packets (about 700 MB per second of traffic at
      load 1); --snaplen 146 keeps the headers the switch reads.
  rdma-telemetry replay CAPTURE [CAPTURE...] --topology FILE [--topology FILE...]
                 --out RECORDS.jsonl [--mode full|polling|summary] [--config FILE] [--switch-id NAME...]
                 [--silent-switch-ms N]
      Replays pcap/pcapng captures (Ethernet, Linux cooked as tcpdump -i any
      writes them, or raw IP) through the P4 program, controller and
      exporter. Each capture is one switch with its own clock; the i-th
      topology belongs to the i-th capture (one serves all when only one is
      given). RTT needs a compute-side and a storage-side capture. Switches
      are named after their capture files unless --switch-id names them.
      --config takes a deployed controller's config file: its mode, polling
      watchlist capacities and rotation period, timeouts and digest list
      settings, and (without --topology) its ports for every capture.
      --silent-switch-ms N: how long a switch that sends nothing holds the
      others' halves and its unanswered commands (default 60000, or the
      --config's timeouts.silent_switch_ms; "A switch gone silent" in --help).
  rdma-telemetry generate --out-dir DIR [--force] [--duration-ms N] [--seed N] [--load F] [--layout two-tor|single]
                 [--snaplen BYTES] [--hosts N] [--targets N] [--queues-per-host N] [--channels N] [--ip 4|6|mixed]
                 [--compute-tors N] [--storage-tors N]
                 [--reorder SHARE[:MAXDISP] [--reorder-loss SHARE]] [--job-turnover SHARE] [--mtu BYTES] [--io-sizes LIST] [--storage-reorder SHARE[:MAXDISP]] [--response-loss SHARE]
      Writes generated captures, topologies and their ground truth. The
      captures keep whole packets unless --snaplen (146 to 262144) cuts them.
      --hosts, --targets and --queues-per-host size the fabric (default 4, 2
      and 4: each host has a controller on every target, with an admin queue
      and that many I/O queues; 2,000 I/Os per second per host at load 1).
      --compute-tors 4 --storage-tors 2 spreads the hosts over 4 ToRs
      (tor-c1..tor-c4, host i under the (i mod 4)-th) and the targets over 2
      (tor-s1, tor-s2), a capture each (default 1 and 1: tor-c and tor-s);
      each ToR's hosts form their own gradient ring.
      --ip 6 puts every host and target on IPv6 (2001:db8:0:1::N hosts,
      2001:db8:0:2::N targets); mixed makes odd-numbered hosts IPv6, the
      others IPv4, and gives targets both (default 4). --reorder 0.2:6 sends
      a fifth of the RDMA WRITE messages over reordering paths, packets
      displaced 1 to 6 places (default 6, at most 255); --reorder-loss 0.5 also loses one
      packet after the switch in half of those, resent go-back-N.
      --job-turnover 0.5: a quarter of the hosts end their jobs (their I/O)
      at 40 % of the capture and another quarter start theirs at 60 %, their
      queues connected throughout (default 0). --mtu 1024: the RDMA path MTU
      of every queue and flow (256, 512, 1024, 2048 or 4096, default 4096;
      NICs use 1024 on an Ethernet MTU of 1500). --io-sizes 4k,128k,1m: the
      NVMe I/O sizes, drawn uniformly (multiples of 512 bytes up to 8m;
      default 4k,16k,64k); the data of an I/O above 120 KiB moves in several
      RDMA operations, as nvmet's 30 pages per WRITE or READ. --channels 4:
      the gradient ring's NCCL channels, each a connection of its own (QPs
      each way) between every host and the next, carrying a quarter of each
      step's data at a quarter of the link (default 1).
      --storage-reorder 0.5:6 sends half of the NVMe queues over reordering
      paths too (each packet delayed by up to 6 packet times across the
      fabric). --response-loss 0.01: the share of NVMe responses missing from
      one capture or both (a mirror or capture drop; default 0.002): the I/O
      is incomplete there once its capture goes on past its I/O timeout (1 s)
      or its CID is reused, "answer unknown" if the capture ends before.
      Demo takes --ip (default 4), --reorder, --reorder-loss, --job-turnover,
      --mtu, --io-sizes, --channels, --storage-reorder and --response-loss too.
  rdma-telemetry controller --config FILE [--out RECORDS.jsonl [--append]] [--journal DIR]
                 [--kafka-brokers HOST:PORT,...] [--control-token-file FILE] [--digests-only]
                 [--silent-switch-ms N]
      Runs the controller and exporter against a switch (BMv2 simple_switch_grpc
      or the software switch). Env KAFKA_BROKERS if --kafka-brokers is not given.
      With --journal, digest lists are acknowledged once journaled and fsync'd,
      and a controller restarted on the same journal (and --out --append)
      replays what an earlier run had not settled, writing no record twice.
      The config's control_port serves the mode command, with a token (env
      RDMA_TELEMETRY_CONTROL_TOKEN, else the file of --control-token-file or the
      default below, written 0600 at first start; the controller prints where).
      With --digests-only it publishes the raw digests (rdma.digest.v1) and
      its switch's switch_stats, and no other record: an exporter group makes
      them (for fabrics whose I/Os cross switches driven by other controllers).
      --silent-switch-ms N (else the config's timeouts.silent_switch_ms,
      default 60000): how long the switch may send nothing (this controller
      not its primary) before the commands it saw unanswered go out without
      its figures ("A switch gone silent" in --help).
  rdma-telemetry exporter [--kafka-brokers HOST:PORT,...] [--group ID] [--switch-id NAME...] [--silent-switch-ms N]
                 [--threads N]
      A member of an exporter group: consumes the digests that controllers
      publish with --digests-only (rdma.digest.v1) in consumer group ID
      (default rdma-telemetry-exporter), joins both vantages of each I/O and
      publishes the records exactly once (Kafka transactions). Run as many as
      the digest topic has partitions. With --switch-id, digests of other
      switches are counted and dropped. Every controller tells every
      partition its switch's clock each second (switch_clock notes), so
      each member knows and awaits every switch of the fabric, and a
      partition a switch sends no digest to moves on with its clock. Halves
      wait for their other vantage while its switch is silent for up to
      --silent-switch-ms (default 60000; 1000 to 3600000), then go out
      alone, and the commands that switch saw unanswered go out without its
      figures (counted). The partitions' engines (decoding, joining,
      encoding) run on --threads N engine threads beside the thread that
      reads and writes Kafka (0 to 64; default 1 on a machine of more than
      one core, else 0: all in one thread). Prints a summary line at SIGTERM.
  rdma-telemetry switch [--listen 127.0.0.1:9559] [--p4info F --device-config F] [--device-id N]
                 [--cpu-port N] [--pcap-in PORT=FILE...] [--pcap-in-start now|digests] [--pcap-out DIR]
                 [--topology FILE --pcap-in FILE] [--capture-clock] [--pcap-delay-ms N]
      The software switch as a standalone P4Runtime target (as simple_switch_grpc),
      for any controller; captures replayed in on ports, merged on one clock
      (they start at once, or with digests once a controller has configured
      every digest), one capture out per port. A capture given without PORT=
      enters on the ports of its packets' source addresses in --topology (a
      capture of generate). With --capture-clock the switch measures on the
      captures' clock (as replay does); with it or --pcap-delay-ms the
      captures wait for a pipeline, then that long.
  rdma-telemetry mode full|polling|summary [--control 127.0.0.1:PORT | https://HOST:PORT [--control-ca FILE]]
                 [--control-token-file FILE]
      Switches the mode of a running primary controller (its config's control_port),
      with the control token the controller printed: env RDMA_TELEMETRY_CONTROL_TOKEN,
      else --control-token-file, else $XDG_STATE_HOME/rdma-telemetry/control-token
      (~/.local/state/...), the file a controller makes at its first start.
  rdma-telemetry consume --topic TOPIC [--kafka-brokers HOST:PORT,...] [--from-beginning]
                 [--kafka-client platformatic|kafkajs]
      Tails a topic and prints its records decoded, one JSON object a line
      (committed records only, in offset order per partition; the same reading
      with either client).
  rdma-telemetry dashboard [--kafka-brokers HOST:PORT,...] [--listen 127.0.0.1:8080]
                 [--from-beginning] [--group ID] [--intervals N] [--max-pairs N]
                 [--max-flows N] [--max-switches N] [--max-alerts N] [--reread-seconds S]
      Web dashboard of rdma.io.v1, rdma.flow.v1 and rdma.alert.v1 (or those of
      --kafka-topic-prefix): per pair
      and flow percentiles over time, where the time went, alerts, switch
      health, updated live. Reads in a consumer group of its own (default
      rdma-telemetry-dashboard-HOST-PID); at start it reads the last
      --reread-seconds (default: --intervals × 1 s) of each topic again, so a
      restarted dashboard is not empty, or the topics from their beginning
      (--from-beginning). Keeps the last --intervals intervals (300),
      --max-pairs pair series (128), --max-flows flows (128), --max-switches
      switches (32) and --max-alerts alerts (500) in memory.

A switch gone silent: demo, replay, controller and exporter take
--silent-switch-ms N (1000 to 3600000; default 60000, or the timeouts of
--config): once a switch has sent nothing for that long (the other switches'
digest time; for a controller, the wall clock), the halves of I/Os waiting
for it go out alone, and the commands it saw unanswered go out without its
figures, not incomplete (counted in the summary line and in /metrics).

Demo, replay, controller and exporter take --metrics-listen HOST:PORT to serve
Prometheus metrics at /metrics (docs/operations.md lists them).

An --out file that already holds records is refused unless --append is given
(a second process writing the same file is always refused). Demo and replay also take --kafka-brokers (or env KAFKA_BROKERS) to publish
records on Kafka; replay takes --forwarded FILE.pcap to write the packets the
switch forwarded.

An --out-dir (the demo's default: demo-out) that already holds files is
refused unless --force is given, which overwrites the files the command writes
(npm start passes it).

Numbers: --duration-ms 1 to 86400000 (24 h), --seed 0 to 4294967295, --load
above 0 and at most 10, --device-id 0 to 18446744073709551615, --cpu-port 0 to
511 (ports are 9 bits), each in decimal digits.

The exporter publishes with --kafka-client platformatic|kafkajs (env KAFKA_CLIENT;
default platformatic, i.e. @platformatic/kafka; see docs/operations.md), with
up to KAFKA_MAX_IN_FLIGHT produce requests in flight (1 to 5, default 5;
kafkajs takes one at a time), record batches compressed with
--kafka-compression none|gzip|snappy|lz4|zstd (env KAFKA_COMPRESSION; default zstd).

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

Exit codes: 0 ok, 1 failure, 2 bad usage (an option the command does not take
included) or bad input (config, capture, topology, an output that cannot be written). A fatal error ends any command: it closes what it
listens on, says why in one line, and exits non-zero; no signal is needed.`;

class UsageError extends Error {}

const COMMANDS = ["demo", "replay", "generate", "controller", "exporter", "mode", "consume", "dashboard"] as const;

/** The options of the generated fabric (demo and generate). */
const FABRIC_OPTIONS = ["duration-ms", "seed", "load", "snaplen", "hosts", "targets", "queues-per-host", "channels", "ip", "reorder", "reorder-loss", "job-turnover", "mtu", "io-sizes", "storage-reorder", "response-loss", "out-dir", "force"];
/** Kafka's connection options (every command that reaches Kafka). */
const KAFKA_OPTIONS = ["kafka-brokers", ...Object.keys(KAFKA_SECURITY_FLAGS)];
/** The options each command takes besides --help, --version and --log-level: any other is refused (exit 2), not ignored. */
const TAKES: Record<string, readonly string[]> = {
  demo: [...FABRIC_OPTIONS, "mode", "config", "dashboard", "listen", "silent-switch-ms", "metrics-listen", ...KAFKA_OPTIONS, "kafka-topic-prefix", "kafka-client", "kafka-compression"],
  replay: ["topology", "out", "append", "mode", "config", "switch-id", "silent-switch-ms", "metrics-listen", "forwarded", ...KAFKA_OPTIONS, "kafka-topic-prefix", "kafka-client", "kafka-compression"],
  generate: [...FABRIC_OPTIONS, "layout", "compute-tors", "storage-tors"],
  controller: ["config", "out", "append", "journal", "digests-only", "control-token-file", "silent-switch-ms", "metrics-listen", ...KAFKA_OPTIONS, "kafka-topic-prefix", "kafka-client", "kafka-compression"],
  exporter: ["group", "switch-id", "silent-switch-ms", "threads", "metrics-listen", ...KAFKA_OPTIONS, "kafka-topic-prefix"],
  switch: ["listen", "p4info", "device-config", "device-id", "cpu-port", "pcap-in", "pcap-in-start", "pcap-out", "topology", "capture-clock", "pcap-delay-ms"],
  mode: ["control", "control-ca", "control-token-file"],
  consume: ["topic", "from-beginning", "kafka-client", ...KAFKA_OPTIONS],
  dashboard: ["listen", "from-beginning", "group", ...DASHBOARD_BOUND_FLAGS.map(([f]) => f), "reread-seconds", ...KAFKA_OPTIONS, "kafka-topic-prefix"],
};
const EVERY_COMMAND = new Set(["help", "version", "log-level"]);

/** An option given to a command that does not take it: one line, not silently ignored. */
function refuseOthers(command: string, given: readonly string[]): void {
  const takes = TAKES[command];
  if (!takes) return; // an unknown command is said so by itself
  const other = given.find((o) => !EVERY_COMMAND.has(o) && !takes.includes(o));
  if (other !== undefined) throw new UsageError(`${command} does not take --${other} (rdma-telemetry ${command} --help)`);
}

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

/** The limits of the numeric options (USAGE lists them). */
const LIMITS = {
  "duration-ms": { min: 1, max: 86_400_000, unit: " (24 h)" },
  seed: { min: 0, max: 0xffff_ffff, unit: "" },
  "cpu-port": { min: 0, max: 510, unit: " (ports are 9 bits; 511 is the drop port)" },
  hosts: { min: 1, max: 200, unit: " (10.0.1.1 on)" },
  targets: { min: 1, max: 50, unit: " (10.0.2.1 on)" },
  "queues-per-host": { min: 1, max: 256, unit: " (I/O queues per host on each target)" },
  channels: { min: 1, max: 32, unit: " (NCCL channels between ring neighbours)" },
  "compute-tors": { min: 1, max: 200, unit: " (and at most --hosts)" },
  "storage-tors": { min: 1, max: 50, unit: " (and at most --targets)" },
  "pcap-delay-ms": { min: 0, max: 3_600_000, unit: " (1 h)" },
  "silent-switch-ms": { min: 1000, max: 3_600_000, unit: " (1 h)" },
  threads: { min: 0, max: 64, unit: "" },
  snaplen: { min: MIN_SNAPLEN, max: 262_144, unit: ` bytes (${MIN_SNAPLEN} keeps every header the switch reads)` },
} as const;

/** A whole number within the option's limits, written in decimal digits. */
function int(v: string | undefined, name: keyof typeof LIMITS, def: number): number {
  if (v === undefined) return def;
  const { min, max, unit } = LIMITS[name];
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < min || n > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}${unit} (got '${v}')`);
  return n;
}

/** --silent-switch-ms, when given (the commands' own default otherwise: their config's, else 60 s). */
function silentSwitchMs(v: string | undefined): number | undefined {
  return v === undefined ? undefined : int(v, "silent-switch-ms", 0);
}

/** --snaplen: bytes of each packet the captures keep (default: whole packets, as Wireshark decodes them). */
function snaplen(v: string | undefined): number {
  return int(v, "snaplen", DEFAULT_SNAPLEN);
}

/** --ip: the address families of the generated hosts and targets. */
function ipFamilies(v: string | undefined): 4 | 6 | "mixed" {
  if (v === undefined || v === "4") return 4;
  if (v === "6") return 6;
  if (v === "mixed") return "mixed";
  throw new UsageError(`--ip must be 4, 6 or mixed (got '${v}')`);
}

/** SHARE[:MAXDISP]: a share above 0 and at most 1, and 1 to `max` (default 6). */
function shareAndDisplacement(v: string, option: string, of: string, disp: string, max = 64): [number, number] {
  const m = /^(\d*\.?\d+)(?::(\d+))?$/.exec(v);
  const share = m ? Number(m[1]) : NaN;
  const d = m?.[2] !== undefined ? Number(m[2]) : 6;
  if (!(share > 0 && share <= 1) || !(d >= 1 && d <= max)) throw new UsageError(`${option} must be SHARE[:MAXDISP]: a share of ${of} above 0 and at most 1, and ${disp} (got '${v}')`);
  return [share, d];
}

/** --reorder SHARE[:MAXDISP] and --reorder-loss SHARE: reordering paths for the generated RDMA WRITE messages. */
function reorder(v: string | undefined, loss: string | undefined): { reorderShare?: number; reorderMaxDisplacement?: number; reorderLoss?: number } {
  if (v === undefined) {
    if (loss !== undefined) throw new UsageError("--reorder-loss needs --reorder (the losses are among the reordered messages)");
    return {};
  }
  // Up to the switch's seen-PSN window (256 PSNs, docs/spec.md §4): a packet displaced further counts as resent.
  const [share, disp] = shareAndDisplacement(v, "--reorder", "messages", "at most 1 to 255 places of displacement (the seen-PSN window)", 255);
  const out = { reorderShare: share, reorderMaxDisplacement: disp, reorderLoss: 0 };
  if (loss !== undefined) {
    out.reorderLoss = shareOf(loss, 1, "--reorder-loss must be a share from 0 to 1 of the reordered messages");
  }
  return out;
}

/** --mtu: the RDMA path MTU of the generated queues and flows (the generator's 4096 where not given). */
function pathMtu(v: string | undefined): { mtu?: number } {
  if (v === undefined) return {};
  const n = Number(v);
  if (!/^\d+$/.test(v) || !(IB_MTUS as readonly number[]).includes(n)) throw new UsageError(`--mtu must be one of ${IB_MTUS.join(", ")} bytes (got '${v}')`);
  return { mtu: n };
}

/** --storage-reorder SHARE[:MAXDISP]: NVMe queues over reordering paths. */
function storageReorder(v: string | undefined): { storageReorderShare?: number; storageReorderMaxDisplacement?: number } {
  if (v === undefined) return {};
  const [share, disp] = shareAndDisplacement(v, "--storage-reorder", "NVMe queues", "1 to 64 packet times of delay");
  return { storageReorderShare: share, storageReorderMaxDisplacement: disp };
}

/** --io-sizes: the NVMe I/O sizes, e.g. 4k,128k,1m (the generator's where not given). */
function ioSizes(v: string | undefined): { ioSizes?: number[] } {
  if (v === undefined) return {};
  const sizes = v.split(",").map((s) => {
    const m = /^(\d+)([km]?)$/i.exec(s.trim());
    return m ? Number(m[1]) * (m[2]!.toLowerCase() === "k" ? 1024 : m[2]!.toLowerCase() === "m" ? 1 << 20 : 1) : NaN;
  });
  if (!sizes.every((n) => n >= 512 && n <= 8 << 20 && n % 512 === 0)) throw new UsageError(`--io-sizes must be a comma-separated list of sizes in bytes, k or m, each a multiple of 512 from 512 to 8m (got '${v}')`);
  return { ioSizes: sizes };
}

/** A share written as a plain decimal (0.25, .5, 1) from 0 to `max`; else the usage error `says`, with the value. */
function shareOf(v: string, max: number, says: string): number {
  const n = /^\d*\.?\d+$/.test(v) ? Number(v) : NaN;
  if (!(n >= 0 && n <= max)) throw new UsageError(`${says} (got '${v}')`);
  return n;
}

/**
 * --hosts, --targets, --queues-per-host, --channels, --job-turnover, --mtu,
 * --io-sizes, --storage-reorder, --response-loss: the generated fabric (the generator's defaults where not given).
 */
function scale(values: { hosts?: string; targets?: string; "queues-per-host"?: string; channels?: string; "job-turnover"?: string; mtu?: string; "io-sizes"?: string; "storage-reorder"?: string; "response-loss"?: string }) {
  const out: { hosts?: number; targets?: number; queuesPerHost?: number; gradientChannels?: number; jobTurnover?: number; responseLoss?: number } = {};
  if (values["response-loss"] !== undefined) out.responseLoss = shareOf(values["response-loss"], 0.5, "--response-loss must be a share of the NVMe responses from 0 to 0.5");
  if (values["job-turnover"] !== undefined) out.jobTurnover = shareOf(values["job-turnover"], 1, "--job-turnover must be a share of the hosts from 0 to 1");
  if (values.hosts !== undefined) out.hosts = int(values.hosts, "hosts", 0);
  if (values.targets !== undefined) out.targets = int(values.targets, "targets", 0);
  if (values["queues-per-host"] !== undefined) out.queuesPerHost = int(values["queues-per-host"], "queues-per-host", 0);
  if (values.channels !== undefined) out.gradientChannels = int(values.channels, "channels", 1);
  return { ...out, ...pathMtu(values.mtu), ...ioSizes(values["io-sizes"]), ...storageReorder(values["storage-reorder"]) };
}

function deviceId(v: string | undefined): bigint {
  if (v === undefined) return 1n;
  if (!/^\d+$/.test(v) || BigInt(v) >= 1n << 64n) throw new UsageError(`--device-id must be a whole number from 0 to 18446744073709551615 (got '${v}')`);
  return BigInt(v);
}

function load(v: string | undefined): number {
  if (v === undefined) return 1;
  const n = Number(v);
  if (!(n > 0 && n <= 10)) throw new UsageError(`--load must be a number above 0 and at most 10 (got '${v}')`);
  return n;
}

function mode(v: string | undefined): "full" | "polling" | "summary" {
  if (v === undefined || v === "full" || v === "polling" || v === "summary") return v ?? "full";
  throw new UsageError(`--mode must be full, polling or summary (got '${v}')`);
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

async function kafkaSink(brokers: string[] | undefined, security: () => KafkaSecurity, topics: TopicNames, logger: ReturnType<typeof createLogger>, client: KafkaClientName, compression: KafkaCompression): Promise<KafkaSink | undefined> {
  if (!brokers) return undefined;
  const sink = new KafkaSink({ brokers, client, compression, ...security(), topics, logger, spillDir: SPILL_DIR });
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

/**
 * The command line parsed, every problem one UsageError naming the option: a
 * value missing or empty, a value given to a flag, an unknown option. A
 * negative number after an option is its value (`--seed -1`), refused by the
 * option's own check.
 */
function parseCommandLine<T extends ParseArgsConfig & { args: string[] }>(config: T): ReturnType<typeof parseArgs<T>> {
  const argv = config.args;
  const takesValue = (a: string) => a.startsWith("--") && !a.includes("=") && config.options?.[a.slice(2)]?.type === "string";
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") {
      args.push(...argv.slice(i));
      break;
    }
    const next = argv[i + 1];
    if (takesValue(a) && next !== undefined && /^-\.?\d/.test(next)) args.push(`${a}=${argv[++i]}`);
    else args.push(a);
  }
  let parsed;
  try {
    parsed = parseArgs({ ...config, args });
  } catch (err) {
    const { code, message } = err as { code?: string; message: string };
    const option = /'(-[^' ]+)/.exec(message)?.[1] ?? "an option";
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw new UsageError(`unknown option '${option}' (see --help)`);
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") throw new UsageError(/does not take/.test(message) ? `${option} takes no value` : needsValue(option));
    throw err;
  }
  for (const [name, v] of Object.entries(parsed.values)) {
    if (v === "" || (Array.isArray(v) && v.includes(""))) throw new UsageError(needsValue(`--${name}`));
  }
  return parsed;
}

/** "--out-dir needs a value (--out-dir DIR)": the placeholder as USAGE writes it. */
function needsValue(option: string): string {
  const placeholder = new RegExp(`${option} ([A-Z][A-Za-z0-9.:,_=]*|[a-z0-9-]+(?:\\|[a-z0-9-]+)+|127[0-9.:A-Z]+)`).exec(USAGE)?.[1];
  return `${option} needs a value${placeholder ? ` (${option} ${placeholder})` : ""}`;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommandLine({
    args: argv,
    allowPositionals: true,
    options: {
      help: { type: "boolean", short: "h" },
      version: { type: "boolean" },
      "log-level": { type: "string" },
      "duration-ms": { type: "string" },
      hosts: { type: "string" },
      targets: { type: "string" },
      "queues-per-host": { type: "string" },
      "compute-tors": { type: "string" },
      "storage-tors": { type: "string" },
      channels: { type: "string" },
      mtu: { type: "string" },
      "io-sizes": { type: "string" },
      "storage-reorder": { type: "string" },
      "job-turnover": { type: "string" },
      "response-loss": { type: "string" },
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
      "pcap-in-start": { type: "string" },
      "pcap-out": { type: "string" },
      "kafka-client": { type: "string" },
      "kafka-compression": { type: "string" },
      control: { type: "string" },
      "control-token-file": { type: "string" },
      "control-ca": { type: "string" },
      topic: { type: "string" },
      "from-beginning": { type: "boolean" },
      forwarded: { type: "string" },
      append: { type: "boolean" },
      journal: { type: "string" },
      "switch-id": { type: "string", multiple: true },
      dashboard: { type: "boolean" },
      group: { type: "string" },
      "kafka-topic-prefix": { type: "string" },
      snaplen: { type: "string" },
      ip: { type: "string" },
      reorder: { type: "string" },
      "reorder-loss": { type: "string" },
      ...Object.fromEntries([...DASHBOARD_BOUND_FLAGS.map(([f]) => f), "reread-seconds"].map((f) => [f, { type: "string" as const }])),
      force: { type: "boolean" },
      "digests-only": { type: "boolean" },
      "capture-clock": { type: "boolean" },
      "pcap-delay-ms": { type: "string" },
      "silent-switch-ms": { type: "string" },
      threads: { type: "string" },
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
  refuseOthers(command, Object.keys(values));
  const security = () => kafkaSecurity(values, process.env, (m) => logger.warn(m));
  const compression = (): KafkaCompression => {
    try {
      return values["kafka-compression"] !== undefined ? kafkaCompression(values["kafka-compression"], "--kafka-compression") : kafkaCompression(process.env.KAFKA_COMPRESSION);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  };
  const client = (): KafkaClientName => {
    try {
      kafkaMaxInFlight(process.env.KAFKA_MAX_IN_FLIGHT); // refused here, before anything starts
      return values["kafka-client"] !== undefined ? kafkaClientName(values["kafka-client"], "--kafka-client") : kafkaClientName(process.env.KAFKA_CLIENT);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  };

  /** --kafka-brokers, else KAFKA_BROKERS (unset or empty: no Kafka), each entry checked. */
  const brokerList = (): string[] | undefined => {
    if (values["kafka-brokers"] !== undefined) return kafkaBrokers(values["kafka-brokers"]);
    return process.env.KAFKA_BROKERS ? kafkaBrokers(process.env.KAFKA_BROKERS, "KAFKA_BROKERS") : undefined;
  };
  const controlTokenSource = (): TokenSource => ({ value: process.env[TOKEN_ENV] || undefined, file: values["control-token-file"] ?? defaultTokenFile(process.env) });
  const topics = () =>
    values["kafka-topic-prefix"] !== undefined ? topicNames(values["kafka-topic-prefix"]) : topicNames(process.env.KAFKA_TOPIC_PREFIX || undefined, "KAFKA_TOPIC_PREFIX");

  switch (command) {
    case "demo": {
      if (values.listen && !values.dashboard) throw new UsageError("--listen is for --dashboard");
      const demoIp = ipFamilies(values.ip);
      const demoReorder = reorder(values.reorder, values["reorder-loss"]);
      const seed = int(values.seed, "seed", 1);
      const durationMs = int(values["duration-ms"], "duration-ms", 3000);
      const demoLoad = load(values.load);
      const deployed = values.config !== undefined ? loadConfig(values.config, { checkFiles: false }) : undefined;
      const demoMode = values.mode !== undefined || !deployed ? mode(values.mode) : undefined;
      const demoSnaplen = snaplen(values.snaplen);
      const demoScale = scale(values);
      const demoSilentMs = silentSwitchMs(values["silent-switch-ms"]);
      const outDir = values["out-dir"] ?? "demo-out";
      const brokers = brokerList();
      const [kafkaTopics, kafkaClient, kafkaCompression, kafkaSecurity] = [topics(), client(), compression(), brokers ? security() : undefined];
      // The Kafka sink first: a spill directory it cannot use is refused before anything is written.
      const kafka = await kafkaSink(brokers, () => kafkaSecurity!, kafkaTopics, logger, kafkaClient, kafkaCompression);
      let metrics: Awaited<ReturnType<typeof metricsServer>>;
      let board: Awaited<ReturnType<typeof demoDashboard>> | undefined;
      // A failure ends the command: what is up is closed first (the Kafka sink says what became of its records).
      const failed = async (err: unknown): Promise<never> => {
        await board?.server.close();
        await metrics?.close();
        if (kafka) await closeKafka(kafka, print, 5_000);
        throw err;
      };
      try {
        prepareOutDir(outDir, values.force ?? false);
        metrics = await metricsServer(values["metrics-listen"], kafka, print);
        board = values.dashboard ? await demoDashboard(values.listen ?? DEFAULT_LISTEN, print) : undefined;
      } catch (err) {
        return failed(err);
      }
      await runDemo({
        kafka,
        onRecord: metrics || board ? (r) => {
          metrics?.metrics.onRecord(r);
          board?.store.add(r);
        } : undefined,
        seed,
        durationMs,
        load: demoLoad,
        outDir,
        snaplen: demoSnaplen,
        scale: demoScale,
        ip: demoIp,
        reorder: demoReorder,
        deployed,
        mode: demoMode,
        silentSwitchMs: demoSilentMs,
        logger,
        print,
      }).catch(failed);
      const delivered = !kafka || (await closeKafka(kafka, print, 5_000));
      await metrics?.close();
      if (board) {
        board.store.setStatus({ state: "finished", detail: "the demo's run is over" });
        print(`the dashboard stays up at ${board.server.url}; Ctrl-C to stop`);
        await untilSignal();
        await board.server.close();
      }
      return delivered ? 0 : 1;
    }
    case "dashboard": {
      const brokers = brokerList();
      if (!brokers) throw new UsageError("dashboard needs --kafka-brokers (or KAFKA_BROKERS); `demo --dashboard` shows one without Kafka");
      const listen = values.listen ?? DEFAULT_LISTEN;
      parseListenArg(listen);
      const ac = new AbortController();
      process.once("SIGINT", () => ac.abort());
      process.once("SIGTERM", () => ac.abort());
      let flags;
      try {
        flags = dashboardFlags(values);
      } catch (err) {
        if (err instanceof DashboardFlagError) throw new UsageError(err.message);
        throw err;
      }
      const t = topics();
      await runDashboard({ brokers, ...security(), topics: [t.io, t.flow, t.alert], listen, fromBeginning: values["from-beginning"], groupId: values.group, bounds: flags.bounds, rereadMs: flags.rereadMs, print, signal: ac.signal });
      return 0;
    }
    case "replay": {
      const brokers = brokerList();
      const replaySilentMs = silentSwitchMs(values["silent-switch-ms"]);
      if (rest.length === 0) throw new UsageError("replay needs a CAPTURE file");
      const topologies = values.topology ?? [];
      const deployed = values.config !== undefined ? loadConfig(values.config, { checkFiles: false }) : undefined;
      if (topologies.length === 0 && !deployed) throw new UsageError("replay needs --topology FILE (or --config, whose ports serve every capture)");
      if (topologies.length > 1 && topologies.length !== rest.length) {
        throw new UsageError(`replay got ${rest.length} captures and ${topologies.length} topologies: give one topology for all, or one per capture`);
      }
      if (!values.out) throw new UsageError("replay needs --out RECORDS.jsonl");
      const topos = topologies.length ? topologies.map((f) => Topology.load(f)) : [Topology.parse({ ports: deployed!.ports })];
      const ids = values["switch-id"] ?? [];
      if (ids.length > 0 && ids.length !== rest.length) throw new UsageError(`replay got ${rest.length} captures and ${ids.length} --switch-id: give one per capture`);
      const captures = rest.map((path, i) => ({ path, topology: topos[topos.length === 1 ? 0 : i]!, switchId: ids[i] }));
      const t0 = Date.now();
      const replayMode = values.mode !== undefined || !deployed ? mode(values.mode) : undefined;
      const kafka = await kafkaSink(brokers, security, topics(), logger, client(), compression());
      let metrics: Awaited<ReturnType<typeof metricsServer>>;
      // A failure ends the command: what is up is closed first (the Kafka sink says what became of its records).
      const failed = async (err: unknown): Promise<never> => {
        await metrics?.close();
        if (kafka) await closeKafka(kafka, print, 5_000);
        throw err;
      };
      metrics = await metricsServer(values["metrics-listen"], kafka, print).catch(failed);
      const progress = terminalProgress("replay", "packets");
      const r = await replayCaptures(captures, {
        mode: replayMode, deployed, out: values.out, silentSwitchMs: replaySilentMs, outMode: values.append ? "append" : "create", logger, kafka, forwarded: values.forwarded,
        onRecord: metrics ? (rec) => metrics.metrics.onRecord(rec) : undefined,
        onProgress: (done, total) => progress?.update(done, total),
      }).finally(() => progress?.stop()).catch(failed);
      const delivered = !kafka || (await closeKafka(kafka, print, 5_000));
      await metrics?.close();
      print(`${r.packets} packets, ${r.digests} digests, ${r.records} records in ${((Date.now() - t0) / 1000).toFixed(1)} s -> ${values.out}`);
      const unrouted = r.rigs.reduce((a, x) => a + x.noIngressPort, 0);
      if (unrouted) print(`${unrouted} packets had a source address outside the topology and were not replayed`);
      const cutShort = r.rigs.reduce((a, x) => a + x.cutShort, 0);
      if (cutShort) print(`${cutShort} packets were captured short of ${MIN_SNAPLEN} bytes (the capture's snap length): headers the switch reads may be cut off (an RDMA CM REQ over IPv6 needs ${MIN_SNAPLEN}); those it could not parse count as parser_errors`);
      const silent = r.exporter.metrics.givenUpSilentSwitch;
      if (silent) print(`${silent} I/O commands given up on a switch silent for ${durationText(r.exporter.metrics.options.silentSwitchNs)} or open at its capture's end within their I/O timeout (recorded without its figures, not incomplete)`);
      const flowOnly = [...r.exporter.metrics.flowOnlyDigests.values()].reduce((a, n) => a + n, 0);
      if (flowOnly) print(`${flowOnly} digests of RDMA WRITE packets outside any message (after their message's last packet, or of a message whose first packet was not seen), in their flow's interval figures`);
      // A capture damaged after its header (cut short, as Wireshark says) was replayed up to the damage; the rest was not there to read.
      for (const d of r.damaged) process.stderr.write(`rdma-telemetry: ${d.error}: the capture ends there; its ${d.packets} packets before it were replayed\n`);
      if (r.damaged.length) return 2;
      return delivered ? 0 : 1;
    }
    case "generate": {
      const dir = values["out-dir"];
      if (!dir) throw new UsageError("generate needs --out-dir DIR");
      const layout = values.layout ?? "two-tor";
      if (layout !== "two-tor" && layout !== "single") throw new UsageError(`--layout must be two-tor or single (got '${layout}')`);
      const durationNs = int(values["duration-ms"], "duration-ms", 2000) * 1_000_000;
      const seed = int(values.seed, "seed", 1);
      const generateLoad = loadOptions(load(values.load));
      const genSnaplen = snaplen(values.snaplen);
      const genScale = scale(values);
      const genIp = ipFamilies(values.ip);
      const genReorder = reorder(values.reorder, values["reorder-loss"]);
      if (layout === "single" && (genScale.hosts ?? 0) > 100) throw new UsageError(`--hosts must be at most 100 with --layout single (its targets are 10.0.1.101 on; got ${genScale.hosts})`);
      const computeTors = int(values["compute-tors"], "compute-tors", 1);
      const storageTors = int(values["storage-tors"], "storage-tors", 1);
      if (layout === "single" && computeTors + storageTors > 2) throw new UsageError("--compute-tors and --storage-tors need --layout two-tor");
      if (computeTors > (genScale.hosts ?? DEFAULT_GENERATOR_OPTIONS.hosts)) throw new UsageError(`--compute-tors must be at most --hosts (${genScale.hosts ?? DEFAULT_GENERATOR_OPTIONS.hosts}; got ${computeTors})`);
      if (storageTors > (genScale.targets ?? DEFAULT_GENERATOR_OPTIONS.targets)) throw new UsageError(`--storage-tors must be at most --targets (${genScale.targets ?? DEFAULT_GENERATOR_OPTIONS.targets}; got ${storageTors})`);
      prepareOutDir(dir, values.force ?? false);
      const progress = terminalProgress("generate", "ms of traffic");
      const g = writeTrafficStream(dir, { seed, durationNs, layout, snaplen: genSnaplen, ip: genIp, computeTors, storageTors, ...genReorder, ...genScale, ...generateLoad }, (simNs) => progress?.update(Math.floor(simNs / 1e6), durationNs / 1e6));
      progress?.stop();
      print(`wrote ${g.switches.map((s) => `${s.name}.pcap (${s.packets} packets)`).join(", ")} and ${TRUTH_FILE} (${g.ios} I/Os, ${g.messages} messages) to ${dir}`);
      return 0;
    }
    case "controller": {
      if (!values.config) throw new UsageError("controller needs --config FILE");
      const controllerSilentMs = silentSwitchMs(values["silent-switch-ms"]);
      const brokers = brokerList();
      return await runController({ silentSwitchMs: controllerSilentMs, digestsOnly: values["digests-only"], configFile: values.config, controlToken: controlTokenSource(), metricsListen: values["metrics-listen"], out: values.out, append: values.append, journal: values.journal, brokers, kafkaSecurity: brokers ? security() : undefined, kafkaClient: brokers ? client() : undefined, kafkaCompression: brokers ? compression() : undefined, topics: topics(), logger, print });
    }
    case "exporter": {
      if (rest.length) throw new UsageError(`exporter takes no arguments (got '${rest[0]}')`);
      const brokers = brokerList();
      if (!brokers) throw new UsageError("exporter needs --kafka-brokers (or KAFKA_BROKERS)");
      if (values.group !== undefined && !/^[A-Za-z0-9._-]{1,200}$/.test(values.group)) throw new UsageError(`--group: a group id is letters, digits, '.', '_' and '-' (got '${values.group}')`);
      const ac = new AbortController();
      process.once("SIGINT", () => ac.abort());
      process.once("SIGTERM", () => ac.abort());
      await runExporterGroup({ brokers, ...security(), topics: topics(), groupId: values.group, switchIds: values["switch-id"], metricsListen: values["metrics-listen"], silentSwitchMs: silentSwitchMs(values["silent-switch-ms"]), threads: int(values.threads, "threads", availableParallelism() > 1 ? 1 : 0), logger, print, signal: ac.signal });
      // Out of the group, everything committed: a partition still being taken on (reading back) commits nothing, and is not waited for.
      await new Promise((r) => process.stdout.write("", r));
      process.exit(0);
    }
    case "consume": {
      if (!values.topic) throw new UsageError("consume needs --topic TOPIC");
      const brokers = brokerList();
      if (!brokers) throw new UsageError("consume needs --kafka-brokers (or KAFKA_BROKERS)");
      const ac = new AbortController();
      process.once("SIGINT", () => ac.abort());
      process.once("SIGTERM", () => ac.abort());
      await consume({ brokers, ...security(), topic: values.topic, fromBeginning: values["from-beginning"] ?? false, client: client(), print, warn: (t) => console.error(t), signal: ac.signal });
      return 0;
    }
    case "switch": {
      const ac = new AbortController();
      process.once("SIGINT", () => ac.abort());
      process.once("SIGTERM", () => ac.abort());
      await runSwitch({
        listen: values.listen ?? "127.0.0.1:9559",
        deviceId: deviceId(values["device-id"]),
        cpuPort: int(values["cpu-port"], "cpu-port", 510),
        p4info: values.p4info,
        deviceConfig: values["device-config"],
        pcapIn: (values["pcap-in"] ?? []).map(parsePcapIn),
        pcapInStart: parsePcapInStart(values["pcap-in-start"]),
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
      if (m !== "full" && m !== "polling" && m !== "summary") throw new UsageError("mode needs full, polling or summary");
      const target = values.control ?? "127.0.0.1:9660";
      let ca: Buffer | undefined;
      try {
        controlUrl(target, values["control-ca"]);
        ca = values["control-ca"] === undefined ? undefined : readFileSync(values["control-ca"]);
      } catch (err) {
        throw new UsageError(`${values["control-ca"] && !(err instanceof RangeError) ? `--control-ca ${values["control-ca"]}: ` : ""}${(err as Error).message}`);
      }
      const token = clientToken(controlTokenSource());
      const res = await controlRequest({ target, token, ca, method: "POST", path: "/mode", body: { mode: m } });
      if (res.status !== 200) {
        let why = res.body;
        try {
          why = (JSON.parse(res.body) as { error?: string }).error ?? why;
        } catch {
          // not the controller's JSON: said as it came
        }
        // A controller that is not primary cannot take it now; anything else is a bad request.
        process.stderr.write(`rdma-telemetry: controller refused (${res.status}): ${why.split("\n")[0]}\n`);
        return res.status === 409 || res.status >= 500 ? 1 : 2;
      }
      print(res.body);
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
    if (err instanceof UsageError || err instanceof ControlTokenError || err instanceof ControlUnreachableError || err instanceof SwitchOptionError || err instanceof ConfigError || err instanceof CaptureError || err instanceof OutputError || err instanceof WriteError || err instanceof NoSuchTopicError || (err as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      process.stderr.write(`rdma-telemetry: ${(err as Error).message}\n`);
      process.exitCode = 2;
    } else if (err instanceof KafkaConnectError || err instanceof ListenError) {
      process.stderr.write(`rdma-telemetry: ${err.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`rdma-telemetry: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    }
    // The commands close what they opened before their error comes here; should anything
    // still hold the process, it ends anyway, and a signal is not taken for a shutdown request.
    process.removeAllListeners("SIGINT").removeAllListeners("SIGTERM");
    setTimeout(() => process.exit(), 2_000).unref();
  },
);
