// Records against the traffic generator's ground truth: what the demo's
// self-check counts and the end-to-end tests assert.
import type { FlowAggregateJson, IoRecordJson, MessageRecordJson } from "@rdma-telemetry/contract";
import type { IoTruth, MessageTruth } from "@rdma-telemetry/traffic";

/** One I/O: (host, target, queue, CID) and the command's PSN. */
export const ioTruthKey = (t: IoTruth): string => `${t.host}|${t.target}|${t.target_qp}|${t.cid}|${t.cmd_psn}`;
export const ioRecordKey = (r: IoRecordJson): string => `${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn}`;
export const messageTruthKey = (t: MessageTruth): string => `${t.src}|${t.dst}|${t.dest_qp}|${t.first_psn}`;
export const messageRecordKey = (r: MessageRecordJson): string => `${r.src}|${r.dst}|${r.dest_qp}|${r.first_psn}`;

/** The fields of an I/O record that differ from the truth, as "field: got x, want y". */
export function ioMismatches(t: IoTruth, r: IoRecordJson): string[] {
  const want: Record<string, unknown> = {
    op: t.op, bytes: t.bytes, in_capsule: t.in_capsule, host_qp: t.host_qp, nvme_status: t.status, incomplete: t.incomplete,
    e2e_c_ns: t.e2e_c_ns, e2e_s_ns: t.e2e_s_ns, rtt_ns: t.rtt_ns, dal_ns: t.dal_ns, dpl_ns: t.dpl_ns,
    cmd_unix_ns: t.cmd_unix_ns?.toString() ?? null, compute_side: t.c_seen, storage_side: t.s_seen,
  };
  const got: Record<string, unknown> = {
    op: r.op, bytes: r.bytes, in_capsule: r.in_capsule, host_qp: r.host_qp, nvme_status: r.nvme_status, incomplete: r.incomplete,
    e2e_c_ns: r.e2e_c_ns, e2e_s_ns: r.e2e_s_ns, rtt_ns: r.rtt_ns, dal_ns: r.dal_ns, dpl_ns: r.dpl_ns,
    cmd_unix_ns: r.cmd_unix_ns, compute_side: r.c_switch_id !== null, storage_side: r.s_switch_id !== null,
  };
  return Object.keys(want).filter((k) => want[k] !== got[k]).map((k) => `${k}: got ${String(got[k])}, want ${String(want[k])}`);
}

/** A message's flow at its switch: (switch, source, destination, DestQP). */
const flowOf = (t: MessageTruth): string => `${t.switch}|${t.src}|${t.dst}|${t.dest_qp}`;

export function messageMismatches(t: MessageTruth, r: MessageRecordJson): string[] {
  const want: Record<string, unknown> = { last_psn: t.last_psn, bytes: t.bytes, packets: t.packets, retransmitted: t.retransmitted, fct_ns: t.fct_ns, ecn_ce_packets: t.ecn_ce_packets, gap_ns: t.gap_ns };
  const got: Record<string, unknown> = { last_psn: r.last_psn, bytes: r.bytes, packets: r.packets, retransmitted: r.retransmitted, fct_ns: r.fct_ns, ecn_ce_packets: r.ecn_ce_packets, gap_ns: r.gap_ns };
  return Object.keys(want).filter((k) => want[k] !== got[k]).map((k) => `${k}: got ${String(got[k])}, want ${String(want[k])}`);
}

/** A flow's figures for one interval: what a flow_interval record counts. */
export interface FlowIntervalFigures {
  messages: number;
  packets: number;
  retransmitted: number;
  ecn_ce_packets: number;
}

/** One flow and interval: switch, flow (src, dst, DestQP) and interval start. */
export const flowIntervalRecordKey = (r: FlowAggregateJson): string => `${r.switch_id}|${r.src}|${r.dst}|${r.dest_qp}|${r.interval_start_unix_ns}`;

/**
 * The flow interval figures the truth gives (SPEC §4), keyed as
 * flowIntervalRecordKey: a message and its packets count in the interval its
 * last PSN is first seen in; each packet seen after that (late, or
 * retransmitted after the last PSN) in the interval it arrives in, also after
 * the flow's last message. Intervals of `intervalNs` from the Unix epoch.
 */
export function flowIntervalTruth(messages: Iterable<MessageTruth>, intervalNs: bigint): Map<string, FlowIntervalFigures> {
  const out = new Map<string, FlowIntervalFigures>();
  const at = (m: MessageTruth, ns: bigint): FlowIntervalFigures => {
    const k = `${m.switch}|${m.src}|${m.dst}|${m.dest_qp}|${ns - (ns % intervalNs)}`;
    let f = out.get(k);
    if (!f) out.set(k, (f = { messages: 0, packets: 0, retransmitted: 0, ecn_ce_packets: 0 }));
    return f;
  };
  for (const m of messages) {
    const f = at(m, m.firstNs + BigInt(m.fct_ns));
    f.messages++;
    f.packets += m.packets;
    f.retransmitted += m.retransmitted;
    f.ecn_ce_packets += m.ecn_ce_packets;
    for (const x of m.late) {
      const g = at(m, m.firstNs + BigInt(x.after_first_ns));
      g.packets++;
      if (x.retransmitted) g.retransmitted++;
      if (x.ecn_ce) g.ecn_ce_packets++;
    }
  }
  return out;
}

/** Where the flow interval records differ from the truth (flowIntervalTruth), as "key: got x, want y"; empty when they agree. */
export function flowIntervalMismatches(truth: ReadonlyMap<string, FlowIntervalFigures>, records: readonly FlowAggregateJson[]): string[] {
  const got = new Map<string, FlowIntervalFigures>();
  for (const r of records) {
    const k = flowIntervalRecordKey(r);
    const f = got.get(k) ?? { messages: 0, packets: 0, retransmitted: 0, ecn_ce_packets: 0 };
    got.set(k, { messages: f.messages + r.messages, packets: f.packets + r.packets, retransmitted: f.retransmitted + r.retransmitted, ecn_ce_packets: f.ecn_ce_packets + r.ecn_ce_packets });
  }
  const text = (f: FlowIntervalFigures | undefined) => (f ? `${f.messages} messages, ${f.packets} packets, ${f.retransmitted} retransmitted, ${f.ecn_ce_packets} ECN-CE` : "none");
  const out: string[] = [];
  for (const k of new Set([...truth.keys(), ...got.keys()])) {
    const [w, g] = [truth.get(k), got.get(k)];
    if (text(w) !== text(g)) out.push(`${k}: got ${text(g)}, want ${text(w)}`);
  }
  return out;
}

/**
 * A record whose only differences are figures the switch could not measure
 * (absent, never wrong): the I/O's data reference was taken by another I/O
 * with a colliding key, or its data came out of order (`io_references_lost`), or its queue's pairing was
 * (the response on an unpaired queue, `io_unpaired_responses`: no e2e), or
 * a switch could not track its command (`untracked_ios`: no half there).
 */
export function onlyReferenceLost(m: readonly string[], r?: IoRecordJson): boolean {
  // A vantage whose slot was held by another live I/O has no half (`untracked_ios` there): its
  // figures are absent, and the record's command time is the other vantage's.
  const halfLost = m.some((x) => /^(compute_side|storage_side): got false, want true$/.test(x));
  const computeLost = m.includes("compute_side: got false, want true");
  // Given the record: "answer unknown" (not incomplete, no e2e at any vantage) has no queue
  // pairing or status either, as when a response came on a queue whose pairing the switch
  // did not know (in polling mode, a pair new in the window whose first I/O failed before any data).
  // Nor is it incomplete where the truth has its response missing from a capture: while its
  // command was open there, on a queue whose pairing neither switch knew, a response with its
  // CID came on another queue the switch had no pairing of (io_unpaired_responses), which may
  // have been its answer for all the switch could tell.
  const unknown = r !== undefined && !r.incomplete && r.e2e_c_ns === null && r.e2e_s_ns === null;
  // In polling and summary mode, the compute side's window may have lost the pair before the response
  // (ios_left_window): that vantage has no figures and is not incomplete, whether or not the response
  // then crossed it. Where the truth has the response missing from its capture, the record says less.
  const unwatchedC = r !== undefined && !r.incomplete && r.e2e_c_ns === null && (r.mode === "polling" || r.mode === "summary");
  return m.length > 0 && m.every((x) => /^(dal_ns|dpl_ns|e2e_c_ns|e2e_s_ns|rtt_ns): got null, want \d+$/.test(x)
    || (halfLost && /^(compute_side|storage_side): got false, want true$/.test(x))
    || (computeLost && x.startsWith("cmd_unix_ns: "))
    || (unknown && (/^(host_qp|nvme_status): got 0, want \d+$/.test(x) || x === "incomplete: got false, want true"))
    || (unwatchedC && x === "incomplete: got false, want true"));
}

type TruthLine = { type: "io"; truth: IoTruth } | { type: "message"; truth: MessageTruth };

/**
 * The same tally over a run of any length: the truth is read as the records
 * come (both roughly in capture-time order), and only a window of it is held.
 */
export class StreamingSelfCheck {
  private readonly ios = new Map<string, IoTruth>();
  private readonly messages = new Map<string, MessageTruth>();
  private next: TruthLine | undefined;
  private done = false;
  ioExpected = 0;
  ioUntracked = 0;
  /** I/Os the compute-side and the storage-side switch could not attribute to a queue (the truth's c_seen, s_seen false) */
  ioUnseenC = 0;
  ioUnseenS = 0;
  ioIncomplete = 0;
  messagesExpected = 0;
  ioExact = 0;
  messageExact = 0;
  ioReferenceLost = 0;
  ioWrong = 0;
  ioUnexpected = 0;
  /** expected records that never came */
  ioMissing = 0;
  messagesMissing = 0;
  messagesWrong = 0;
  /**
   * Messages whose record has no gap because the flow's message before had no
   * record (its flow outside the polling window then, or its end not seen):
   * the gap runs from an end the switch did not measure.
   */
  messagesGapUnseen = 0;
  readonly messageProblems: string[] = [];
  /** each truth message's predecessor on its flow, and the newest message of each flow with a record */
  private readonly previous = new Map<string, string>();
  private readonly lastOfFlow = new Map<string, string>();
  private readonly lastRecorded = new Map<string, string>();
  readonly ioProblems: string[] = [];

  /** `leadNs`: how far past a record's time the truth is read; `horizonNs`: how long an unmatched truth waits. */
  constructor(private readonly truth: Iterator<TruthLine>, private readonly leadNs = 5_000_000_000n, private readonly horizonNs = 15_000_000_000n) {}

  private static timeOf(l: TruthLine): bigint | undefined {
    return l.type === "io" ? (l.truth.cmd_unix_ns ?? undefined) : l.truth.firstNs;
  }

  private advance(t: bigint): void {
    for (;;) {
      if (!this.next && !this.done) {
        const r = this.truth.next();
        if (r.done) this.done = true;
        else this.next = r.value;
      }
      const l = this.next;
      if (!l) break;
      const at = StreamingSelfCheck.timeOf(l);
      if (at !== undefined && at > t + this.leadNs) break;
      this.next = undefined;
      if (l.type === "io") {
        if (!l.truth.c_seen) this.ioUnseenC++;
        if (!l.truth.s_seen) this.ioUnseenS++;
      }
      if (l.type === "message") {
        const key = messageTruthKey(l.truth);
        const flow = flowOf(l.truth);
        const before = this.lastOfFlow.get(flow);
        if (before !== undefined) this.previous.set(key, before);
        this.lastOfFlow.set(flow, key);
        this.messages.set(key, l.truth);
        this.messagesExpected++;
      } else if (!l.truth.record) {
        this.ioUntracked++;
      } else {
        this.ios.set(ioTruthKey(l.truth), l.truth);
        this.ioExpected++;
        if (l.truth.incomplete) this.ioIncomplete++;
      }
    }
    // Truth far behind the records: its record never came.
    const horizon = t - this.horizonNs;
    for (const [k, v] of this.ios) {
      if ((v.cmd_unix_ns ?? 0n) >= horizon) break;
      this.ios.delete(k);
      this.ioMissing++;
      if (this.ioProblems.length < 10) this.ioProblems.push(`no record for ${k}`);
    }
    for (const [k, v] of this.messages) {
      if (v.firstNs >= horizon) break;
      this.messages.delete(k);
      this.previous.delete(k);
      this.messagesMissing++;
    }
  }

  io(r: IoRecordJson): void {
    this.advance(BigInt(r.cmd_unix_ns));
    const k = ioRecordKey(r);
    const t = this.ios.get(k);
    if (!t) {
      this.ioUnexpected++;
      if (this.ioProblems.length < 10) this.ioProblems.push(`unexpected record ${k}`);
      return;
    }
    this.ios.delete(k);
    const m = ioMismatches(t, r);
    if (m.length === 0) this.ioExact++;
    else if (onlyReferenceLost(m, r)) this.ioReferenceLost++;
    else {
      this.ioWrong++;
      if (this.ioProblems.length < 10) this.ioProblems.push(`${k}: ${m.join("; ")}`);
    }
  }

  message(r: MessageRecordJson): void {
    this.advance(BigInt(r.first_unix_ns));
    const k = messageRecordKey(r);
    const t = this.messages.get(k);
    if (!t) return;
    this.messages.delete(k);
    const before = this.previous.get(k);
    this.previous.delete(k);
    const flow = flowOf(t);
    const beforeRecorded = before !== undefined && this.lastRecorded.get(flow) === before;
    this.lastRecorded.set(flow, k);
    const m = messageMismatches(t, r);
    if (m.length === 0) this.messageExact++;
    else if (m.length === 1 && r.gap_ns === null && m[0]!.startsWith("gap_ns:") && !beforeRecorded) this.messagesGapUnseen++;
    else {
      this.messagesWrong++;
      if (this.messageProblems.length < 10) this.messageProblems.push(`${k}: ${m.join("; ")}`);
    }
  }

  /** Reads the rest of the truth: what is left unmatched is missing. */
  finish(): void {
    this.advance(1n << 62n);
    this.ioMissing += this.ios.size;
    this.messagesMissing += this.messages.size;
    this.ios.clear();
    this.messages.clear();
  }
}
