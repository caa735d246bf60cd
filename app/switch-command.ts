// `rdma-telemetry switch`: the software switch as a standalone P4Runtime
// target, as simple_switch_grpc is, for any controller (p4runtime-shell,
// finsy, ONOS, this project's own). Packets come from captures given per
// port (--pcap-in PORT=FILE, replayed at their own pace on the switch's
// clock), and what the switch sends out goes to one capture per port
// (--pcap-out DIR).
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { P4Info } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import { P4RuntimeServer, SoftwareSwitch } from "@rdma-telemetry/switch";
import { openCapture, PcapWriter, type CapturedPacket } from "@rdma-telemetry/traffic";
import type { Logger } from "@rdma-telemetry/p4runtime";
import { ipSource, type Topology } from "./topology.js";

export interface SwitchCommandOptions {
  listen: string;
  deviceId: bigint;
  cpuPort: number;
  /** a pipeline to start with (both or neither) */
  p4info?: string;
  deviceConfig?: string;
  /** a capture per port, or (port undefined) a capture whose packets enter on the port their source address sits behind in `topology` */
  pcapIn: Array<{ port?: number; file: string }>;
  /** when the captures start: at once, or once a controller has configured every digest of the pipeline (its tables are then written) */
  pcapInStart?: "now" | "digests";
  pcapOut?: string;
  /** where each address sits, for captures given without a port */
  topology?: Topology;
  /**
   * The switch's clock is the captures' own (each packet measured at its
   * capture time), so that its measurements are those of `replay`; otherwise
   * the captures' times are moved to when they start on the host's clock.
   */
  captureClock?: boolean;
  /** with it (or --capture-clock), the captures wait for a pipeline, then this long (default 0) */
  pcapDelayMs?: number;
  logger: Logger;
  print: (t: string) => void;
  signal: AbortSignal;
}

/** A usage problem with the switch's options: refused before anything starts. */
export class SwitchOptionError extends Error {
  override readonly name = "SwitchOptionError";
}

/** The highest port a packet can enter or leave by: v1model ports are 9 bits, and 511 is the drop port. */
const MAX_PORT = 510;

/** --pcap-in-start: "now" (default) or "digests" */
export function parsePcapInStart(v: string | undefined): "now" | "digests" {
  if (v === undefined || v === "now" || v === "digests") return v ?? "now";
  throw new SwitchOptionError(`--pcap-in-start must be now or digests (got '${v}')`);
}

/** "PORT=FILE", or "FILE" (ports from --topology) */
export function parsePcapIn(v: string): { port?: number; file: string } {
  if (!v.includes("=") && v.length > 0) return { file: v };
  const m = /^(\d+)=(.+)$/.exec(v);
  const port = m ? Number(m[1]) : NaN;
  if (!m || !Number.isInteger(port) || port < 0 || port > 511) throw new SwitchOptionError(`--pcap-in must be PORT=FILE with a port 0-511 (got '${v}')`);
  return { port, file: m[2]! };
}

export async function runSwitch(o: SwitchCommandOptions): Promise<void> {
  if ((o.p4info === undefined) !== (o.deviceConfig === undefined)) throw new SwitchOptionError("--p4info and --device-config go together");
  if (!Number.isInteger(o.cpuPort) || o.cpuPort < 0 || o.cpuPort > MAX_PORT) throw new SwitchOptionError(`--cpu-port must be a port 0-${MAX_PORT} (ports are 9 bits; 511 drops) (got ${o.cpuPort})`);
  const byAddress = o.pcapIn.find((p) => p.port === undefined);
  if (byAddress && !o.topology) throw new SwitchOptionError(`--pcap-in must be PORT=FILE, or FILE with --topology FILE (each packet then enters on the port of its source address) (got '${byAddress.file}')`);
  // Everything that can be refused is, before the switch listens.
  // A capture damaged after its header (cut short) is sent in up to the damage, which is said, and the switch goes on.
  const inputs = o.pcapIn.map((p) => ({ ...p, capture: openCapture(p.file, { stopAtDamage: true }) }));
  if (o.pcapOut) mkdirSync(o.pcapOut, { recursive: true });
  // With captures to send in, the switch's clock is theirs (see feedPorts): it
  // follows the host's clock but never passes a packet not yet sent in; with
  // --capture-clock it starts at the first packet's capture time.
  const sw = new SoftwareSwitch({ clock: inputs.length || o.captureClock ? "virtual" : "live" });
  const feed = new FeedClock(!o.captureClock);
  if (inputs.length && !o.captureClock) sw.tick(feed.now());
  const server = new P4RuntimeServer(sw, { deviceId: o.deviceId, cpuPort: o.cpuPort, logger: (level, msg, fields) => o.logger[level](msg, fields) });
  if (o.p4info && o.deviceConfig) {
    let p4info: P4Info;
    try {
      p4info = P4Info.fromJSON(JSON.parse(readFileSync(o.p4info, "utf8")));
    } catch (err) {
      throw new SwitchOptionError(`--p4info ${o.p4info}: not a P4Info JSON file (${(err as Error).message})`);
    }
    try {
      server.loadPipeline(p4info, readFileSync(o.deviceConfig));
    } catch (err) {
      throw new SwitchOptionError(`--device-config ${o.deviceConfig}: ${(err as Error).message}`);
    }
  }
  const writers = new Map<number, PcapWriter>();
  if (o.pcapOut) {
    const dir = o.pcapOut;
    sw.on("packet", (p) => {
      let w = writers.get(p.port);
      if (!w) writers.set(p.port, (w = new PcapWriter(join(dir, `port-${p.port}.pcap`))));
      w.write({ timestampNs: sw.nowUnixNs(), data: Buffer.from(p.data), originalLength: p.data.length });
    });
  }
  let port: number;
  try {
    port = await server.listen(o.listen);
  } catch (err) {
    throw new SwitchOptionError(`--listen ${o.listen}: ${(err as Error).message}`);
  }
  const tick = setInterval(() => sw.tick(inputs.length ? feed.now() : undefined), 1);
  const routeOf = (p: CapturedPacket): number | undefined => {
    const src = ipSource(p.data);
    return src === undefined ? undefined : o.topology!.portOf(src);
  };
  o.print(`switch: P4Runtime on ${o.listen.replace(/:\d+$/, `:${port}`)}, device ${o.deviceId}, CPU port ${o.cpuPort}${o.p4info ? `, pipeline from ${o.p4info}` : ", no pipeline yet"}`);
  try {
    if (inputs.length && (o.captureClock || o.pcapDelayMs)) {
      // A controller sets the pipeline (and writes its entries meanwhile): the captures wait for it.
      while (!sw.program && !o.signal.aborted) await new Promise((r) => setTimeout(r, 20));
      if (o.pcapDelayMs && !o.signal.aborted) await new Promise((r) => setTimeout(r, o.pcapDelayMs));
    }
    if (inputs.length && o.pcapInStart === "digests") {
      await digestsConfigured(server, sw, o.signal);
      if (!o.signal.aborted) o.print("switch: every digest is configured; the captures start");
    }
    // The ports' captures are merged on one clock, as `replay` merges captures
    // (app/rig.ts feedMerged): packets go in in time order across ports, at the
    // captures' pace from when they start, each stamped with its capture time
    // moved to the switch's clock (so the figures are the capture's, however
    // busy the host). Behind, it goes on at once but lets the P4Runtime server
    // run every few packets.
    if (inputs.length && !o.signal.aborted) {
      const sent = await feedPorts(sw, feed, inputs, o.signal, routeOf);
      inputs.forEach(({ port: inPort, file }, i) => {
        const s = sent[i]!;
        o.print(`switch: ${s.packets} packets of ${file} sent in ${inPort === undefined ? "on the ports of their source addresses" : `on port ${inPort}`}${s.unrouted ? `; ${s.unrouted} with a source address outside the topology left out` : ""}`);
        const damage = inputs[i]!.capture.damage;
        if (damage) o.logger.warn(`${damage.message}: the capture ends there; its ${inputs[i]!.capture.packetsRead} packets before it were sent in`);
      });
    }
    if (inputs.length && !o.signal.aborted) {
      sw.flushDigests();
      o.print(`switch: the captures are in; ${sw.digests.sentSamples} digest samples sent in ${sw.digests.sentLists} lists`);
      // Then once a controller has acknowledged them all (it has every digest of the captures).
      while (!o.signal.aborted && sw.digests.unackedLists > 0) await new Promise((r) => setTimeout(r, 10));
      if (!o.signal.aborted) o.print(`switch: every digest list acknowledged`);
    }
    await new Promise<void>((resolve) => (o.signal.aborted ? resolve() : o.signal.addEventListener("abort", () => resolve(), { once: true })));
    // P4Runtime sends a digest list to the primary controller only: with none, the list is gone.
    if (server.digestListsDropped) o.print(`switch: ${server.digestListsDropped} digest lists dropped: no controller was primary to take them`);
  } finally {
    // Also when a capture fails mid-way: the listener closes, and the command ends with the error.
    clearInterval(tick);
    await server.close();
    for (const w of writers.values()) w.close();
  }
}

/** Resolves once a pipeline is committed and every digest it declares is configured (or on abort). */
async function digestsConfigured(server: P4RuntimeServer, sw: SoftwareSwitch, signal: AbortSignal): Promise<void> {
  for (;;) {
    if (signal.aborted) return;
    const digests = server.binding?.digests;
    if (digests && digests.size > 0) {
      const configured = new Set([...sw.digests.configured()].map(([id]) => id));
      if ([...digests.keys()].every((id) => configured.has(id))) return;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Packets handed to the switch between two looks at the event loop when the feed is behind. */
const YIELD_EVERY = 256;

/**
 * The clock of a switch fed from captures: the host's (or, on the captures'
 * clock, the first packet's capture time on), held at the next packet's time
 * while that packet waits.
 */
class FeedClock {
  private startHr = process.hrtime.bigint();
  /** undefined until the first packet, on the captures' clock */
  private startWall: bigint | undefined;
  /** capture time (on the switch's clock) of the next packet, until it is sent in */
  hold: bigint | undefined;

  constructor(readonly hostClock: boolean) {
    if (hostClock) this.startWall = BigInt(Date.now()) * 1_000_000n;
  }

  /** On the captures' clock: the clock starts at the first packet's capture time. */
  startAt(captureNs: bigint): void {
    if (this.startWall !== undefined) return;
    this.startWall = captureNs;
    this.startHr = process.hrtime.bigint();
  }

  now(): bigint | undefined {
    if (this.startWall === undefined) return undefined;
    const wall = this.startWall + (process.hrtime.bigint() - this.startHr);
    return this.hold !== undefined && this.hold < wall ? this.hold : wall;
  }
}

/**
 * Sends the ports' captures in, merged by capture time; returns the packets
 * sent per port. A packet's time on the switch is its capture time moved to
 * when the captures started; the switch's clock waits for it (FeedClock), so
 * digest lists leave in capture time, as in replay, however far behind the
 * host falls.
 */
async function feedPorts(
  sw: SoftwareSwitch, clock: FeedClock, inputs: ReadonlyArray<{ port?: number; capture: Iterator<CapturedPacket> }>, signal: AbortSignal,
  routeOf: (p: CapturedPacket) => number | undefined,
): Promise<Array<{ packets: number; unrouted: number }>> {
  const lanes = inputs.map((i) => ({ port: i.port, it: i.capture, head: i.capture.next().value as CapturedPacket | undefined, packets: 0, unrouted: 0 }));
  let first: bigint | undefined;
  let t0 = process.hrtime.bigint();
  let start: bigint | undefined;
  let sinceYield = 0;
  try {
    for (;;) {
      // The lane whose next packet is earliest (the first port given wins a tie).
      let best: (typeof lanes)[number] | undefined;
      for (const l of lanes) if (l.head && (!best || l.head.timestampNs < best.head!.timestampNs)) best = l;
      if (!best || signal.aborted) break;
      const pkt = best.head!;
      if (first === undefined) {
        first = pkt.timestampNs;
        t0 = process.hrtime.bigint();
        // On the captures' clock the switch starts at the first packet's time; otherwise the captures start now.
        clock.startAt(first);
        start = clock.hostClock ? clock.now()! : first;
      }
      // (A packet earlier than the one before it, a capture out of order, is sent in at the switch's time.)
      const due = pkt.timestampNs > first ? pkt.timestampNs - first : 0n;
      clock.hold = start! + due;
      const ahead = due - (process.hrtime.bigint() - t0);
      if (ahead > 1_000_000n) {
        await new Promise((r) => setTimeout(r, Number(ahead / 1_000_000n)));
        sinceYield = 0;
      } else if (++sinceYield >= YIELD_EVERY) {
        await new Promise((r) => setImmediate(r));
        sinceYield = 0;
      }
      const port = best.port ?? routeOf(pkt);
      if (port === undefined) best.unrouted++;
      else {
        sw.process({ port, data: pkt.data, unixNs: start! + due, wireLength: pkt.originalLength });
        best.packets++;
      }
      best.head = best.it.next().value as CapturedPacket | undefined;
    }
  } finally {
    clock.hold = undefined;
  }
  return lanes.map((l) => ({ packets: l.packets, unrouted: l.unrouted }));
}
