// The per-interval aggregates: per (switch, host, target, op) for I/Os, per
// (switch, flow) for messages, per switch for its own figures, with the CNPs
// of each host pair; and the records they close into.
import { modeName, type FlowAggregateJson, type IoAggregateJson, type IoRecordJson, type MsgDigest, type StatsJson } from "@rdma-telemetry/contract";
import { QuantileSketch } from "../sketch.js";

/** A distribution that costs one number until it has two values (most flows send one message an interval). */
export class StatsAcc {
  private sketch: QuantileSketch | undefined;
  private first: number | undefined;
  constructor(private readonly accuracy: number) {}
  add(v: number | null): void {
    if (v === null || !Number.isFinite(v)) return;
    if (this.sketch) this.sketch.add(v);
    else if (this.first === undefined) this.first = v;
    else {
      this.sketch = new QuantileSketch(this.accuracy);
      this.sketch.add(this.first);
      this.sketch.add(v);
    }
  }
  json(): StatsJson | null {
    if (this.sketch) return this.sketch.summary() ?? null;
    if (this.first === undefined) return null;
    const v = this.first;
    return { count: 1, min: v, mean: v, p50: v, p99: v, max: v };
  }
}

export interface IoAgg {
  switchId: string;
  host: string;
  target: string;
  op: "read" | "write";
  count: number;
  incomplete: number;
  bytes: number;
  errors: number;
  e2eC: StatsAcc;
  e2eS: StatsAcc;
  rtt: StatsAcc;
  dal: StatsAcc;
  dpl: StatsAcc;
  mode: number;
}

export interface FlowAgg {
  switchId: string;
  src: number;
  dst: number;
  destQp: number;
  messages: number;
  bytes: number;
  packets: number;
  retransmitted: number;
  fct: StatsAcc;
  fet: StatsAcc;
  gap: StatsAcc;
  ecn: number;
  cnp: number;
  straddled: number;
  mode: number;
}

/** What a switch counts of its own in an interval. */
export interface SwitchInterval {
  incomplete: number;
  untracked: number;
  mode: number;
  badDigests: number;
  /** new sessions of the switch seen in the interval's lists */
  restarts: number;
  lateRecords: number;
  lateResponses: number;
  /** I/Os whose pair left the polling window before their response */
  leftWindow: number;
  /** I/Os whose answer was lost with digests the switch sent after their command (ios_answer_lost) */
  answerLost: number;
  /** responses matched through another queue's pairing (ios_pairing_confused) */
  pairingConfused: number;
  /** digests dropped: an endpoint key (240.0.0.0/4) in them had no address from the switch's controller */
  unknownEndpoints: number;
  /** the highest digest sequence number (unwrapped) seen by the end of the interval's lists, in session seqSession */
  seqHighest: number;
  seqSession: number | undefined;
}

/** The open intervals' aggregates, by interval start on the common clock. */
export class IntervalAggregates {
  private readonly ios = new Map<bigint, Map<string, IoAgg>>();
  private readonly flows = new Map<bigint, Map<string, FlowAgg>>();
  private readonly switches = new Map<bigint, Map<string, SwitchInterval>>();
  /** CNPs per (switch, host pair), spread over the pair's flows */
  private readonly pairCnp = new Map<bigint, Map<string, number>>();

  constructor(private readonly accuracy: number) {}

  private bucket<T>(m: Map<bigint, Map<string, T>>, start: bigint): Map<string, T> {
    let b = m.get(start);
    if (!b) m.set(start, (b = new Map()));
    return b;
  }

  private acc(): StatsAcc {
    return new StatsAcc(this.accuracy);
  }

  switchInterval(start: bigint, switchId: string, mode: number): SwitchInterval {
    const sw = this.bucket(this.switches, start);
    let s = sw.get(switchId);
    if (!s) sw.set(switchId, (s = { incomplete: 0, untracked: 0, mode, badDigests: 0, restarts: 0, lateRecords: 0, lateResponses: 0, leftWindow: 0, answerLost: 0, pairingConfused: 0, unknownEndpoints: 0, seqHighest: -1, seqSession: undefined }));
    return s;
  }

  addIo(start: bigint, rec: IoRecordJson, mode: number): void {
    const aggs = this.bucket(this.ios, start);
    const key = `${rec.switch_id}|${rec.host}|${rec.target}|${rec.op}`;
    let a = aggs.get(key);
    if (!a) {
      a = { switchId: rec.switch_id, host: rec.host, target: rec.target, op: rec.op, count: 0, incomplete: 0, bytes: 0, errors: 0, e2eC: this.acc(), e2eS: this.acc(), rtt: this.acc(), dal: this.acc(), dpl: this.acc(), mode };
      aggs.set(key, a);
    }
    a.count++;
    if (rec.incomplete) a.incomplete++;
    a.bytes += rec.bytes;
    if (rec.nvme_status !== 0) a.errors++;
    a.e2eC.add(rec.e2e_c_ns);
    a.e2eS.add(rec.e2e_s_ns);
    a.rtt.add(rec.rtt_ns);
    a.dal.add(rec.dal_ns);
    a.dpl.add(rec.dpl_ns);
  }

  private flowAgg(start: bigint, switchId: string, d: MsgDigest): FlowAgg {
    const aggs = this.bucket(this.flows, start);
    const key = `${switchId}|${d.src}|${d.dst}|${d.dest_qp}`;
    let a = aggs.get(key);
    if (!a) {
      a = { switchId, src: d.src, dst: d.dst, destQp: d.dest_qp, messages: 0, bytes: 0, packets: 0, retransmitted: 0, fct: this.acc(), fet: this.acc(), gap: this.acc(), ecn: 0, cnp: 0, straddled: 0, mode: d.mode };
      aggs.set(key, a);
    }
    return a;
  }

  /** A flow-only digest (isFlowOnly): packets counted outside any message, in the interval they arrived in; no message. */
  addFlowPackets(start: bigint, switchId: string, d: MsgDigest): void {
    const a = this.flowAgg(start, switchId, d);
    a.packets += d.extra_packets;
    a.retransmitted += d.extra_retransmitted;
    a.ecn += d.extra_ecn_ce;
    a.straddled += d.straddled;
    a.mode = d.mode;
  }

  addMessage(start: bigint, switchId: string, d: MsgDigest, fet: number | null, gap: number | null): void {
    const a = this.flowAgg(start, switchId, d);
    a.messages++;
    a.bytes += d.bytes;
    // Packets outside any message since the previous digest (late retransmissions) count for the flow.
    a.packets += d.packets + d.extra_packets;
    a.retransmitted += d.retransmitted + d.extra_retransmitted;
    a.ecn += d.ecn_ce + d.extra_ecn_ce;
    a.straddled += d.straddled;
    a.fct.add(d.fct_ns);
    a.fet.add(fet);
    a.gap.add(gap);
    a.mode = d.mode;
    const pairs = this.bucket(this.pairCnp, start);
    const pkey = `${switchId}|${d.src}|${d.dst}`;
    pairs.set(pkey, (pairs.get(pkey) ?? 0) + d.cnp);
  }

  /** The starts of the intervals that have anything, oldest first. */
  starts(): bigint[] {
    return [...new Set([...this.ios.keys(), ...this.flows.keys(), ...this.switches.keys()])].sort((a, b) => (a < b ? -1 : 1));
  }

  /** Takes an interval's aggregates out. */
  take(start: bigint): { ios: IoAgg[]; flows: FlowAgg[]; cnps: Map<string, number> | undefined; switches: Map<string, SwitchInterval> | undefined } {
    const out = { ios: [...(this.ios.get(start)?.values() ?? [])], flows: [...(this.flows.get(start)?.values() ?? [])], cnps: this.pairCnp.get(start), switches: this.switches.get(start) };
    this.ios.delete(start);
    this.flows.delete(start);
    this.pairCnp.delete(start);
    this.switches.delete(start);
    return out;
  }
}

/** An interval's times, in a switch's own clock. */
export interface IntervalTimes {
  interval_start_unix_ns: string;
  interval_end_unix_ns: string;
}

export function ioIntervalRecord(a: IoAgg, own: IntervalTimes, coverage: IoAggregateJson["coverage"] = null): IoAggregateJson {
  return {
    type: "io_interval", switch_id: a.switchId, ...own,
    host: a.host, target: a.target, op: a.op, count: a.count, incomplete: a.incomplete, bytes: a.bytes, errors: a.errors,
    e2e_c_ns: a.e2eC.json(), e2e_s_ns: a.e2eS.json(), rtt_ns: a.rtt.json(), dal_ns: a.dal.json(), dpl_ns: a.dpl.json(), mode: modeName(a.mode),
    coverage,
  };
}

export function flowIntervalRecord(a: FlowAgg, own: IntervalTimes, cnps: Map<string, number> | undefined, coverage: FlowAggregateJson["coverage"], text: (address: number) => string): FlowAggregateJson {
  return {
    type: "flow_interval", switch_id: a.switchId, ...own,
    src: text(a.src), dst: text(a.dst), dest_qp: a.destQp, messages: a.messages, bytes: a.bytes, packets: a.packets,
    retransmitted: a.retransmitted, fnr: a.packets > 0 ? a.retransmitted / a.packets : 0,
    fct_ns: a.fct.json(), fet_bps: a.fet.json(), ecn_ce_packets: a.ecn,
    cnp_packets: cnps?.get(`${a.switchId}|${a.src}|${a.dst}`) ?? 0,
    gap_ns: a.gap.json(), mode: modeName(a.mode), straddled_messages: a.straddled,
    coverage,
  };
}
