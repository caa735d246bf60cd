// Turns decoded digests into records (SPEC §3-§6): per-I/O records with RTT
// from correlating the compute-side and storage-side halves of an I/O, per-
// message records, and per-interval aggregates. Time comes from the digests
// (switch clocks mapped to the wall clock), so a replay is deterministic.
import { EndpointNames } from "./metrics/endpoint-names.js";
import { HistogramIntervals } from "./metrics/histograms.js";
import type { EndpointEntry, HistogramRead } from "@rdma-telemetry/contract";
import {
  IO_EVENT_CMD,
  IO_EVENT_QUEUE_PAIR,
  IO_EVENT_RSP,
  IO_EVENT_UNPAIRED_RSP,
  IO_FLAG_LAST_LOST,
  IO_FLAG_DATA_SEEN,
  IO_FLAG_IN_CAPSULE,
  IO_FLAG_RR_SEEN,
  IO_OP_WRITE,
  MODE_FULL,
  MSG_FLAG_GAP_VALID,
  VANTAGE_C,
  VANTAGE_S,
  type IoDigest,
  type MsgDigest,
  isFlowOnly,
  type TelemetryDigest,
} from "@rdma-telemetry/contract";
import { isEndpointKey, modeName, type IoRecordJson, type MessageRecordJson, type RecordJson } from "@rdma-telemetry/contract";
import { flowIntervalRecord, IntervalAggregates, ioIntervalRecord, type SwitchInterval } from "./metrics/aggregates.js";
import { SwitchClock } from "./metrics/switch-clock.js";
import type { SeqTracker } from "./seq-tracker.js";
import { SwitchHealth, type SwitchCounterFigures, type SwitchPosition } from "./metrics/switch-health.js";

export { SwitchClock } from "./metrics/switch-clock.js";
export type { SwitchCounterFigures, SwitchPosition, SwitchTotals } from "./metrics/switch-health.js";

export interface MetricsOptions {
  intervalNs: bigint;
  /** a command with no response within this time is reported incomplete */
  ioTimeoutNs: bigint;
  /** how long the first half of an I/O waits for the other vantage's half */
  correlationWindowNs: bigint;
  /** per-I/O and per-message records, besides the interval aggregates */
  perEventRecords: boolean;
  /**
   * A switch with no digest list for this long (digest time, which an idle
   * exporter group partition moves on by the wall clock) no longer holds the
   * others up: the halves waiting for it go out alone, intervals close.
   */
  silentSwitchNs: bigint;
  sketchAccuracy: number;
  /**
   * The engine sees every digest its switches send (not an exporter group
   * partition's share): a gap in a switch's sequence after a command is
   * digests lost, which may have held its response (an I/O with no response
   * seen is then "answer unknown", not incomplete). Without it (an exporter
   * group member), such an I/O waits for its controller's verdict
   * (givenUpNote), up to the I/O timeout, a second and the correlation
   * window more, and is "answer unknown" without one.
   */
  wholeSequence: boolean;
}

export const DEFAULT_METRICS_OPTIONS: MetricsOptions = {
  intervalNs: 1_000_000_000n,
  ioTimeoutNs: 1_000_000_000n,
  correlationWindowNs: 2_000_000_000n,
  perEventRecords: true,
  silentSwitchNs: 60_000_000_000n,
  sketchAccuracy: 0.005,
  wholeSequence: true,
};

/** One vantage's view of an I/O. */
interface IoHalf {
  switchId: string;
  host: number;
  target: number;
  hostQp: number;
  targetQp: number;
  cid: number;
  cmdPsn: number;
  inCapsule: boolean;
  vantage: number;
  op: "read" | "write";
  bytes: number;
  status: number;
  mode: number;
  e2e: number | null;
  dal: number | null;
  dpl: number | null;
  incomplete: boolean;
  /** the response was seen on a queue whose pairing the switch had lost: status known, no figure */
  answered?: boolean;
  /** a command given up because its switch went silent (giveUpSilent) */
  silent?: boolean;
  /**
   * Its answer is unknown (not incomplete): responses with its CID came on
   * these host QPs, whose pairing the switch did not know, before it was
   * given up; undefined when there were more than UNPAIRED_RSP_MAX.
   */
  unknownQps?: readonly number[];
  cmdUnixNs: bigint;
  atUnixNs: bigint;
  /** atUnixNs on the engine's common clock (see setClockAlignment) */
  atAlignedNs: bigint;
}

interface Outstanding {
  switchId: string;
  digest: IoDigest;
  cmdUnixNs: bigint;
  /** the I/O's key across vantages (MetricsEngine.ioKey) */
  ioKey: string;
  /** polling: the window event (MetricsEngine.windowEvents) at which its pair left the switch's window (its response then goes unwatched) */
  leftWindowEvent?: number;
  /**
   * When and on which host QP responses with its CID came on queues of its
   * host and target whose pairing the switch did not know: perhaps its own
   * (its queue's pairing unknown too), which the switch cannot tell; its
   * answer is then unknown, not missing (unless the other vantage saw its
   * own response on another host QP: settleUnknown).
   */
  unpairedRsp?: Array<{ atUnixNs: bigint; hostQp: number }>;
  /**
   * Its answer stays unknown whatever host QP another vantage saw its own
   * response on (settleUnknown does not rule it out): more than
   * UNPAIRED_RSP_MAX such responses came, a response took its slot through
   * another queue's pairing (confusedPairing), or the run ended within its
   * I/O timeout (finish).
   */
  unknownWhateverQp?: boolean;
  /** its digest's place in its switch's sequence (wholeSequence): digests lost after it may have held its response */
  seq?: { tracker: SeqTracker; n: number };
}

/** A command with no response seen, whose verdict waits for the digests missing between it and `hi` (its switch's sequence). */
interface Verdict {
  o: Outstanding;
  atUnixNs: bigint;
  /** its switch's sequence up to which every digest must have come (wholeSequence) */
  hi: number;
  /** `hi` is the number before the command that reused its CID (not the newest one seen) */
  bounded?: boolean;
  /** or the key of the controller's verdict it waits for (givenUpNote) */
  note?: string;
  /** common clock: by then every list that could hold a missing number is in (LIST_DELAY_MAX_NS) */
  decideAt: bigint;
}

/** The unpaired responses kept per open command (each host QP once); past it, any host QP may have answered it. */
const UNPAIRED_RSP_MAX = 16;

/** Where the engine hands each record it emits. */
export type RecordListener = (r: RecordJson) => void;

export class MetricsEngine {
  readonly options: MetricsOptions;
  private readonly clocks = new Map<string, SwitchClock>();
  private readonly exactStarts = new Map<string, () => bigint | undefined>();
  /** per switch: added to its times to put them on the engine's common clock */
  private readonly alignments = new Map<string, bigint>();
  /** open commands by (switch, host, target, target QP, CID): one per queue slot of a CID */
  private readonly outstanding = new Map<string, Outstanding>();
  /** commands timed out with digests still missing after them, or awaiting their controller's verdict (timeOut) */
  private verdicts: Verdict[] = [];
  /** the oldest command time (common clock) among them (settledBefore) */
  private verdictsFrom = 1n << 62n;
  /** controllers' verdicts (givenUpNote) by command, with when they came (common clock) */
  private readonly notedVerdicts = new Map<string, { lost: boolean; atNs: bigint }>();
  /**
   * Each command given up with no response seen while the engine sees its
   * switch's whole sequence: `lost` when digests after it were lost (its
   * answer unknown). A controller publishing digests only tells its exporter
   * group so (IO_GIVEN_UP).
   */
  onGivenUp: ((switchId: string, d: IoDigest, cmdUnixNs: bigint, lost: boolean) => void) | undefined;
  /**
   * How many switches hold each I/O's command open (by ioKey): a half of the
   * I/O waits for them, whatever the correlation window, so that the other
   * vantage's half, made when its command ends (response, timeout, silence),
   * joins it in one record.
   */
  private readonly openIos = new Map<string, number>();
  /** The open commands' keys by switch|host|target|CID, for a response on a queue whose pairing the switch did not know. */
  private readonly openByCid = new Map<string, Set<string>>();
  /** The queue pairings each switch lost to colliding ones: switch|host|target|host_qp -> target_qp. */
  private readonly pairings = new Map<string, number>();
  /** The same by the target's side: switch|host|target|target_qp -> host_qp. */
  private readonly pairingsByTarget = new Map<string, number>();
  /**
   * Commands given up (reported incomplete), by the same key, until the CID
   * is used again: a response that still comes is counted as late, never
   * made a second record of the I/O.
   */
  private readonly givenUp = new Map<string, { cmdPsn: number; atAlignedNs: bigint }>();
  /** each switch's session as its latest list said: a new one has a new clock */
  private readonly sessions = new Map<string, number>();
  /** per switch: times (common clock) when nothing listened to it (see unobserved) */
  private readonly unobservedSpans = new Map<string, Array<[bigint, bigint]>>();
  private readonly halves = new Map<string, IoHalf[]>();
  // Interval buckets are keyed by their start on the common clock.
  private readonly intervals: IntervalAggregates;
  private readonly health = new SwitchHealth();
  /** endpoint keys (IPv6 addresses) of each switch, and their text */
  private readonly endpoints = new EndpointNames();
  private readonly histograms = new HistogramIntervals();
  /** per switch: the newest list timestamp seen, on the common clock (each switch's digests lag differently) */
  private readonly watermarks = new Map<string, bigint>();
  /** Per switch: the time (common clock) of its newest I/O digest, its own clock read exactly. */
  private readonly ioTimes = new Map<string, bigint>();
  private watermark = 0n;
  /** the time (common clock) of the list being read */
  private listNs = 0n;
  /**
   * Switches that will report (an exporter group member's --switch-id): one
   * that has not yet holds the others' halves and intervals as a silent one
   * does, from the engine's first list until it reports or the others have
   * moved silentSwitchNs on. (A switch whose first digests of a partition
   * come late, behind its controller's outage, then still meets its halves.)
   */
  private readonly expected = new Set<string>();
  /** the engine's first list time (common clock) */
  private firstNoted: bigint | undefined;
  private lastScan = -(1n << 62n);
  /** intervals before this (common clock) are closed: nothing is added to them again */
  private closedBefore = -(1n << 62n);

  /**
   * Every digest with a time before this (common clock) is fully reflected in
   * the records emitted so far: its I/O halves joined or given up, its
   * commands answered or timed out, its intervals closed.
   */
  get settledBefore(): bigint {
    // (A command whose verdict waits is not reflected yet.)
    return this.verdictsFrom < this.closedBefore ? this.verdictsFrom : this.closedBefore;
  }

  /**
   * A switch that was running at `atUnixNs` (its own clock): it gets a
   * switch_stats record for that interval and the quiet ones before it even
   * if it sent no digest at all (a capture of nothing the program measures
   * still has counters to report).
   */
  noteSwitch(switchId: string, atUnixNs: bigint): void {
    const aligned = atUnixNs + this.align(switchId);
    this.note(switchId, aligned);
    this.switchInterval(switchId, aligned, this.health.mode(switchId) ?? 0);
    if (aligned > (this.watermarks.get(switchId) ?? -(1n << 62n))) this.watermarks.set(switchId, aligned);
  }

  /**
   * A switch known to be up and reporting at `atUnixNs` (its own clock; a
   * live controller connected to it), whether or not it sends digests: its
   * intervals close as time passes, each with its switch_stats record.
   */
  switchAlive(switchId: string, atUnixNs: bigint): void {
    const aligned = atUnixNs + this.align(switchId);
    this.note(switchId, aligned);
    if (aligned > (this.watermarks.get(switchId) ?? -(1n << 62n))) this.watermarks.set(switchId, aligned);
    this.advance(aligned);
  }

  /**
   * Nothing is known of the switch from its latest list up to `untilUnixNs`
   * (its own clock): no controller listened. The intervals of that time with
   * nothing in them get no switch_stats (they would say the switch was quiet);
   * what it sent meanwhile counts as lost in the first interval after.
   */
  unobserved(switchId: string, untilUnixNs: bigint): void {
    const from = this.watermarks.get(switchId);
    const until = untilUnixNs + this.align(switchId);
    if (from === undefined || until <= from) return;
    const spans = this.unobservedSpans.get(switchId) ?? [];
    spans.push([from, until]);
    this.unobservedSpans.set(switchId, spans);
  }

  private note(switchId: string, alignedNs: bigint): void {
    this.firstNoted ??= alignedNs;
    const start = this.intervalOf(alignedNs);
    this.health.note(switchId, start, start - this.align(switchId));
  }

  /** The switch's mode as its controller set it (1 full, 2 polling). */
  setSwitchMode(switchId: string, mode: number): void {
    this.health.setMode(switchId, mode);
  }

  /**
   * What the switch's data-plane histograms counted since its controller's
   * last read, read at `atUnixNs` (the switch's clock): it counts in the
   * interval that ended last at that time (the one a read at a boundary
   * closes), or where that one is out already, the oldest open one.
   */
  addHistograms(switchId: string, read: HistogramRead, atUnixNs: bigint): void {
    const i = this.options.intervalNs;
    const aligned = atUnixNs + this.align(switchId) - 1n;
    let start = aligned - (((aligned % i) + i) % i);
    if (start < this.closedBefore) start = this.closedBefore;
    // The switch's endpoint keys to addresses (its controller's, as its digests tell them); one without an address is left out, counted.
    const mode = this.health.mode(switchId) ?? 1;
    const unnamed = this.histograms.add(start, switchId, mode, read, (v) => {
      const k = this.endpoints.local(switchId, v);
      return k === undefined ? undefined : this.endpoints.text(k);
    });
    if (unnamed) this.switchInterval(switchId, start, mode).unknownEndpoints += unnamed;
  }

  /** The switch's own counters (read by the controller), carried on its switch_stats records. */
  setSwitchCounters(switchId: string, c: SwitchCounterFigures): void {
    this.health.setCounters(switchId, c);
  }
  coverage: ((switchId: string) => { measured_flows: number; known_flows: number; ratio: number } | null) | undefined;
  /** the polling window's host-target pairs, for io_interval records */
  pairCoverage: ((switchId: string) => { measured_pairs: number; known_pairs: number; ratio: number } | null) | undefined;

  constructor(private readonly sink: RecordListener, options: Partial<MetricsOptions> = {}) {
    this.options = { ...DEFAULT_METRICS_OPTIONS, ...options };
    this.intervals = new IntervalAggregates(this.options.sketchAccuracy);
  }

  /**
   * The wall-clock (capture-clock) time at which the switch's clock read 0,
   * where its owner knows it exactly (replay). Must be set before the
   * switch's first digest list.
   */
  setClockStart(switchId: string, start: () => bigint | undefined): void {
    this.exactStarts.set(switchId, start);
  }

  /**
   * Puts a switch whose clock differs from the others' (a capture taken with
   * another clock) on the engine's common clock: `alignNs` is added to its
   * times wherever they are compared with other switches' (correlation
   * window, timeouts, closing intervals). Records keep the switch's own
   * clock. Rounded to a whole number of intervals, so that the intervals of
   * both clocks coincide.
   */
  setClockAlignment(switchId: string, alignNs: bigint): void {
    const i = this.options.intervalNs;
    const q = alignNs >= 0n ? (alignNs + i / 2n) / i : -((-alignNs + i / 2n) / i);
    this.alignments.set(switchId, q * i);
  }

  /** Each switch's clock start as placed so far (see setClockStart): an engine that takes over from this one places them the same. */
  clockStarts(): Map<string, bigint> {
    const out = new Map<string, bigint>();
    for (const [sw, c] of this.clocks) if (c.start !== undefined) out.set(sw, c.start);
    return out;
  }

  private align(switchId: string): bigint {
    return this.alignments.get(switchId) ?? 0n;
  }

  private clock(switchId: string): SwitchClock {
    let c = this.clocks.get(switchId);
    if (!c) this.clocks.set(switchId, (c = new SwitchClock(this.exactStarts.get(switchId))));
    return c;
  }

  private intervalOf(unixNs: bigint): bigint {
    return unixNs - (((unixNs % this.options.intervalNs) + this.options.intervalNs) % this.options.intervalNs);
  }

  /**
   * Feeds one digest list from one switch; `badDigests` counts its samples
   * that could not be decoded, `session` is the switch session it came from
   * (a new one: the switch restarted or reloaded its pipeline).
   */
  onDigestList(switchId: string, listTimestampNs: bigint, digests: readonly TelemetryDigest[], badDigests = 0, session?: number, endpoints?: readonly EndpointEntry[]): void {
    const aligned = listTimestampNs + this.align(switchId);
    this.listNs = aligned;
    this.note(switchId, aligned);
    const si = this.switchInterval(switchId, aligned, this.health.mode(switchId) ?? 0);
    if (session !== undefined) this.checkSession(switchId, session, listTimestampNs);
    si.badDigests += badDigests;
    this.health.list(switchId, session, this.intervalOf(aligned) < this.closedBefore ? this.closedBefore : this.intervalOf(aligned), si, digests);
    // (A digest of the switch's very first packet has timestamp 0: still a time.)
    const newest = digests.reduce((m, d) => Math.max(m, d.kind === "io" ? d.ts : d.kind === "msg" ? d.first_ts + d.fct_ns : -1), -1);
    if (newest >= 0) this.clock(switchId).calibrate(listTimestampNs, newest);
    if (endpoints?.length) this.endpoints.learn(switchId, endpoints);
    for (const d of digests) {
      // Endpoint keys to the engine's own (one per address, whichever switch named it); a key with no address is dropped, counted.
      const e = this.endpoints.resolve(switchId, d);
      if (e) this.onDigest(switchId, e);
      else si.unknownEndpoints++;
    }
    // I/O digests come in lists of their own, in order (one P4Runtime digest
    // stream); other digests' lists may pass them (a list not full waits for
    // the agent's timeout, on BMv2 under load 100 ms and more).
    const newestIo = digests.reduce((m, d) => (d.kind === "io" ? Math.max(m, d.ts) : m), -1);
    if (newestIo >= 0) {
      const t = this.clock(switchId).toUnix(newestIo) + this.align(switchId);
      if (t > (this.ioTimes.get(switchId) ?? -(1n << 62n))) this.ioTimes.set(switchId, t);
    }
    if (aligned > (this.watermarks.get(switchId) ?? -(1n << 62n))) this.watermarks.set(switchId, aligned);
    this.advance(aligned);
  }

  /** Where each switch's totals stood after its latest switch_stats record, so that a later run can continue them (resumeSequence). */
  sequencePositions(): SwitchPosition[] {
    return this.health.positions();
  }

  /**
   * Continues a switch's totals where an earlier run left them (a position
   * it took): what the switch sent while nothing listened counts as lost in
   * the first interval of this run, the lists of that run replayed from its
   * journal are not counted twice, and a switch found in another session has
   * restarted meanwhile (counted, clock anew). Before its first list.
   */
  resumeSequence(p: SwitchPosition): void {
    const last = p.intervals?.at(-1);
    const through = last ? BigInt(last.start_unix_ns) + this.options.intervalNs + this.align(p.switchId) : -(1n << 62n);
    this.health.resume(p, through);
  }

  /**
   * A switch that starts a new session has a new clock, counts its digests
   * from 0 again and has lost the I/Os it held: the clock is calibrated
   * anew, the sequence tracking starts over (the earlier session's counts
   * are kept), and its open commands end as incomplete.
   */
  private checkSession(switchId: string, session: number, listTimestampNs: bigint): void {
    const was = this.sessions.get(switchId);
    this.sessions.set(switchId, session);
    if (was === undefined || was === session) return;
    this.clocks.delete(switchId);
    this.ioTimes.delete(switchId);
    for (const [k, o] of [...this.outstanding]) if (o.switchId === switchId) this.timeOut(k, o, listTimestampNs);
    for (const k of [...this.givenUp.keys()]) if (k.startsWith(`${switchId}|`)) this.givenUp.delete(k);
  }

  /**
   * The time up to which every switch has reported: a command is incomplete
   * when its own switch has moved on past the timeout, and an I/O half stops
   * waiting for the other vantage once all switches have moved past the window.
   * A switch that has fallen more than a minute behind the others no longer holds them up.
   */
  private lowWatermark(): bigint {
    let low = this.watermark;
    for (const w of this.watermarks.values()) if (w < low && this.watermark - w < this.options.silentSwitchNs) low = w;
    const first = this.firstNoted;
    if (first !== undefined && first < low && this.watermark - first < this.options.silentSwitchNs && this.awaitsExpected()) low = first;
    return low;
  }

  /** Whether a switch expected to report has not yet. */
  private awaitsExpected(): boolean {
    for (const id of this.expected) if (!this.watermarks.has(id)) return true;
    return false;
  }

  /** Switches that will report and have not yet (an exporter group member's --switch-id): they hold the others' halves meanwhile (see `expected`). */
  expectSwitches(ids: Iterable<string>): void {
    for (const id of ids) this.expected.add(id);
  }

  private onDigest(switchId: string, d: TelemetryDigest): void {
    if (d.kind === "io") this.onIo(switchId, d);
    else if (d.kind === "msg") this.onMsg(switchId, d);
  }

  /**
   * One I/O: (host, target, queue, CID) and the command's PSN, which tells
   * apart successive uses of the CID. Only the PSN's low 16 bits: a Tofino
   * switch sends no more (its compact digest), and its half of an I/O must
   * meet the other vantage's, whichever switch sent that. Two uses of one CID
   * on one queue are confused only if their commands' PSNs are a multiple of
   * 65,536 apart and both wait for their other half at once.
   */
  private static ioKey(host: number, target: number, targetQp: number, cid: number, cmdPsn: number): string {
    return `${host}|${target}|${targetQp}|${cid}|${cmdPsn & 0xffff}`;
  }

  /**
   * A response the switch matched through a queue pairing other than its queue's: the command open for the slot it
   * found is on another host QP (its digest's, or the pairing reported for its target QP), and the switch reported
   * another target QP for the response's queue. A Tofino build
   * keys a queue pair entry by the QP number alone (docs/tofino.md, "Keys, slots and capacity"), and hosts share QP
   * numbers, so a pairing of another host-target pair that took the entry's index answers for it. The figures are
   * that command's, not this response's I/O's: neither gets any. The command's answer is unknown (its slot was taken),
   * the response answers its own queue's command by the reported pairing, as an unpaired one, and each is counted
   * (switch_stats ios_pairing_confused). A build that compares whole keys never confuses them (a pairing it reports is one it lost).
   */
  private confusedPairing(switchId: string, d: IoDigest, at: bigint, align: bigint): boolean {
    if (d.host_qp === 0) return false;
    const paired = this.pairings.get(`${switchId}|${d.host}|${d.target}|${d.host_qp}`);
    if (paired === undefined || paired === d.target_qp) return false;
    const key = `${switchId}|${d.host}|${d.target}|${d.target_qp}|${d.cid}`;
    const open = this.outstanding.get(key);
    if (!open || open.digest.cmd_psn !== d.cmd_psn) return false;
    // The command's host QP: its own digest's, else the pairing reported for its target QP.
    const cmdHostQp = open.digest.host_qp || (this.pairingsByTarget.get(`${switchId}|${d.host}|${d.target}|${d.target_qp}`) ?? 0);
    if (cmdHostQp === 0 || cmdHostQp === d.host_qp) return false;
    (open.unpairedRsp ??= []).push({ atUnixNs: at, hostQp: d.host_qp });
    open.unknownWhateverQp = true;
    this.timeOut(key, open, at + 1n);
    this.switchInterval(switchId, at + align, d.mode).pairingConfused++;
    this.onIo(switchId, { ...d, event: IO_EVENT_UNPAIRED_RSP, target_qp: 0 });
    return true;
  }

  private switchInterval(switchId: string, alignedNs: bigint, mode: number): SwitchInterval {
    const start = this.intervalOf(alignedNs);
    // A closed interval's switch_stats are out: count in the oldest open one.
    return this.intervals.switchInterval(start < this.closedBefore ? this.closedBefore : start, switchId, mode);
  }

  private onIo(switchId: string, d: IoDigest): void {
    const clock = this.clock(switchId);
    const at = clock.toUnix(d.ts);
    const align = this.align(switchId);
    if (d.event === IO_EVENT_QUEUE_PAIR) {
      this.pairings.set(`${switchId}|${d.host}|${d.target}|${d.host_qp}`, d.target_qp);
      this.pairingsByTarget.set(`${switchId}|${d.host}|${d.target}|${d.target_qp}`, d.host_qp);
      return;
    }
    if (d.event === IO_EVENT_RSP && this.confusedPairing(switchId, d, at, align)) return;
    if (d.event === IO_EVENT_UNPAIRED_RSP) {
      // The response names the host's QP only, and the switch no longer
      // holds the queue's pairing (a colliding pairing took its slot). The
      // pairing it reported when it lost it names the I/O: answered, on
      // its queue, with no figure (the switch measured none). Without one,
      // it cannot be attributed to a queue: counted, never matched by
      // guesswork (below: the commands it may have answered are never
      // reported incomplete).
      const targetQp = this.pairings.get(`${switchId}|${d.host}|${d.target}|${d.host_qp}`);
      const key = targetQp === undefined ? undefined : `${switchId}|${d.host}|${d.target}|${targetQp}|${d.cid}`;
      const open = key === undefined ? undefined : this.outstanding.get(key);
      if (!open || key === undefined) {
        this.switchInterval(switchId, at + align, d.mode).untracked++;
        // A command open with this CID on a queue whose pairing the switch
        // did not know at the command either may be the one answered (the
        // first I/O of a queue failing before any data, or of a pair new in
        // the polling window): if it gets no response of its own, its answer
        // is unknown, never incomplete (SPEC §3: an I/O whose response was
        // seen never is).
        for (const k of this.openByCid.get(`${switchId}|${d.host}|${d.target}|${d.cid}`) ?? []) {
          const o = this.outstanding.get(k)!;
          if (o.digest.host_qp !== 0 && o.digest.host_qp !== d.host_qp) continue;
          const seen = (o.unpairedRsp ??= []);
          if (seen.some((r) => r.hostQp === d.host_qp)) continue;
          if (seen.length < UNPAIRED_RSP_MAX) seen.push({ atUnixNs: at, hostQp: d.host_qp });
          else o.unknownWhateverQp = true;
        }
        return;
      }
      if (at - open.cmdUnixNs > this.options.ioTimeoutNs) {
        // After the I/O timeout on its switch's clock (as below): late.
        this.timeOut(key, open);
        this.givenUp.delete(key);
        this.switchInterval(switchId, at + align, d.mode).lateResponses++;
        return;
      }
      this.close(key, open);
      const o = open.digest;
      this.addHalf(MetricsEngine.ioKey(o.host, o.target, o.target_qp, o.cid, o.cmd_psn), {
        switchId, host: o.host, target: o.target, hostQp: d.host_qp, targetQp: o.target_qp, cid: o.cid, cmdPsn: o.cmd_psn,
        inCapsule: (o.flags & IO_FLAG_IN_CAPSULE) !== 0, vantage: o.vantage, op: o.op === IO_OP_WRITE ? "write" : "read", bytes: o.bytes, status: d.status, mode: d.mode,
        e2e: null, dal: null, dpl: null, incomplete: false, answered: true, cmdUnixNs: open.cmdUnixNs, atUnixNs: at, atAlignedNs: at + align,
      });
      return;
    }
    const outKey = `${switchId}|${d.host}|${d.target}|${d.target_qp}|${d.cid}`;
    if (d.event === IO_EVENT_CMD) {
      const open = this.outstanding.get(outKey);
      if (open && open.digest.cmd_psn === d.cmd_psn) return; // the same command reported twice
      if (this.givenUp.get(outKey)?.cmdPsn === d.cmd_psn) return; // ... after it was given up
      this.givenUp.delete(outKey);
      // NVMe reuses a CID on a queue only after its completion: an open I/O
      // with this key lost its response, and is closed at once.
      if (open) this.timeOut(outKey, open, at, false, open.seq && open.seq.tracker.unwrap(d.seq) - 1);
      // A command of a pair out of the window came before the rotation that
      // took the pair out (the switch reports no command of a pair it does
      // not watch): its digest was on its way as the controller rotated.
      // (In full mode every pair is watched: a switch back from polling has no pair out.)
      if (d.mode === MODE_FULL) this.away.get(switchId)?.delete(`${d.host}|${d.target}`);
      // A switch that names the window occurrence (gen): the command's own occurrence ended (a window_left named
      // it), whenever its note and this digest came. Otherwise the notes' order decides.
      const pair = `${d.host}|${d.target}`;
      const ended = d.gen ? this.endedGens.get(switchId)?.get(pair)?.has(d.gen) === true : false;
      const away = d.gen ? (ended ? { event: this.windowEvents } : undefined) : this.away.get(switchId)?.get(pair);
      const seq = this.options.wholeSequence ? this.health.sequenceAt(switchId, d.seq) : undefined;
      this.open(outKey, { switchId, digest: d, cmdUnixNs: at, ioKey: MetricsEngine.ioKey(d.host, d.target, d.target_qp, d.cid, d.cmd_psn), ...(away === undefined ? {} : { leftWindowEvent: away.event }), ...(seq ? { seq } : {}) });
      return;
    }
    let open = this.outstanding.get(outKey);
    if (open && open.digest.cmd_psn === d.cmd_psn && this.answeredAfterNs(d, at - open.cmdUnixNs) > this.options.ioTimeoutNs) {
      // Answered after the I/O timeout on its switch's clock: the I/O timed
      // out first, whenever the timeout scan (every 10 ms of digest time)
      // runs and however the switch put its digests in lists.
      this.timeOut(outKey, open);
      open = undefined;
    }
    if (d.gen && (open && open.digest.cmd_psn === d.cmd_psn ? open.digest.gen !== d.gen : this.givenUp.get(outKey)?.cmdPsn !== d.cmd_psn)) {
      // Seen in another occurrence of the pair in the window than its command (the switch matched it to the
      // command it holds): the pair was out meanwhile, and the response may answer a command of the CID sent then,
      // which the switch did not see. Or its command's digest is not here, and so neither is the occurrence it came
      // in. Which command it answers is unknown: this vantage's figures are absent, as for a response that went
      // unwatched, and none is made from the response alone.
      if (open && open.digest.cmd_psn === d.cmd_psn) this.timeOut(outKey, open, at, true);
      else this.switchInterval(switchId, at + align, d.mode).leftWindow++;
      return;
    }
    // The command's own occurrence: its own response, whatever the notes' order.
    if (open && open.digest.cmd_psn === d.cmd_psn && open.leftWindowEvent !== undefined && !d.gen && this.fromLaterWindow(switchId, open.leftWindowEvent, d)) {
      // Which command it answers is unknown: this vantage's figures are absent, as for a response that went unwatched.
      this.timeOut(outKey, open, at, true);
      return;
    }
    let hostQp = d.host_qp;
    if (open && open.digest.cmd_psn === d.cmd_psn) {
      if (hostQp === 0) hostQp = open.digest.host_qp;
      this.close(outKey, open);
    } else if (this.givenUp.get(outKey)?.cmdPsn === d.cmd_psn) {
      // Its I/O was reported incomplete already (no response within the I/O timeout): counted, not recorded twice.
      this.givenUp.delete(outKey);
      this.switchInterval(switchId, at + align, d.mode).lateResponses++;
      return;
    }
    const write = d.op === IO_OP_WRITE;
    const inCapsule = (d.flags & IO_FLAG_IN_CAPSULE) !== 0;
    const dataSeen = (d.flags & IO_FLAG_DATA_SEEN) !== 0;
    const rrSeen = (d.flags & IO_FLAG_RR_SEEN) !== 0;
    // The I/O's own last data packet (read: d_last; write: rr_last), not only one of its data packets.
    const lastSeen = (write ? rrSeen : dataSeen) && (d.flags & IO_FLAG_LAST_LOST) === 0;
    let dal: number | null = null;
    let dpl: number | null = null;
    if (d.vantage & VANTAGE_S) {
      // DAL needs both the first and the last data event at the storage side;
      // an in-capsule write has none: all of its e2e at S is the target's.
      if (inCapsule) dal = d.e2e_ns;
      else if (dataSeen && lastSeen) dal = d.to_data_ns + d.from_data_ns;
    }
    if (d.vantage & VANTAGE_C && write && !inCapsule && dataSeen && rrSeen) dpl = d.host_prep_ns;
    const half: IoHalf = {
      switchId,
      host: d.host,
      target: d.target,
      hostQp,
      targetQp: d.target_qp,
      cid: d.cid,
      cmdPsn: d.cmd_psn,
      inCapsule,
      vantage: d.vantage,
      op: write ? "write" : "read",
      bytes: d.bytes,
      status: d.status,
      mode: d.mode,
      e2e: d.e2e_ns,
      dal,
      dpl,
      incomplete: false,
      cmdUnixNs: at - BigInt(d.e2e_ns),
      atUnixNs: at,
      atAlignedNs: at + align,
    };
    this.addHalf(MetricsEngine.ioKey(d.host, d.target, d.target_qp, d.cid, d.cmd_psn), half);
  }

  /** An open command's key in openByCid. */
  private static cidKey(o: Outstanding): string {
    return `${o.switchId}|${o.digest.host}|${o.digest.target}|${o.digest.cid}`;
  }

  private open(key: string, o: Outstanding): void {
    this.outstanding.set(key, o);
    const byCid = MetricsEngine.cidKey(o);
    const keys = this.openByCid.get(byCid);
    if (keys) keys.add(key);
    else this.openByCid.set(byCid, new Set([key]));
    this.openIos.set(o.ioKey, (this.openIos.get(o.ioKey) ?? 0) + 1);
  }

  private close(key: string, o: Outstanding): void {
    this.outstanding.delete(key);
    const byCid = MetricsEngine.cidKey(o);
    const keys = this.openByCid.get(byCid);
    keys?.delete(key);
    if (keys?.size === 0) this.openByCid.delete(byCid);
    const n = this.openIos.get(o.ioKey) ?? 0;
    if (n > 1) this.openIos.set(o.ioKey, n - 1);
    else this.openIos.delete(o.ioKey);
  }

  private addHalf(key: string, half: IoHalf): void {
    if ((half.vantage & (VANTAGE_C | VANTAGE_S)) === (VANTAGE_C | VANTAGE_S)) {
      this.emitIo(half, half);
      return;
    }
    const list = this.halves.get(key) ?? [];
    const idx = list.findIndex((h) => (h.vantage & half.vantage) === 0 && h.switchId !== half.switchId);
    if (idx >= 0) {
      const other = list.splice(idx, 1)[0]!;
      if (list.length === 0) this.halves.delete(key);
      const c = half.vantage & VANTAGE_C ? half : other;
      const s = half.vantage & VANTAGE_C ? other : half;
      this.emitIo(c, s);
    } else {
      list.push(half);
      this.halves.set(key, list);
    }
  }

  private emitIo(cHalf: IoHalf | undefined, sHalf: IoHalf | undefined): void {
    const c = this.settleUnknown(cHalf, sHalf);
    const s = this.settleUnknown(sHalf, cHalf);
    const first = c ?? s!;
    const incomplete = (c?.incomplete ?? false) || (s?.incomplete ?? false);
    const e2eC = c && !c.incomplete ? c.e2e : null;
    const e2eS = s && !s.incomplete ? s.e2e : null;
    const rtt = e2eC !== null && e2eS !== null ? e2eC - e2eS : null;
    const cmdUnix = first.cmdUnixNs;
    const at = first.atUnixNs;
    const interval = this.intervalOf(at);
    const switchId = first.switchId;
    // The half that saw the response (a half whose response went unwatched has no e2e).
    // A half whose response the switch saw on a queue it had lost the pairing of has its status, and no e2e.
    const complete = c && !c.incomplete && c.e2e !== null ? c : s && !s.incomplete && s.e2e !== null ? s : c?.answered ? c : s?.answered ? s : undefined;
    const rec: IoRecordJson = {
      type: "io",
      switch_id: switchId,
      interval_start_unix_ns: interval.toString(),
      host: this.endpoints.text(first.host),
      target: this.endpoints.text(first.target),
      host_qp: c?.hostQp || s?.hostQp || 0,
      target_qp: first.targetQp,
      cid: first.cid,
      // The halves agree on the low 16 bits; a full-layout half has all 24.
      cmd_psn: Math.max(c?.cmdPsn ?? 0, s?.cmdPsn ?? 0),
      op: first.op,
      bytes: first.bytes,
      in_capsule: first.inCapsule,
      nvme_status: complete?.status ?? 0,
      e2e_c_ns: e2eC,
      e2e_s_ns: e2eS,
      rtt_ns: rtt,
      dal_ns: s && !s.incomplete ? s.dal : null,
      dpl_ns: c && !c.incomplete ? c.dpl : null,
      incomplete,
      mode: modeName(first.mode),
      c_switch_id: c ? c.switchId : null,
      s_switch_id: s ? s.switchId : null,
      cmd_unix_ns: cmdUnix.toString(),
    };
    const silent = (c?.silent ? 1 : 0) + (s?.silent ? 1 : 0);
    if (silent) this.silentRecords.set(rec, silent);
    if (this.options.perEventRecords) this.sink(rec);
    if (this.isLate(switchId, interval + this.align(switchId))) return;
    this.intervals.addIo(interval + this.align(switchId), rec, first.mode);
  }

  /** True (and counted) when an interval has been closed already: its aggregates are out and are not emitted again. */
  private isLate(switchId: string, bucketStart: bigint): boolean {
    if (bucketStart >= this.closedBefore) return false;
    this.switchInterval(switchId, this.closedBefore, this.health.mode(switchId) ?? 0).lateRecords++;
    return true;
  }

  private onMsg(switchId: string, d: MsgDigest): void {
    const clock = this.clock(switchId);
    const firstUnix = clock.toUnix(d.first_ts);
    const endUnix = firstUnix + BigInt(d.fct_ns);
    const interval = this.intervalOf(endUnix);
    const bucketStart = interval + this.align(switchId);
    if (isFlowOnly(d)) {
      // Packets counted outside any message, in the interval they arrived
      // in: the flow's figures only, no message record.
      this.flowOnlyDigests.set(switchId, (this.flowOnlyDigests.get(switchId) ?? 0) + 1);
      if (this.isLate(switchId, bucketStart)) return;
      this.intervals.addFlowPackets(bucketStart, switchId, d);
      return;
    }
    const fet = d.fct_ns > 0 ? (d.bytes * 8 * 1e9) / d.fct_ns : null;
    const gap = d.flags & MSG_FLAG_GAP_VALID ? d.gap_ns : null;
    if (this.options.perEventRecords) {
      const rec: MessageRecordJson = {
        type: "message",
        switch_id: switchId,
        interval_start_unix_ns: interval.toString(),
        src: this.endpoints.text(d.src),
        dst: this.endpoints.text(d.dst),
        dest_qp: d.dest_qp,
        first_psn: d.first_psn,
        last_psn: d.last_psn,
        bytes: d.bytes,
        packets: d.packets,
        retransmitted: d.retransmitted,
        fct_ns: d.fct_ns,
        fet_bps: fet,
        fnr: d.packets > 0 ? d.retransmitted / d.packets : 0,
        ecn_ce_packets: d.ecn_ce,
        gap_ns: gap,
        mode: modeName(d.mode),
        first_unix_ns: firstUnix.toString(),
      };
      this.sink(rec);
    }
    if (this.isLate(switchId, bucketStart)) return;
    this.intervals.addMessage(bucketStart, switchId, d, fet, gap);
  }

  /**
   * A command that got no response: an incomplete half of its I/O, counted
   * for its switch. `atUnixNs`: when it was given up (the timeout, or a new
   * command with its key).
   */
  private timeOut(key: string, o: Outstanding, atUnixNs = o.cmdUnixNs + this.options.ioTimeoutNs, unwatchedResponse = false, seqBound?: number): void {
    this.close(key, o);
    const d = o.digest;
    this.givenUp.set(key, { cmdPsn: d.cmd_psn, atAlignedNs: atUnixNs + this.align(o.switchId) });
    // Its pair left the polling window before the response could be seen:
    // the response went unwatched, not missing. This vantage's figures are
    // absent, and the I/O is not reported incomplete (SPEC §3: an I/O whose
    // response crossed the switch never is).
    const unwatched = unwatchedResponse || o.leftWindowEvent !== undefined;
    // A response with its CID came on a queue the switch had no pairing of
    // (counted then as untracked): perhaps its own, so not incomplete either.
    const unknown = !unwatched && o.unpairedRsp?.some((r) => r.atUnixNs < atUnixNs) === true;
    if (!this.options.wholeSequence && !unwatched && !unknown) {
      // A share of the switch's digests: whether one lost after the command may have been the response is its controller's to say.
      const note = MetricsEngine.noteKey(o.switchId, d.host, d.target, d.target_qp, d.cid, d.cmd_psn);
      // Its controller gives it at its own timeout, from the same digests, as late as a list could still fill a gap:
      // past that (and a correlation window for the way through Kafka), none is coming soon (its controller down).
      const wait = this.options.ioTimeoutNs + LIST_DELAY_MAX_NS + this.options.correlationWindowNs;
      const v: Verdict = { o, atUnixNs, hi: 0, note, decideAt: this.now() + (wait < this.options.silentSwitchNs ? wait : this.options.silentSwitchNs) };
      if (!this.decide(v, false)) this.await(v);
      return;
    }
    if (unwatched || unknown || !o.seq) {
      this.giveUp(o, atUnixNs, unwatched ? "unwatched" : unknown ? "unknown" : "incomplete");
      return;
    }
    // No response seen: incomplete only if every digest the switch sent
    // between the command and now (or the command that reused its CID) came.
    // One missing may have been the response: wait for it while a list could
    // still bring it.
    const v: Verdict = { o, atUnixNs, hi: seqBound ?? o.seq.tracker.highest, decideAt: this.now() + LIST_DELAY_MAX_NS, ...(seqBound === undefined ? {} : { bounded: true }) };
    if (!this.decide(v, false)) this.await(v);
  }

  /** The engine's time (common clock), the list being read included. */
  private now(): bigint {
    return this.listNs > this.watermark ? this.listNs : this.watermark;
  }

  private await(v: Verdict): void {
    this.verdicts.push(v);
    const cmd = v.o.cmdUnixNs + this.align(v.o.switchId);
    if (cmd < this.verdictsFrom) this.verdictsFrom = cmd;
    this.openIos.set(v.o.ioKey, (this.openIos.get(v.o.ioKey) ?? 0) + 1); // the other vantage's half waits for it
  }

  /** The IPv6 address of one of the engine's endpoint keys (onGivenUp's digests are on them). */
  endpointAddress(k: number): string | undefined {
    return isEndpointKey(k) ? this.endpoints.text(k) : undefined;
  }

  private static noteKey(switchId: string, host: number, target: number, targetQp: number, cid: number, cmdPsn: number): string {
    return `${switchId}|${host}|${target}|${targetQp}|${cid}|${cmdPsn}`;
  }

  /**
   * A controller's verdict on a command of its switch it gave up with no
   * response seen (IO_GIVEN_UP, from onGivenUp; `host` and `target` on its
   * engine's keys, an IPv6 one named in `endpoints`): for an engine holding
   * a share of the switch's digests.
   */
  givenUpNote(switchId: string, n: { host: number; target: number; targetQp: number; cid: number; cmdPsn: number; lost: boolean }, endpoints?: readonly EndpointEntry[]): void {
    // Its IPv6 endpoints are on its controller's engine keys, with their addresses (endpointAddress), not the switch's.
    const key = (k: number) => {
      if (!isEndpointKey(k)) return k;
      const a = endpoints?.find((e) => e.key === k)?.address;
      return a === undefined ? undefined : this.endpoints.ofAddress(a);
    };
    const host = key(n.host);
    const target = key(n.target);
    if (host === undefined || target === undefined) return;
    this.notedVerdicts.set(MetricsEngine.noteKey(switchId, host, target, n.targetQp, n.cid, n.cmdPsn), { lost: n.lost, atNs: this.watermark });
  }

  /**
   * A timed-out command's verdict, if it can be given (`final`: nothing more
   * will come): incomplete when every digest between its command's and `hi`
   * came, "answer unknown" (ios_answer_lost) when one of them was lost.
   */
  private decide(v: Verdict, final: boolean): boolean {
    if (v.note !== undefined) {
      const n = this.notedVerdicts.get(v.note);
      if (!n && !final && this.watermark < v.decideAt) return false;
      if (n) this.notedVerdicts.delete(v.note);
      // No verdict came (its controller gone): unknown.
      this.giveUp(v.o, v.atUnixNs, n && !n.lost ? "incomplete" : "lost");
      return true;
    }
    // Its switch's verdicts held (a journal being replayed): given once the controller has taken the switch on.
    if (!final && this.heldVerdicts.has(v.o.switchId)) return false;
    // Its pair's window left unseen (leftUnheld) while the verdict waited.
    if (v.o.leftWindowEvent !== undefined) {
      this.giveUp(v.o, v.atUnixNs, "unwatched");
      return true;
    }
    // After a controller's restart, numbers past those its journal held may have gone to the controller that died.
    const tail = this.tails.get(v.o.switchId);
    const hi = tail && !v.bounded && tail.tracker === v.o.seq!.tracker && tail.from > v.hi ? tail.from : v.hi;
    const gap = v.o.seq!.tracker.gapIn(v.o.seq!.n + 1, hi);
    if (gap === "open" && !final && this.watermark < v.decideAt) return false;
    this.giveUp(v.o, v.atUnixNs, gap === "none" ? "incomplete" : "lost");
    return true;
  }

  /** The verdicts that can be given now (every one at the end of a run). */
  private decideVerdicts(final: boolean): void {
    if (!this.verdicts.length) return;
    let from = 1n << 62n;
    this.verdicts = this.verdicts.filter((v) => {
      if (!this.decide(v, final)) {
        const cmd = v.o.cmdUnixNs + this.align(v.o.switchId);
        if (cmd < from) from = cmd;
        return true;
      }
      const n = this.openIos.get(v.o.ioKey) ?? 0;
      if (n > 1) this.openIos.set(v.o.ioKey, n - 1);
      else this.openIos.delete(v.o.ioKey);
      return false;
    });
    this.verdictsFrom = from;
  }

  /**
   * The half of a command given up with no response seen: `incomplete`
   * (none crossed the switch within the I/O timeout), or with the answer
   * unknown: its pair's window left (`unwatched`), a response with its CID on
   * a queue of unknown pairing (`unknown`), digests lost after it (`lost`).
   */
  private giveUp(o: Outstanding, atUnixNs: bigint, why: "incomplete" | "unwatched" | "unknown" | "lost"): void {
    const d = o.digest;
    const atAligned = atUnixNs + this.align(o.switchId);
    const si = this.switchInterval(o.switchId, atAligned, d.mode);
    if (why === "unwatched") si.leftWindow++;
    else if (why === "incomplete") si.incomplete++;
    else if (why === "lost") si.answerLost++;
    if ((why === "incomplete" || why === "lost") && this.options.wholeSequence) this.onGivenUp?.(o.switchId, d, o.cmdUnixNs, why === "lost");
    const before = why === "unknown" ? o.unpairedRsp!.filter((r) => r.atUnixNs < atUnixNs) : [];
    this.addHalf(MetricsEngine.ioKey(d.host, d.target, d.target_qp, d.cid, d.cmd_psn), {
      switchId: o.switchId, host: d.host, target: d.target, hostQp: d.host_qp, targetQp: d.target_qp, cid: d.cid, cmdPsn: d.cmd_psn,
      inCapsule: (d.flags & IO_FLAG_IN_CAPSULE) !== 0, vantage: d.vantage, op: d.op === IO_OP_WRITE ? "write" : "read", bytes: d.bytes, status: 0, mode: d.mode,
      e2e: null, dal: null, dpl: null, incomplete: why === "incomplete", cmdUnixNs: o.cmdUnixNs, atUnixNs, atAlignedNs: atAligned,
      ...(why === "unknown" ? { unknownQps: o.unknownWhateverQp ? undefined : before.map((r) => r.hostQp) } : {}),
    });
  }

  /**
   * A half whose answer was unknown (responses with its CID on queues whose
   * pairing its switch did not know) is incomplete after all when the other
   * vantage saw this I/O's own response, on a host QP none of those
   * responses came on: none of them was its answer. Counted as incomplete
   * at its switch then.
   */
  private settleUnknown(h: IoHalf | undefined, other: IoHalf | undefined): IoHalf | undefined {
    if (!h?.unknownQps || !other || other === h || other.incomplete || (other.e2e === null && !other.answered) || other.hostQp === 0 || h.unknownQps.includes(other.hostQp)) return h;
    this.switchInterval(h.switchId, h.atAlignedNs, h.mode).incomplete++;
    return { ...h, incomplete: true, unknownQps: undefined };
  }

  /**
   * A command whose switch went silent (nothing from it for silentSwitchNs)
   * before the I/O timeout passed on its clock: the response may have
   * crossed it unseen by us, so its half says only that the command was seen
   * (no figure, not incomplete, the status of the other vantage if that saw
   * the response), and it goes out now, with the other vantage's half if
   * that waits. Counted (givenUpSilentSwitch); a response that still comes
   * is counted as late, never made a second record.
   */
  private giveUpSilent(key: string, o: Outstanding, lastSeenUnixNs: bigint): void {
    const at = lastSeenUnixNs > o.cmdUnixNs ? lastSeenUnixNs : o.cmdUnixNs;
    this.close(key, o);
    const d = o.digest;
    const atAligned = at + this.align(o.switchId);
    this.givenUp.set(key, { cmdPsn: d.cmd_psn, atAlignedNs: atAligned });
    this.givenUpSilent.set(o.switchId, (this.givenUpSilent.get(o.switchId) ?? 0) + 1);
    this.addHalf(MetricsEngine.ioKey(d.host, d.target, d.target_qp, d.cid, d.cmd_psn), {
      switchId: o.switchId, host: d.host, target: d.target, hostQp: d.host_qp, targetQp: d.target_qp, cid: d.cid, cmdPsn: d.cmd_psn,
      inCapsule: (d.flags & IO_FLAG_IN_CAPSULE) !== 0, vantage: d.vantage, op: d.op === IO_OP_WRITE ? "write" : "read", bytes: d.bytes, status: 0, mode: d.mode,
      e2e: null, dal: null, dpl: null, incomplete: false, silent: true, cmdUnixNs: o.cmdUnixNs, atUnixNs: at, atAlignedNs: atAligned,
    });
  }

  /** I/O records made with commands given up on a silent switch: how many of its halves were (1, or 2 when both switches went silent). */
  private readonly silentRecords = new WeakMap<object, number>();

  /** How many commands given up on a silent switch the record carries (0 for any other record). */
  givenUpSilentIn(r: RecordJson): number {
    return this.silentRecords.get(r) ?? 0;
  }

  /** Per switch: digests of flow packets counted outside any message (isFlowOnly), which make no message record. */
  readonly flowOnlyDigests = new Map<string, number>();

  /** Per switch: its open commands given up because it went silent (giveUpSilent). */
  readonly givenUpSilent = new Map<string, number>();

  /** All switches' open commands given up because their switch went silent. */
  get givenUpSilentSwitch(): number {
    let n = 0;
    for (const v of this.givenUpSilent.values()) n += v;
    return n;
  }

  /** Per switch: the host–target pairs (`host|target`, the engine's keys) out of its polling window, and the window event that took each out. */
  private readonly away = new Map<string, Map<string, { event: number; seen?: bigint }>>();
  /** Per switch: the window event at which each pair last came back into its window. */
  private readonly rejoined = new Map<string, Map<string, number>>();
  /** Window events (rotations' departures and returns) taken so far: what orders them against the commands. */
  private windowEvents = 0;
  /**
   * Per switch, per pair (`host|target`): the window occurrences (gen) a
   * window_left named, until a join names the value again (it wraps after
   * 255 occurrences). A command digest naming one of them came from before
   * its pair left, however late it arrives.
   */
  private readonly endedGens = new Map<string, Map<string, Set<number>>>();

  /** The pairs' engine keys with the occurrence each names (0: none). */
  private pairGens(switchId: string, pairs: ReadonlyArray<{ host: number; target: number; gen?: number }>): Array<{ key: string; gen: number }> {
    return pairs.flatMap((p) => {
      const host = this.endpoints.local(switchId, p.host);
      const target = this.endpoints.local(switchId, p.target);
      return host === undefined || target === undefined ? [] : [{ key: `${host}|${target}`, gen: p.gen ?? 0 }];
    });
  }

  /**
   * Whether a response to a command whose pair left the window (at window
   * event `leftEvent`) may come from a later window, answering a command of
   * the CID the switch did not see (it keeps the older one): the pair came
   * back before the response; or, still out, a rotation that puts it back
   * was written (windowBound) and the response is later than the newest
   * switch time the controller had before that write. A response while the
   * pair is out and no later than that is the command's own, sent before
   * the rotation.
   */
  private fromLaterWindow(switchId: string, leftEvent: number, d: IoDigest): boolean {
    const pair = `${d.host}|${d.target}`;
    if ((this.rejoined.get(switchId)?.get(pair) ?? -1) > leftEvent) return true;
    const bound = this.away.get(switchId)?.get(pair)?.seen;
    return bound !== undefined && this.clock(switchId).unwrap(d.ts) > bound;
  }

  /** The engine's `host|target` keys of a switch's pairs (those whose endpoint keys have addresses). */
  private pairKeys(switchId: string, pairs: ReadonlyArray<{ host: number; target: number }>, endpoints?: readonly EndpointEntry[]): string[] {
    if (endpoints?.length) this.endpoints.learn(switchId, endpoints);
    return this.pairGens(switchId, pairs).map((p) => p.key);
  }

  /**
   * A polling rotation took these host-target pairs out of the switch's
   * window: the responses of their I/Os
   * open there are no longer watched, and so are those of the commands whose
   * digests come after this (the switch reports no command of a pair it does
   * not watch: they were on their way), until the pairs are back
   * (windowJoined). Order, not time, decides: the controller hands on the
   * rotation after every digest it had received.
   */
  windowLeft(switchId: string, pairs: ReadonlyArray<{ host: number; target: number; gen?: number }>, endpoints?: readonly EndpointEntry[], seenTs?: number): void {
    const keys = this.pairKeys(switchId, pairs, endpoints);
    if (!keys.length) return;
    // Occurrences named: exactly the commands seen in the occurrence that ended (now or when they come).
    const gens = new Map<string, number>();
    let ended = this.endedGens.get(switchId);
    for (const { key, gen } of this.pairGens(switchId, pairs)) {
      if (!gen) continue;
      gens.set(key, gen);
      if (!ended) this.endedGens.set(switchId, (ended = new Map()));
      let set = ended.get(key);
      if (!set) ended.set(key, (set = new Set()));
      set.add(gen);
    }
    const event = ++this.windowEvents;
    // `seenTs`: a join of these pairs written behind this rotation already, its bound (windowBound).
    const seen = seenTs === undefined ? undefined : this.clock(switchId).unwrap(seenTs);
    let away = this.away.get(switchId);
    if (!away) this.away.set(switchId, (away = new Map()));
    for (const k of keys) away.set(k, seen === undefined ? { event } : { event, seen });
    const left = new Set(keys);
    for (const o of this.outstanding.values()) {
      if (o.switchId !== switchId || o.leftWindowEvent !== undefined) continue;
      const pair = `${o.digest.host}|${o.digest.target}`;
      if (!left.has(pair)) continue;
      const gen = gens.get(pair);
      if (gen === undefined || !o.digest.gen || o.digest.gen === gen) o.leftWindowEvent = event;
    }
  }

  /** Per switch: the first number of its sequence that lists sent to a controller that died may have held (tailMayBeLost). */
  private readonly tails = new Map<string, { tracker: SeqTracker; from: number }>();
  /** Switches whose verdicts wait for their controller to take them on (holdVerdicts). */
  private readonly heldVerdicts = new Set<string>();

  /**
   * A controller about to replay its journal: what the controller before it
   * journaled is not all the switch did (a rotation's note follows its write;
   * lists after the last journaled are gone), so no verdict on a command of
   * the switch is given until this one has taken the switch on and read its
   * watchlist (releaseVerdicts).
   */
  holdVerdicts(switchId: string): void {
    this.heldVerdicts.add(switchId);
  }

  /** The verdicts held for the switch are given as they come due, a list's delay from now at the earliest. */
  releaseVerdicts(switchId: string): void {
    if (!this.heldVerdicts.delete(switchId)) return;
    const due = this.now() + LIST_DELAY_MAX_NS;
    for (const v of this.verdicts) if (v.o.switchId === switchId && v.note === undefined && v.decideAt < due) v.decideAt = due;
    this.decideVerdicts(false);
  }

  /**
   * A controller restarted on its journal, which it has replayed: lists the
   * switch sent to the controller before it after the last one journaled
   * were never acknowledged, and are gone. Nothing tells how many until the
   * switch's next digest (its number shows the gap): until then, a command
   * whose response is not here may have had it there; its answer is unknown
   * once no list can bring the next number (the verdict's wait), not
   * incomplete.
   */
  tailMayBeLost(switchId: string): void {
    const tracker = this.health.sequenceOf(switchId);
    if (tracker && tracker.highest >= 0) this.tails.set(switchId, { tracker, from: tracker.highest + 1 });
  }

  /**
   * A controller took its switch on (restarted on its journal, a takeover)
   * and read its watchlist: `watching`, the pairs on it. A command seen while
   * the switch was polling (its digest's mode) whose pair is not among them,
   * or is in another occurrence than the one the command names, left the
   * window unseen: the rotation that took it out was written by
   * the earlier controller, killed before its note of it (which follows the
   * write) was journaled. Its response goes unwatched, as after that note.
   * Returns how many commands.
   */
  leftUnheld(switchId: string, watching: ReadonlyArray<{ host: number; target: number; gen?: number }>, endpoints?: readonly EndpointEntry[]): number {
    if (endpoints?.length) this.endpoints.learn(switchId, endpoints);
    // Each pair on the watchlist with the occurrence (gen) it holds there (0: a switch that names none).
    const held = new Map(this.pairGens(switchId, watching).map((p) => [p.key, p.gen]));
    let event: number | undefined;
    let n = 0;
    // The commands still open, and those timed out whose verdict waits (holdVerdicts).
    for (const o of [...this.outstanding.values(), ...this.verdicts.filter((v) => v.note === undefined).map((v) => v.o)]) {
      if (o.switchId !== switchId || o.leftWindowEvent !== undefined || o.digest.mode === MODE_FULL) continue;
      const gen = held.get(`${o.digest.host}|${o.digest.target}`);
      // Still watched in the occurrence the command was seen in (a response of it is its own, whatever else).
      if (gen !== undefined && (!gen || !o.digest.gen || gen === o.digest.gen)) continue;
      o.leftWindowEvent = event ??= ++this.windowEvents;
      n++;
    }
    return n;
  }

  /**
   * A rotation that puts these pairs (out of the switch's window) back was
   * written; `seenTs`, the newest switch time (48-bit ns) the controller had
   * from the switch before the write. Until the pairs are back
   * (windowJoined), a response later than that is not taken for its
   * command's own: it may come from the new window.
   */
  windowBound(switchId: string, pairs: ReadonlyArray<{ host: number; target: number }>, seenTs: number, endpoints?: readonly EndpointEntry[]): void {
    const keys = this.pairKeys(switchId, pairs, endpoints);
    const away = this.away.get(switchId);
    if (!keys.length || !away) return;
    const seen = this.clock(switchId).unwrap(seenTs);
    for (const k of keys) {
      const a = away.get(k);
      if (a && (a.seen === undefined || seen < a.seen)) a.seen = seen;
    }
  }

  /** A polling rotation put these pairs (back) into the switch's window: their commands from here on are watched. */
  windowJoined(switchId: string, pairs: ReadonlyArray<{ host: number; target: number; gen?: number }>, endpoints?: readonly EndpointEntry[]): void {
    const keys = this.pairKeys(switchId, pairs, endpoints);
    if (!keys.length) return;
    const ended = this.endedGens.get(switchId);
    if (ended) {
      for (const { key, gen } of this.pairGens(switchId, pairs)) {
        const set = ended.get(key);
        if (!set || !gen) continue;
        set.delete(gen);
        if (set.size === 0) ended.delete(key);
      }
    }
    const event = ++this.windowEvents;
    let back = this.rejoined.get(switchId);
    if (!back) this.rejoined.set(switchId, (back = new Map()));
    const away = this.away.get(switchId);
    for (const k of keys) {
      if (!away?.delete(k)) continue; // never out, or back already: nothing it answers can be mistaken
      back.set(k, event);
    }
  }

  /**
   * How long after its command a response came, on the switch's clock: the
   * e2e the switch measured between the two packets (32 bits, so unwrapped
   * around `sinceCommandNs`, the digests' times apart). Those times are the
   * lists' in the compact layout (Tofino's), and a response's list may leave
   * later after its packet than its command's did: the I/O was answered in
   * time although the lists are further apart.
   */
  private answeredAfterNs(d: IoDigest, sinceCommandNs: bigint): bigint {
    const e2e = BigInt(d.e2e_ns);
    if (sinceCommandNs <= e2e) return e2e;
    return e2e + ((sinceCommandNs - e2e + E2E_WRAP_NS / 2n) / E2E_WRAP_NS) * E2E_WRAP_NS;
  }

  /** Moves time forward (on the common clock): emits I/Os that timed out and intervals that are over. */
  advance(nowAlignedNs: bigint): void {
    if (nowAlignedNs > this.watermark) this.watermark = nowAlignedNs;
    const now = this.watermark;
    // Timeouts and windows are scanned every 10 ms of digest time, not per list.
    if (now - this.lastScan < 10_000_000n) return;
    this.lastScan = now;
    const low = this.lowWatermark();
    for (const [k, o] of this.outstanding) {
      const own = this.watermarks.get(o.switchId) ?? now;
      // The switch's clock as its I/O digests read it, which a response can
      // only follow: a list's timestamp (the agent's) runs ahead of its
      // digests by the list's delay, which varies, and other digests' lists
      // may pass the I/O digests' (above), so it moves the timeout only
      // LIST_DELAY_MAX_NS later. Whether an I/O was answered in time is its
      // response's own time (onIo).
      const io = this.ioTimes.get(o.switchId);
      const clock = io !== undefined && io > own - LIST_DELAY_MAX_NS ? io : own - LIST_DELAY_MAX_NS;
      if (clock - (o.cmdUnixNs + this.align(o.switchId)) > this.options.ioTimeoutNs) this.timeOut(k, o);
      else if (now - own >= this.options.silentSwitchNs) {
        // Its switch gone silent (long after any list still on its way):
        // past the I/O timeout on the switch's clock when it fell silent,
        // the I/O is incomplete; before it, whether the response crossed it
        // is unknown.
        if (own - (o.cmdUnixNs + this.align(o.switchId)) > this.options.ioTimeoutNs) this.timeOut(k, o);
        else this.giveUpSilent(k, o, own - this.align(o.switchId));
      }
    }
    this.decideVerdicts(false);
    for (const [k, n] of this.notedVerdicts) if (now - n.atNs > 2n * this.options.silentSwitchNs) this.notedVerdicts.delete(k);
    // A response later than this is taken for an I/O of its own (its command's digest lost).
    for (const [k, g] of this.givenUp) if (now - g.atAlignedNs > LATE_RESPONSE_MEMORY_NS) this.givenUp.delete(k);
    for (const [k, list] of this.halves) {
      const keep = list.filter((h) => {
        // The other vantage still holds the command open: its half comes when that ends (bounded by its I/O timeout).
        if (low - h.atAlignedNs <= this.options.correlationWindowNs || this.openIos.has(k)) return true;
        this.emitIo(h.vantage & VANTAGE_C ? h : undefined, h.vantage & VANTAGE_C ? undefined : h);
        return false;
      });
      if (keep.length) this.halves.set(k, keep);
      else this.halves.delete(k);
    }
    // An interval is closed once the correlation window past its end has passed.
    const closeBefore = low - this.options.correlationWindowNs - this.options.ioTimeoutNs;
    if (closeBefore > this.closedBefore) this.flushIntervals(closeBefore);
  }

  /** The commands waiting now for their response or their I/O timeout (a stopping controller lets them finish). */
  openCommands(): ReadonlySet<object> {
    return new Set(this.outstanding.values());
  }

  /** How many of `commands` (openCommands) still wait. */
  stillOpen(commands: ReadonlySet<object>): number {
    let n = 0;
    for (const o of this.outstanding.values()) if (commands.has(o)) n++;
    return n;
  }

  /** Emits everything still pending (end of a replay). */
  finish(): void {
    for (const [k, o] of [...this.outstanding]) {
      // The run ends as if every switch went silent: a command whose I/O
      // timeout had not passed on its switch's clock when the switch was last
      // observed (its capture's last packet, the controller's stop) may have
      // been answered after; its answer is unknown, not incomplete. (One
      // whose response went unwatched, or came on a queue of unknown pairing,
      // is unknown for that reason, and counted as such.)
      const own = this.watermarks.get(o.switchId);
      const align = this.align(o.switchId);
      const cut = own !== undefined && own - (o.cmdUnixNs + align) <= this.options.ioTimeoutNs;
      if (cut && o.leftWindowEvent === undefined && !o.unpairedRsp?.length) this.giveUpSilent(k, o, own - align);
      else {
        // Unknown for the run's end too: another vantage seeing the I/O's own response on another host QP rules out
        // those responses, not the end.
        if (cut && o.unpairedRsp?.length) o.unknownWhateverQp = true;
        this.timeOut(k, o);
      }
    }
    this.decideVerdicts(true);
    for (const list of this.halves.values()) {
      for (const h of list) this.emitIo(h.vantage & VANTAGE_C ? h : undefined, h.vantage & VANTAGE_C ? undefined : h);
    }
    this.halves.clear();
    this.flushIntervals(undefined);
  }

  /**
   * Emits the intervals that end by `closeBefore` (undefined: all, the end of
   * a run): every interval from a switch's first on gets its switch_stats,
   * with or without digests (a quiet switch is not a gone one), up to the
   * last in which the switch was known to be up (a gone one gets none).
   */
  private wasUnobserved(switchId: string, start: bigint): boolean {
    const spans = this.unobservedSpans.get(switchId);
    return spans !== undefined && spans.some(([a, b]) => start >= a && start + this.options.intervalNs <= b);
  }

  private flushIntervals(closeBefore: bigint | undefined): void {
    const i = this.options.intervalNs;
    const buckets = [...this.intervals.starts(), ...this.histograms.starts()].sort((a, b) => (a < b ? -1 : 1));
    const known = this.health.switches();
    const firsts = known.map((sw) => this.health.firstInterval(sw)!);
    let from = this.closedBefore;
    if (from === -(1n << 62n)) from = [...buckets.slice(0, 1), ...firsts].reduce((a, b) => (b < a ? b : a), 1n << 62n);
    // The end of a run: up to its last interval with anything, and at least the oldest open one (a switch's final totals).
    let lastStart = buckets.at(-1) ?? from - i;
    if (known.length && this.closedBefore > lastStart) lastStart = this.closedBefore;
    const to = closeBefore ?? lastStart + i;
    const starts = new Set(buckets.filter((s) => s + i <= to));
    if ((to - from) / i <= MAX_EMPTY_INTERVALS) for (let s = from; s + i <= to; s += i) starts.add(s);
    const ordered = [...starts].sort((a, b) => (a < b ? -1 : 1));
    for (const start of ordered) {
      if (closeBefore === undefined && start === ordered.at(-1)) this.health.finish(); // every number still missing counts as lost
      if (start + this.options.intervalNs > this.closedBefore) this.closedBefore = start + this.options.intervalNs;
      // Each record in its switch's own clock.
      const own = (switchId: string) => {
        const s = start - this.align(switchId);
        return { interval_start_unix_ns: s.toString(), interval_end_unix_ns: (s + this.options.intervalNs).toString() };
      };
      const { ios, flows, cnps, switches } = this.intervals.take(start);
      for (const a of ios) this.sink(ioIntervalRecord(a, own(a.switchId), this.pairCoverage?.(a.switchId) ?? null));
      for (const a of flows) this.sink(flowIntervalRecord(a, own(a.switchId), cnps, this.coverage?.(a.switchId) ?? null, (v) => this.endpoints.text(v)));
      for (const h of this.histograms.take(start, own)) this.sink(h);
      for (const sw of this.health.switches()) {
        const si = switches?.get(sw);
        // From its first interval on, up to the last it was known to be up in (its lists, or its controller connected to it).
        // (An interval with counts of its own is reported even before the switch's first list: digests a list brought late.)
        if (!si && (start < this.health.firstInterval(sw)! || start > (this.watermarks.get(sw) ?? -(1n << 62n)) || this.wasUnobserved(sw, start))) continue;
        const rec = this.health.statsRecord(sw, own(sw), si, start);
        if (rec) this.sink(rec);
      }
    }
  }
}

/** How long a command given up is remembered for its late response (digest time). */
const LATE_RESPONSE_MEMORY_NS = 600_000_000_000n;
/** The most a switch's digest list may lag its own newest digest's time (the agent's batching and delivery) and still time I/Os exactly. */
const LIST_DELAY_MAX_NS = 1_000_000_000n;
/** A digest's e2e_ns wraps at 32 bits (4.29 s). */
const E2E_WRAP_NS = 1n << 32n;
/** Empty intervals are emitted (switch_stats only) up to this many at once; a longer silence (a replay's clocks far apart) gets none. */
const MAX_EMPTY_INTERVALS = 100_000n;
