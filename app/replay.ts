// Offline replay (SPEC §7): a capture and a topology file in, records out,
// through the same P4 program, controller and exporter as a live switch.
import { openCapture, PcapWriter, type CaptureReader } from "@rdma-telemetry/traffic";
import { rawDigestMessages } from "@rdma-telemetry/exporter";
import { encodeRecord } from "@rdma-telemetry/exporter";
import type { RecordSink } from "@rdma-telemetry/exporter";
import { Exporter, type ExporterOptions } from "@rdma-telemetry/exporter";
import { JsonlSink, OutputError, type OutputMode } from "@rdma-telemetry/exporter";
import type { RecordJson } from "@rdma-telemetry/contract";
import { modeCode, type ControllerConfig, type Mode } from "@rdma-telemetry/controller";
import type { Logger } from "@rdma-telemetry/p4runtime";
import { ALIGNMENT_SCAN_PACKETS, estimateAlignmentsAsync } from "./clock-alignment.js";
import { feedMerged, Rig, type FeedPacket } from "./rig.js";
import type { Topology } from "./topology.js";
import { canonicalAddress } from "@rdma-telemetry/contract";

export interface ReplaySwitch {
  name: string;
  topology: Topology;
  /** the switch's packets in capture order: an array, or a stream read once as replay goes (openCapture) */
  packets: readonly FeedPacket[] | Iterable<FeedPacket>;
  /**
   * A fresh read of the same packets from the start, for the clock alignment
   * of several switches (a stream cannot be read twice). Without it, a
   * stream's first packets are held in memory for the alignment.
   */
  rescan?: () => Iterable<FeedPacket>;
  /** the compiled program this switch runs, if not the replay's (ReplayOptions.pipeline) */
  pipeline?: { p4info: string; deviceConfig: string };
}

export interface ReplayOptions {
  mode?: Mode;
  out?: string;
  /** what to do with an `out` file that already holds records (default: refuse) */
  outMode?: OutputMode;
  /** write the packets the switch forwarded to this pcap (one switch) */
  forwarded?: string;
  /** publish records and raw digests on Kafka */
  kafka?: RecordSink;
  /** how long to wait at the end for Kafka to acknowledge everything (default 30 s) */
  kafkaWaitMs?: number;
  logger?: Logger;
  exporter?: ExporterOptions;
  /** IPv6 endpoints given keys before the first packet; by default every /128 the topologies place (the others are learned from the switch) */
  endpoints?: readonly string[];
  polling?: { rotationPeriodMs?: number; flowCapacity?: number; ioPairCapacity?: number };
  /** how long a histogram id counts nothing before a newcomer may take it, capture time (default: `deployed`'s, else 60 s) */
  histogramIdIdleMs?: number;
  /**
   * A deployed controller's settings (its config file): mode, watchlist
   * capacities and rotation period, timeouts and digest lists, so that a
   * replay measures as that deployment does. `mode` and `polling` above win.
   */
  /** how long a switch that sends nothing holds the commands it saw (default: `deployed`'s, else the exporter's 60 s); `exporter` wins */
  silentSwitchMs?: number;
  deployed?: Pick<ControllerConfig, "mode" | "polling" | "timeouts" | "digest"> & Partial<Pick<ControllerConfig, "histograms">>;
  /** the compiled program the switches run (BMv2 JSON and P4Info): p4/build/ unless told */
  pipeline?: { p4info: string; deviceConfig: string };
  onRecord?: (r: RecordJson) => void;
  onProgress?: (done: number, total: number, tsNs: bigint) => void;
  /** called once all switches are ready, before the first packet (e.g. to schedule a mode switch) */
  beforeFeed?: (rigs: Rig[]) => void;
}

export interface ReplayResult {
  records: number;
  packets: number;
  digests: number;
  /** captures damaged after their header: replayed up to the damage (CaptureReader's stopAtDamage) */
  damaged: Array<{ path: string; packets: number; error: string }>;
  rigs: Rig[];
  exporter: Exporter;
}

/** Opens the pcap of forwarded packets at once: an unwritable path fails before any work. */
function openForwarded(path: string): PcapWriter {
  try {
    return new PcapWriter(path);
  } catch (err) {
    throw new OutputError(`cannot write ${path}: ${(err as Error).message}`);
  }
}

/** The first `n` packets of a stream, read ahead (for the alignment), and the whole stream, those first ones replayed from memory. */
function readAhead(packets: Iterable<FeedPacket>, n: number): { head: FeedPacket[]; all: IterableIterator<FeedPacket> } {
  const it = packets[Symbol.iterator]();
  const head: FeedPacket[] = [];
  while (head.length < n) {
    const r = it.next();
    if (r.done) break;
    head.push(r.value);
  }
  let ahead: FeedPacket[] | undefined = head;
  let i = 0;
  const all: IterableIterator<FeedPacket> = {
    next() {
      if (ahead && i < ahead.length) return { done: false, value: ahead[i++]! };
      ahead = undefined; // read: memory goes back to the stream's own
      return it.next();
    },
    return(value?: unknown) {
      it.return?.();
      return { done: true, value };
    },
    [Symbol.iterator]() {
      return this;
    },
  };
  return { head, all };
}

/**
 * The ns to add to each switch's capture times to put it on the first one's
 * clock, from the first packets of each. A stream is scanned through its
 * `rescan`, else its first packets are read ahead (and replayed from memory).
 */
async function alignSwitches(switches: readonly ReplaySwitch[]): Promise<{ alignments: bigint[]; packets: Array<Iterable<FeedPacket>> }> {
  const packets = switches.map((s): Iterable<FeedPacket> => s.packets);
  if (switches.length < 2) return { alignments: switches.map(() => 0n), packets };
  const scans = switches.map((s, i): Iterable<FeedPacket> => {
    if (Array.isArray(s.packets)) return s.packets;
    const rescan = s.rescan;
    // Opened when its turn comes, so that one scan at a time holds a file.
    if (rescan) return { [Symbol.iterator]: () => rescan()[Symbol.iterator]() };
    const ahead = readAhead(s.packets, ALIGNMENT_SCAN_PACKETS);
    packets[i] = ahead.all;
    return ahead.head;
  });
  return { alignments: await estimateAlignmentsAsync(scans), packets };
}

/** Replays one or more switches' captures (merged by time) and exports records. */
export async function replaySwitches(switches: readonly ReplaySwitch[], opts: ReplayOptions = {}): Promise<ReplayResult> {
  // Both outputs are opened before any work: a path that cannot be written fails now.
  const sink = opts.out ? new JsonlSink(opts.out, opts.outMode) : undefined;
  let forwarded: PcapWriter | undefined;
  try {
    forwarded = opts.forwarded ? openForwarded(opts.forwarded) : undefined;
  } catch (err) {
    await sink?.close();
    throw err;
  }
  const d = opts.deployed;
  // The exporter gives an I/O up as incomplete after the deployed I/O timeout, as the switch does,
  // and waits for a silent switch as long as the deployment does; `exporter` wins.
  const silentMs = opts.silentSwitchMs ?? d?.timeouts.silentSwitchMs;
  const exporter = new Exporter({
    ...(d ? { ioTimeoutNs: BigInt(d.timeouts.ioTimeoutMs) * 1_000_000n } : {}),
    ...(silentMs !== undefined ? { silentSwitchNs: BigInt(silentMs) * 1_000_000n } : {}),
    ...opts.exporter,
  });
  if (sink) {
    exporter.addSink((r) => {
      sink.write(r);
      if (r.type === "switch_stats") sink.sync(); // an interval closed
    });
  }
  if (opts.onRecord) exporter.addSink(opts.onRecord);
  const kafka = opts.kafka;
  if (kafka) exporter.addSink((r) => kafka.push(encodeRecord(r, kafka.topicNames, "protobuf", exporter.metrics.options.intervalNs)));
  // Every IPv6 host a topology places (a /128) has its endpoint key before its first packet; others are learned (LEARN_ENDPOINT).
  const endpoints = opts.endpoints ?? [...new Set(switches.flatMap((s) => s.topology.ports.flatMap((p) => p.prefixes.filter((x) => x.includes(":") && x.endsWith("/128")).map((x) => canonicalAddress(x.slice(0, -4))))))];
  const rigs = switches.map((s, i) => new Rig({
    name: s.name, topology: s.topology, endpoints, mode: opts.mode ?? d?.mode, deviceId: BigInt(i + 1), logger: opts.logger, polling: opts.polling ?? d?.polling, pipeline: s.pipeline ?? opts.pipeline,
    ...(d ? { ioTimeoutMs: d.timeouts.ioTimeoutMs, flowTimeoutMs: d.timeouts.flowTimeoutMs, maxListSize: d.digest.maxListSize, maxTimeoutUs: d.digest.maxTimeoutUs } : {}),
    ...(opts.histogramIdIdleMs !== undefined || d?.histograms ? { histogramIdIdleMs: opts.histogramIdIdleMs ?? d!.histograms!.idIdleMs } : {}),
  }));
  // Polling coverage on the interval records: the window of the switch's controller.
  const rigOf = new Map(rigs.map((r) => [r.options.name, r]));
  exporter.metrics.coverage = (switchId) => rigOf.get(switchId)?.controller.coverage() ?? null;
  exporter.metrics.pairCoverage = (switchId) => rigOf.get(switchId)?.controller.pairCoverage() ?? null;
  if (forwarded && rigs[0]) {
    // Written as the switch forwards them (the writer copies the bytes): nothing is held.
    const [sw, out] = [rigs[0].sw, forwarded];
    sw.on("packet", (p) => out.write({ timestampNs: sw.nowUnixNs(), data: p.data }));
  }
  let packets = 0;
  try {
    // Each capture is a switch with its own clock: records keep it exactly (the
    // switch's clock starts at its first packet), and the switches are
    // compared on a common clock read off the packets they share.
    const aligned = await alignSwitches(switches);
    rigs.forEach((r, i) => exporter.metrics.setClockAlignment(r.options.name, aligned.alignments[i]!));
    for (const r of rigs) {
      await r.start((b) => {
        exporter.onBatch(b);
        if (kafka) for (const m of rawDigestMessages(b, kafka.topicNames)) kafka.push(m);
      });
      // A switch's clock starts at its first packet, exactly, where its digests
      // carry its clock. Compact digests carry the list's time (the capture's
      // clock) instead: the exporter calibrates on the lists.
      if (r.controller.digestLayout === "full") exporter.metrics.setClockStart(r.options.name, () => r.sw.clockStartUnixNs);
    }
    // A rotation that takes pairs out of a switch's window: their open I/Os' responses go unwatched there.
    for (const r of rigs) {
      r.controller.on("rotated", (e) => {
        exporter.metrics.windowLeft(r.options.name, e.leftPairs);
        exporter.metrics.windowJoined(r.options.name, e.joinedPairs);
      });
      r.controller.on("watch-joined", (e) => exporter.metrics.windowJoined(r.options.name, e.pairs));
    }
    // The data plane's histograms, read at every interval boundary of the capture's clock.
    for (const r of rigs) r.onHistograms = (h, atNs) => exporter.metrics.addHistograms(r.options.name, h, atNs);
    opts.beforeFeed?.(rigs);
    packets = await feedMerged(rigs.map((rig, i) => ({ rig, packets: aligned.packets[i]!, alignNs: aligned.alignments[i]! })), (done, total, tsNs) => {
      // An output that can no longer be written (disk full) ends the run; closing the sink says what was kept and lost.
      if (sink?.failed) throw new OutputError(`cannot write ${sink.path}: ${sink.failed.message}`);
      opts.onProgress?.(done, total, tsNs);
    });
    for (const r of rigs) await r.drain();
    // The switches' own counts of what they could not track go on their switch_stats records.
    for (const r of rigs) {
      if (r.lastFedNs > 0n) await r.readHistograms(r.lastFedNs + 1n);
      exporter.metrics.setSwitchCounters(r.options.name, await r.controller.readCounters());
      exporter.metrics.setSwitchMode(r.options.name, modeCode(r.controller.currentMode));
      if (r.lastFedNs > 0n) exporter.metrics.noteSwitch(r.options.name, r.lastFedNs);
    }
    exporter.finish();
    forwarded?.close();
    // Kafka may be away: records wait (and spill) in the sink, which its owner
    // closes. Kafka away (failing longer than a passing error) ends the wait:
    // the owner's close spills what is left at once.
    const waitMs = opts.kafkaWaitMs ?? 30_000;
    if (kafka && !(await kafka.waitDelivered(waitMs, { untilAway: true }))) {
      const why = kafka.away ? "Kafka is away" : `Kafka has not acknowledged every record in ${waitMs / 1000} s`;
      const then = kafka.spillDir !== undefined ? "what is left goes to the spill as the sink closes" : "what is left when the sink closes is lost (no spill)";
      opts.logger?.warn(`${why}; ${then}`, { pending: kafka.pending, spill: kafka.spillDir, lastError: kafka.stats.lastError });
    }
  } finally {
    for (const r of rigs) await r.stop();
    await sink?.close();
    forwarded?.close();
  }
  return {
    records: [...exporter.counts.values()].reduce((a, b) => a + b, 0),
    packets,
    digests: rigs.reduce((a, r) => a + r.controller.stats.digests, 0),
    damaged: [],
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
  const readers: CaptureReader[] = [];
  try {
    // Every capture is opened (and its header checked) before any work; each is then read as replay goes.
    const switches = captures.map(({ path, topology, switchId }): ReplaySwitch => {
      const base = switchId ?? (path.split("/").pop()!.replace(/\.(pcapng|pcap|cap)$/i, "") || "switch");
      let name = base;
      for (let n = 2; names.has(name); n++) name = `${base}-${n}`;
      names.add(name);
      const packets = openCapture(path, { stopAtDamage: true });
      readers.push(packets);
      return { name, topology, packets, rescan: () => openCapture(path, { stopAtDamage: true }) };
    });
    const result = await replaySwitches(switches, opts);
    result.damaged = readers.flatMap((r) => (r.damage ? [{ path: r.path, packets: r.packetsRead, error: r.damage.message }] : []));
    return result;
  } finally {
    for (const r of readers) r.close();
  }
}
