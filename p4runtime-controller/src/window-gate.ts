// When a pair put back into the polling window is back for the digests.
//
// A rotation's window_joined note tells the exporter that the pair's commands
// from then on are watched. The controller hands it on in the order of its
// digest stream, but that stream may lag the switch by more than a rotation
// period (a loaded host, a digest list waiting for the agent's timeout): a
// command the switch reported before the pair left would then reach the
// exporter after the note, be taken as watched, and its unwatched response
// make it "incomplete", a record saying more than the switch saw.
//
// The gate holds each join until the stream has passed it on the switch's own
// clock: the note goes out just before the first list with an I/O digest of
// that pair whose time on this host's clock is no earlier than the moment the
// rotation's write was sent. A digest's time on this host's clock is bounded
// from above by its switch time plus the smallest (arrival − switch time)
// seen: every arrival is its generation plus a delay of at least 0. A digest
// of the pair from before it left is so placed before the note (it was
// generated at least the time the pair was out before the write); one after
// the switch applied the write, after the note. A join held too long only
// costs figures (the pair's first commands taken as unwatched, counted), never
// a wrong record. The smallest offset is let rise by `driftPpm` of the time
// since it was seen, so that a switch clock slower than this host's is
// followed.

import { unwrapTimestamp } from "@rdma-telemetry/contract";

export interface GatedPair {
  host: number;
  target: number;
}

interface Held {
  pair: GatedPair;
  /** this host's clock (ns) when the rotation's write was sent */
  sentNs: bigint;
  /** a digest from after the write has been seen, in a list that also held one from before: released before the next list */
  due: boolean;
}

export interface WindowGateOptions {
  /** how fast the switch's clock may fall behind this host's, in parts per million (default 100) */
  driftPpm?: number;
}

export class WindowJoinGate {
  private readonly held = new Map<string, Held>();
  /** smallest (arrival − switch time) seen, and when it was seen (this host's clock) */
  private offset: { ns: bigint; atNs: bigint } | undefined;
  private lastTs: bigint | undefined;
  private readonly driftPpm: bigint;
  /** joins held; released before a list of the pair; released by a later leave or the end (no digest of the pair came) */
  readonly stats = { held: 0, released: 0, releasedUnseen: 0 };

  constructor(opts: WindowGateOptions = {}) {
    this.driftPpm = BigInt(opts.driftPpm ?? 100);
  }

  /** Pairs a rotation put back into the window; `sentNs`: this host's clock before the write was sent. */
  join(pairs: readonly GatedPair[], sentNs: bigint): void {
    for (const p of pairs) {
      const k = key(p);
      if (!this.held.has(k)) this.stats.held++;
      this.held.set(k, { pair: { host: p.host, target: p.target }, sentNs, due: false });
    }
  }

  /**
   * Pairs a rotation takes out of the window: the joins of these still held
   * are released first (returned), so that the exporter sees join, then
   * leave, in that order.
   */
  leave(pairs: readonly GatedPair[]): GatedPair[] {
    const out: GatedPair[] = [];
    for (const p of pairs) {
      const h = this.held.get(key(p));
      if (!h) continue;
      this.held.delete(key(p));
      out.push(h.pair);
      this.stats.releasedUnseen++;
    }
    return out;
  }

  /** The switch restarted (a new session): its clock starts again, and the bound with it. */
  resetClock(): void {
    this.offset = undefined;
    this.lastTs = undefined;
  }

  /**
   * A digest list arrived (`arrivalNs`, this host's clock): the joins to hand
   * on before it. Its I/O digests' times refine the clock bound first.
   */
  before(digests: ReadonlyArray<{ kind: string; ts?: number; host?: number; target?: number }>, arrivalNs: bigint): GatedPair[] {
    const ios = digests.filter((d): d is { kind: "io"; ts: number; host: number; target: number } => d.kind === "io");
    const times = ios.map((d) => this.unwrap(d.ts));
    for (const t of times) this.observe(t, arrivalNs);
    const out: GatedPair[] = [];
    for (const [k, h] of this.held) {
      if (h.due) {
        this.release(k, h, out, true);
        continue;
      }
      let after = false;
      let before = false;
      for (let i = 0; i < ios.length; i++) {
        const d = ios[i]!;
        if (d.host !== h.pair.host || d.target !== h.pair.target) continue;
        if (this.hostTime(times[i]!, arrivalNs) >= h.sentNs) after = true;
        else before = true;
      }
      if (after && before) h.due = true; // both in one list: the join after it
      else if (after) this.release(k, h, out, true);
    }
    return out;
  }

  /** Every join still held (the controller stops): handed on at the end. */
  flush(): GatedPair[] {
    const out: GatedPair[] = [];
    for (const [k, h] of this.held) this.release(k, h, out, false);
    return out;
  }

  get pending(): number {
    return this.held.size;
  }

  private release(k: string, h: Held, out: GatedPair[], seen: boolean): void {
    this.held.delete(k);
    if (seen) this.stats.released++;
    else this.stats.releasedUnseen++;
    out.push(h.pair);
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

function key(p: GatedPair): string {
  return `${p.host}|${p.target}`;
}
