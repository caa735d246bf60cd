// What the exporter knows of each switch besides its measurements: its
// digest sequence (lost and duplicated digests), its sessions (restarts),
// digests it could not decode, figures that came too late, its mode and its
// own counters; and the switch_stats record they close into.
//
// A switch_stats record carries totals as of its interval's end: events of
// a list count in the interval of the list's time, and sequence numbers are
// settled (received, duplicated or lost) up to the highest number seen in
// lists of that interval or earlier. Where the totals stood after each
// record (SwitchPosition) lets a later run on the same journal continue them.
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
  /** packets forwarded, not measured: IPv4 from or to 240.0.0.0/4, IPv6 with an extension header chain, RoCEv2 over IPv6 from or to an address with no endpoint key */
  reserved_address?: number;
  ipv6_ext_header?: number;
  unknown_endpoint?: number;
}

/** The totals a switch_stats record carries. */
export interface SwitchTotals {
  digests_received: number;
  digests_lost: number;
  digests_duplicated: number;
  bad_digests: number;
  switch_restarts: number;
  late_records: number;
  late_responses: number;
}

/**
 * Where a switch's totals stood after its latest switch_stats record, so that
 * a later run can continue them (resume): its session, the digest sequence
 * number below which every number is counted, and the totals of its latest
 * records, by interval.
 */
export interface SwitchPosition {
  switchId: string;
  session: number;
  next: number;
  /** start of the first interval counted in the totals (the switch's clock) */
  since_unix_ns?: string;
  /** the totals of its latest records (oldest first), by interval start (the switch's clock) */
  intervals?: Array<{ start_unix_ns: string; totals: SwitchTotals }>;
}

/** How many of a switch's latest records a position keeps: a restart re-emits those whose records may not have reached Kafka. */
const POSITION_INTERVALS = 64;

const zeroTotals = (): SwitchTotals => ({ digests_received: 0, digests_lost: 0, digests_duplicated: 0, bad_digests: 0, switch_restarts: 0, late_records: 0, late_responses: 0 });

interface SwitchState {
  seq: SeqTracker;
  session: number | undefined;
  /** sequence counts of its earlier sessions */
  earlier: { received: number; lost: number; duplicated: number };
  /** the per-list counts of the intervals emitted so far */
  events: { bad: number; restarts: number; late: number; lateResponses: number };
  /** the first interval (common clock) it is reported in */
  firstInterval: bigint;
  /** the start of the first interval its totals count (its own clock) */
  since: bigint | undefined;
  /** continued from an earlier run: lists before `through` (common clock) were counted by it */
  resumed?: { session: number; through: bigint; intervals: Map<string, SwitchTotals> };
  recent: Array<{ start_unix_ns: string; totals: SwitchTotals }>;
  /** its session and settled sequence when its latest record was made */
  recorded?: { session: number; next: number };
}

export class SwitchHealth {
  private readonly states = new Map<string, SwitchState>();
  private readonly counters = new Map<string, SwitchCounterFigures>();
  /** the mode of its latest digest (or as its controller last said) */
  private readonly modes = new Map<string, number>();

  /**
   * A switch to report on, whether or not it sends digests, from the interval
   * starting at `intervalStart` (common clock; `ownStart` on its own clock).
   */
  note(switchId: string, intervalStart: bigint, ownStart: bigint): void {
    const st = this.states.get(switchId);
    if (!st) {
      this.states.set(switchId, { seq: new SeqTracker(), session: undefined, earlier: { received: 0, lost: 0, duplicated: 0 }, events: { bad: 0, restarts: 0, late: 0, lateResponses: 0 }, firstInterval: intervalStart, since: ownStart, recent: [] });
      return;
    }
    if (intervalStart < st.firstInterval) st.firstInterval = intervalStart;
    st.since ??= ownStart;
  }

  /** The switches reported on. */
  switches(): string[] {
    return [...this.states.keys()];
  }

  /** The first interval (common clock) a switch is reported in. */
  firstInterval(switchId: string): bigint | undefined {
    return this.states.get(switchId)?.firstInterval;
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

  /**
   * A digest list (noted before) in the interval `si` starting at
   * `intervalStart` (common clock): its session, whose change is a restart
   * (counted in that interval; the sequence counted anew, the earlier
   * session's counts kept), and its digests' sequence numbers and mode.
   */
  list(switchId: string, session: number | undefined, intervalStart: bigint, si: SwitchInterval, digests: readonly TelemetryDigest[]): void {
    const st = this.states.get(switchId)!;
    if (session !== undefined && session !== st.session) {
      // Lists an earlier run counted (replayed from the journal), of a session before the one it ended in.
      if (st.resumed && intervalStart < st.resumed.through) return;
      if (st.session !== undefined) {
        si.restarts++;
        st.seq.finish();
        st.earlier.received += st.seq.received;
        st.earlier.lost += st.seq.lost;
        st.earlier.duplicated += st.seq.duplicated;
        st.seq = new SeqTracker();
      }
      st.session = session;
    }
    for (const d of digests) {
      st.seq.add(d.seq);
      // Learn digests come in polling and summary modes: they keep the mode its controller said (polling when none did).
      this.modes.set(switchId, d.kind === "learn" ? (this.modes.get(switchId) === 3 ? 3 : 2) : d.mode);
    }
    if (st.seq.highest >= 0 && (si.seqSession !== st.session || st.seq.highest > si.seqHighest)) {
      si.seqHighest = st.seq.highest;
      si.seqSession = st.session;
    }
  }

  /** Where each switch's totals stood after its latest record, for a later run to continue them (resume). */
  positions(): SwitchPosition[] {
    const out: SwitchPosition[] = [];
    for (const [switchId, st] of this.states) {
      if (!st.recorded) continue;
      out.push({ switchId, ...st.recorded, since_unix_ns: st.since?.toString(), intervals: st.recent });
    }
    return out;
  }

  /**
   * Continues a switch's totals where an earlier run left them (`p`, taken
   * after its record of the interval ending at `through`, common clock):
   * what the switch sent while nothing listened counts as lost, lists that
   * run counted are not counted again, and a switch found in another session
   * has restarted meanwhile.
   */
  resume(p: SwitchPosition, through: bigint): void {
    if (this.states.has(p.switchId)) return;
    const intervals = new Map((p.intervals ?? []).map((i) => [i.start_unix_ns, i.totals]));
    const last = p.intervals?.at(-1)?.totals ?? zeroTotals();
    const seq = new SeqTracker();
    seq.resumeAt(p.next);
    this.states.set(p.switchId, {
      seq, session: p.session,
      earlier: { received: last.digests_received, lost: last.digests_lost, duplicated: last.digests_duplicated },
      events: { bad: last.bad_digests, restarts: last.switch_restarts, late: last.late_records, lateResponses: last.late_responses },
      firstInterval: 1n << 62n, since: p.since_unix_ns !== undefined ? BigInt(p.since_unix_ns) : undefined,
      resumed: { session: p.session, through, intervals }, recent: [...(p.intervals ?? [])], recorded: { session: p.session, next: p.next },
    });
  }

  /** The switch's current sequence and where `seq32` stands in it (for a verdict on digests lost after it). */
  sequenceAt(switchId: string, seq32: number): { tracker: SeqTracker; n: number } | undefined {
    const st = this.states.get(switchId);
    return st && { tracker: st.seq, n: st.seq.unwrap(seq32) };
  }

  /** The switch's current sequence, if it has one. */
  sequenceOf(switchId: string): SeqTracker | undefined {
    return this.states.get(switchId)?.seq;
  }

  /** End of a run: every number still missing counts as lost. */
  finish(): void {
    for (const st of this.states.values()) st.seq.finish();
  }

  /**
   * The switch_stats record of the interval starting at `intervalStart`
   * (common clock; `own`: its times on the switch's clock), or undefined for
   * an interval an earlier run reported whose totals are no longer known.
   */
  statsRecord(sw: string, own: IntervalTimes, si: SwitchInterval | undefined, intervalStart: bigint): SwitchStatsJson | undefined {
    const st = this.states.get(sw)!;
    let totals: SwitchTotals;
    if (st.resumed && intervalStart < st.resumed.through) {
      // Reported by an earlier run (replayed from its journal): the same record again.
      const t = st.resumed.intervals.get(own.interval_start_unix_ns);
      if (!t) return undefined;
      totals = t;
    } else {
      if (si && si.seqHighest >= 0 && si.seqSession === st.session) st.seq.settle(si.seqHighest);
      if (si) {
        st.events.bad += si.badDigests;
        st.events.restarts += si.restarts;
        st.events.late += si.lateRecords;
        st.events.lateResponses += si.lateResponses;
      }
      totals = {
        digests_received: st.earlier.received + st.seq.received, digests_lost: st.earlier.lost + st.seq.lost, digests_duplicated: st.earlier.duplicated + st.seq.duplicated,
        bad_digests: st.events.bad, switch_restarts: st.events.restarts, late_records: st.events.late, late_responses: st.events.lateResponses,
      };
      st.recent.push({ start_unix_ns: own.interval_start_unix_ns, totals });
      if (st.recent.length > POSITION_INTERVALS) st.recent.shift();
      if (st.session !== undefined) st.recorded = { session: st.session, next: st.seq.floor ?? 0 };
    }
    const c = this.counters.get(sw);
    return {
      type: "switch_stats", switch_id: sw, ...own,
      ...totals,
      totals_since_unix_ns: (st.since ?? 0n).toString(),
      incomplete_ios: si?.incomplete ?? 0,
      ios_left_window: si?.leftWindow ?? 0,
      ios_answer_lost: si?.answerLost ?? 0,
      ios_pairing_confused: si?.pairingConfused ?? 0,
      unknown_endpoint_digests: si?.unknownEndpoints ?? 0,
      untracked_flows: c?.untracked_flows ?? null, untracked_ios: c?.untracked_ios ?? null, io_references_lost: c?.ioref_overwritten ?? null,
      parser_errors: c?.parser_errors ?? null, unknown_opcodes: c?.unknown_opcodes ?? null,
      io_replaced: c?.io_replaced ?? null, io_unpaired_responses: c ? c.io_unpaired_responses : si?.untracked ? si.untracked : null,
      queue_pairs_learned: c?.queue_pairs_learned ?? null, cnp_untracked: c?.cnp_untracked ?? null,
      reserved_address_packets: c?.reserved_address ?? null, ipv6_ext_header_packets: c?.ipv6_ext_header ?? null, unknown_endpoint_packets: c?.unknown_endpoint ?? null,
      mode: modeName(this.modes.get(sw) ?? si?.mode ?? 0),
    };
  }
}
