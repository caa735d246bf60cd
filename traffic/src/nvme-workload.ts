// NVMe over RoCE as Linux and SPDK hosts put it on the wire (SPEC §2-§3),
// with the figures each switch must report.
//
// Every host has one NVMe controller per target, with an admin queue and
// `queuesPerHost` I/O queues (one per CPU). A queue is one RC connection: a
// host QP and a target QP, each with its own PSNs. CIDs are allocated per
// queue from its tags (lowest free), so the same CIDs are in flight on every
// busy queue at once; Linux-style hosts add the 4-bit generation counter of
// nvme_cid() above the tag, SPDK-style hosts send the bare tag. Writes up to
// `inlineDataBytes` carry their data in the command capsule. Linux-style
// hosts ask for remote invalidation of their keyed SGLs, and their responses
// come as SEND with Invalidate. The target moves an I/O's data in RDMA
// operations of at most `rdmaOpMaxBytes` (nvmet: 30 pages per WRITE or READ
// work request), so a large I/O's data is several RDMA WRITE messages (read)
// or READ REQUESTs (write), each with its own RETH: the command's R_Key and
// the next address.
//
// Each queue is simulated event by event, in time order, so that every QP
// sends its PSNs in order: the target's media works on I/Os in parallel and
// completes them out of order, its QP sends data and responses one at a time.
// Controllers set up during the capture show their RDMA CM exchange and
// Fabrics Connect; the others were connected before it began. Responses can
// be missing from a capture, and some I/Os fail with an NVMe error.
import type { Fault, GeneratorOptions, IoTruth, SwitchCapture } from "./types.js";
import { Heap } from "./heap.js";
import { ipText, type IpAddress } from "./ip.js";
import { cmMad, CmAttr, flowLabelUdpPort, nvmeCqe, nvmeRdmaCmRep, nvmeRdmaCmReq, nvmeSqe, nvmfConnect, NvmeStatus, Opcode, rdmaCmFlowLabel, type RoceFrame, type SglKind } from "./roce.js";

/** A host's NVMe host identifier (a UUID), the same for each of its controllers. */
function hostUuid(hostIndex: number): Buffer {
  const u = Buffer.from("5f1c7e2a9b3d4c6e8a0b1c2d00000000", "hex");
  u.writeUInt32BE(hostIndex + 1, 12);
  return u;
}

/** The host NQN nvme-cli derives from the host id. */
function hostNqn(hostIndex: number): string {
  const h = hostUuid(hostIndex).toString("hex");
  return `nqn.2014-08.org.nvmexpress:uuid:${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The NQN of the subsystem a target exports. */
function subsystemNqn(targetIndex: number): string {
  return `nqn.2019-04.io.storage:subsystem${targetIndex + 1}`;
}

/** The exporter's I/O timeout (its default), which the truth of a command with no response depends on. */
const IO_TIMEOUT_NS = 1_000_000_000;

/** A packet's place in a capture: its time, then the order it was emitted in. */
export interface RowRef {
  t: number;
  seq: number;
}

/** What the NVMe workload needs from the simulated fabric (generator.ts). */
export interface FabricModel {
  single: boolean;
  /** the ToRs of the first host and target (of every one, with one ToR a side) */
  torC: SwitchCapture;
  torS: SwitchCapture;
  /** the ToR host i sits under, and target j */
  torOfHost: (i: number) => SwitchCapture;
  torOfTarget: (j: number) => SwitchCapture;
  rand: () => number;
  /** adds a packet to a switch's capture at time t (ns of simulated time) */
  emit: (sw: SwitchCapture, t: number, frame: RoceFrame) => RowRef;
  /** one-way fabric delay between the ToRs for a packet sent at t */
  fabric: (t: number) => number;
  /** serialization time of a packet with this many payload bytes */
  ser: (bytes: number) => number;
  active: <K extends Fault["kind"]>(kind: K, t: number, match?: (f: Extract<Fault, { kind: K }>) => boolean) => Array<Extract<Fault, { kind: K }>>;
  abs: (t: number) => bigint;
  /**
   * The model for work that runs later but must draw the random numbers and
   * take the packet places it would take now: the next `draws` numbers and
   * `emits` places are set aside for it, and the shared sequence goes on past them.
   */
  ahead: (draws: number, emits: number) => FabricModel;
}

/** An event source of the generator's loop: an NVMe queue, a gradient-sync flow, an admin queue's keep-alives. */
export interface Source {
  nextTime(): number | undefined;
  step(): void;
}

const KEEP_ALIVE_PERIOD_NS = 2_500_000_000;

const PSN_MASK = 0xffffff;
const before = (a: RowRef | undefined, b: RowRef): boolean => a !== undefined && (a.t < b.t || (a.t === b.t && a.seq < b.seq));
const minRow = (a: RowRef | undefined, b: RowRef): RowRef => (a === undefined || before(b, a) ? b : a);

type HostStyle = "linux" | "spdk";

interface Qp {
  qpn: number;
  psn: number;
  busyUntil: number;
}

interface Io {
  /** its response was sent (or lost): the I/O is over */
  done: boolean;
  op: "read" | "write";
  bytes: number;
  sgl: SglKind;
  status: number;
  tag: number;
  cid: number;
  cmdPsn: number;
  rkey: number;
  va: bigint;
  lostC: boolean;
  lostS: boolean;
  cmdRowC?: RowRef;
  cmdRowS?: RowRef;
  rspRowC?: RowRef;
  rspRowS?: RowRef;
  /** the next command with its CID on the queue (a switch that missed the response closes the I/O there), at each switch, if the switch could attribute it */
  reusedRowC?: RowRef;
  reusedRowS?: RowRef;
  /** that command is an in-capsule write: a switch attributes it only once it knows the queue's pairing */
  reusedInCapsule?: boolean;
  /** storage side: first and last data event (read: RDMA WRITE; write: READ REQUEST, last READ RESPONSE) */
  dFirstS?: number;
  dLastS?: number;
  /** write: READ REQUEST and first READ RESPONSE at the compute side */
  rreqC?: number;
  rrFirstC?: number;
  /** write: each READ REQUEST's first PSN and bytes */
  reqs?: Array<{ psn: number; bytes: number }>;
}

/** An I/O's data as the target moves it: RDMA operations of at most `max` bytes, in address order. */
function rdmaOps(bytes: number, max: number): Array<{ offset: number; bytes: number }> {
  const ops: Array<{ offset: number; bytes: number }> = [];
  for (let off = 0; off < bytes || ops.length === 0; off += max) ops.push({ offset: off, bytes: Math.min(max, bytes - off) });
  return ops;
}

/** An event of a queue; `n` (its insertion order) is set by the queue. */
type Event =
  /** a burst of commands from one CPU (fio-like job with an I/O depth), and the next burst */
  | { t: number; n?: number; kind: "burst" }
  | { t: number; n?: number; kind: "arrive"; op: "read" | "write" | "flush"; bytes: number }
  | { t: number; n?: number; kind: "data" | "rreq" | "rsp" | "hostrr"; io: Io }
  | { t: number; n?: number; kind: "free"; tag: number }
  /** a Flush's completion (no I/O of the truth) */
  | { t: number; n?: number; kind: "flushed"; cid: number; tag: number; lostC: boolean; lostS: boolean }
  /** an acknowledgement: host -> target ("up", on the host's QP) or target -> host ("down") */
  | { t: number; n?: number; kind: "ack"; dir: "up" | "down"; frame: RoceFrame };

/** A queue's events by (time, insertion order). */
class EventQueue {
  private readonly heap = new Heap<Event>((a, b) => a.t < b.t || (a.t === b.t && a.n! < b.n!));
  private n = 0;
  push(e: Event): void {
    this.heap.push({ ...e, n: this.n++ });
  }
  pop(): Event | undefined {
    return this.heap.pop();
  }
  peek(): Event | undefined {
    return this.heap.peek();
  }
}

/** One NVMe queue (or the admin queue, qid 0) of one host's controller on one target. */
export class Queue {
  readonly hq: Qp;
  readonly tq: Qp;
  /** the first packet at each switch from which the switch knows this queue's QP pairing */
  pairedC: RowRef | undefined;
  pairedS: RowRef | undefined;
  private readonly free: boolean[];
  private readonly gen: number[];
  private readonly waiting: Array<{ op: "read" | "write" | "flush"; bytes: number }> = [];
  /** I/Os whose truth is not out yet */
  private ios: Io[] = [];
  private burstInterval = 0;
  /** no burst starts at or after this time (the host's job ends, or the capture does) */
  burstsEndNs = 0;
  readonly events = new EventQueue();
  /** per direction: the latest send time and far-side arrival emitted (a path does not reorder a QP's packets) */
  private readonly upFifo = { sent: -1, arrived: -1 };
  private readonly downFifo = { sent: -1, arrived: -1 };
  /** the target's SQ head pointer (nvmet: one past each completed command) */
  private sqhd = 0;
  /** the active side's rdma_cm source port, and over IPv6 the flow label and UDP source port every packet of the queue carries */
  private readonly cmPort: number;
  private readonly flowLabel: number | undefined;
  private readonly udpPort: number | undefined;
  /** the queue's packets cross the fabric over reordering paths (storageReorderShare) */
  private readonly sprayed: boolean;

  /** the ToRs the queue's packets cross: its host's, its target's */
  private readonly torC: SwitchCapture;
  private readonly torS: SwitchCapture;

  constructor(
    private m: FabricModel,
    private readonly o: GeneratorOptions,
    readonly hostIndex: number,
    readonly targetIndex: number,
    readonly qid: number,
    readonly host: IpAddress,
    readonly target: IpAddress,
    readonly style: HostStyle,
    hostQpn: number,
    targetQpn: number,
    private readonly commId: number,
  ) {
    this.torC = m.torOfHost(hostIndex);
    this.torS = m.torOfTarget(targetIndex);
    this.cmPort = 0x8000 | ((commId * 2654435761) >>> 17);
    // Over IPv6 a queue's packets carry the flow label rdma_cm gave its path,
    // and the UDP source port the NIC derives from it; over IPv4 the source
    // port stays the generator's own (from the destination QP).
    if (typeof host === "bigint") {
      this.flowLabel = rdmaCmFlowLabel(this.cmPort);
      this.udpPort = flowLabelUdpPort(this.flowLabel);
    }
    this.hq = { qpn: hostQpn, psn: Math.floor(m.rand() * PSN_MASK), busyUntil: 0 };
    this.tq = { qpn: targetQpn, psn: Math.floor(m.rand() * PSN_MASK), busyUntil: 0 };
    this.sprayed = o.storageReorderShare > 0 && m.rand() < o.storageReorderShare;
    this.free = new Array<boolean>(o.queueDepth).fill(true);
    this.gen = new Array<number>(o.queueDepth).fill(0);
  }

  private nextPsn(qp: Qp, n = 1): number {
    const p = qp.psn;
    qp.psn = (qp.psn + n) & PSN_MASK;
    return p;
  }

  /** When a packet sent at t reaches the far ToR: after the fabric, and not before an earlier packet of the same direction. */
  private arrival(fifo: { sent: number; arrived: number }, t: number): number {
    let at = t + this.m.fabric(t);
    // Over reordering paths each packet takes its own delay: it can arrive after later ones.
    if (this.sprayed) return at + Math.floor(this.m.rand() * this.o.storageReorderMaxDisplacement * this.m.ser(this.o.mtu));
    if (t >= fifo.sent) {
      at = Math.max(at, fifo.arrived + 1);
      fifo.sent = t;
      fifo.arrived = at;
    }
    return at;
  }

  /** The queue's path fields on a frame it sends (IPv6: flow label and UDP source port). */
  private path(frame: RoceFrame): void {
    if (this.flowLabel === undefined) return;
    frame.flowLabel = this.flowLabel;
    frame.srcPort = this.udpPort;
  }

  /** Host -> target: at C at t, at S after the fabric. Returns the two rows (undefined where the capture missed it). */
  private up(t: number, frame: RoceFrame, skipS = false, skipC = false): { c?: RowRef; s?: RowRef; atS: number } {
    this.path(frame);
    const c = skipC ? undefined : this.m.emit(this.torC, t, frame);
    if (this.m.single) return { c, s: skipS ? undefined : c, atS: t };
    const atS = this.arrival(this.upFifo, t);
    const s = skipS ? undefined : this.m.emit(this.torS, atS, frame);
    return { c, s, atS };
  }

  /** Target -> host: at S at t, at C after the fabric. */
  private down(t: number, frame: RoceFrame, skipS = false, skipC = false): { c?: RowRef; s?: RowRef; atC: number } {
    this.path(frame);
    const s = skipS ? undefined : this.m.emit(this.torS, t, frame);
    if (this.m.single) return { c: skipC ? undefined : s, s, atC: t };
    const atC = this.arrival(this.downFifo, t);
    const c = skipC ? undefined : this.m.emit(this.torC, atC, frame);
    return { c, s, atC };
  }

  /**
   * The RDMA CM exchange that sets the queue up (REQ, REP, RTU on QP 1),
   * then the Fabrics Connect command in its own capsule. Returns when the
   * queue is ready for I/O.
   */
  connect(t: number): number {
    const commId = this.commId;
    const gsi = (src: IpAddress, dst: IpAddress, payload: Buffer): RoceFrame => ({ src, dst, opcode: Opcode.UD_SEND_ONLY, destQp: 1, psn: commId & 0xffff, deth: { qkey: 0x80010000, srcQp: 1 }, payload });
    // ib_cm's transaction id: its MAD agent's id above the active side's communication id; REP and RTU keep it.
    const tid = (1n << 32n) | BigInt(commId >>> 0);
    // Linux hosts size the admin queue NVME_AQ_DEPTH (32); I/O queues hold the queue's tags.
    const size = this.qid === 0 ? 32 : this.o.queueDepth;
    const cmPort = this.cmPort;
    const req = this.up(t, gsi(this.host, this.target, cmMad(CmAttr.REQ, tid, {
      localCommId: commId, localQpn: this.hq.qpn, startingPsn: this.hq.psn, src: this.host, dst: this.target, srcPort: cmPort, pathMtu: this.o.mtu,
      privateData: nvmeRdmaCmReq(this.qid, size, size - 1),
    })));
    const repAt = req.atS + 40_000 + Math.floor(this.m.rand() * 20_000);
    const targetCommId = (commId ^ 0x5a5a0000) >>> 0;
    const rep = this.down(repAt, gsi(this.target, this.host, cmMad(CmAttr.REP, tid, {
      localCommId: targetCommId, remoteCommId: commId, localQpn: this.tq.qpn, startingPsn: this.tq.psn, src: this.target, privateData: nvmeRdmaCmRep(size),
    })));
    if (rep.s) this.pairedS = minRow(this.pairedS, rep.s);
    if (rep.c) this.pairedC = minRow(this.pairedC, rep.c);
    const rtu = this.up(rep.atC + 5_000, gsi(this.host, this.target, cmMad(CmAttr.RTU, tid, { localCommId: commId, remoteCommId: targetCommId, localQpn: 0 })));
    // Fabrics Connect with its 1,024 bytes of connect data in the capsule; the
    // admin queue asks for a dynamic controller, I/O queues name the one it gave.
    const connectAt = rtu.atS + 10_000;
    const capsule = nvmfConnect({
      cid: 0, qid: this.qid, sqsize: size - 1, kato: this.qid === 0 ? 15_000 : 0, hostId: hostUuid(this.hostIndex),
      cntlid: this.qid === 0 ? 0xffff : this.cntlid, subnqn: subsystemNqn(this.targetIndex), hostnqn: hostNqn(this.hostIndex),
    });
    const cmd = this.up(connectAt, { src: this.host, dst: this.target, opcode: Opcode.SEND_ONLY, destQp: this.tq.qpn, psn: this.nextPsn(this.hq), ackReq: true, payload: capsule });
    const rspAt = cmd.atS + 30_000;
    const rsp = this.down(rspAt, { src: this.target, dst: this.host, opcode: Opcode.SEND_ONLY, destQp: this.hq.qpn, psn: this.nextPsn(this.tq), payload: nvmeCqe(0, this.qid, this.sqHead(), 0, 0, this.qid === 0 ? this.cntlid : 0) });
    return this.qid === 0 ? this.adminInit(rsp.atC + 5_000) : rsp.atC + 5_000;
  }

  /**
   * What a Linux host asks a new controller on its admin queue: Identify
   * Controller (CNS 1) and the ANA log (Get Log Page, opcode 02h as a Read's,
   * NSID FFFFFFFFh), each 4 KiB the target writes into the host's buffer
   * (RDMA WRITE with the command's key, then the completion with
   * Invalidate), then an Asynchronous Event Request, which stays open.
   * None is an I/O: no record. Returns when the last is sent.
   */
  private adminInit(t: number): number {
    const data = (at: number, cid: number, sqe: Buffer, rkey: number): number => {
      const cmd = this.up(at, { src: this.host, dst: this.target, opcode: Opcode.SEND_ONLY, destQp: this.tq.qpn, psn: this.nextPsn(this.hq), ackReq: true, payload: sqe });
      this.down(cmd.atS + 8_000, { src: this.target, dst: this.host, opcode: Opcode.WRITE_ONLY, destQp: this.hq.qpn, psn: this.nextPsn(this.tq), ackReq: true, reth: { va: 0x7ff000000000n, rkey, length: 4096 }, payloadLength: 4096 });
      const done = this.down(cmd.atS + 8_000 + this.m.ser(4096) + 1_000, { src: this.target, dst: this.host, opcode: Opcode.SEND_ONLY_INV, destQp: this.hq.qpn, psn: this.nextPsn(this.tq), ieth: rkey, payload: nvmeCqe(cid, 0, this.sqHead(), 0, 0) });
      return done.atC + 3_000;
    };
    const rkey = (k: number) => (((0x4000 + this.hostIndex * 64 + this.targetIndex * 4 + k) << 8) | 0x11) >>> 0;
    const identify = nvmeSqe(0x06, 1, 0, 0x7ff000000000n, 4096, rkey(0), 0n, "keyed-invalidate");
    identify.writeUInt32LE(1, 40); // CNS 1: the controller
    const t1 = data(t, 1, identify, rkey(0));
    const anaLog = nvmeSqe(0x02, 2, 0xffffffff, 0x7ff000000000n, 4096, rkey(1), 0n, "keyed-invalidate");
    anaLog.writeUInt32LE((0x0c | (1023 << 16)) >>> 0, 40); // LID 0Ch (ANA), NUMDL 1023: 4 KiB
    const t2 = data(t1, 2, anaLog, rkey(1));
    // The Asynchronous Event Request: no data, answered only by an event.
    this.up(t2, { src: this.host, dst: this.target, opcode: Opcode.SEND_ONLY, destQp: this.tq.qpn, psn: this.nextPsn(this.hq), ackReq: true, payload: nvmeSqe(0x0c, 3, 0, 0n, 0, 0) });
    return t2 + 2_000;
  }

  /** The controller id the target gave this host's controller. */
  private get cntlid(): number {
    return 1 + this.hostIndex;
  }

  /** The SQ head pointer a completion reports (nvmet advances it by one per completion, modulo the queue's size). */
  private sqHead(): number {
    const size = this.qid === 0 ? 32 : this.o.queueDepth;
    this.sqhd = (this.sqhd + 1) % size;
    return this.sqhd;
  }

  /**
   * The admin queue's keep-alives, every 2.5 s from `first` until `endNs`, as
   * an event source. Each is two packets, each seen by both ToRs (once on a
   * single switch) and crossing the fabric once (a random number each): the
   * numbers and packet places of all of them are set aside now, so the
   * traffic is the same as if they were all sent now, and none is held.
   */
  keepAlives(first: number, endNs: number): Source {
    const n = first < endNs ? Math.ceil((endNs - first) / KEEP_ALIVE_PERIOD_NS) : 0;
    this.m = this.m.ahead(this.m.single ? 0 : 2 * n, (this.m.single ? 2 : 4) * n);
    let t = first;
    return {
      nextTime: () => (t < endNs ? t : undefined),
      step: () => {
        this.keepAlive(t, 0x10 + Math.floor(t / 1e9));
        t += KEEP_ALIVE_PERIOD_NS;
      },
    };
  }

  /** A keep-alive on the admin queue: a command without data and its response. */
  private keepAlive(t: number, cid: number): void {
    const cmd = this.up(t, { src: this.host, dst: this.target, opcode: Opcode.SEND_ONLY, destQp: this.tq.qpn, psn: this.nextPsn(this.hq), ackReq: true, payload: nvmeSqe(0x18, cid, 0, 0n, 0, 0) });
    this.down(cmd.atS + 15_000, { src: this.target, dst: this.host, opcode: Opcode.SEND_ONLY, destQp: this.hq.qpn, psn: this.nextPsn(this.tq), payload: nvmeCqe(cid, 0, this.sqHead(), 0, 0) });
  }

  /**
   * I/O arrives in bursts per queue: `ioRate` is per host, spread over its
   * controllers' queues; a burst is 1..burstMax commands.
   */
  startBursts(startNs: number): void {
    const o = this.o;
    const perQueueRate = o.ioRate / (o.targets * o.queuesPerHost);
    this.burstInterval = (1e9 * (1 + o.burstMax)) / 2 / perQueueRate;
    const t = startNs + Math.round(this.m.rand() * this.burstInterval);
    if (this.burstsEndNs === 0) this.burstsEndNs = o.durationNs - 50e6;
    if (t < this.burstsEndNs) this.events.push({ t, kind: "burst" });
  }

  /** Time of the queue's next event, if any. */
  nextTime(): number | undefined {
    return this.events.peek()?.t;
  }

  /** Handles the queue's next event. */
  step(): void {
    const e = this.events.pop();
    if (e) this.handle(e);
  }

  /**
   * The truth of every I/O that is over and whose packets all came before
   * `beforeT` (all: Infinity; `lastT`, each capture's last packet so far): by
   * then every packet that could have taught a switch the queue's pairing
   * earlier is out too. An I/O whose response a switch did not see waits
   * until that switch's capture goes past its I/O timeout, or the end:
   * whether the switch saw the timeout pass depends on where its capture ends.
   */
  takeTruths(beforeT: number, lastT: (sw: SwitchCapture) => number): IoTruth[] {
    const out: IoTruth[] = [];
    const keep: Io[] = [];
    const final = beforeT === Infinity;
    for (const io of this.ios) {
      const last = Math.max(io.cmdRowC?.t ?? 0, io.cmdRowS?.t ?? 0, io.rspRowC?.t ?? 0, io.rspRowS?.t ?? 0);
      const undecided = this.endsUnanswered(io, "C", lastT) || (!this.m.single && this.endsUnanswered(io, "S", lastT));
      if (io.done && last < beforeT && (final || !undecided)) out.push(this.truth(io, lastT));
      else keep.push(io);
    }
    this.ios = keep;
    return out;
  }

  private handle(e: Event): void {
    switch (e.kind) {
      case "burst": {
        const { o } = this;
        const r = this.m.rand;
        const n = 1 + Math.floor(r() * o.burstMax);
        for (let k = 0; k < n; k++) {
          const op = o.flushShare > 0 && r() < o.flushShare ? "flush" : r() < o.readFraction ? "read" : "write";
          const bytes = o.ioSizes[Math.floor(r() * o.ioSizes.length)]!;
          this.events.push({ t: e.t + k * (200 + Math.floor(r() * 800)), kind: "arrive", op, bytes });
        }
        const next = e.t + Math.round(this.burstInterval * (0.5 + r()));
        if (next < this.burstsEndNs) this.events.push({ t: next, kind: "burst" });
        return;
      }
      case "arrive":
        if (!this.start(e.t, e.op, e.bytes)) this.waiting.push({ op: e.op, bytes: e.bytes });
        return;
      case "free": {
        this.free[e.tag] = true;
        const next = this.waiting.shift();
        if (next) this.start(e.t, next.op, next.bytes);
        return;
      }
      case "hostrr":
        if (e.t < this.hq.busyUntil) return this.events.push({ ...e, t: this.hq.busyUntil });
        return this.hostReadResponse(e.t, e.io);
      case "ack": {
        // Each QP sends one packet at a time, in time order.
        const qp = e.dir === "up" ? this.hq : this.tq;
        if (e.t < qp.busyUntil) return this.events.push({ ...e, t: qp.busyUntil });
        if (e.dir === "up") this.up(e.t, e.frame);
        else this.down(e.t, e.frame);
        qp.busyUntil = e.t + this.m.ser(0);
        return;
      }
      default:
        // The target's QP sends one thing at a time, in time order.
        if (e.t < this.tq.busyUntil) return this.events.push({ ...e, t: this.tq.busyUntil });
        if (e.kind === "data") return this.readData(e.t, e.io);
        if (e.kind === "rreq") return this.readRequest(e.t, e.io);
        if (e.kind === "flushed") return this.flushed(e.t, e);
        return this.response(e.t, e.io);
    }
  }

  private slowTarget(t: number): number {
    return this.m.active("slow-target", t, (f) => f.target === this.targetIndex).reduce((a, f) => a + f.extraNs, 0);
  }

  /**
   * Whether a switch that saw the I/O's command and no response has its
   * capture (so far: `lastT`) end within the command's I/O timeout, no later
   * command with its CID that it attributes having closed the I/O there: the
   * response may come after, so its answer is unknown there (so far).
   */
  private endsUnanswered(io: Io, side: "C" | "S", lastT: (sw: SwitchCapture) => number): boolean {
    const c = side === "C";
    const cmd = c ? io.cmdRowC : io.cmdRowS;
    if (!cmd || (c ? io.rspRowC : io.rspRowS)) return false;
    const reused = c ? io.reusedRowC : io.reusedRowS;
    const closed = reused !== undefined && (!io.reusedInCapsule || before(c ? this.pairedC : this.pairedS, reused));
    return !closed && Math.round(lastT(c ? this.torC : this.torS)) - Math.round(cmd.t) <= IO_TIMEOUT_NS;
  }

  /** The last I/O of each CID on the queue. */
  private readonly lastByCid = new Map<number, Io>();

  /** A command with `cid` seen at the switches in `rows`: it closes the CID's last I/O there, if that I/O's response went unseen and the switch can attribute the command. */
  private reusesCid(cid: number, rows: { c?: RowRef; s?: RowRef }, inCapsule = false): void {
    const prev = this.lastByCid.get(cid);
    if (!prev || prev.reusedRowC || prev.reusedRowS) return;
    prev.reusedRowC = rows.c;
    prev.reusedRowS = rows.s;
    prev.reusedInCapsule = inCapsule;
  }

  /** Sends a command if a tag is free. */
  private start(t: number, op: "read" | "write" | "flush", bytes: number): boolean {
    const tag = this.free.indexOf(true);
    if (tag < 0) return false;
    this.free[tag] = false;
    const o = this.o;
    const r = this.m.rand;
    const cid = this.style === "linux" ? ((this.gen[tag]! & 0xf) << 12) | tag : tag;
    this.gen[tag]!++;
    if (op === "flush") return this.flush(t, tag, cid);
    const sgl: SglKind = op === "write" && bytes <= o.inlineDataBytes ? "in-capsule" : this.style === "linux" ? "keyed-invalidate" : "keyed";
    const loss = this.responseLost();
    const io: Io = {
      done: false,
      op, bytes, sgl,
      status: r() < o.errorRate ? (op === "read" ? (r() < 0.7 ? NvmeStatus.UNRECOVERED_READ_ERROR : NvmeStatus.ANA_TRANSITION) : (r() < 0.7 ? NvmeStatus.WRITE_FAULT : NvmeStatus.NAMESPACE_NOT_READY)) : 0,
      tag, cid, cmdPsn: 0,
      rkey: sgl === "in-capsule" ? 0 : (Math.floor(r() * 0xffffff) << 8 | (this.gen[tag]! & 0xff)) >>> 0,
      va: BigInt(Math.floor(r() * 2 ** 36)) << 12n,
      ...loss,
    };
    this.ios.push(io);
    // The command capsule: the SQE, and for an in-capsule write its data, in MTU-sized packets.
    const sqe = nvmeSqe(op, cid, 1, sgl === "in-capsule" ? 0n : io.va, bytes, io.rkey, BigInt(Math.floor(r() * 2 ** 30)) * 8n, sgl);
    const capsuleLen = 64 + (sgl === "in-capsule" ? bytes : 0);
    const npk = Math.ceil(capsuleLen / o.mtu);
    let tc = Math.max(t, this.hq.busyUntil);
    io.cmdPsn = this.nextPsn(this.hq, npk);
    let lastAtS = 0;
    const capsule = Buffer.concat([sqe, Buffer.alloc(capsuleLen - 64)]);
    for (let k = 0; k < npk; k++) {
      const len = Math.min(o.mtu, capsuleLen - k * o.mtu);
      const opcode = npk === 1 ? Opcode.SEND_ONLY : k === 0 ? Opcode.SEND_FIRST : k === npk - 1 ? Opcode.SEND_LAST : Opcode.SEND_MIDDLE;
      const frame: RoceFrame = { src: this.host, dst: this.target, opcode, destQp: this.tq.qpn, psn: (io.cmdPsn + k) & PSN_MASK, ackReq: k === npk - 1 };
      if (k === 0) frame.payload = capsule.subarray(0, len);
      else frame.payloadLength = len;
      const rows = this.up(tc, frame);
      if (k === 0) {
        io.cmdRowC = rows.c;
        io.cmdRowS = rows.s;
        this.reusesCid(cid, rows, sgl === "in-capsule");
        this.lastByCid.set(cid, io);
      }
      lastAtS = rows.atS;
      tc += this.m.ser(len);
    }
    this.hq.busyUntil = tc;
    this.targetAcks(lastAtS, (io.cmdPsn + npk - 1) & PSN_MASK, io.cmdPsn);
    const cmdS = io.cmdRowS?.t ?? lastAtS;
    if (op === "read") {
      const media = o.mediaReadNs + Math.floor(r() * 5_000) + this.slowTarget(cmdS);
      // A failed read answers without moving data.
      this.events.push({ t: lastAtS + media, kind: io.status ? "rsp" : "data", io });
    } else if (sgl === "in-capsule") {
      const media = o.mediaWriteNs + Math.floor(r() * 5_000) + this.slowTarget(cmdS);
      this.events.push({ t: lastAtS + media, kind: "rsp", io });
    } else {
      const prep = o.targetPrepNs + Math.floor(r() * 2_000) + this.slowTarget(cmdS);
      this.events.push({ t: lastAtS + prep, kind: "rreq", io });
    }
    return true;
  }

  /**
   * Read data: RDMA WRITEs to the host's QP, one message per RDMA operation
   * (rdmaOpMaxBytes), each FIRST or ONLY carrying the command's key and its
   * part's address.
   */
  private readData(t: number, io: Io): void {
    const o = this.o;
    let ts = t;
    let lastAtC = 0;
    let lastPsn = 0;
    for (const op of rdmaOps(io.bytes, o.rdmaOpMaxBytes)) {
      const npk = Math.max(1, Math.ceil(op.bytes / o.mtu));
      const psn0 = this.nextPsn(this.tq, npk);
      for (let k = 0; k < npk; k++) {
        const len = Math.min(o.mtu, op.bytes - k * o.mtu);
        const opcode = npk === 1 ? Opcode.WRITE_ONLY : k === 0 ? Opcode.WRITE_FIRST : k === npk - 1 ? Opcode.WRITE_LAST : Opcode.WRITE_MIDDLE;
        const fr: RoceFrame = { src: this.target, dst: this.host, opcode, destQp: this.hq.qpn, psn: (psn0 + k) & PSN_MASK, payloadLength: len, ackReq: k === npk - 1 };
        if (k === 0) fr.reth = { va: io.va + BigInt(op.offset), rkey: io.rkey, length: op.bytes };
        const rows = this.down(ts, fr);
        io.dFirstS ??= ts;
        if (k === 0) {
          // A keyed transfer names the host's QP: the switches learn the pairing here.
          if (rows.s) this.pairedS = minRow(this.pairedS, rows.s);
          if (rows.c) this.pairedC = minRow(this.pairedC, rows.c);
        }
        io.dLastS = ts;
        lastAtC = rows.atC;
        lastPsn = (psn0 + k) & PSN_MASK;
        ts += this.m.ser(len);
      }
    }
    this.tq.busyUntil = ts;
    // The host acknowledges the data.
    this.events.push({ t: lastAtC + 500, kind: "ack", dir: "up", frame: { src: this.host, dst: this.target, opcode: Opcode.ACK, destQp: this.tq.qpn, psn: lastPsn, aeth: { syndrome: 0x1f, msn: 0 } } });
    this.events.push({ t: io.dLastS! + 1_000 + Math.floor(this.m.rand() * 2_000), kind: "rsp", io });
  }

  /**
   * Write: the target asks for the data with READ REQUESTs to the host's QP,
   * one per RDMA operation (rdmaOpMaxBytes), posted together; each takes the
   * PSNs of its response's packets.
   */
  private readRequest(t: number, io: Io): void {
    let ts = t;
    let first: number | undefined;
    io.reqs = [];
    for (const op of rdmaOps(io.bytes, this.o.rdmaOpMaxBytes)) {
      const npk = Math.max(1, Math.ceil(op.bytes / this.o.mtu));
      const psn = this.nextPsn(this.tq, npk);
      io.reqs.push({ psn, bytes: op.bytes });
      const rows = this.down(ts, { src: this.target, dst: this.host, opcode: Opcode.READ_REQUEST, destQp: this.hq.qpn, psn, ackReq: true, reth: { va: io.va + BigInt(op.offset), rkey: io.rkey, length: op.bytes } });
      // Every READ REQUEST carries the command's key: each teaches the switches the pairing.
      if (rows.s) this.pairedS = minRow(this.pairedS, rows.s);
      if (rows.c) this.pairedC = minRow(this.pairedC, rows.c);
      io.dFirstS ??= ts;
      // rreq at the compute side: the first READ REQUEST of the I/O seen there (a reordering path can bring a later one first).
      if (io.rreqC === undefined || rows.atC < io.rreqC) io.rreqC = rows.atC;
      first ??= rows.atC;
      ts += this.m.ser(16);
    }
    this.tq.busyUntil = ts;
    // The host answers the requests in order, from the first one's arrival.
    const slowHost = this.m.active("slow-host", first!, (f) => f.host === this.hostIndex).reduce((a, f) => a + f.extraNs, 0);
    this.events.push({ t: first! + this.o.hostPrepNs + Math.floor(this.m.rand() * 1_000) + slowHost, kind: "hostrr", io });
  }

  /** Write: the host's READ RESPONSEs, on the target's QP with each request's PSNs, in request order. */
  private hostReadResponse(t: number, io: Io): void {
    const o = this.o;
    let tc = t;
    io.rrFirstC = t;
    let lastAtS = 0;
    for (const req of io.reqs!) {
      const npk = Math.max(1, Math.ceil(req.bytes / o.mtu));
      for (let k = 0; k < npk; k++) {
        const len = Math.min(o.mtu, req.bytes - k * o.mtu);
        const opcode = npk === 1 ? Opcode.READ_RESPONSE_ONLY : k === 0 ? Opcode.READ_RESPONSE_FIRST : k === npk - 1 ? Opcode.READ_RESPONSE_LAST : Opcode.READ_RESPONSE_MIDDLE;
        const fr: RoceFrame = { src: this.host, dst: this.target, opcode, destQp: this.tq.qpn, psn: (req.psn + k) & PSN_MASK, payloadLength: len };
        if (opcode !== Opcode.READ_RESPONSE_MIDDLE) fr.aeth = { syndrome: 0x1f, msn: 0 };
        lastAtS = this.up(tc, fr).atS;
        tc += this.m.ser(len);
      }
    }
    this.hq.busyUntil = tc;
    io.dLastS = lastAtS;
    const media = o.mediaWriteNs + Math.floor(this.m.rand() * 5_000) + this.slowTarget(lastAtS);
    this.events.push({ t: lastAtS + media, kind: "rsp", io });
  }

  /**
   * A Flush: a command without data (its SGL a keyed data block of length 0
   * and key 0, as nvme_rdma_set_sg_null writes it) that the target completes
   * once its write cache is on the media. It takes a tag and a CID like any
   * command; no switch measures it.
   */
  private flush(t: number, tag: number, cid: number): boolean {
    const loss = this.responseLost();
    const tc = Math.max(t, this.hq.busyUntil);
    const psn = this.nextPsn(this.hq);
    const rows = this.up(tc, { src: this.host, dst: this.target, opcode: Opcode.SEND_ONLY, destQp: this.tq.qpn, psn, ackReq: true, payload: nvmeSqe(0x00, cid, 1, 0n, 0, 0) });
    // The switch does not measure a Flush: its command closes no I/O there (the read before it waits out its timeout).
    this.hq.busyUntil = tc + this.m.ser(64);
    this.targetAcks(rows.atS, psn, psn);
    const media = 3 * this.o.mediaWriteNs + Math.floor(this.m.rand() * 40_000) + this.slowTarget(rows.atS);
    this.events.push({ t: rows.atS + media, kind: "flushed", cid, tag, ...loss });
    return true;
  }

  /** A Flush's completion, acknowledged by the host, which frees its tag. */
  private flushed(t: number, e: { cid: number; tag: number; lostC: boolean; lostS: boolean }): void {
    const fr: RoceFrame = { src: this.target, dst: this.host, opcode: Opcode.SEND_ONLY, destQp: this.hq.qpn, psn: this.nextPsn(this.tq), payload: nvmeCqe(e.cid, this.qid, this.sqHead(), 0, 0) };
    const rows = this.down(t, fr, e.lostS, e.lostC);
    this.tq.busyUntil = t + this.m.ser(16);
    this.hostCompletes(rows.atC, fr.psn, e.tag);
  }

  /** The response capsule to the host's QP (SEND with Invalidate where the host asked for it). */
  private response(t: number, io: Io): void {
    const inv = io.sgl === "keyed-invalidate";
    const fr: RoceFrame = {
      src: this.target, dst: this.host, opcode: inv ? Opcode.SEND_ONLY_INV : Opcode.SEND_ONLY, destQp: this.hq.qpn, psn: this.nextPsn(this.tq),
      payload: nvmeCqe(io.cid, this.qid, this.sqHead(), io.status, 0),
    };
    if (inv) fr.ieth = io.rkey;
    const rows = this.down(t, fr, io.lostS, io.lostC);
    io.rspRowS = rows.s;
    io.rspRowC = rows.c;
    io.done = true;
    this.tq.busyUntil = t + this.m.ser(16);
    this.hostCompletes(rows.atC, fr.psn, io.tag);
  }

  /** Whether a response goes missing from a capture: the compute side's, the storage side's, or both. */
  private responseLost(): { lostC: boolean; lostS: boolean } {
    const lost = this.m.rand() < this.o.responseLoss;
    const where = this.m.rand();
    return { lostC: lost && (this.m.single || where < 0.6), lostS: lost && (this.m.single || where >= 0.4) };
  }

  /** The target acknowledges a command capsule (its last PSN) that reached it at `atS`. */
  private targetAcks(atS: number, psn: number, firstPsn: number): void {
    this.events.push({ t: atS + 600 + Math.floor(this.m.rand() * 400), kind: "ack", dir: "down", frame: { src: this.target, dst: this.host, opcode: Opcode.ACK, destQp: this.hq.qpn, psn, aeth: { syndrome: 0x1f, msn: firstPsn & 0xffff } } });
  }

  /** The host acknowledges a completion that reached it at `atC`, and completes the request: the tag is free again. */
  private hostCompletes(atC: number, psn: number, tag: number): void {
    this.events.push({ t: atC + 600, kind: "ack", dir: "up", frame: { src: this.host, dst: this.target, opcode: Opcode.ACK, destQp: this.tq.qpn, psn, aeth: { syndrome: 0x1f, msn: 0 } } });
    this.events.push({ t: atC + 1_500 + Math.floor(this.m.rand() * 1_000), kind: "free", tag });
  }

  /**
   * The record each I/O must give (SPEC §3), from what each switch saw of it
   * (`lastT`: each capture's last packet, for an I/O a switch saw no
   * response of).
   */
  truth(io: Io, lastT: (sw: SwitchCapture) => number): IoTruth {
    const single = this.m.single;
    const half = (side: "C" | "S", cmd: RowRef | undefined, rsp: RowRef | undefined, paired: RowRef | undefined) => {
      if (!cmd) return undefined;
      // An in-capsule write on a queue whose pairing is not yet known cannot be attributed.
      if (io.sgl === "in-capsule" && !before(paired, cmd)) return undefined;
      // A response the switch cannot attribute (its queue's pairing unknown
      // there) names no I/O: the command's answer is unknown there, not
      // missing (no figure, not incomplete).
      const complete = rsp !== undefined && before(paired, rsp);
      // The capture ends within the I/O timeout of a command with no response: the answer is unknown there too.
      const cut = this.endsUnanswered(io, side, lastT);
      return { cmd, rsp: complete ? rsp : undefined, unknown: (rsp !== undefined && !complete) || cut, cut, hostQpKnown: complete || before(paired, cmd) };
    };
    const c = half("C", io.cmdRowC, io.rspRowC, this.pairedC);
    const s = single ? c : half("S", io.cmdRowS, io.rspRowS, this.pairedS);
    const e2e = (h: typeof c) => (h?.rsp ? h.rsp.t - h.cmd.t : null);
    const e2eC = e2e(c);
    const e2eS = e2e(s);
    let dal: number | null = null;
    if (s?.rsp) {
      const rsp = s.rsp.t;
      const cmd = s.cmd.t;
      if (io.sgl === "in-capsule") dal = rsp - cmd;
      else if (io.dFirstS !== undefined && io.dLastS !== undefined) dal = io.dFirstS - cmd + (rsp - io.dLastS);
    }
    let dpl: number | null = null;
    if (c?.rsp && io.op === "write" && io.sgl !== "in-capsule" && io.rrFirstC !== undefined) dpl = io.rrFirstC - io.rreqC!;
    const first = c ?? s;
    return {
      host: ipText(this.host),
      target: ipText(this.target),
      host_qp: c?.hostQpKnown || s?.hostQpKnown ? this.hq.qpn : 0,
      target_qp: this.tq.qpn,
      cid: io.cid,
      cmd_psn: io.cmdPsn,
      op: io.op,
      bytes: io.bytes,
      in_capsule: io.sgl === "in-capsule",
      status: c?.rsp || s?.rsp ? io.status : 0,
      record: first !== undefined,
      incomplete: (c !== undefined && !c.rsp && !c.unknown) || (s !== undefined && !s.rsp && !s.unknown),
      cmdCNs: c ? this.m.abs(c.cmd.t) : null,
      cmdSNs: s ? this.m.abs(s.cmd.t) : null,
      cmd_unix_ns: first ? this.m.abs(first.cmd.t) : null,
      e2e_c_ns: e2eC,
      e2e_s_ns: e2eS,
      rtt_ns: e2eC !== null && e2eS !== null ? e2eC - e2eS : null,
      dal_ns: dal,
      dpl_ns: dpl,
      unanswered_at_end: (c?.cut ? 1 : 0) + (!single && s?.cut ? 1 : 0),
      c_seen: c !== undefined,
      s_seen: s !== undefined,
    };
  }
}

/**
 * Every host's controllers on every target, each an admin queue and
 * `queuesPerHost` I/O queues, as event sources for the generator's loop.
 * Controllers set up during the capture show their RDMA CM exchange; all
 * admin queues send keep-alives.
 */
export function createNvmeQueues(m: FabricModel, o: GeneratorOptions, hostIp: (i: number) => IpAddress, targetIp: (j: number, family: 4 | 6) => IpAddress): { queues: Queue[]; keepAlives: Source[] } {
  const all: Queue[] = [];
  const keepAlives: Source[] = [];
  const connectedInCapture = Math.round(o.hosts * o.connectDuringCapture);
  // Job turnover: the first `turnover` hosts end their I/O at 40 % of the capture, the last `turnover` start theirs at 60 %.
  const turnover = Math.floor((o.hosts * o.jobTurnover) / 2);
  for (let i = 0; i < o.hosts; i++) {
    const style: HostStyle = i % 2 === 0 ? "linux" : "spdk";
    for (let j = 0; j < o.targets; j++) {
      // QPNs come from each side's HCA: unique per host, unique per target
      // (beyond 15 queues per host or 64 hosts, allocated in sequence).
      const small = o.queuesPerHost < 16 && o.hosts <= 64;
      const perTarget = o.queuesPerHost + 1;
      const hostQpn = (q: number) => (small ? 0x100 + ((j * 16 + q) * 7 + i) % 0xf00 + 0x40 * j : 0x100 + j * perTarget + q);
      const targetQpn = (q: number) => (small ? 0x4000 + i * 64 + q * 3 + j * 0x1000 : 0x4000 + i * perTarget + q);
      const connects = i < connectedInCapture;
      for (let q = 0; q <= o.queuesPerHost; q++) {
        // A host reaches every target in its own address family (targets have both where the fabric mixes them).
        const host = hostIp(i);
        const commId = ((i + 1) << 20 | (j + 1) << 12 | q) >>> 0;
        const queue = new Queue(m, o, i, j, q, host, targetIp(j, typeof host === "bigint" ? 6 : 4), style, hostQpn(q) & 0xffffff, targetQpn(q) & 0xffffff, commId);
        const ready = connects ? queue.connect(200_000 + i * 150_000 + j * 60_000 + q * 20_000) : 0;
        if (q === 0) {
          keepAlives.push(queue.keepAlives(1_000_000_000 + i * 37_000_000 + j * 11_000_000, o.durationNs));
        } else {
          if (i < turnover) queue.burstsEndNs = Math.round(o.durationNs * 0.4);
          queue.startBursts(i >= o.hosts - turnover ? Math.max(ready, Math.round(o.durationNs * 0.6)) : ready);
          all.push(queue);
        }
      }
    }
  }
  return { queues: all, keepAlives };
}
