// Offline replay (SPEC §7): a capture and a topology file in, records out,
// through the same P4 program, controller and exporter as a live switch.
import { readCapture, writePcap } from "../traffic/src/pcap.js";
import { rawDigestMessages } from "../exporter/src/kafka/digest-bus.js";
import { encodeRecord } from "../exporter/src/kafka/encode.js";
import type { KafkaSink } from "../exporter/src/kafka/kafka-sink.js";
import { Exporter, type ExporterOptions } from "../exporter/src/exporter.js";
import { JsonlSink } from "../exporter/src/jsonl-sink.js";
import type { RecordJson } from "../exporter/src/records.js";
import type { Mode } from "../p4runtime-controller/src/telemetry/config.js";
import type { Logger } from "../p4runtime-controller/src/lib/switch-connection.js";
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
  /** write the packets the switch forwarded to this pcap (one switch) */
  forwarded?: string;
  /** publish records and raw digests on Kafka */
  kafka?: KafkaSink;
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
  const sink = opts.out ? new JsonlSink(opts.out) : undefined;
  if (sink) exporter.addSink((r) => sink.write(r));
  if (opts.onRecord) exporter.addSink(opts.onRecord);
  const kafka = opts.kafka;
  if (kafka) exporter.addSink((r) => kafka.push(encodeRecord(r, kafka.topicNames, "protobuf", exporter.metrics.options.intervalNs)));
  const rigs = switches.map((s, i) => new Rig({ name: s.name, topology: s.topology, mode: opts.mode, deviceId: BigInt(i + 1), logger: opts.logger, polling: opts.polling }));
  const forwarded: Array<{ timestampNs: bigint; data: Buffer }> = [];
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
    await feedMerged(rigs.map((rig, i) => ({ rig, packets: switches[i]!.packets })), opts.onProgress);
    for (const r of rigs) await r.drain();
    // The switches' own counts of what they could not track go on their switch_stats records.
    for (const r of rigs) exporter.metrics.setSwitchCounters(r.options.name, await r.controller.readCounters());
    exporter.finish();
    if (opts.forwarded) writePcap(opts.forwarded, forwarded);
    await kafka?.flush();
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
  const packets = readCapture(capture).map((p) => ({ timestampNs: p.timestampNs, data: p.data, originalLength: p.originalLength }));
  return replaySwitches([{ name: "switch", topology, packets }], opts);
}
