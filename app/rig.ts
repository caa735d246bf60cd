// A software switch behind its P4Runtime server, with a telemetry controller
// connected to it over gRPC on loopback: the same path as a real deployment,
// in one process. Used by the demo, by replay and by the tests.
import { P4RuntimeServer } from "../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../switch/src/software-switch.js";
import { parseConfig, type Mode } from "../p4runtime-controller/src/telemetry/config.js";
import { TelemetryController, type DigestBatch } from "../p4runtime-controller/src/telemetry/controller.js";
import type { Logger } from "../p4runtime-controller/src/lib/switch-connection.js";
import { ipv4Source, type Topology } from "./topology.js";

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
  private lastTs = 0n;

  /** Capture time of the last packet fed (0 before the first). */
  get lastFedNs(): bigint {
    return this.lastTs;
  }
  /** next polling rotation, capture time */
  nextRotationNs: bigint | undefined;
  /** control-plane actions to run at a capture time, before the packets that follow it */
  private readonly scheduled: Array<{ atNs: bigint; run: () => Promise<void> }> = [];

  /** Runs `run` (e.g. a mode switch) when replay reaches capture time `atNs`; its writes land before later packets. */
  schedule(atNs: bigint, run: () => Promise<void>): void {
    this.scheduled.push({ atNs, run });
    this.scheduled.sort((a, b) => (a.atNs < b.atNs ? -1 : a.atNs > b.atNs ? 1 : 0));
  }

  /** Control-plane work due at capture time `tsNs`: scheduled actions, then polling rotations. */
  async runDue(tsNs: bigint): Promise<void> {
    while (this.scheduled.length && this.scheduled[0]!.atNs <= tsNs) await this.scheduled.shift()!.run();
    await this.rotateIfDue(tsNs);
  }

  /** True when control-plane work is due at `tsNs`. */
  due(tsNs: bigint): boolean {
    if (this.scheduled.length && this.scheduled[0]!.atNs <= tsNs) return true;
    if (this.controller.currentMode !== "polling") return false;
    return this.nextRotationNs === undefined || tsNs >= this.nextRotationNs;
  }

  constructor(readonly options: RigOptions) {
    this.server = new P4RuntimeServer(this.sw, { deviceId: options.deviceId ?? 1n, cpuPort: 510 });
  }

  async start(onDigests: (b: DigestBatch) => void): Promise<void> {
    this.port = await this.server.listen("127.0.0.1:0");
    const o = this.options;
    const config = parseConfig({
      switch: { address: `127.0.0.1:${this.port}`, device_id: Number(o.deviceId ?? 1n), election_id: 1, switch_id: o.name, timestamp_unit_ns: 1 },
      ports: o.topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
      mode: o.mode ?? "full",
      polling: {
        rotation_period_ms: o.polling?.rotationPeriodMs ?? 1000,
        flow_capacity: o.polling?.flowCapacity ?? 1024,
        io_pair_capacity: o.polling?.ioPairCapacity ?? 1024,
      },
      timeouts: { io_timeout_ms: o.ioTimeoutMs ?? 1000, flow_timeout_ms: o.flowTimeoutMs ?? 1000 },
      digest: { max_list_size: o.maxListSize ?? 256, max_timeout_us: o.maxTimeoutUs ?? 1000, ack_timeout_ms: 1000 },
    });
    // Rotation follows the capture's clock, not the host's (see feedMerged).
    // The switch runs in the capture's time and stamps digest lists with it: records keep that clock.
    this.controller = new TelemetryController(config, { logger: o.logger, rotationTimer: false, listClock: "switch" });
    this.controller.on("digests", onDigests);
    this.controller.start();
    await this.controller.ready();
  }

  /** Rotates the polling window when its period has passed in capture time. */
  async rotateIfDue(tsNs: bigint): Promise<void> {
    if (this.controller.currentMode !== "polling") {
      this.nextRotationNs = undefined;
      return;
    }
    const period = BigInt(this.controller.config.polling.rotationPeriodMs) * 1_000_000n;
    if (this.nextRotationNs === undefined) this.nextRotationNs = tsNs + period;
    while (tsNs >= this.nextRotationNs) {
      await this.controller.rotate();
      this.nextRotationNs += period;
    }
  }

  /** Processes one captured packet at its capture time; its ingress port comes from the topology. */
  feed(p: FeedPacket): void {
    const src = ipv4Source(p.data);
    const port = src === undefined ? undefined : this.options.topology.portOf(src);
    if (port === undefined) {
      this.noIngressPort++;
      return;
    }
    this.lastTs = p.timestampNs;
    this.sw.process({ port, data: p.data, unixNs: p.timestampNs, wireLength: p.originalLength ?? p.data.length });
  }

  /** Sends every pending digest list and waits until the controller has received them all. */
  async drain(timeoutMs = 30_000): Promise<void> {
    this.sw.tick(this.lastTs + 10_000_000n);
    this.sw.flushDigests();
    const deadline = Date.now() + timeoutMs;
    const sent = () => this.sw.digests.sentSamples;
    const got = () => this.controller.stats.digests + this.controller.stats.badDigests;
    while (got() < sent()) {
      if (Date.now() > deadline) throw new Error(`${this.options.name}: ${sent() - got()} digests still in flight after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async stop(): Promise<void> {
    await this.controller?.stop();
    await this.server.close();
  }
}

/**
 * Feeds several switches' captures merged by time (each capture's times plus
 * its `alignNs`, so that captures taken with different clocks interleave as
 * they happened), yielding to the event loop so digests flow.
 */
export async function feedMerged(rigs: ReadonlyArray<{ rig: Rig; packets: readonly FeedPacket[]; alignNs?: bigint }>, onProgress?: (done: number, total: number, tsNs: bigint) => void): Promise<void> {
  const idx = rigs.map(() => 0);
  const total = rigs.reduce((a, r) => a + r.packets.length, 0);
  let done = 0;
  for (;;) {
    let best = -1;
    let bestTs = 0n;
    rigs.forEach((r, i) => {
      const p = r.packets[idx[i]!];
      const t = p ? p.timestampNs + (r.alignNs ?? 0n) : 0n;
      if (p && (best < 0 || t < bestTs)) {
        best = i;
        bestTs = t;
      }
    });
    if (best < 0) break;
    const r = rigs[best]!;
    const own = r.packets[idx[best]!]!.timestampNs;
    // Table writes due at this time (rotation, mode switch) land before the packet.
    if (r.rig.due(own)) await r.rig.runDue(own);
    r.rig.feed(r.packets[idx[best]!]!);
    idx[best]!++;
    done++;
    if ((done & 1023) === 0) {
      onProgress?.(done, total, bestTs);
      await new Promise((res) => setImmediate(res));
    }
  }
  onProgress?.(done, total, 0n);
}
