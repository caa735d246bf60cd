// The software switch: a compiled BMv2 program, its digest lists, and its
// clock. Packets come from whoever drives it (capture replay, the traffic
// generator, tests); forwarded packets and digest lists go to listeners.
//
// Clock: ingress timestamps are ns since the switch started (simple_switch
// gives µs; the telemetry program scales by its configured ts_scale). Live,
// time is the host's monotonic clock; in replay ("virtual"), time is each
// packet's capture timestamp, so results do not depend on how fast the
// replay runs.
import { EventEmitter } from "node:events";
import { CompiledProgram } from "./bmv2/program.js";
import { Pipeline, type PacketOut, type ProcessResult } from "./bmv2/pipeline.js";
import type { Bmv2Json } from "./bmv2/json.js";
import { DigestEngine, type DigestList } from "./digest-engine.js";
import { ReplicationEngine } from "./replication.js";

export interface SwitchPacket {
  port: number;
  data: Uint8Array;
  /** capture time, ns since the epoch (virtual clock); omitted live */
  unixNs?: bigint;
  wireLength?: number;
}

export interface SoftwareSwitchEvents {
  digest: [DigestList];
  packet: [PacketOut];
  error: [string];
}

export class SoftwareSwitch extends EventEmitter<SoftwareSwitchEvents> {
  private pipeline: Pipeline | undefined;
  readonly digests: DigestEngine;
  /** multicast groups and clone sessions; they outlive program loads (P4Runtime clears them with a new pipeline) */
  readonly replication = new ReplicationEngine();
  /** maps a program learn-list id to the P4Runtime digest id (set by the P4Runtime server) */
  digestIdOfList: (listId: number) => number | undefined = () => undefined;
  private startUnixNs: bigint | undefined;
  private readonly startHr = process.hrtime.bigint();
  private readonly startWall = BigInt(Date.now()) * 1_000_000n;
  private lastUnixNs = 0n;
  private nextTickNs = 0n;
  private nextFoldNs = 0n;
  packetErrors = 0;

  constructor(readonly options: { clock: "live" | "virtual" } = { clock: "live" }) {
    super();
    this.digests = new DigestEngine((list) => this.emit("digest", list));
  }

  get program(): CompiledProgram | undefined {
    return this.pipeline?.program;
  }

  /** Loads a program: all tables, registers and counters start empty. */
  load(json: Bmv2Json | CompiledProgram): CompiledProgram {
    const program = json instanceof CompiledProgram ? json : new CompiledProgram(json);
    this.pipeline = new Pipeline(program, this.replication);
    return program;
  }

  /** Unloads the program (the switch then drops everything). */
  unload(): void {
    this.pipeline = undefined;
  }

  /** The wall-clock (capture-clock) time at which the ingress timestamps read 0: the first packet's; undefined before it. */
  get clockStartUnixNs(): bigint | undefined {
    return this.startUnixNs;
  }

  /** Wall-clock (or capture-clock) time now, ns since the epoch. */
  nowUnixNs(): bigint {
    if (this.options.clock === "virtual") return this.lastUnixNs;
    return this.startWall + (process.hrtime.bigint() - this.startHr);
  }

  /** Processes one packet; returns what the pipeline did with it. */
  process(pkt: SwitchPacket): ProcessResult | undefined {
    const p = this.pipeline;
    let unixNs: bigint;
    if (this.options.clock === "virtual") {
      if (pkt.unixNs === undefined) throw new Error("a virtual-clock switch needs each packet's capture time");
      unixNs = pkt.unixNs > this.lastUnixNs ? pkt.unixNs : this.lastUnixNs;
    } else {
      unixNs = this.nowUnixNs();
    }
    this.lastUnixNs = unixNs;
    if (this.startUnixNs === undefined) this.startUnixNs = unixNs;
    if (unixNs >= this.nextTickNs) {
      // Digest list timeouts are checked every 10 µs of switch time, not per packet.
      this.digests.tick(unixNs);
      this.nextTickNs = unixNs + 10_000n;
      if (unixNs >= this.nextFoldNs) {
        // Counters fold past 2^48 into 64 bits once a second (counter-values.ts).
        p?.program.foldCounters();
        this.nextFoldNs = unixNs + 1_000_000_000n;
      }
    }
    if (!p) return undefined;
    const r = p.process({ port: pkt.port, data: pkt.data, timestampNs: Number(unixNs - this.startUnixNs), wireLength: pkt.wireLength });
    const learn = r.learn;
    for (let i = 0; i < learn.length; i++) {
      const l = learn[i]!;
      const id = this.digestIdOfList(l.listId);
      if (id !== undefined) this.digests.add(id, l.values, unixNs);
      else this.digests.unconfiguredDrops++;
    }
    if (r.error) {
      this.packetErrors++;
      this.emit("error", r.error);
    }
    if (r.output) {
      this.emit("packet", r.output);
      const more = r.more;
      if (more !== undefined) for (let i = 0; i < more.length; i++) this.emit("packet", more[i]!);
    }
    return r;
  }

  /** Moves the clock (virtual: to `unixNs`) and sends digest lists whose timeout passed. */
  tick(unixNs?: bigint): void {
    if (this.options.clock === "virtual" && unixNs !== undefined && unixNs > this.lastUnixNs) this.lastUnixNs = unixNs;
    this.digests.tick(this.nowUnixNs());
  }

  /** Sends every pending digest list now. */
  flushDigests(): void {
    this.digests.flushAll(this.nowUnixNs());
  }

  stats(): { packetsIn: number; packetsOut: number; packetsDropped: number; packetErrors: number; loopDrops: number } {
    const p = this.pipeline;
    return { packetsIn: p?.packetsIn ?? 0, packetsOut: p?.packetsOut ?? 0, packetsDropped: p?.packetsDropped ?? 0, packetErrors: this.packetErrors, loopDrops: p?.loopDrops ?? 0 };
  }
}
