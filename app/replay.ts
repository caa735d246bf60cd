// Offline replay (SPEC §7): a capture and a topology file in, records out,
// through the same P4 program, controller and exporter as a live switch.
import { readCapture, writePcap } from "../traffic/src/pcap.js";
import { rawDigestMessages } from "../exporter/src/kafka/digest-bus.js";
import { encodeRecord } from "../exporter/src/kafka/encode.js";
import type { KafkaSink } from "../exporter/src/kafka/kafka-sink.js";
import { Exporter, type ExporterOptions } from "../exporter/src/exporter.js";
import { JsonlSink, OutputError, type OutputMode } from "../exporter/src/jsonl-sink.js";
import type { RecordJson } from "../exporter/src/records.js";
import type { Mode } from "../p4runtime-controller/src/telemetry/config.js";
import type { Logger } from "../p4runtime-controller/src/lib/switch-connection.js";
import { estimateAlignments } from "./clock-alignment.js";
import { feedMerged, Rig, type FeedPacket } from "./rig.js";
import type { Topology } from "./topology.js";

export interface ReplaySwitch {
  name: string;
  topology: Topology;
  packets: readonly FeedPacket[];
}

export interface ReplayOptions {
  mode?: Mode;
  out?: string;
  /** what to do with an `out` file that already holds records (default: refuse) */
  outMode?: OutputMode;
  /** write the packets the switch forwarded to this pcap (one switch) */
  forwarded?: string;
  /** publish records and raw digests on Kafka */
  kafka?: KafkaSink;
  /** how long to wait at the end for Kafka to acknowledge everything (default 30 s) */
  kafkaWaitMs?: number;
  logger?: Logger;
  exporter?: ExporterOptions;
  polling?: { rotationPeriodMs?: number; flowCapacity?: number; ioPairCapacity?: number };
  onRecord?: (r: RecordJson) => void;
  onProgress?: (done: number, total: number, tsNs: bigint) => void;
  /** called once all switches are ready, before the first packet (e.g. to schedule a mode switch) */
  beforeFeed?: (rigs: Rig[]) => void;
}

export interface ReplayResult {
  records: number;
  packets: number;
  digests: number;
  rigs: Rig[];
  exporter: Exporter;
}

/** Replays one or more switches' captures (merged by time) and exports records. */
export async function replaySwitches(switches: readonly ReplaySwitch[], opts: ReplayOptions = {}): Promise<ReplayResult> {
  const exporter = new Exporter(opts.exporter);
  const sink = opts.out ? new JsonlSink(opts.out, opts.outMode) : undefined;
  if (sink) {
    exporter.addSink((r) => {
      sink.write(r);
      if (r.type === "switch_stats") sink.sync(); // an interval closed
    });
  }
  if (opts.onRecord) exporter.addSink(opts.onRecord);
  const kafka = opts.kafka;
  if (kafka) exporter.addSink((r) => kafka.push(encodeRecord(r, kafka.topicNames, "protobuf", exporter.metrics.options.intervalNs)));
  const rigs = switches.map((s, i) => new Rig({ name: s.name, topology: s.topology, mode: opts.mode, deviceId: BigInt(i + 1), logger: opts.logger, polling: opts.polling }));
  // Each capture is a switch with its own clock: records keep it exactly (the
  // switch's clock starts at its first packet), and the switches are
  // compared on a common clock read off the packets they share.
  const alignments = estimateAlignments(switches.map((s) => s.packets));
  rigs.forEach((r, i) => {
    exporter.metrics.setClockStart(r.options.name, () => r.sw.clockStartUnixNs);
    exporter.metrics.setClockAlignment(r.options.name, alignments[i]!);
  });
  const forwarded: Array<{ timestampNs: bigint; data: Buffer }> = [];
  if (opts.forwarded) {
    // An unwritable path fails now, before any work.
    try {
      writePcap(opts.forwarded, []);
    } catch (err) {
      throw new OutputError(`cannot write ${opts.forwarded}: ${(err as Error).message}`);
    }
  }
  if (opts.forwarded && rigs[0]) {
    const sw = rigs[0].sw;
    sw.on("packet", (p) => forwarded.push({ timestampNs: sw.nowUnixNs(), data: Buffer.from(p.data) }));
  }
  try {
    for (const r of rigs) {
      await r.start((b) => {
        exporter.onBatch(b);
        if (kafka) for (const m of rawDigestMessages(b, kafka.topicNames)) kafka.push(m);
      });
    }
    opts.beforeFeed?.(rigs);
    await feedMerged(rigs.map((rig, i) => ({ rig, packets: switches[i]!.packets, alignNs: alignments[i]! })), opts.onProgress);
    for (const r of rigs) await r.drain();
    // The switches' own counts of what they could not track go on their switch_stats records.
    for (const r of rigs) {
      exporter.metrics.setSwitchCounters(r.options.name, await r.controller.readCounters());
      exporter.metrics.setSwitchMode(r.options.name, r.controller.currentMode === "polling" ? 2 : 1);
      if (r.lastFedNs > 0n) exporter.metrics.noteSwitch(r.options.name, r.lastFedNs);
    }
    exporter.finish();
    if (opts.forwarded) writePcap(opts.forwarded, forwarded);
    // Kafka may be away: records wait (and spill) in the sink, which its owner closes.
    if (kafka && !(await kafka.waitDelivered(opts.kafkaWaitMs ?? 30_000))) {
      opts.logger?.warn("Kafka has not acknowledged every record; they stay buffered", { pending: kafka.pending, lastError: kafka.stats.lastError });
    }
  } finally {
    for (const r of rigs) await r.stop();
    await sink?.close();
  }
  return {
    records: [...exporter.counts.values()].reduce((a, b) => a + b, 0),
    packets: switches.reduce((a, s) => a + s.packets.length, 0),
    digests: rigs.reduce((a, r) => a + r.controller.stats.digests, 0),
    rigs,
    exporter,
  };
}

export async function replayCapture(capture: string, topology: Topology, opts: ReplayOptions = {}): Promise<ReplayResult> {
  return replayCaptures([{ path: capture, topology }], opts);
}

/**
 * Replays several captures, each one switch with its own clock and topology
 * (e.g. the compute-side and the storage-side ToR of the same I/Os). A
 * switch is named after its capture's file name.
 */
export async function replayCaptures(captures: ReadonlyArray<{ path: string; topology: Topology; switchId?: string }>, opts: ReplayOptions = {}): Promise<ReplayResult> {
  const names = new Set<string>();
  const switches = captures.map(({ path, topology, switchId }) => {
    const base = switchId ?? (path.split("/").pop()!.replace(/\.(pcapng|pcap|cap)$/i, "") || "switch");
    let name = base;
    for (let n = 2; names.has(name); n++) name = `${base}-${n}`;
    names.add(name);
    const packets = readCapture(path).map((p) => ({ timestampNs: p.timestampNs, data: p.data, originalLength: p.originalLength }));
    return { name, topology, packets };
  });
  return replaySwitches(switches, opts);
}
