// A software switch behind its P4Runtime server, with a telemetry controller
// connected to it over gRPC on loopback: the same path as a real deployment,
// in one process. Used by the demo, by replay and by the tests.
import { P4RuntimeServer } from "@rdma-telemetry/switch";
import { SoftwareSwitch } from "@rdma-telemetry/switch";
import { parseConfig, WATCHLIST_MODES, type Mode } from "@rdma-telemetry/controller";
import { LEARN_ENDPOINT, LEARN_FLOW, LEARN_IO_PAIR, P4_NAMES, type DigestBatch, type HistogramRead } from "@rdma-telemetry/contract";
import { TelemetryController } from "@rdma-telemetry/controller";
import type { Logger } from "@rdma-telemetry/p4runtime";
import { MIN_SNAPLEN } from "@rdma-telemetry/traffic";
import { ipSource, type Topology } from "./topology.js";

export interface RigOptions {
  name: string;
  topology: Topology;
  mode?: Mode;
  deviceId?: bigint;
  logger?: Logger;
  /** digest list settings (virtual time) */
  maxListSize?: number;
  maxTimeoutUs?: number;
  polling?: { rotationPeriodMs?: number; flowCapacity?: number; ioPairCapacity?: number };
  ioTimeoutMs?: number;
  flowTimeoutMs?: number;
  /** how long a histogram id counts nothing before a newcomer may take it, capture time (the controller's `histograms.id_idle_ms`) */
  histogramIdIdleMs?: number;
  /** the compiled program (BMv2 JSON and P4Info) the switch runs: p4/build/ unless told */
  pipeline?: { p4info: string; deviceConfig: string };
  /** IPv6 endpoints given keys before the first packet (the controller's `endpoints`) */
  endpoints?: readonly string[];
}

export interface FeedPacket {
  timestampNs: bigint;
  data: Uint8Array;
  originalLength?: number;
}

export class Rig {
  readonly sw = new SoftwareSwitch({ clock: "virtual" });
  readonly server: P4RuntimeServer;
  controller!: TelemetryController;
  port = 0;
  noIngressPort = 0;
  /** packets captured short of MIN_SNAPLEN bytes (cut by the capture's snap length): the switch may miss headers it reads */
  cutShort = 0;
  private lastTs = 0n;
  /** digest list acknowledgements that reached the switch */
  private acks = 0;

  /** Capture time of the last packet fed (0 before the first). */
  get lastFedNs(): bigint {
    return this.lastTs;
  }
  /** next polling rotation, capture time */
  nextRotationNs: bigint | undefined;
  /** what the data plane's histograms counted, read every histogramIntervalNs of capture time (at each boundary) */
  onHistograms: ((read: HistogramRead, atNs: bigint) => void) | undefined;
  histogramIntervalNs = 1_000_000_000n;
  private nextHistogramNs: bigint | undefined;
  /**
   * Histogram ids are written every this much capture time, once every
   * digest list the switch sent has reached the controller: the same capture
   * gives the same ids at the same packets, and the same histograms.
   */
  histogramIdPeriodNs = 5_000_000n;
  private nextIdsNs: bigint | undefined;
  /**
   * IPv6 endpoints the switch reports (LEARN_ENDPOINT), and in polling and
   * summary mode the flows and pairs it reports (LEARN_FLOW, LEARN_IO_PAIR)
   * that join the window while it has room, are written at the first
   * boundary of this much capture time after the learn digest that names
   * them left the switch, once the controller has every list the switch
   * sent: the same capture gives the same keys and watchlists at the same
   * packets (a live controller writes them as the list comes, about this
   * late).
   */
  endpointPeriodNs = 1_000_000n;
  /** when the endpoints, flows and pairs named by learn lists since the last write are due (capture time), if any are */
  private learnedDueNs: bigint | undefined;
  private learnDigestId: number | undefined;
  /** control-plane actions to run at a capture time, before the packets that follow it */
  private readonly scheduled: Array<{ atNs: bigint; run: () => Promise<void> }> = [];

  /** Runs `run` (e.g. a mode switch) when replay reaches capture time `atNs`; its writes land before later packets. */
  schedule(atNs: bigint, run: () => Promise<void>): void {
    this.scheduled.push({ atNs, run });
    this.scheduled.sort((a, b) => (a.atNs < b.atNs ? -1 : a.atNs > b.atNs ? 1 : 0));
  }

  /** Control-plane work due at capture time `tsNs`: scheduled actions, learned endpoints, histogram ids and reads, then polling rotations. */
  async runDue(tsNs: bigint): Promise<void> {
    while (this.scheduled.length && this.scheduled[0]!.atNs <= tsNs) await this.scheduled.shift()!.run();
    await this.writeLearnedIfDue(tsNs);
    await this.writeIdsIfDue(tsNs);
    await this.readHistogramsIfDue(tsNs);
    await this.rotateIfDue(tsNs);
  }

  private learnedDue(tsNs: bigint): boolean {
    return this.learnedDueNs !== undefined && tsNs >= this.learnedDueNs;
  }

  private async writeLearnedIfDue(tsNs: bigint): Promise<void> {
    if (!this.learnedDue(tsNs)) return;
    this.learnedDueNs = undefined;
    await this.catchUp(0);
    await this.controller.applyLearnedEndpoints();
    await this.controller.applyWatchJoins();
  }

  private histogramsDue(tsNs: bigint): boolean {
    if (this.controller.histograms === undefined) return false;
    if (this.nextIdsNs === undefined || tsNs >= this.nextIdsNs) return true;
    return this.onHistograms !== undefined && (this.nextHistogramNs === undefined || tsNs >= this.nextHistogramNs);
  }

  private async writeIdsIfDue(tsNs: bigint): Promise<void> {
    if (this.controller.histograms === undefined || (this.nextIdsNs !== undefined && tsNs < this.nextIdsNs)) return;
    await this.catchUp(0);
    await this.controller.applyHistogramIds();
    const p = this.histogramIdPeriodNs;
    this.nextIdsNs = tsNs - (((tsNs % p) + p) % p) + p;
  }

  /** At each interval boundary of capture time, what the histograms counted up to it (before the packet of that time). */
  private async readHistogramsIfDue(tsNs: bigint): Promise<void> {
    if (!this.onHistograms || this.controller.histograms === undefined || (this.nextHistogramNs !== undefined && tsNs < this.nextHistogramNs)) return;
    const i = this.histogramIntervalNs;
    const boundary = tsNs - (((tsNs % i) + i) % i);
    if (this.nextHistogramNs !== undefined) await this.readHistograms(boundary);
    this.nextHistogramNs = boundary + i;
  }

  /** Reads the histograms now (the switch has counted every packet fed), as of capture time `atNs`. */
  async readHistograms(atNs: bigint): Promise<void> {
    if (!this.onHistograms) return;
    const read = await this.controller.readHistograms();
    if (read) this.onHistograms(read, atNs);
  }

  /** True when control-plane work is due at `tsNs`. */
  due(tsNs: bigint): boolean {
    if (this.scheduled.length && this.scheduled[0]!.atNs <= tsNs) return true;
    if (this.learnedDue(tsNs)) return true;
    if (this.histogramsDue(tsNs)) return true;
    if (!WATCHLIST_MODES.includes(this.controller.currentMode)) return false;
    return this.nextRotationNs === undefined || tsNs >= this.nextRotationNs;
  }

  constructor(readonly options: RigOptions) {
    this.server = new P4RuntimeServer(this.sw, { deviceId: options.deviceId ?? 1n, cpuPort: 510 });
    // The digest engine counts the lists it sends, not the acknowledgements it gets: counted here.
    const engine = this.sw.digests;
    const ack = engine.ack.bind(engine);
    engine.ack = (digestId, listId) => {
      this.acks++;
      return ack(digestId, listId);
    };
  }

  async start(onDigests: (b: DigestBatch) => void): Promise<void> {
    this.port = await this.server.listen("127.0.0.1:0");
    const o = this.options;
    const config = parseConfig({
      switch: { address: `127.0.0.1:${this.port}`, device_id: Number(o.deviceId ?? 1n), election_id: 1, switch_id: o.name, timestamp_unit_ns: 1 },
      ...(o.pipeline ? { pipeline: { p4info: o.pipeline.p4info, device_config: o.pipeline.deviceConfig } } : {}),
      ports: o.topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
      endpoints: [...(o.endpoints ?? [])],
      mode: o.mode ?? "full",
      polling: {
        rotation_period_ms: o.polling?.rotationPeriodMs ?? 1000,
        flow_capacity: o.polling?.flowCapacity ?? 1024,
        io_pair_capacity: o.polling?.ioPairCapacity ?? 1024,
      },
      timeouts: { io_timeout_ms: o.ioTimeoutMs ?? 1000, flow_timeout_ms: o.flowTimeoutMs ?? 1000 },
      digest: { max_list_size: o.maxListSize ?? 256, max_timeout_us: o.maxTimeoutUs ?? 1000, ack_timeout_ms: 1000 },
      ...(o.histogramIdIdleMs !== undefined ? { histograms: { id_idle_ms: o.histogramIdIdleMs } } : {}),
    });
    // Rotation follows the capture's clock, not the host's (see feedMerged).
    // The switch runs in the capture's time and stamps digest lists with it: records keep that clock.
    this.controller = new TelemetryController(config, { logger: o.logger, rotationTimer: false, listClock: "switch", histogramIds: "on-demand", endpoints: "on-demand", watchJoins: "on-demand", histogramClockMs: () => Number(this.lastTs / 1_000_000n) });
    const p4info = this.controller.schema.p4info;
    const learn = p4info.digests.find((d) => d.preamble?.name === P4_NAMES.digests.learn_digest_t.name);
    this.learnDigestId = learn?.preamble?.id;
    const spec = learn?.typeSpec?.typeSpec;
    const struct = spec?.$case === "struct" ? spec.value.name : undefined;
    const kind = struct === undefined ? -1 : (p4info.typeInfo?.structs[struct]?.members.findIndex((m) => m.name === "kind") ?? -1);
    // Sent as the switch processes a packet or its clock moves: the capture decides when, not the host.
    // Only a list naming an endpoint (LEARN_ENDPOINT), or in polling and summary mode a flow or pair, makes the next
    // boundary wait for the controller.
    this.sw.on("digest", (list: { digestId: number; samples: ReadonlyArray<ReadonlyArray<number | bigint>> }) => {
      if (list.digestId !== this.learnDigestId || this.learnedDueNs !== undefined) return;
      const watching = WATCHLIST_MODES.includes(this.controller.currentMode);
      if (kind >= 0 && !list.samples.some((s) => Number(s[kind]) === LEARN_ENDPOINT || (watching && (Number(s[kind]) === LEARN_FLOW || Number(s[kind]) === LEARN_IO_PAIR)))) return;
      const p = this.endpointPeriodNs;
      const t = this.lastTs;
      this.learnedDueNs = t - (((t % p) + p) % p) + p;
    });
    this.controller.on("digests", onDigests);
    this.controller.start();
    await this.controller.ready();
  }

  /** Rotates the polling window when its period has passed in capture time. */
  async rotateIfDue(tsNs: bigint): Promise<void> {
    if (!WATCHLIST_MODES.includes(this.controller.currentMode)) {
      this.nextRotationNs = undefined;
      return;
    }
    const period = BigInt(this.controller.config.polling.rotationPeriodMs) * 1_000_000n;
    if (this.nextRotationNs === undefined) this.nextRotationNs = tsNs + period;
    while (tsNs >= this.nextRotationNs) {
      // The rotation takes the flows and pairs of every list the switch sent
      // before it, however late the controller reads them: the same capture
      // gives the same windows whatever the host's load.
      await this.catchUp(0);
      await this.controller.rotate();
      this.nextRotationNs += period;
    }
  }

  /** Processes one captured packet at its capture time; its ingress port comes from the topology. */
  feed(p: FeedPacket): void {
    const src = ipSource(p.data);
    const port = src === undefined ? undefined : this.options.topology.portOf(src);
    if (port === undefined) {
      this.noIngressPort++;
      return;
    }
    this.lastTs = p.timestampNs;
    if (p.data.length < MIN_SNAPLEN && (p.originalLength ?? p.data.length) > p.data.length) this.cutShort++;
    this.sw.process({ port, data: p.data, unixNs: p.timestampNs, wireLength: p.originalLength ?? p.data.length });
  }

  /** Digests the switch has sent that the controller has not yet received. */
  get digestsInFlight(): number {
    return this.sw.digests.sentSamples - (this.controller.stats.digests + this.controller.stats.badDigests);
  }

  /** Digest lists the switch has sent whose acknowledgement has not come back (the controller acknowledges each list it receives). */
  get listsInFlight(): number {
    return this.sw.digests.sentLists - this.acks;
  }

  /**
   * Sends every pending digest list and waits until the controller has
   * received them all. A large backlog may take long: this fails only when
   * no digest arrived for `timeoutMs` while some are still in flight.
   */
  async drain(timeoutMs = 30_000): Promise<void> {
    this.sw.tick(this.lastTs + 10_000_000n);
    this.sw.flushDigests();
    await waitDown(() => this.digestsInFlight, 0, timeoutMs, (n) => `${this.options.name}: ${n} digests still in flight, none received for ${timeoutMs} ms`);
  }

  /** Waits until at most `max` digest lists are unacknowledged; fails when no acknowledgement comes for `timeoutMs`. */
  async catchUp(max: number, timeoutMs = 30_000): Promise<void> {
    await waitDown(() => this.listsInFlight, max, timeoutMs, (n) => `${this.options.name}: ${n} digest lists unacknowledged, none acknowledged for ${timeoutMs} ms`);
  }

  async stop(): Promise<void> {
    await this.controller?.stop();
    await this.server.close();
  }
}

/** Waits until `count()` is at most `max`; fails when it has not gone down for `timeoutMs`. */
async function waitDown(count: () => number, max: number, timeoutMs: number, failure: (left: number) => string): Promise<void> {
  let left = count();
  let since = Date.now();
  while (left > max) {
    await new Promise((r) => setTimeout(r, 1));
    const now = count();
    if (now < left) since = Date.now();
    else if (Date.now() - since > timeoutMs) throw new Error(failure(now));
    left = now;
  }
}

/**
 * Digest lists a switch may have unacknowledged before feeding waits for
 * its controller. The switch and the controller share one event loop, and
 * the controller's stream sends its acknowledgements one at a time (gRPC
 * waits for each write to complete): unchecked, they fall behind the lists
 * for good, held in gRPC buffers that grow with the capture.
 */
const MAX_LISTS_IN_FLIGHT = 64;

/** A packet stream that knows how far through its file it is (openCapture's reader): progress estimates its total. */
interface PositionedStream {
  readonly packetsRead: number;
  readonly bytesRead: number;
  readonly size: number | undefined;
}

/** One switch's packets being fed: the next packet and its time on the common clock. */
interface Lane {
  rig: Rig;
  packets: Iterable<FeedPacket>;
  it: Iterator<FeedPacket>;
  alignNs: bigint;
  head: FeedPacket | undefined;
  headAt: bigint;
  fed: number;
}

function advance(l: Lane): void {
  const r = l.it.next();
  l.head = r.done ? undefined : r.value;
  if (l.head) l.headAt = l.head.timestampNs + l.alignNs;
}

/** How many packets a lane will have fed in all: exact for an array, estimated from the bytes read for a capture stream. */
function laneTotal(l: Lane): number {
  if (Array.isArray(l.packets)) return l.packets.length;
  if (!l.head) return l.fed;
  const s = l.packets as Partial<PositionedStream>;
  if (s.size && s.bytesRead && s.packetsRead) return Math.max(l.fed, Math.round((s.packetsRead * s.size) / s.bytesRead));
  return l.fed;
}

/**
 * Feeds several switches' captures merged by time (each capture's times plus
 * its `alignNs`, so that captures taken with different clocks interleave as
 * they happened), yielding to the event loop so digests flow. Packets come
 * from arrays or streams (read once, one packet ahead). `onProgress` gets
 * the packets fed and their total: an estimate while a stream is read
 * (from its bytes read), exact at the end. Returns the packets fed.
 * Feeding waits while a switch has too many digest lists unacknowledged,
 * so that memory does not grow with the capture.
 */
export async function feedMerged(rigs: ReadonlyArray<{ rig: Rig; packets: Iterable<FeedPacket>; alignNs?: bigint }>, onProgress?: (done: number, total: number, tsNs: bigint) => void): Promise<number> {
  const lanes: Lane[] = [];
  let done = 0;
  let turnAt = performance.now();
  try {
    for (const r of rigs) {
      const lane: Lane = { rig: r.rig, packets: r.packets, it: r.packets[Symbol.iterator](), alignNs: r.alignNs ?? 0n, head: undefined, headAt: 0n, fed: 0 };
      lanes.push(lane);
      advance(lane);
    }
    for (;;) {
      let best: Lane | undefined;
      for (const l of lanes) if (l.head && (!best || l.headAt < best.headAt)) best = l;
      if (!best) break;
      const p = best.head!;
      const at = best.headAt;
      // Table writes due at this time (rotation, mode switch) land before the packet.
      if (best.rig.due(p.timestampNs)) await best.rig.runDue(p.timestampNs);
      best.rig.feed(p);
      best.fed++;
      done++;
      advance(best);
      // A switch whose capture has ended sends its last digest list at its digest timeout, not when the others end.
      if (!best.head) await best.rig.drain();
      // A turn for the event loop every 1024 packets, or sooner when they take over 10 ms (/metrics answers meanwhile).
      if ((done & 1023) === 0 || ((done & 63) === 0 && performance.now() - turnAt > 10)) {
        if ((done & 1023) === 0) onProgress?.(done, lanes.reduce((a, l) => a + laneTotal(l), 0), at);
        await new Promise((res) => setImmediate(res));
        turnAt = performance.now();
        for (const l of lanes) if (l.rig.listsInFlight > MAX_LISTS_IN_FLIGHT) await l.rig.catchUp(MAX_LISTS_IN_FLIGHT / 2);
      }
    }
  } finally {
    // A stream left before its end (an error) is closed.
    for (const l of lanes) if (l.head) l.it.return?.();
  }
  onProgress?.(done, done, 0n);
  return done;
}
