// Records against the traffic generator's ground truth: what the demo's
// self-check counts and the end-to-end tests assert.
import type { IoRecordJson, MessageRecordJson } from "../exporter/src/records.js";
import type { IoTruth, MessageTruth } from "../traffic/src/generator.js";

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

export function messageMismatches(t: MessageTruth, r: MessageRecordJson): string[] {
  const want: Record<string, unknown> = { last_psn: t.last_psn, bytes: t.bytes, packets: t.packets, retransmitted: t.retransmitted, fct_ns: t.fct_ns, ecn_ce_packets: t.ecn_ce, gap_ns: t.gap_ns };
  const got: Record<string, unknown> = { last_psn: r.last_psn, bytes: r.bytes, packets: r.packets, retransmitted: r.retransmitted, fct_ns: r.fct_ns, ecn_ce_packets: r.ecn_ce_packets, gap_ns: r.gap_ns };
  return Object.keys(want).filter((k) => want[k] !== got[k]).map((k) => `${k}: got ${String(got[k])}, want ${String(want[k])}`);
}

/**
 * A record whose only differences are a DAL or DPL the switch could not
 * measure: the I/O's data reference was taken by another I/O with a
 * colliding key, which the switch counts (`io_references_lost`).
 */
export function onlyReferenceLost(m: readonly string[]): boolean {
  return m.length > 0 && m.every((x) => /^(dal_ns|dpl_ns): got null, want \d+$/.test(x));
}

/** Tallies records against the truth as they arrive. */
export class SelfCheck {
  private readonly ios: Map<string, IoTruth>;
  private readonly messages: Map<string, MessageTruth>;
  ioExact = 0;
  messageExact = 0;
  /** records with no I/O in the truth, or that differ from it (the first few kept, for the report) */
  readonly ioProblems: string[] = [];
  ioWrong = 0;
  ioUnexpected = 0;
  /** records that lack only a DAL or DPL, their data reference taken by a colliding key (counted by the switches) */
  ioReferenceLost = 0;

  constructor(ios: readonly IoTruth[], messages: readonly MessageTruth[]) {
    this.ios = new Map(ios.map((t) => [ioTruthKey(t), t]));
    this.messages = new Map(messages.map((t) => [messageTruthKey(t), t]));
  }

  /** I/Os the truth says must give a record. */
  get ioExpected(): number {
    let n = 0;
    for (const t of this.ios.values()) if (t.record) n++;
    return n;
  }

  /** I/Os no vantage can attribute to a queue: no record; the switches count them. */
  get ioUntracked(): number {
    return this.ios.size - this.ioExpected;
  }

  get messagesExpected(): number {
    return this.messages.size;
  }

  io(r: IoRecordJson): void {
    const t = this.ios.get(ioRecordKey(r));
    if (!t || !t.record) {
      this.ioUnexpected++;
      if (this.ioProblems.length < 10) this.ioProblems.push(`unexpected record ${ioRecordKey(r)}`);
      return;
    }
    const m = ioMismatches(t, r);
    if (m.length === 0) this.ioExact++;
    else if (onlyReferenceLost(m)) this.ioReferenceLost++;
    else {
      this.ioWrong++;
      if (this.ioProblems.length < 10) this.ioProblems.push(`${ioRecordKey(r)}: ${m.join("; ")}`);
    }
  }

  message(r: MessageRecordJson): void {
    const t = this.messages.get(messageRecordKey(r));
    if (t && messageMismatches(t, r).length === 0) this.messageExact++;
  }
}
