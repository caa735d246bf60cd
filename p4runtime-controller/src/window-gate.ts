// When a polling rotation's window notes reach the exporter.
//
// A rotation's window_joined note tells the exporter that the pair's commands
// from then on are watched; window_left, that the responses of those before
// go unwatched. The controller hands them on in the order of its digest
// stream, but that stream may lag the switch by more than a rotation period
// (a loaded host, a digest list waiting for the agent's timeout): a command
// the switch reported before the pair left would then reach the exporter
// after the join, be taken as watched, and its unwatched response make it
// "incomplete"; a response the switch matched to a command from before the
// pair left (it did not see the newer one, sent while the pair was out)
// would reach it after the next leave, and be taken for that command's.
// Either is a record saying more than the switch saw.
//
// The gate places each note where the stream passes it on the switch's own
// clock: just before the first I/O digest of that pair whose time on this
// host's clock is no earlier than the moment the rotation's write was sent
// (inside its list if need be). A digest's time on this host's clock is
// bounded from above by its switch time plus the smallest (arrival − switch
// time) seen: every arrival is its generation plus a delay of at least 0. So
// a digest of the pair from before the write is placed before the note, one
// from after the switch applied it, after. The smallest offset is let rise by
// `driftPpm` of the time since it was seen, so that a switch clock slower
// than this host's is followed. That holds for a switch whose clock runs
// with real time (BMv2's and Tofino's do); a software switch replaying a
// capture on its clock runs behind it when the host cannot keep the pace,
// and then catches up, and notes can be misplaced (docs/operations.md).
//
// A response the exporter gets while its pair is out of the window is its
// command's own when the switch sent it before the pair left; but once a
// join of the pair is written and still held, it may come from the new
// window, answering a command of the CID the switch did not see. So the
// first join written for a pair out of the window goes out at once as a
// bound (`bound`): the newest switch time of the I/O digests that arrived
// before its write was sent (`seenTs`, 0 when none had), generated before
// the switch applied it, whatever its clock's pace. A response while the
// pair is out is taken for its own only up to that time; a departure
// released with a join still held behind it carries that join's bound.
//
// A switch program that stamps its I/O digests with the pair's window
// occurrence (io_watchlist's `gen`) needs none of this: notes naming an
// occurrence go at once, and the exporter compares occurrences
// (docs/operations.md, "Window occurrences"). The gate places the notes of a
// program that names none.

import { unwrapTimestamp, type DigestBatch } from "@rdma-telemetry/contract";

export interface GatedPair {
  host: number;
  target: number;
  /** the window occurrence that left or joined (io_watchlist's `gen`) */
  gen?: number;
}

/** A window note: the pair left the window (`joined` false), came back, or (`bound`) a join of it was written. */
export interface WindowEvent {
  pair: GatedPair;
  joined: boolean;
  /** a bound, or a departure with a join written behind it: the newest switch time (48-bit ns) of the I/O digests received before that join's write was sent */
  seenTs?: number;
  bound?: true;
}

interface Held extends WindowEvent {
  /** this host's clock (ns) when the rotation's write was sent */
  sentNs: bigint;
}

export interface WindowGateOptions {
  /** how fast the switch's clock may fall behind this host's, in parts per million (default 100) */
  driftPpm?: number;
}

export class WindowJoinGate {
  /** per pair, its notes held, in rotation order (a join first) */
  private readonly held = new Map<string, Held[]>();
  /** smallest (arrival − switch time) seen, and when it was seen (this host's clock) */
  private offset: { ns: bigint; atNs: bigint } | undefined;
  private lastTs: bigint | undefined;
  /** the newest switch time received, by arrival (this host's clock), for the last minute */
  private readonly newest: Array<{ arrivalNs: bigint; ts: bigint }> = [];
  private readonly driftPpm: bigint;
  /** notes held; released before a digest of their pair; released at the end (no digest of the pair came) */
  readonly stats = { held: 0, released: 0, releasedUnseen: 0 };

  constructor(opts: WindowGateOptions = {}) {
    this.driftPpm = BigInt(opts.driftPpm ?? 100);
  }

  /**
   * A rotation took `left` out of the window and put `joined` back;
   * `sentNs`: this host's clock before its write was sent. Returns the
   * leaves that go out now (nothing of their pair held).
   */
  rotated(left: readonly GatedPair[], joined: readonly GatedPair[], sentNs: bigint): WindowEvent[] {
    const now: WindowEvent[] = [];
    // A pair whose notes name its occurrence (gen) and that has none held: its notes go at once. The switch stamps
    // each I/O digest with the occurrence it saw it in, so the exporter tells a command from before the pair left
    // by that, not by where the notes fall in the stream.
    const named = (p: GatedPair) => p.gen !== undefined && !this.held.has(key(p));
    const unnamedLeft: GatedPair[] = [];
    for (const p of left) {
      if (named(p)) now.push({ pair: { host: p.host, target: p.target, gen: p.gen! }, joined: false });
      else unnamedLeft.push(p);
    }
    const unnamedJoined: GatedPair[] = [];
    for (const p of joined) {
      if (named(p)) now.push({ pair: { host: p.host, target: p.target, gen: p.gen! }, joined: true });
      else unnamedJoined.push(p);
    }
    left = unnamedLeft;
    joined = unnamedJoined;
    for (const p of left) {
      const pair = { host: p.host, target: p.target, ...(p.gen === undefined ? {} : { gen: p.gen }) };
      const q = this.held.get(key(p));
      if (q) {
        q.push({ pair, joined: false, sentNs });
        this.stats.held++;
      } else now.push({ pair, joined: false });
    }
    const seenTs = joined.length ? this.seenBefore(sentNs) : 0;
    for (const p of joined) {
      const k = key(p);
      const pair = { host: p.host, target: p.target, ...(p.gen === undefined ? {} : { gen: p.gen }) };
      const e = { pair, joined: true, seenTs, sentNs };
      const q = this.held.get(k);
      if (q) q.push(e);
      else {
        this.held.set(k, [e]);
        now.push({ pair, joined: false, seenTs, bound: true });
      }
      this.stats.held++;
    }
    return now;
  }

  /** The switch restarted (a new session): its clock starts again, and the bound with it. */
  resetClock(): void {
    this.offset = undefined;
    this.lastTs = undefined;
    this.newest.length = 0;
  }

  /**
   * The newest switch time (48-bit ns) among the lists that arrived before
   * `sentNs`: generated before the write was sent, so before the switch
   * applied it, whatever its clock's pace. 0 when none had come (nothing is
   * known to precede the write).
   */
  private seenBefore(sentNs: bigint): number {
    let best: bigint | undefined;
    for (let i = this.newest.length - 1; i >= 0; i--) {
      if (this.newest[i]!.arrivalNs < sentNs) {
        best = this.newest[i]!.ts;
        break;
      }
    }
    return best === undefined ? 0 : Number(best % (1n << 48n));
  }

  /**
   * A digest list arrived (`arrivalNs`, this host's clock): where the held
   * notes go in it, before the digest at `at` (0: before the whole list), in
   * list order. Its I/O digests' times refine the clock bound first.
   */
  releases(digests: ReadonlyArray<{ kind: string; ts?: number; host?: number; target?: number }>, arrivalNs: bigint): Array<{ at: number; events: WindowEvent[] }> {
    // Every sample of a list arrived together: its newest gives the smallest (arrival − switch time).
    const times: Array<[number, bigint]> = [];
    const holding = this.held.size > 0;
    let newestInList: bigint | undefined;
    for (let i = 0; i < digests.length; i++) {
      const d = digests[i]!;
      if (d.kind !== "io") continue;
      const t = this.unwrap(d.ts!);
      if (holding) times.push([i, t]);
      if (newestInList === undefined || t > newestInList) newestInList = t;
    }
    if (newestInList !== undefined) this.observe(newestInList, arrivalNs);
    const top = this.lastTs;
    if (top !== undefined && (this.newest.at(-1)?.ts ?? -1n) < top) {
      this.newest.push({ arrivalNs, ts: top });
      // A minute back is plenty: a rotation asks for the newest before its write, sent just before.
      while (this.newest.length > 1 && arrivalNs - this.newest[0]!.arrivalNs > 60_000_000_000n) this.newest.shift();
    }
    const out: Array<{ at: number; events: WindowEvent[] }> = [];
    for (const [i, t] of times) {
      const d = digests[i]!;
      const k = key({ host: d.host!, target: d.target! });
      const q = this.held.get(k);
      if (!q) continue;
      const at = this.hostTime(t, arrivalNs);
      const events: WindowEvent[] = [];
      while (q.length && at >= q[0]!.sentNs) {
        events.push(note(q.shift()!, q));
      }
      // A leave behind the last join released goes out right after it.
      if (!q.length || (events.length && q.every((e) => !e.joined))) {
        for (const e of q.splice(0)) events.push(note(e, q));
        this.held.delete(k);
      }
      if (!events.length) continue;
      this.stats.released += events.length;
      const last = out.at(-1);
      if (last?.at === i) last.events.push(...events);
      else out.push({ at: i, events });
    }
    return out;
  }

  /**
   * A list cut where the held notes go: each part with the notes to hand on
   * before it, in order. The first part keeps the list's undecodable count,
   * the last its acknowledgement.
   */
  pass(b: DigestBatch, arrivalNs: bigint): Array<{ before: WindowEvent[]; part: DigestBatch }> {
    const r = this.releases(b.digests, arrivalNs);
    if (!r.length) return [{ before: [], part: b }];
    const out: Array<{ before: WindowEvent[]; part: DigestBatch }> = [];
    const cuts = [...r.map((x) => x.at), b.digests.length];
    if (cuts[0] !== 0) cuts.unshift(0);
    for (let c = 0; c + 1 < cuts.length; c++) {
      const [from, to] = [cuts[c]!, cuts[c + 1]!];
      const last = c + 2 === cuts.length;
      const part: DigestBatch = { ...b, digests: b.digests.slice(from, to), badDigests: from === 0 ? b.badDigests : 0, raw: { digest: b.raw.digest, samples: b.raw.samples.slice(from, to) }, ack: last ? b.ack : undefined };
      out.push({ before: r.find((x) => x.at === from)?.events ?? [], part });
    }
    return out;
  }

  /** Every note still held (the controller stops): handed on at the end, in order per pair. */
  flush(): WindowEvent[] {
    const out: WindowEvent[] = [];
    for (const q of this.held.values()) while (q.length) out.push(note(q.shift()!, q));
    this.stats.releasedUnseen += out.length;
    this.held.clear();
    return out;
  }

  /** notes held */
  get pending(): number {
    let n = 0;
    for (const q of this.held.values()) n += q.length;
    return n;
  }

  /** The latest this host's clock can have read when the switch's clock read `ts`. */
  private hostTime(ts: bigint, nowNs: bigint): bigint {
    const o = this.offset!;
    return ts + o.ns + ((nowNs - o.atNs) * this.driftPpm) / 1_000_000n;
  }

  private observe(ts: bigint, arrivalNs: bigint): void {
    const sample = arrivalNs - ts;
    if (!this.offset || sample <= this.offset.ns + ((arrivalNs - this.offset.atNs) * this.driftPpm) / 1_000_000n) this.offset = { ns: sample, atNs: arrivalNs };
  }

  /** A 48-bit timestamp unwrapped around the newest seen (a list may pass another across a wrap). */
  private unwrap(ts: number): bigint {
    const best = unwrapTimestamp(ts, this.lastTs);
    if (this.lastTs === undefined || best > this.lastTs) this.lastTs = best;
    return best;
  }
}

/** A held note as handed on; a departure with a join still held behind it (`rest`) carries that join's bound. */
function note(e: Held, rest: readonly Held[]): WindowEvent {
  if (e.joined) return { pair: e.pair, joined: true };
  const next = rest.find((x) => x.joined);
  return { pair: e.pair, joined: false, ...(next?.seenTs === undefined ? {} : { seenTs: next.seenTs }) };
}

function key(p: GatedPair): string {
  return `${p.host}|${p.target}`;
}
