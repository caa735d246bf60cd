// Runs packets through a compiled program the way simple_switch does:
// parse, verify checksums, ingress, learn, then the packet replication
// engine (clone, resubmit, multicast or unicast), egress, update checksums,
// deparse, then clone and recirculate after egress.
//
// One packet in may give several out (multicast, clones) or run ingress
// again (resubmit, recirculate). The common case, a unicast packet with no
// clone, runs egress straight on the state ingress left, as before; copies
// take a snapshot of the packet's state (field slots, validity, stack
// indices) and run one after another: ingress-to-egress clones first, then
// the packet (or its multicast replicas), each egress-to-egress clone after
// the copies already queued; a recirculated or resubmitted packet runs
// ingress again once the copies queued before it are out.
import { ReplicationEngine } from "../replication.js";
import type { CompiledProgram } from "./program.js";
import { DROP_PORT, type PacketContext } from "./state.js";
import type { Value } from "./table.js";

export interface PacketIn {
  port: number;
  data: Uint8Array;
  /** ingress timestamp in ns since the switch started */
  timestampNs: number;
  /** length on the wire (for counters) when `data` is a truncated capture */
  wireLength?: number;
}

export interface PacketOut {
  port: number;
  data: Buffer;
}

export interface LearnSample {
  listId: number;
  listName: string;
  values: Value[];
}

/** What the switch did with one packet in. */
export class ProcessResult {
  constructor(
    /** the first packet sent (undefined: none, the packet was dropped) */
    readonly output: PacketOut | undefined,
    /** the packets sent after the first, when there are more (multicast, clones) */
    readonly more: readonly PacketOut[] | undefined,
    /** one sample each ingress pass that called generate_digest */
    readonly learn: readonly LearnSample[],
    /** parser_error of the packet's first parse */
    readonly parserError: number,
    /** set when assert()/assume() failed, a loop bound was hit, or the packet could not be processed */
    readonly error: string | undefined,
  ) {}

  /** Every packet sent, in the order the switch sends them. */
  get outputs(): PacketOut[] {
    if (this.output === undefined) return [];
    return this.more === undefined ? [this.output] : [this.output, ...this.more];
  }
}

/** standard_metadata.instance_type values (simple_switch). */
export const InstanceType = { NORMAL: 0, INGRESS_CLONE: 1, EGRESS_CLONE: 2, RECIRC: 4, REPLICATION: 5, RESUBMIT: 6 } as const;

/** Ingress passes one arriving packet may make (resubmits and recirculations); past it the packet is dropped with an error. */
export const MAX_INGRESS_PASSES = 16;
/** Egress passes one arriving packet may make (multicast replicas and clones); past it further copies are dropped with an error. */
export const MAX_EGRESS_PASSES = 4096;

const NONE: readonly never[] = Object.freeze([]);

/** A packet's run-time state: the field slots, header validity and stack indices. */
class Snapshot {
  readonly N: Float64Array;
  readonly B: bigint[];
  readonly V: Uint8Array;
  readonly SN: Int32Array;
  constructor(p: CompiledProgram) {
    this.N = Float64Array.from(p.N);
    this.B = p.B.slice();
    this.V = Uint8Array.from(p.V);
    this.SN = Int32Array.from(p.fn.SN);
  }
  restore(p: CompiledProgram): void {
    p.N.set(this.N);
    const B = p.B;
    for (let i = 0; i < B.length; i++) B[i] = this.B[i]!;
    p.V.set(this.V);
    p.fn.SN.set(this.SN);
  }
}

interface EgressJob {
  /** the copy's state (set as it is queued) */
  state: Snapshot | undefined;
  port: number;
  /** egress_rid to set (a replica's instance), or -1 */
  rid: number;
  /** the bytes the headers were parsed from, and where the payload starts */
  data: Uint8Array;
  parsed: number;
  packetLength: number;
  /** the clone session's packet_length_bytes (0: whole packet) */
  truncate: number;
  /** recirculate flag carried from ingress (simple_switch keeps it on the packet) */
  recirculate: number;
  ts: number;
}

/** A packet back to ingress (resubmit, recirculate): ingress_port and timestamps start at 0, as on simple_switch. */
interface IngressJob {
  data: Uint8Array;
  packetLength: number;
  instanceType: number;
  /** values of the preserved field list, in its order */
  preserved: FieldValues | undefined;
}

interface FieldValues {
  list: PreparedFieldList;
  values: Value[];
}

interface PreparedFieldList {
  slots: Array<{ kind: "n" | "b"; slot: number }>;
}

export class Pipeline {
  private readonly ctx: PacketContext = {
    exit: false, learnId: 0, packetLength: 0, parserError: 0, truncateTo: 0, failed: undefined,
    clone: 0, cloneFieldList: 0, resubmit: 0, recirculate: 0, nowNs: 0,
  };
  private readonly scratch: PacketContext = { ...this.ctx };
  packetsIn = 0;
  packetsOut = 0;
  packetsDropped = 0;
  packetErrors = 0;
  /** copies dropped because a packet made more passes than MAX_INGRESS_PASSES / MAX_EGRESS_PASSES allow */
  loopDrops = 0;

  // Per arriving packet.
  private outs: PacketOut[] = NONE as never;
  private learns: LearnSample[] = NONE as never;
  private firstError: string | undefined;
  private ingressPasses = 0;
  private egressPasses = 0;
  private readonly egressQueue: EgressJob[] = [];
  private readonly ingressQueue: IngressJob[] = [];

  private readonly fieldLists = new Map<number, PreparedFieldList>();
  /** the slot of standard_metadata.mcast_grp (16 bits: a number slot), or -1 when the program has none */
  private readonly mcastSlot: number;
  private metaN: number[] | undefined;
  private metaB: number[] | undefined;

  constructor(
    readonly program: CompiledProgram,
    /** multicast groups and clone sessions (the switch's; an empty one if not given) */
    readonly replication: ReplicationEngine = new ReplicationEngine(),
  ) {
    const mg = program.std.mcastGrp;
    this.mcastSlot = mg && mg.kind === "n" ? mg.slot : -1;
    for (const [id, fields] of program.fieldLists) this.fieldLists.set(id, { slots: fields.map((f) => ({ kind: f.kind, slot: f.slot })) });
  }

  /** The per-packet context as an ingress pass starts it. */
  private resetContext(): void {
    const ctx = this.ctx;
    ctx.exit = false;
    ctx.learnId = 0;
    ctx.parserError = 0;
    ctx.truncateTo = 0;
    ctx.failed = undefined;
    ctx.clone = 0;
    ctx.resubmit = 0;
    ctx.recirculate = 0;
  }

  process(pkt: PacketIn): ProcessResult {
    const p = this.program;
    const { N, std } = p;
    const fn = p.fn;
    const ctx = this.ctx;
    this.packetsIn++;
    this.resetContext();
    const length = pkt.wireLength ?? pkt.data.length;
    const ts = pkt.timestampNs;
    ctx.packetLength = length;
    // Every pass of the packet (copies, resubmits, recirculations) runs at its arrival, for meters.
    ctx.nowNs = ts;
    let parserError = 0;
    /** whether the queued path (outputs, samples and errors kept on `this`) is in use */
    let copies = false;
    try {
      // The first ingress pass and, for a unicast packet with no clone, its
      // egress, straight on: no copy of the packet's state.
      fn.begin(pkt.port, length, ts);
      const parsed = fn.parse(pkt.data, ctx);
      fn.parsed(ctx.parserError, 0);
      if (!fn.verifyChecksums()) fn.parsed(ctx.parserError, 1);
      fn.ingress(ctx);
      ctx.exit = false;
      parserError = ctx.parserError;
      const learn: LearnSample[] = ctx.learnId > 0 ? [this.sample()] : (NONE as never);
      if (ctx.failed) {
        this.packetsDropped++;
        return new ProcessResult(undefined, undefined, learn, parserError, ctx.failed);
      }
      const egressSpec = std.egressSpec.kind === "n" ? N[std.egressSpec.slot]! : Number(p.B[std.egressSpec.slot]);
      const mgid = this.mcastSlot >= 0 ? N[this.mcastSlot]! : 0;
      if ((ctx.clone | ctx.resubmit) !== 0 || mgid !== 0) {
        copies = true;
        this.startCopies(learn, 0);
        this.afterIngress(pkt.data, pkt.port, length, ts, parsed, egressSpec, mgid);
        this.drain();
        return this.result(parserError);
      }
      if (egressSpec === DROP_PORT) {
        this.packetsDropped++;
        return new ProcessResult(undefined, undefined, learn, parserError, undefined);
      }
      fn.toEgress(egressSpec, ts, length);
      fn.egress(ctx);
      if ((ctx.clone | ctx.recirculate) !== 0 || ctx.failed !== undefined) {
        copies = true;
        this.startCopies(learn, 1);
        this.afterEgress(egressSpec, pkt.data, parsed, length, 0, true, ts);
        this.drain();
        return this.result(parserError);
      }
      if (std.egressSpec.kind === "n" && N[std.egressSpec.slot] === DROP_PORT) {
        this.packetsDropped++;
        return new ProcessResult(undefined, undefined, learn, parserError, undefined);
      }
      fn.updateChecksums();
      const original = Buffer.isBuffer(pkt.data) ? pkt.data : Buffer.from(pkt.data.buffer, pkt.data.byteOffset, pkt.data.byteLength);
      let data = fn.deparse(pkt.data, parsed, original);
      if (ctx.truncateTo > 0 && data.length > ctx.truncateTo) data = data.subarray(0, ctx.truncateTo);
      this.packetsOut++;
      return new ProcessResult({ port: egressSpec, data }, undefined, learn, parserError, undefined);
    } catch (err) {
      // A fault in one packet must not stop the switch.
      this.packetErrors++;
      this.packetsDropped++;
      this.egressQueue.length = 0;
      this.ingressQueue.length = 0;
      if (!copies) this.startCopies(NONE as never, 0);
      this.firstError ??= `packet on port ${pkt.port}: ${(err as Error).message}`;
      return this.result(parserError || ctx.parserError);
    }
  }

  private result(parserError: number): ProcessResult {
    const outs = this.outs;
    return new ProcessResult(outs[0], outs.length > 1 ? outs.slice(1) : undefined, this.learns, parserError, this.firstError);
  }

  /** The queued path starts: what the first pass gave so far. */
  private startCopies(learn: LearnSample[], egressPasses: number): void {
    this.outs = NONE as never;
    this.learns = learn;
    this.firstError = undefined;
    this.ingressPasses = 1;
    this.egressPasses = egressPasses;
  }

  private sample(): LearnSample {
    const ctx = this.ctx;
    const list = this.program.learnLists.get(ctx.learnId);
    return { listId: ctx.learnId, listName: list?.name ?? String(ctx.learnId), values: this.program.fn.learn(ctx.learnId) };
  }

  /** A later ingress pass's sample. */
  private learned(): void {
    const sample = this.sample();
    if (this.learns.length === 0) this.learns = [sample];
    else this.learns.push(sample);
  }

  /** Runs queued copies: egress copies in order, then the next ingress pass, until both queues are empty. */
  private drain(): void {
    for (;;) {
      const e = this.egressQueue.shift();
      if (e) {
        this.egress(e);
        continue;
      }
      const i = this.ingressQueue.shift();
      if (!i) return;
      this.ingress(i);
    }
  }

  /** A later ingress pass (resubmit, recirculate), and what follows it. */
  private ingress(job: IngressJob): void {
    const p = this.program;
    const { N, std } = p;
    const fn = p.fn;
    const ctx = this.ctx;
    this.ingressPasses++;
    this.resetContext();
    ctx.packetLength = job.packetLength;
    // simple_switch clears the metadata of a resubmitted or recirculated
    // packet (ingress_port and the timestamps too) but for the field list.
    fn.begin(0, job.packetLength, 0);
    if (job.preserved) this.writeFieldList(job.preserved);
    this.setStd(std.instanceType, job.instanceType);
    const parsed = fn.parse(job.data, ctx);
    fn.parsed(ctx.parserError, 0);
    if (!fn.verifyChecksums()) fn.parsed(ctx.parserError, 1);
    fn.ingress(ctx);
    ctx.exit = false;
    if (ctx.learnId > 0) this.learned();
    if (ctx.failed) {
      this.drop(ctx.failed);
      return;
    }
    const egressSpec = std.egressSpec.kind === "n" ? N[std.egressSpec.slot]! : Number(p.B[std.egressSpec.slot]);
    const mgid = this.mcastSlot >= 0 ? N[this.mcastSlot]! : 0;
    this.afterIngress(job.data, 0, job.packetLength, 0, parsed, egressSpec, mgid);
  }

  private afterIngress(data: Uint8Array, port: number, length: number, ts: number, parsed: number, egressSpec: number, mgid: number): void {
    const p = this.program;
    const { std } = p;
    const ctx = this.ctx;
    const recirculate = ctx.recirculate;
    if (ctx.clone !== 0) {
      const session = this.replication.sessions.get(ctx.clone & 0x7fff);
      if (session && session.replicas.length > 0) {
        // The clone is the packet as this ingress pass received it, parsed
        // again, its metadata cleared but for the preserved field list.
        const preserved = this.readFieldList(ctx.cloneFieldList);
        const after = new Snapshot(p);
        p.fn.begin(port, length, ts);
        const cloneParsed = p.fn.parse(data, this.scratch);
        this.clearMetadata();
        if (preserved) this.writeFieldList(preserved);
        this.setStd(std.instanceType, InstanceType.INGRESS_CLONE);
        const state = new Snapshot(p);
        for (const r of session.replicas) {
          this.enqueue({ state: undefined, port: r.egressPort, rid: r.instance, data, parsed: cloneParsed, packetLength: length, truncate: session.packetLengthBytes, recirculate: 0, ts }, state);
        }
        after.restore(p);
      }
    }
    if (ctx.resubmit !== 0) {
      if (this.ingressPasses >= MAX_INGRESS_PASSES) return this.loopDrop(`resubmitted more than ${MAX_INGRESS_PASSES - 1} times`);
      this.ingressQueue.push({ data, packetLength: length, instanceType: InstanceType.RESUBMIT, preserved: this.readFieldList(ctx.resubmit) });
      return;
    }
    if (mgid !== 0) {
      this.setStd(std.instanceType, InstanceType.REPLICATION);
      const group = this.replication.groups.get(mgid);
      if (!group || group.length === 0) {
        this.packetsDropped++;
        return;
      }
      const state = new Snapshot(p);
      for (const r of group) this.enqueue({ state: undefined, port: r.egressPort, rid: r.instance, data, parsed, packetLength: length, truncate: 0, recirculate: 0, ts }, state);
      return;
    }
    if (egressSpec === DROP_PORT) {
      this.packetsDropped++;
      return;
    }
    this.setStd(std.instanceType, InstanceType.NORMAL);
    this.enqueue({ state: undefined, port: egressSpec, rid: -1, data, parsed, packetLength: length, truncate: 0, recirculate, ts }, new Snapshot(p));
  }

  private enqueue(job: EgressJob, state: Snapshot): void {
    job.state = state;
    this.egressQueue.push(job);
  }

  /** One queued egress pass: the copy's state back, egress, and what follows it. */
  private egress(job: EgressJob): void {
    const p = this.program;
    const fn = p.fn;
    const ctx = this.ctx;
    if (++this.egressPasses > MAX_EGRESS_PASSES) return this.loopDrop(`more than ${MAX_EGRESS_PASSES} copies`);
    job.state!.restore(p);
    ctx.exit = false;
    ctx.truncateTo = 0;
    ctx.failed = undefined;
    ctx.clone = 0;
    ctx.recirculate = job.recirculate;
    ctx.packetLength = job.packetLength;
    if (job.rid >= 0) this.setStd(p.std.egressRid, job.rid);
    fn.toEgress(job.port, job.ts, job.packetLength);
    fn.egress(ctx);
    this.afterEgress(job.port, job.data, job.parsed, job.packetLength, job.truncate, false, job.ts);
  }

  /** After egress: clone, drop, deparse, then recirculate or send. `live`: the packet as received (the deparser may give its bytes back). */
  private afterEgress(port: number, buf: Uint8Array, parsed: number, packetLength: number, truncate: number, live: boolean, ts: number): void {
    const p = this.program;
    const { N, std } = p;
    const fn = p.fn;
    const ctx = this.ctx;
    if (ctx.failed) {
      this.drop(ctx.failed);
      return;
    }
    if (ctx.clone !== 0) this.cloneAfterEgress(buf, parsed, packetLength, ts);
    if (std.egressSpec.kind === "n" ? N[std.egressSpec.slot] === DROP_PORT : p.B[std.egressSpec.slot] === BigInt(DROP_PORT)) {
      this.packetsDropped++;
      return;
    }
    fn.updateChecksums();
    let data: Buffer;
    if (live) {
      const original = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
      data = fn.deparse(buf, parsed, original);
    } else {
      // A copy's headers are its own: deparse them (the deparser's shortcut reads the last parse).
      data = fn.deparse(buf, parsed);
    }
    if (ctx.truncateTo > 0 && data.length > ctx.truncateTo) data = data.subarray(0, ctx.truncateTo);
    if (truncate > 0 && data.length > truncate) data = data.subarray(0, truncate);
    if (ctx.recirculate !== 0) {
      if (this.ingressPasses >= MAX_INGRESS_PASSES) return this.loopDrop(`recirculated more than ${MAX_INGRESS_PASSES - 1} times`);
      this.ingressQueue.push({ data, packetLength: data.length, instanceType: InstanceType.RECIRC, preserved: this.readFieldList(ctx.recirculate) });
      return;
    }
    this.packetsOut++;
    const out = { port, data };
    if (this.outs.length === 0) this.outs = [out];
    else this.outs.push(out);
  }

  /** An egress-to-egress clone: the headers as egress left them (not deparsed), metadata cleared but for the preserved field list. */
  private cloneAfterEgress(data: Uint8Array, parsed: number, packetLength: number, ts: number): void {
    const p = this.program;
    const ctx = this.ctx;
    const session = this.replication.sessions.get(ctx.clone & 0x7fff);
    if (!session || session.replicas.length === 0) return;
    const preserved = this.readFieldList(ctx.cloneFieldList);
    const after = new Snapshot(p);
    this.clearMetadata();
    if (preserved) this.writeFieldList(preserved);
    this.setStd(p.std.instanceType, InstanceType.EGRESS_CLONE);
    const state = new Snapshot(p);
    after.restore(p);
    for (const r of session.replicas) {
      this.enqueue({ state: undefined, port: r.egressPort, rid: r.instance, data, parsed, packetLength, truncate: session.packetLengthBytes, recirculate: 0, ts }, state);
    }
  }

  private drop(error: string): void {
    this.packetsDropped++;
    this.firstError ??= error;
  }

  private loopDrop(what: string): void {
    this.loopDrops++;
    this.packetErrors++;
    this.drop(`packet dropped: ${what}`);
  }

  private setStd(f: { kind: "n" | "b"; slot: number } | undefined, v: number): void {
    if (!f) return;
    if (f.kind === "n") this.program.N[f.slot] = v;
    else this.program.B[f.slot] = BigInt(v);
  }

  private readFieldList(id: number): FieldValues | undefined {
    const list = this.fieldLists.get(id);
    if (!list) return undefined;
    const { N, B } = this.program;
    return { list, values: list.slots.map((s) => (s.kind === "n" ? N[s.slot]! : B[s.slot]!)) };
  }

  private writeFieldList(fv: FieldValues): void {
    const { N, B } = this.program;
    fv.list.slots.forEach((s, i) => {
      if (s.kind === "n") N[s.slot] = fv.values[i] as number;
      else B[s.slot] = fv.values[i] as bigint;
    });
  }

  /** simple_switch's reset_metadata(): every metadata field to 0 (standard_metadata included). */
  private clearMetadata(): void {
    if (!this.metaN || !this.metaB) {
      const n: number[] = [];
      const b: number[] = [];
      for (const h of this.program.layout.headers) if (h.metadata) for (const f of h.fields) (f.kind === "n" ? n : b).push(f.slot);
      this.metaN = n;
      this.metaB = b;
    }
    const { N, B } = this.program;
    for (const s of this.metaN) N[s] = 0;
    for (const s of this.metaB) B[s] = 0n;
  }
}
