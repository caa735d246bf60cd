// Gradient sync (SPEC §4): each host sends RDMA WRITE messages to the next
// in a ring, one message per step, with the faults of the run (ECN marks and
// CNPs under congestion, NAK-driven go-back-N retransmissions on a lossy
// flow, an idle GPU stretching the gap). One flow is simulated message by
// message, as an event source of the generator's time-ordered loop.
import type { FabricModel } from "./nvme-workload.js";
import { ipv4Text } from "@rdma-telemetry/contract";
import { Opcode, type RoceFrame } from "./roce.js";
import type { GeneratorOptions, MessageTruth } from "./types.js";

const PSN_MASK = 0xffffff;

export class WriteFlow {
  private next: number | undefined;
  private psn: number;
  private prevEnd: number | null = null;
  readonly qpn: number;
  private readonly senderQpn: number;
  cnps = 0;

  constructor(
    private readonly m: FabricModel,
    private readonly o: GeneratorOptions,
    private readonly hostIndex: number,
    private readonly src: number,
    private readonly dst: number,
    private readonly onMessage: (t: MessageTruth) => void,
  ) {
    this.psn = Math.floor(m.rand() * PSN_MASK);
    this.qpn = 0x2000 + hostIndex;
    this.senderQpn = 0x3000 + hostIndex;
    const first = Math.round(m.rand() * 1e6);
    this.next = first < o.durationNs - 50e6 ? first : undefined;
  }

  /** Time of the next message, if any. */
  nextTime(): number | undefined {
    return this.next;
  }

  /** Sends the next message (its packets, retransmissions and CNPs) and schedules the one after. */
  step(): void {
    const t = this.next;
    if (t === undefined) return;
    const { m, o } = this;
    const n = Math.ceil(o.gradientBytes / o.mtu);
    const psn0 = this.psn;
    this.psn = (this.psn + n) & PSN_MASK;
    const sends: Array<{ k: number; t: number; retx: boolean; ce: boolean }> = [];
    const lossP = (at: number) => m.active("loss", at, (f) => f.host === this.hostIndex).reduce((a, f) => Math.max(a, f.probability), 0);
    const ecnAt = (at: number) => m.active("congestion", at).some((f) => m.rand() < f.ecnFraction);
    let k = 0;
    let ts = t;
    let guard = 0;
    let highest = -1;
    while (k < n && guard++ < 100_000) {
      // Send from k until the end or until a NAK stops us.
      let lostAt = -1;
      let nakAt = Infinity;
      for (let q = k; q < n; q++) {
        if (ts >= nakAt) break;
        const ce = ecnAt(ts);
        sends.push({ k: q, t: ts, retx: q <= highest, ce });
        highest = Math.max(highest, q);
        if (lostAt < 0 && m.rand() < lossP(ts)) {
          lostAt = q;
          // The receiver NAKs on the next packet; a lost last packet waits for the timeout.
          nakAt = q === n - 1 ? ts + 100_000 : ts + m.ser(o.mtu) + 2 * o.fabricDelayNs + 2_000;
        }
        ts += m.ser(o.mtu);
      }
      if (lostAt < 0) k = n;
      else {
        ts = Math.max(ts, nakAt);
        k = lostAt;
      }
    }
    const firstLast = sends.findIndex((s) => s.k === n - 1);
    const inMsg = sends.slice(0, firstLast + 1);
    const late = sends.slice(firstLast + 1);
    for (const s of sends) {
      const opcode = n === 1 ? Opcode.WRITE_ONLY : s.k === 0 ? Opcode.WRITE_FIRST : s.k === n - 1 ? Opcode.WRITE_LAST : Opcode.WRITE_MIDDLE;
      const len = Math.min(o.mtu, o.gradientBytes - s.k * o.mtu);
      const fr: RoceFrame = { src: this.src, dst: this.dst, opcode, destQp: this.qpn, psn: (psn0 + s.k) & PSN_MASK, ecn: s.ce ? 3 : 2, payloadLength: len };
      if (s.k === 0) fr.reth = { va: 0x7f0000000000n + BigInt(this.hostIndex) * 0x100000000n, rkey: 0x5000 + this.hostIndex, length: o.gradientBytes };
      m.emit(m.torC, s.t, fr);
      if (s.ce) {
        // The receiver answers a CE mark with a CNP to the sender's QP.
        m.emit(m.torC, s.t + 4_000, { src: this.dst, dst: this.src, opcode: Opcode.CNP, destQp: this.senderQpn, psn: 0, payload: Buffer.alloc(16) });
        this.cnps++;
      }
    }
    const first = inMsg[0]!;
    const last = inMsg[inMsg.length - 1]!;
    const fct = Math.round(last.t) - Math.round(first.t);
    const retx = inMsg.filter((s) => s.retx).length;
    this.onMessage({
      switch: m.torC.name, src: ipv4Text(this.src), dst: ipv4Text(this.dst), dest_qp: this.qpn,
      first_psn: psn0, last_psn: (psn0 + n - 1) & PSN_MASK, bytes: o.gradientBytes,
      packets: inMsg.length, retransmitted: retx, fct_ns: fct,
      fet_bps: fct > 0 ? (o.gradientBytes * 8 * 1e9) / fct : null,
      fnr: retx / inMsg.length,
      ecn_ce_packets: inMsg.filter((s) => s.ce).length,
      gap_ns: this.prevEnd === null ? null : Math.round(first.t) - Math.round(this.prevEnd),
      firstNs: m.abs(first.t),
      late_retransmitted: late.length,
    });
    this.prevEnd = last.t;
    const end = sends[sends.length - 1]!.t;
    const idle = m.active("gpu-idle", end, (f) => f.host === this.hostIndex).reduce((a, f) => a + f.extraNs, 0);
    const nextT = end + m.ser(o.mtu) + Math.round(o.gradientGapNs * (0.8 + 0.4 * m.rand())) + idle;
    this.next = nextT < o.durationNs - 50e6 ? nextT : undefined;
  }
}
