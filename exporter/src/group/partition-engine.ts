// One partition's engine in an exporter group member: the digests it takes,
// the records they make and the state a commit carries. Kafka is the
// member's (exporter-group.ts): it hands an engine the partition's digests in
// offset order and asks it, before each transaction, for what to publish and
// commit (a CommitSnapshot). The engine runs in the member's thread or in an
// engine thread of its own (engine-threads.ts); either way the partition's
// work is one step at a time, in the order the member asks for it.
import { isFlowOnly, type RecordJson } from "@rdma-telemetry/contract";
import { ALERT_HASH_CHARS } from "../alerts.js";
import { Exporter, type ExporterOptions } from "../exporter.js";
import { rawDigestBatch } from "../kafka/raw-digest.js";
import { encodeRecord, type KafkaMessageOut, type TopicNames } from "../kafka/encode.js";
import { OpenDigests } from "./open-digests.js";
import { recordKey } from "./record-key.js";

/** What a partition took and left out since its last commit: counted in the member's stats when the transaction that covers it commits. */
export interface PendingCounts {
  digests: number;
  badDigests: number;
  unknownSwitch: number;
  duplicateDigests: number;
  lateDigests: number;
  replayedDigests: number;
  flowOnlyDigests: number;
  suppressedRecords: number;
  clockNotes: number;
}
export const noCounts = (): PendingCounts => ({ digests: 0, badDigests: 0, unknownSwitch: 0, duplicateDigests: 0, lateDigests: 0, replayedDigests: 0, flowOnlyDigests: 0, suppressedRecords: 0, clockNotes: 0 });

/** Offset metadata: where the open digests begin, the switches' clock starts, and the alerts raised. */
export interface CommitState {
  /** offset of the oldest open digest */
  r: string;
  /**
   * when it was taken (ms): the earliest time, on the clocks of the members
   * that publish them, that a record made from it or a later digest can have
   * been published (no later than its Kafka timestamp either)
   */
  t: number;
  /** clock start per switch, ns */
  c?: Record<string, string>;
  /** the alerts raised, their alertHash values concatenated */
  a?: string;
  /** how many alerts were raised, when `a` had no room for all of them */
  n?: number;
}

/** Kafka's default limit of offset metadata (offset.metadata.max.bytes). */
const MAX_METADATA = 4096;

/**
 * The offset metadata of a commit, within MAX_METADATA bytes: the alerts
 * raised first (without them a new owner raises an alert again, or never
 * clears it), then the clock placements (without them it places the clocks
 * again from the digests). Raised alerts beyond the room left are left out,
 * their number kept (`n`): the member that takes the partition on counts them.
 */
export function commitMetadata(state: CommitState, raised: readonly string[], clocks: Record<string, string>): string {
  const a = raised.join("");
  const withClocks = JSON.stringify({ ...state, ...(a ? { a } : {}), c: clocks });
  if (Buffer.byteLength(withClocks) <= MAX_METADATA) return withClocks;
  const all = JSON.stringify({ ...state, ...(a ? { a } : {}) });
  if (Buffer.byteLength(all) <= MAX_METADATA) return all;
  const room = MAX_METADATA - Buffer.byteLength(JSON.stringify({ ...state, a: "", n: raised.length }));
  const fit = Math.max(0, Math.floor(room / ALERT_HASH_CHARS));
  return JSON.stringify({ ...state, a: raised.slice(0, fit).join(""), n: raised.length });
}

/** What an engine is made with. */
export interface PartitionEngineOptions {
  partition: number;
  topics: TopicNames;
  engine: ExporterOptions;
  /** digests from other switches are counted (unknownSwitch) and dropped; all switches when unset */
  switchIds?: readonly string[];
  /** switches known to report besides switchIds (seen in the member's other partitions): awaited as those are (expect) */
  expect?: readonly string[];
  /** whether the snapshots carry the records themselves (the member has an onRecord) */
  withRecords: boolean;
}

/** A partition's digests, in offset order, as the member hands them on. */
export interface DigestsIn {
  offsets: bigint[];
  /** Kafka timestamps, ms */
  timestamps: number[];
  values: Array<Uint8Array | null>;
}

/** A dropped digest the member reports in its log. */
export interface DropNote {
  offset: string;
  error?: string;
  switchId?: string;
}

/** What one transaction publishes and commits, and what it counts once it has committed. */
export interface CommitSnapshot {
  messages: KafkaMessageOut[];
  /** the records published (only when the engine was made withRecords) */
  records: RecordJson[];
  /** how many records are published */
  published: number;
  /** commands given up on a silent switch among the records published */
  givenUpSilentSwitch: number;
  counts: PendingCounts;
  metadata: string;
  /** switches this partition had not had digests from before this snapshot's (the member expects them in its other partitions) */
  newSwitches: string[];
  /** the first undecodable digest and the first of an unknown switch since the last snapshot, for the member's log */
  firstBad?: DropNote;
  firstUnknown?: DropNote;
}

/** What a partition's committed state says, for its engine to start from. */
export interface RestoreState {
  raised: string[];
  clocks: Record<string, string>;
  /** the committed state's `t`: when the earlier owners took the oldest open digest (ms, their clocks) */
  sinceMs?: number;
}

export class PartitionEngine {
  readonly exporter: Exporter;
  readonly open: OpenDigests;
  /** records made and not yet published */
  private out: RecordJson[] = [];
  /** the digests taken since the last snapshot */
  private counts = noCounts();
  /** the records earlier owners committed (after a takeover), by key */
  private committed: Set<string> | undefined;
  /** for digests re-read after a takeover: when the earlier owners took the oldest of them (RestoreState.sinceMs) */
  private carriedMs = Number.POSITIVE_INFINITY;
  /** the newest digest list time seen (the switches' clocks), and when it was published (wall clock, ms) */
  private newestListNs = 0n;
  private newestAt = Date.now();
  private readonly switchIds: Set<string> | undefined;
  private firstBad: DropNote | undefined;
  private firstUnknown: DropNote | undefined;
  /** the switches this partition has had digests from, and those new since the last snapshot */
  private readonly seen = new Set<string>();
  private newSwitches: string[] = [];

  constructor(private readonly o: PartitionEngineOptions) {
    this.switchIds = o.switchIds?.length ? new Set(o.switchIds) : undefined;
    // A partition holds a share of each switch's digests: the gaps in its sequence are other partitions' digests.
    this.exporter = new Exporter({ ...o.engine, wholeSequence: false });
    // The switches named are awaited: one whose first digests of this partition come late still meets its halves.
    if (this.switchIds) this.exporter.metrics.expectSwitches(this.switchIds);
    if (o.expect) this.expect(o.expect);
    this.exporter.addSink((r) => {
      // A switch's digest sequence, losses and counters are its controller's to report: it alone sees them all.
      if (r.type !== "switch_stats") this.out.push(r);
    });
    // Aggregates an earlier owner committed were evaluated by its alerts, whose state this partition took on.
    this.exporter.alertFilter = (r) => !this.committed?.has(recordKey(r));
    this.open = new OpenDigests(this.exporter.metrics.options.intervalNs + this.exporter.metrics.options.correlationWindowNs);
  }

  /**
   * Takes on the committed state: the alerts raised and the switches' clock
   * starts. The switches with a clock had sent to this partition before: they
   * are awaited as named ones are.
   */
  restore(s: RestoreState): void {
    this.exporter.alerts.restoreRaised(s.raised);
    if (s.sinceMs !== undefined && Number.isFinite(s.sinceMs)) this.carriedMs = s.sinceMs;
    for (const [sw, start] of Object.entries(s.clocks)) {
      const ns = BigInt(start);
      this.exporter.metrics.setClockStart(sw, () => ns);
    }
    this.expect(Object.keys(s.clocks));
  }

  /**
   * Switches known to report (seen in another of the member's partitions, or
   * by earlier owners of this one): until each has sent to this partition,
   * the others' halves and intervals wait for it, as for a switch named by
   * --switch-id (no longer than --silent-switch-ms of the others' time from
   * the engine's first list).
   */
  expect(ids: Iterable<string>): void {
    const wanted = [...ids].filter((id) => !this.switchIds || this.switchIds.has(id));
    if (wanted.length) this.exporter.metrics.expectSwitches(wanted);
  }

  /** The keys of the records earlier owners committed since the open digests: not published again. */
  setCommitted(keys: Set<string>): void {
    this.committed = keys;
  }

  /** Takes digests; `committedOffset` tells those re-read after a takeover. */
  take(d: DigestsIn, committedOffset: bigint): void {
    const now = Date.now();
    for (let i = 0; i < d.offsets.length; i++) this.digest(d.offsets[i]!, d.timestamps[i]!, d.values[i] ?? null, committedOffset, now);
  }

  private digest(offset: bigint, timestampMs: number, value: Uint8Array | null, committedOffset: bigint, now: number): void {
    const replayed = offset < committedOffset;
    // When the records a digest takes part in can first have been published, on the clocks of the members that
    // publish them (this one now; for a digest re-read, an earlier owner when it took it): the read-back of what
    // earlier owners committed starts there. Its Kafka timestamp is its producer's clock, which may run ahead.
    const takenMs = Math.min(timestampMs > 0 ? timestampMs : now, now, replayed ? this.carriedMs : now);
    const c = this.counts;
    if (replayed) c.replayedDigests++;
    try {
      if (!value) throw new Error("empty message");
      const { batch: b, seq, windowNote, givenUp, clock } = rawDigestBatch(value);
      if (this.switchIds && !this.switchIds.has(b.switchId)) {
        c.unknownSwitch++;
        this.firstUnknown ??= { offset: String(offset), switchId: b.switchId };
        return;
      }
      if (clock) {
        // Its controller published every digest of the switch before this note (in order, one request at a time):
        // the switch's time has reached the note's here, whether or not it sent anything to this partition. Not kept
        // open: re-read or not after a takeover, the next note comes within the period.
        c.clockNotes++;
        this.heard(b.switchId, b.listTimestampNs, timestampMs, now);
        this.exporter.metrics.switchAlive(b.switchId, b.listTimestampNs);
        return;
      }
      // A digest far out of order may still open a half: it stays open for a window past what is settled now.
      const settled = this.exporter.metrics.settledBefore;
      const openNs = b.listTimestampNs < settled ? settled + this.open.slackNs : b.listTimestampNs;
      if (!this.open.add(offset, openNs, takenMs, b.switchId, b.raw.digest, b.listTimestampNs, seq)) {
        c.duplicateDigests++;
        return;
      }
      if (windowNote) {
        // A rotation's note, kept open as a digest of its time is: a member taking the partition over
        // re-reads it with the commands it may concern.
        if (windowNote.bound) this.exporter.metrics.windowBound(b.switchId, [windowNote], windowNote.seenTs ?? 0, b.endpoints);
        else if (windowNote.joined) this.exporter.metrics.windowJoined(b.switchId, [windowNote], b.endpoints);
        else this.exporter.metrics.windowLeft(b.switchId, [windowNote], b.endpoints, windowNote.seenTs);
        return;
      }
      if (givenUp) {
        // Its controller's verdict on a command given up (kept open alike, for a member re-reading the command).
        this.exporter.metrics.givenUpNote(b.switchId, givenUp, b.endpoints);
        return;
      }
      this.heard(b.switchId, b.listTimestampNs, timestampMs, now);
      if (b.listTimestampNs < settled) c.lateDigests++;
      c.digests++;
      if (!replayed) for (const d of b.digests) if (d.kind === "msg" && isFlowOnly(d)) c.flowOnlyDigests++;
      this.exporter.onBatch(b);
    } catch (err) {
      c.badDigests++;
      this.firstBad ??= { offset: String(offset), error: (err as Error).message };
    }
  }

  /**
   * A switch heard from in this partition at list time `listNs` (a digest or a clock note published at
   * `timestampMs`): new switches are named in the next snapshot (the member awaits them in its other partitions), and
   * the newest list time moves the idle partition's clock on.
   */
  private heard(switchId: string, listNs: bigint, timestampMs: number, now: number): void {
    if (!this.seen.has(switchId)) {
      this.seen.add(switchId);
      this.newSwitches.push(switchId);
    }
    if (listNs > this.newestListNs) {
      this.newestListNs = listNs;
      // When it was published (the message's timestamp): the same for whichever member holds the partition.
      this.newestAt = timestampMs > 0 ? Math.min(timestampMs, now) : now;
    }
  }

  /**
   * Moves a caught-up, idle partition on by the wall clock (`nowMs`): halves
   * whose other vantage never comes, intervals that are over. A snapshot to
   * commit at `offset` when that made records or let open digests go.
   */
  idle(nowMs: number, offset: bigint): CommitSnapshot | undefined {
    // The switches' time moves on as the wall clock does since the newest digest list came (a late one does not
    // hold it back): their clocks need not be this host's.
    this.exporter.metrics.advance(this.newestListNs + BigInt(nowMs - this.newestAt) * 1_000_000n);
    if (this.out.length === 0 && this.open.size === 0) return undefined;
    const before = this.open.oldest();
    this.open.prune(this.exporter.metrics.settledBefore);
    if (this.out.length === 0 && before?.offset === this.open.oldest()?.offset) return undefined;
    return this.snapshot(offset);
  }

  /** What the transaction that commits `offset` publishes, its offset metadata, and the counts it covers. */
  snapshot(offset: bigint): CommitSnapshot {
    const m = this.exporter.metrics;
    this.open.prune(m.settledBefore);
    // The aggregates about to be committed are evaluated now, so that the alerts raised go in this commit's state.
    this.exporter.alerts.flush();
    const out = this.out;
    this.out = [];
    const counts = this.counts;
    this.counts = noCounts();
    const messages: KafkaMessageOut[] = [];
    const records: RecordJson[] = [];
    let givenUpSilentSwitch = 0;
    for (const r of out) {
      if (this.committed?.has(recordKey(r))) {
        counts.suppressedRecords++;
        continue;
      }
      if (this.o.withRecords) records.push(r);
      givenUpSilentSwitch += m.givenUpSilentIn(r);
      messages.push(encodeRecord(r, this.o.topics, "protobuf", m.options.intervalNs));
    }
    const oldest = this.open.oldest();
    const state: CommitState = { r: String(oldest && oldest.offset < offset ? oldest.offset : offset), t: oldest?.takenMs ?? Date.now() };
    const metadata = commitMetadata(state, this.exporter.alerts.raisedHashes(), Object.fromEntries([...m.clockStarts()].map(([k, v]) => [k, String(v)])));
    const s: CommitSnapshot = { messages, records, published: messages.length, givenUpSilentSwitch, counts, metadata, newSwitches: this.newSwitches, firstBad: this.firstBad, firstUnknown: this.firstUnknown };
    this.newSwitches = [];
    this.firstBad = undefined;
    this.firstUnknown = undefined;
    return s;
  }
}
