// Gradient sync (SPEC §4): each host sends RDMA WRITE messages to the next
// in a ring, one message per step, as NCCL's InfiniBand transport does: the
// receiver first writes a 64-byte clear-to-send (CTS) into the sender's FIFO
// over the same connection, the message's last packet carries an immediate
// (RDMA WRITE LAST / ONLY with Immediate), and each side ACKs what it got.
// NCCL runs a ring on several channels, each its own connection (a QP each
// way) carrying its share of every step's data: `gradientChannels`
// connections between each host and the next, each sending at its share of
// the link.
// With the faults of the run (ECN marks and CNPs under congestion, NAK-driven
// go-back-N retransmissions on a lossy flow, an idle GPU stretching the gap)
// and, when asked, reordering paths
// (adaptive routing, packet spraying): a share of the messages reach the
// switch with packets displaced 1..N places, some with one packet lost after
// the switch and resent go-back-N. One flow is simulated message by message,
// as an event source of the generator's time-ordered loop.
import type { FabricModel } from "./nvme-workload.js";
import { ipText, type IpAddress } from "./ip.js";
import { flowLabelUdpPort, Opcode, qpFlowLabel, type RoceFrame } from "./roce.js";
import type { GeneratorOptions, MessageTruth } from "./types.js";

const PSN_MASK = 0xffffff;
/** NCCL's send FIFO entry (struct ncclIbSendFifo), written by the receiver as its CTS */
const CTS_BYTES = 64;
/** AETH syndromes: ACK without credits, NAK for a PSN sequence error */
const AETH_ACK = 0x1f;
const AETH_NAK_SEQ = 0x60;

export class WriteFlow {
  private next: number | undefined;
  private psn: number;
  private prevEnd: number | null = null;
  /** the receiver's send PSN (its CTS writes), its last CTS, and each side's message sequence number */
  private ctsPsn: number;
  private prevCts: number | null = null;
  private msn = 0;
  private ctsMsn = 0;
  readonly qpn: number;
  private readonly senderQpn: number;
  private readonly udpPort: number | undefined;
  cnps = 0;

  /** this channel's bytes of a step's data (a message), and the time between its packets on the shared link */
  private readonly bytes: number;
  private readonly packetGap: number;
  /** the channel's memory: the receive buffer's R_Key and address, the FIFO's */
  private readonly rkey: number;
  private readonly ctsRkey: number;
  private readonly va: bigint;
  private readonly ctsVa: bigint;

  constructor(
    private readonly m: FabricModel,
    private readonly o: GeneratorOptions,
    private readonly hostIndex: number,
    private readonly src: IpAddress,
    private readonly dst: IpAddress,
    private readonly onMessage: (t: MessageTruth) => void,
    channel = 0,
  ) {
    this.psn = Math.floor(m.rand() * PSN_MASK);
    this.ctsPsn = Math.floor(m.rand() * PSN_MASK);
    // Channel c's QPs, keys and buffers (channel 0's are those of a one-channel ring).
    const c = channel * 0x10000;
    this.qpn = 0x2000 + hostIndex + c;
    this.senderQpn = 0x3000 + hostIndex + c;
    this.rkey = 0x5000 + hostIndex + c;
    this.ctsRkey = 0x6000 + hostIndex + c;
    this.va = 0x7f0000000000n + BigInt(hostIndex) * 0x100000000n + BigInt(channel) * 0x10000000n;
    this.ctsVa = 0x7e0000000000n + BigInt(hostIndex) * 0x100000000n + BigInt(channel) * 0x10000000n;
    const channels = Math.max(1, o.gradientChannels);
    this.bytes = Math.ceil(o.gradientBytes / channels);
    this.packetGap = m.ser(o.mtu) * channels;
    // QPs connected by verbs (no rdma_cm): over IPv6 the flow label is 0 and
    // the NIC takes the UDP source port from the QPNs (rdma_calc_flow_label).
    if (typeof src === "bigint") this.udpPort = flowLabelUdpPort(qpFlowLabel(this.senderQpn, this.qpn));
    const first = Math.round(m.rand() * 1e6);
    this.next = first < o.durationNs - 50e6 ? first : undefined;
  }

  /** Time of the next message, if any. */
  nextTime(): number | undefined {
    return this.next;
  }

  /** Sends the next message (its packets, retransmissions and CNPs) and schedules the one after. */
  step(): void {
    const t0 = this.next;
    if (t0 === undefined) return;
    const { m, o } = this;
    // The receiver's CTS (a one-packet RDMA WRITE to the sender's QP, a
    // message of the reverse flow), the sender's ACK of it, then the data.
    this.cts(t0);
    const t = t0 + 2_000 + Math.floor(m.rand() * 2_000);
    const n = Math.ceil(this.bytes / o.mtu);
    const psn0 = this.psn;
    this.psn = (this.psn + n) & PSN_MASK;
    const sends: Array<{ k: number; t: number; ce: boolean }> = [];
    const lossP = (at: number) => m.active("loss", at, (f) => f.host === this.hostIndex).reduce((a, f) => Math.max(a, f.probability), 0);
    const ecnAt = (at: number) => m.active("congestion", at).some((f) => m.rand() < f.ecnFraction);
    // A reordered message (drawn only when reordering is asked for, so that
    // other traffic stays the same), and in it perhaps one packet lost after the switch.
    const reordered = o.reorderShare > 0 && n > 1 && m.rand() < o.reorderShare;
    let forcedLoss = reordered && o.reorderLoss > 0 && m.rand() < o.reorderLoss ? Math.floor(m.rand() * n) : -1;
    let k = 0;
    let ts = t;
    let guard = 0;
    const naks: Array<{ t: number; k: number }> = [];
    while (k < n && guard++ < 100_000) {
      // Send from k until the end or until a NAK stops us.
      let lostAt = -1;
      let nakAt = Infinity;
      for (let q = k; q < n; q++) {
        if (ts >= nakAt) break;
        const ce = ecnAt(ts);
        sends.push({ k: q, t: ts, ce });
        if (lostAt < 0 && (m.rand() < lossP(ts) || q === forcedLoss)) {
          lostAt = q;
          if (q === forcedLoss) forcedLoss = -1;
          // The receiver NAKs on the next packet; a lost last packet waits for the timeout.
          nakAt = q === n - 1 ? ts + 100_000 : ts + this.packetGap + 2 * o.fabricDelayNs + 2_000;
          // The receiver NAKs the PSN it expects when the next one comes (a timeout resends a lost last packet).
          if (q < n - 1) naks.push({ t: nakAt - o.fabricDelayNs - 1_000, k: q });
        }
        ts += this.packetGap;
      }
      if (lostAt < 0) k = n;
      else {
        ts = Math.max(ts, nakAt);
        k = lostAt;
      }
    }
    // What the switch sees: the packets in the order the paths deliver them,
    // in the time slots they were sent in.
    const seenOrder = reordered ? this.displace(sends.length, n) : sends.map((_, i) => i);
    const sightings = seenOrder.map((i, slot) => ({ ...sends[i]!, t: sends[slot]!.t }));
    // SPEC §4: a packet is retransmitted when its PSN was seen before; the
    // message runs from the first sighting of its first PSN to the first
    // sighting of its last, and holds every packet seen up to then (those
    // before its first PSN too); packets after that count for the flow only.
    const seen = new Set<number>();
    const retx = sightings.map((x) => (seen.has(x.k) ? true : (seen.add(x.k), false)));
    const firstAt = sightings.findIndex((x) => x.k === 0);
    const lastAt = sightings.findIndex((x) => x.k === n - 1);
    for (const x of sightings) {
      const opcode = n === 1 ? Opcode.WRITE_ONLY_IMM : x.k === 0 ? Opcode.WRITE_FIRST : x.k === n - 1 ? Opcode.WRITE_LAST_IMM : Opcode.WRITE_MIDDLE;
      const len = Math.min(o.mtu, this.bytes - x.k * o.mtu);
      const fr: RoceFrame = { src: this.src, dst: this.dst, opcode, destQp: this.qpn, psn: (psn0 + x.k) & PSN_MASK, ecn: x.ce ? 3 : 2, payloadLength: len };
      if (x.k === 0) fr.reth = { va: this.va, rkey: this.rkey, length: this.bytes };
      // NCCL's immediate: the size written; the last packet asks for an ACK.
      if (x.k === n - 1) {
        fr.imm = this.bytes;
        fr.ackReq = true;
      }
      this.send(x.t, fr);
      if (x.ce) {
        // The receiver answers a CE mark with a CNP to the sender's QP.
        m.emit(m.torC, x.t + 4_000, { src: this.dst, dst: this.src, opcode: Opcode.CNP, destQp: this.senderQpn, psn: 0, payload: Buffer.alloc(16) });
        this.cnps++;
      }
    }
    for (const k of naks) this.ack(k.t, (psn0 + k.k) & PSN_MASK, AETH_NAK_SEQ);
    // The receiver ACKs the message once its last packet is in.
    this.msn = (this.msn + 1) & PSN_MASK;
    this.ack(sends[sends.length - 1]!.t + 1_500, (psn0 + n - 1) & PSN_MASK, AETH_ACK);
    const inMsg = sightings.slice(0, lastAt + 1);
    const inRetx = retx.slice(0, lastAt + 1).filter(Boolean).length;
    const first = sightings[firstAt]!;
    const last = sightings[lastAt]!;
    const fct = Math.round(last.t) - Math.round(first.t);
    this.onMessage({
      switch: m.torC.name, src: ipText(this.src), dst: ipText(this.dst), dest_qp: this.qpn,
      first_psn: psn0, last_psn: (psn0 + n - 1) & PSN_MASK, bytes: this.bytes,
      packets: inMsg.length, retransmitted: inRetx, fct_ns: fct,
      fet_bps: fct > 0 ? (this.bytes * 8 * 1e9) / fct : null,
      fnr: inRetx / inMsg.length,
      ecn_ce_packets: inMsg.filter((x) => x.ce).length,
      gap_ns: this.prevEnd === null ? null : Math.round(first.t) - Math.round(this.prevEnd),
      firstNs: m.abs(first.t),
      late_retransmitted: retx.slice(lastAt + 1).filter(Boolean).length,
      late_packets: sightings.length - inMsg.length,
      late: sightings.slice(lastAt + 1).map((x, i) => ({ after_first_ns: Math.round(x.t) - Math.round(first.t), retransmitted: retx[lastAt + 1 + i]!, ecn_ce: x.ce })),
      reordered: seenOrder.some((i, slot) => i !== slot),
    });
    this.prevEnd = last.t;
    const end = sends[sends.length - 1]!.t;
    const idle = m.active("gpu-idle", end, (f) => f.host === this.hostIndex).reduce((a, f) => a + f.extraNs, 0);
    const nextT = end + this.packetGap + Math.round(o.gradientGapNs * (0.8 + 0.4 * m.rand())) + idle;
    this.next = nextT < o.durationNs - 50e6 ? nextT : undefined;
  }

  /** A packet of the connection (either way) at the sender's switch, with the connection's UDP source port. */
  private send(t: number, fr: RoceFrame): void {
    if (this.udpPort !== undefined) fr.srcPort = this.udpPort;
    this.m.emit(this.m.torC, t, fr);
  }

  /** An ACK (or NAK) from the receiver to the sender's QP. */
  private ack(t: number, psn: number, syndrome: number): void {
    this.send(t, { src: this.dst, dst: this.src, opcode: Opcode.ACK, destQp: this.senderQpn, psn, aeth: { syndrome, msn: this.msn } });
  }

  /** The receiver's CTS at t: an RDMA WRITE ONLY of NCCL's FIFO entry into the sender's memory, which the sender ACKs. */
  private cts(t: number): void {
    const { m } = this;
    const psn = this.ctsPsn;
    this.ctsPsn = (psn + 1) & PSN_MASK;
    this.send(t, {
      src: this.dst, dst: this.src, opcode: Opcode.WRITE_ONLY, destQp: this.senderQpn, psn, ecn: 2, ackReq: true, payloadLength: CTS_BYTES,
      reth: { va: this.ctsVa + BigInt((this.ctsMsn % 8) * CTS_BYTES), rkey: this.ctsRkey, length: CTS_BYTES },
    });
    this.ctsMsn = (this.ctsMsn + 1) & PSN_MASK;
    this.send(t + 1_200 + Math.floor(m.rand() * 600), { src: this.src, dst: this.dst, opcode: Opcode.ACK, destQp: this.qpn, psn, aeth: { syndrome: AETH_ACK, msn: this.ctsMsn } });
    this.onMessage({
      switch: m.torC.name, src: ipText(this.dst), dst: ipText(this.src), dest_qp: this.senderQpn,
      first_psn: psn, last_psn: psn, bytes: CTS_BYTES, packets: 1, retransmitted: 0, fct_ns: 0, fet_bps: null, fnr: 0, ecn_ce_packets: 0,
      gap_ns: this.prevCts === null ? null : Math.round(t) - Math.round(this.prevCts),
      firstNs: m.abs(t), late_retransmitted: 0, late_packets: 0, late: [], reordered: false,
    });
    this.prevCts = t;
  }

  /**
   * The order in which a reordering path delivers `count` packets sent in
   * order (indices into the sent ones): each is displaced 1..reorderMaxDisplacement
   * places later with probability 1/4 (at least one is), none within a
   * message's own first PSN's reach of its last (the first PSN is always
   * first seen before the last).
   */
  private displace(count: number, n: number): number[] {
    const { m, o } = this;
    const keys = Array.from({ length: count }, (_, i) => i);
    let moved = false;
    const move = (i: number) => {
      const cap = i === 0 ? Math.min(o.reorderMaxDisplacement, n - 2) : o.reorderMaxDisplacement;
      const d = Math.min(cap, 1 + Math.floor(m.rand() * o.reorderMaxDisplacement));
      if (d > 0) {
        keys[i] = i + d + 0.5;
        moved = true;
      }
    };
    for (let i = 0; i < count; i++) if (m.rand() < 0.25) move(i);
    if (!moved) move(Math.floor(m.rand() * (count - 1)));
    return keys.map((key, i) => ({ key, i })).sort((a, b) => a.key - b.key).map((x) => x.i);
  }
}
