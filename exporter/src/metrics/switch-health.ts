// What the exporter knows of each switch besides its measurements: its
// digest sequence (lost and duplicated digests), its sessions (restarts),
// digests it could not decode, figures that came too late for their
// interval, its mode and its own counters; and the switch_stats record
// they close into.
import { modeName, type SwitchStatsJson, type TelemetryDigest } from "@rdma-telemetry/contract";
import { SeqTracker } from "../seq-tracker.js";
import type { IntervalTimes, SwitchInterval } from "./aggregates.js";

/** The switch counters a switch_stats record carries (read by the controller). */
export interface SwitchCounterFigures {
  untracked_flows: number;
  untracked_ios: number;
  ioref_overwritten: number;
  parser_errors: number;
  unknown_opcodes: number;
  io_replaced: number;
  io_unpaired_responses: number;
  queue_pairs_learned: number;
  cnp_untracked: number;
}

interface Session {
  session: number;
  restarts: number;
  /** the digest counts of its earlier sessions */
  received: number;
  lost: number;
  duplicated: number;
}

export class SwitchHealth {
  private readonly seqs = new Map<string, SeqTracker>();
  private readonly sessions = new Map<string, Session>();
  private readonly badDigests = new Map<string, number>();
  /** figures that arrived for an interval already closed (reported on the event records only) */
  private readonly late = new Map<string, number>();
  private readonly counters = new Map<string, SwitchCounterFigures>();
  /** the mode of its latest digest (or as its controller last said) */
  private readonly modes = new Map<string, number>();

  /** A switch to report on, whether or not it sends digests. */
  note(switchId: string): void {
    if (!this.seqs.has(switchId)) this.seqs.set(switchId, new SeqTracker());
  }

  /** The switches reported on. */
  switches(): string[] {
    return [...this.seqs.keys()];
  }

  mode(switchId: string): number | undefined {
    return this.modes.get(switchId);
  }

  setMode(switchId: string, mode: number): void {
    this.modes.set(switchId, mode);
  }

  setCounters(switchId: string, c: SwitchCounterFigures): void {
    this.counters.set(switchId, c);
  }

  addBad(switchId: string, n: number): void {
    if (n > 0) this.badDigests.set(switchId, (this.badDigests.get(switchId) ?? 0) + n);
  }

  addLate(switchId: string): void {
    this.late.set(switchId, (this.late.get(switchId) ?? 0) + 1);
  }

  /** A digest: its sequence number, and the mode it was taken in. */
  digest(switchId: string, d: TelemetryDigest): void {
    let s = this.seqs.get(switchId);
    if (!s) this.seqs.set(switchId, (s = new SeqTracker()));
    s.add(d.seq);
    this.modes.set(switchId, d.kind === "learn" ? 2 : d.mode); // learn digests come in polling mode only
  }

  /**
   * The session a list came from; true when it is a new one (the switch
   * restarted or reloaded its pipeline): the sequence tracking starts over,
   * the earlier session's counts kept.
   */
  session(switchId: string, session: number): boolean {
    const s = this.sessions.get(switchId);
    if (!s) {
      this.sessions.set(switchId, { session, restarts: 0, received: 0, lost: 0, duplicated: 0 });
      return false;
    }
    if (s.session === session) return false;
    s.session = session;
    s.restarts++;
    const seq = this.seqs.get(switchId);
    if (seq) {
      seq.finish();
      s.received += seq.received;
      s.lost += seq.lost;
      s.duplicated += seq.duplicated;
      this.seqs.set(switchId, new SeqTracker());
    }
    return true;
  }

  /** Where each switch's digest sequence stands, so that a later run can resume from it (resume). */
  sequencePositions(): Array<{ switchId: string; session: number; next: number }> {
    const out = [];
    for (const [switchId, seq] of this.seqs) {
      const session = this.sessions.get(switchId)?.session;
      if (seq.next !== undefined && session) out.push({ switchId, session, next: seq.next });
    }
    return out;
  }

  /**
   * Resumes a switch's digest sequence where an earlier run left it: what the
   * switch sent while nothing listened counts as lost, and a switch that is
   * found in another session has restarted meanwhile.
   */
  resume(switchId: string, session: number, next: number): void {
    if (this.seqs.has(switchId) || this.sessions.has(switchId)) return;
    this.sessions.set(switchId, { session, restarts: 0, received: 0, lost: 0, duplicated: 0 });
    const seq = new SeqTracker();
    seq.resumeAt(next);
    this.seqs.set(switchId, seq);
  }

  /** End of a run: every number still missing counts as lost. */
  finish(): void {
    for (const s of this.seqs.values()) s.finish();
  }

  statsRecord(sw: string, own: IntervalTimes, si: SwitchInterval | undefined): SwitchStatsJson {
    const seq = this.seqs.get(sw) ?? new SeqTracker();
    const c = this.counters.get(sw);
    const ses = this.sessions.get(sw);
    return {
      type: "switch_stats", switch_id: sw, ...own,
      digests_received: seq.received + (ses?.received ?? 0), digests_lost: seq.lost + (ses?.lost ?? 0),
      digests_duplicated: seq.duplicated + (ses?.duplicated ?? 0), bad_digests: this.badDigests.get(sw) ?? 0,
      switch_restarts: ses?.restarts ?? 0, late_records: this.late.get(sw) ?? 0,
      incomplete_ios: si?.incomplete ?? 0,
      untracked_flows: c?.untracked_flows ?? null, untracked_ios: c?.untracked_ios ?? null, io_references_lost: c?.ioref_overwritten ?? null,
      parser_errors: c?.parser_errors ?? null, unknown_opcodes: c?.unknown_opcodes ?? null,
      io_replaced: c?.io_replaced ?? null, io_unpaired_responses: c ? c.io_unpaired_responses : si ? si.untracked : null,
      queue_pairs_learned: c?.queue_pairs_learned ?? null, cnp_untracked: c?.cnp_untracked ?? null,
      mode: modeName(this.modes.get(sw) ?? si?.mode ?? 0),
    };
  }
}
