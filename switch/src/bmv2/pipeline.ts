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

export interface ProcessResult {
  /** the packets sent, in the order the switch sends them (none: dropped) */
  outputs: readonly PacketOut[];
  /** one sample each ingress pass that called generate_digest */
  learn: readonly LearnSample[];
  /** parser_error of the packet's first parse */
  parserError: number;
  /** set when assert()/assume() failed, a loop bound was hit, or the packet could not be processed */
  error: string | undefined;
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
  /** undefined: the state as it is now (the packet goes straight on from ingress) */
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

interface IngressJob {
  data: Uint8Array;
  port: number;
  packetLength: number;
  ts: number;
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
    clone: 0, cloneFieldList: 0, resubmit: 0, recirculate: 0,
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
  private firstParserError = 0;
  private ingressPasses = 0;
  private egressPasses = 0;
  private readonly egressQueue: EgressJob[] = [];
  private readonly ingressQueue: IngressJob[] = [];

  private readonly fieldLists = new Map<number, PreparedFieldList>();
  private metaN: number[] | undefined;
  private metaB: number[] | undefined;

  constructor(
    readonly program: CompiledProgram,
    /** multicast groups and clone sessions (the switch's; an empty one if not given) */
    readonly replication: ReplicationEngine = new ReplicationEngine(),
  ) {
    for (const fl of program.json.field_lists ?? []) {
      this.fieldLists.set(fl.id, {
        slots: fl.elements.map((e) => {
          const [h, f] = e.value as [string, string];
          const fi = program.layout.field(h, f, `field list '${fl.name}'`);
          return { kind: fi.kind, slot: fi.slot };
        }),
      });
    }
  }

  process(pkt: PacketIn): ProcessResult {
    this.packetsIn++;
    this.outs = NONE as never;
    this.learns = NONE as never;
    this.firstError = undefined;
    this.ingressPasses = 0;
    this.egressPasses = 0;
    const len = pkt.wireLength ?? pkt.data.length;
    try {
      this.ingress(pkt.data, pkt.port, len, pkt.timestampNs, InstanceType.NORMAL, undefined);
      this.firstParserError = this.ctx.parserError;
      if (this.egressQueue.length > 0 || this.ingressQueue.length > 0) this.drain();
    } catch (err) {
      // A fault in one packet must not stop the switch.
      this.packetErrors++;
      this.packetsDropped++;
      this.egressQueue.length = 0;
      this.ingressQueue.length = 0;
      this.firstError ??= `packet on port ${pkt.port}: ${(err as Error).message}`;
      return { outputs: this.outs, learn: this.learns, parserError: this.ctx.parserError, error: this.firstError };
    }
    return { outputs: this.outs, learn: this.learns, parserError: this.firstParserError, error: this.firstError };
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
      this.ingress(i.data, i.port, i.packetLength, i.ts, i.instanceType, i.preserved);
    }
  }

  /** One ingress pass, and what follows it: clone, learn, then resubmit, multicast, drop or unicast. */
  private ingress(data: Uint8Array, port: number, length: number, ts: number, instanceType: number, preserved: FieldValues | undefined): void {
    const p = this.program;
    const { N, std } = p;
    const fn = p.fn;
    const ctx = this.ctx;
    this.ingressPasses++;
    ctx.exit = false;
    ctx.learnId = 0;
    ctx.parserError = 0;
    ctx.truncateTo = 0;
    ctx.failed = undefined;
    ctx.clone = 0;
    ctx.resubmit = 0;
    ctx.recirculate = 0;
    ctx.packetLength = length;
    fn.begin(port, length, ts);
    if (instanceType !== InstanceType.NORMAL) {
      if (preserved) this.writeFieldList(preserved);
      this.setStd(std.instanceType, instanceType);
    }
    const parsed = fn.parse(data, ctx);
    fn.parsed(ctx.parserError, 0);
    if (!fn.verifyChecksums()) fn.parsed(ctx.parserError, 1);
    fn.ingress(ctx);
    ctx.exit = false;
    if (ctx.learnId > 0) {
      const list = p.learnLists.get(ctx.learnId);
      const sample = { listId: ctx.learnId, listName: list?.name ?? String(ctx.learnId), values: fn.learn(ctx.learnId) };
      if (this.learns.length === 0) this.learns = [sample];
      else this.learns.push(sample);
    }
    if (ctx.failed) {
      this.drop(ctx.failed);
      return;
    }
    const egressSpec = std.egressSpec.kind === "n" ? N[std.egressSpec.slot]! : Number(p.B[std.egressSpec.slot]);
    const mgid = std.mcastGrp ? (std.mcastGrp.kind === "n" ? N[std.mcastGrp.slot]! : Number(p.B[std.mcastGrp.slot])) : 0;
    if ((ctx.clone | ctx.resubmit) === 0 && mgid === 0) {
      // Unicast, nothing else: the common case.
      if (egressSpec === DROP_PORT) {
        this.packetsDropped++;
        return;
      }
      if (instanceType !== InstanceType.NORMAL) this.setStd(std.instanceType, InstanceType.NORMAL);
      const job: EgressJob = { state: undefined, port: egressSpec, rid: -1, data, parsed, packetLength: length, truncate: 0, recirculate: ctx.recirculate, ts };
      if (this.egressQueue.length === 0) this.egress(job);
      else this.enqueue(job, new Snapshot(p));
      return;
    }
    this.afterIngress(data, port, length, ts, parsed, egressSpec, mgid);
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
      this.ingressQueue.push({ data, port: 0, packetLength: length, ts: 0, instanceType: InstanceType.RESUBMIT, preserved: this.readFieldList(ctx.resubmit) });
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

  /** One egress pass, and what follows it: clone, drop, deparse, then recirculate or send. */
  private egress(job: EgressJob): void {
    const p = this.program;
    const { N, std } = p;
    const fn = p.fn;
    const ctx = this.ctx;
    if (++this.egressPasses > MAX_EGRESS_PASSES) return this.loopDrop(`more than ${MAX_EGRESS_PASSES} copies`);
    if (job.state) job.state.restore(p);
    ctx.exit = false;
    ctx.truncateTo = 0;
    ctx.failed = undefined;
    ctx.clone = 0;
    ctx.recirculate = job.recirculate;
    ctx.packetLength = job.packetLength;
    if (job.rid >= 0) this.setStd(std.egressRid, job.rid);
    fn.toEgress(job.port, job.ts, job.packetLength);
    fn.egress(ctx);
    if (ctx.failed) {
      this.drop(ctx.failed);
      return;
    }
    if (ctx.clone !== 0) this.cloneAfterEgress(job);
    if (std.egressSpec.kind === "n" ? N[std.egressSpec.slot] === DROP_PORT : p.B[std.egressSpec.slot] === BigInt(DROP_PORT)) {
      this.packetsDropped++;
      return;
    }
    fn.updateChecksums();
    let data: Buffer;
    if (job.state === undefined) {
      const original = Buffer.isBuffer(job.data) ? job.data : Buffer.from(job.data.buffer, job.data.byteOffset, job.data.byteLength);
      data = fn.deparse(job.data, job.parsed, original);
    } else {
      // A copy's headers are its own: deparse them (the deparser's shortcut reads the last parse).
      data = fn.deparse(job.data, job.parsed);
    }
    if (ctx.truncateTo > 0 && data.length > ctx.truncateTo) data = data.subarray(0, ctx.truncateTo);
    if (job.truncate > 0 && data.length > job.truncate) data = data.subarray(0, job.truncate);
    if (ctx.recirculate !== 0) {
      if (this.ingressPasses >= MAX_INGRESS_PASSES) return this.loopDrop(`recirculated more than ${MAX_INGRESS_PASSES - 1} times`);
      this.ingressQueue.push({ data, port: 0, packetLength: data.length, ts: 0, instanceType: InstanceType.RECIRC, preserved: this.readFieldList(ctx.recirculate) });
      return;
    }
    this.packetsOut++;
    const out = { port: job.port, data };
    if (this.outs.length === 0) this.outs = [out];
    else this.outs.push(out);
  }

  /** An egress-to-egress clone: the headers as egress left them (not deparsed), metadata cleared but for the preserved field list. */
  private cloneAfterEgress(job: EgressJob): void {
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
      this.enqueue({ state: undefined, port: r.egressPort, rid: r.instance, data: job.data, parsed: job.parsed, packetLength: job.packetLength, truncate: session.packetLengthBytes, recirculate: 0, ts: job.ts }, state);
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
