// Loss and duplication of a switch's digests from their sequence numbers.
// Digests of different types travel in different lists, so they arrive out
// of order; a number is settled (counted received, duplicated or lost) once
// its owner says every list that could hold it is in (settle: an interval
// closing), or once it is WINDOW numbers behind the highest one seen, or at
// the end. The counts are of settled numbers only, so that a run that
// resumes at `floor` (resumeAt) after a crash counts every number once.
// It also keeps where the numbers not seen are (holes, still unsettled, and
// lost runs, settled), so that an I/O's verdict can ask whether any digest
// after its command is missing (gapIn).

const WINDOW = 1 << 16;
const U32 = 2 ** 32;

/** Lost runs kept for gapIn (each a gap in the sequence: a list or more lost). */
const LOST_RUNS = 4096;

/**
 * Sorted disjoint runs [from, to] of numbers. Numbers leave mostly from the
 * front (lists that come later fill the oldest gaps first): the front is an
 * index, not a shift.
 */
class Runs {
  private runs: Array<[number, number]> = [];
  private head = 0;

  get size(): number {
    return this.runs.length - this.head;
  }

  first(): [number, number] | undefined {
    return this.runs[this.head];
  }

  last(): [number, number] | undefined {
    return this.size ? this.runs[this.runs.length - 1] : undefined;
  }

  /** A run after every one held. */
  push(from: number, to: number): void {
    this.runs.push([from, to]);
  }

  dropFirst(): void {
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.runs.length) {
      this.runs = this.runs.slice(this.head);
      this.head = 0;
    }
  }

  /** The index of the first run that ends at or after `n`. */
  private firstEndingFrom(n: number): number {
    let lo = this.head;
    let hi = this.runs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.runs[mid]![1] < n) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Whether any run meets [from, to]. */
  overlaps(from: number, to: number): boolean {
    const i = this.firstEndingFrom(from);
    return i < this.runs.length && this.runs[i]![0] <= to;
  }

  /** Takes `n` out (splitting the run that holds it). */
  remove(n: number): void {
    const i = this.firstEndingFrom(n);
    const r = this.runs[i];
    if (!r || r[0] > n) return;
    if (r[0] === r[1]) {
      if (i === this.head) this.dropFirst();
      else this.runs.splice(i, 1);
    } else if (r[0] === n) r[0]++;
    else if (r[1] === n) r[1]--;
    else this.runs.splice(i, 1, [r[0], n - 1], [n + 1, r[1]]);
  }

  /** Lets the oldest runs go, keeping `keep`; the end of the last one let go, plus 1 (or undefined). */
  trim(keep: number): number | undefined {
    if (this.size <= keep) return undefined;
    const cut = this.runs.length - keep;
    const end = this.runs[cut - 1]![1] + 1;
    this.runs = this.runs.slice(cut);
    this.head = 0;
    return end;
  }
}

export class SeqTracker {
  /** per slot: the number it holds, plus 1 */
  private readonly seen = new Float64Array(WINDOW);
  /** per slot: how many times its number arrived */
  private readonly copies = new Uint32Array(WINDOW);
  private floorAt: number | undefined;
  private start = 0;
  /** numbers below this were counted by an earlier run (resumeAt): not counted again */
  private ignoreBelow = -Infinity;
  private highestSeen = -1;
  /** numbers in [floor, highest] not seen yet, as sorted disjoint [from, to] runs */
  private readonly holes = new Runs();
  /** settled numbers counted lost, as sorted disjoint runs (the newest LOST_RUNS kept) */
  private readonly lostRuns = new Runs();
  /** below this the lost runs were let go: a range reaching below it cannot be told */
  private forgottenBelow = -Infinity;
  received = 0;
  lost = 0;
  duplicated = 0;

  add(seq32: number): void {
    const seq = this.unwrap(seq32);
    if (seq < this.ignoreBelow) return;
    if (this.floorAt === undefined) this.floorAt = this.start = seq;
    if (seq < this.floorAt) {
      this.settledArrival(seq);
      return;
    }
    if (seq > this.highestSeen) {
      const from = Math.max(this.highestSeen + 1, this.floorAt);
      if (seq > from) this.holes.push(from, seq - 1);
      this.finalize(seq - WINDOW);
      this.highestSeen = seq;
    }
    const i = seq % WINDOW;
    if (this.seen[i] === seq + 1) this.copies[i]!++;
    else {
      if (seq < this.highestSeen) this.holes.remove(seq);
      this.seen[i] = seq + 1;
      this.copies[i] = 1;
    }
  }

  /** The number `seq32` stands for: the 32-bit number unwrapped around the highest seen. */
  unwrap(seq32: number): number {
    if (this.highestSeen < 0) return seq32;
    const hi32 = this.highestSeen % U32;
    let delta = seq32 - hi32;
    if (delta > U32 / 2) delta -= U32;
    else if (delta < -U32 / 2) delta += U32;
    return this.highestSeen + delta;
  }

  /**
   * Whether numbers in [from, to] (unwrapped) are missing: "lost" (settled
   * as lost, or not known to this tracker: before the numbers it counts, or
   * let go), "open" (not seen yet, not settled), else "none": every one of
   * them came.
   */
  gapIn(from: number, to: number): "lost" | "open" | "none" {
    if (to < from) return "none";
    if (this.floorAt === undefined || from < this.start || from < this.ignoreBelow || from < this.forgottenBelow) return "lost";
    if (this.lostRuns.overlaps(from, to)) return "lost";
    return to > this.highestSeen || this.holes.overlaps(from, to) ? "open" : "none";
  }

  /** A number that arrives after it was settled: a repeat, or one counted lost that came after all. */
  private settledArrival(seq: number): void {
    this.received++;
    const i = seq % WINDOW;
    const held = this.seen[i]! - 1;
    // Its slot since taken by a later number, or too old to tell: counted as a repeat.
    if (seq < 0 || seq < this.floorAt! - WINDOW || held >= seq) {
      this.duplicated++;
      return;
    }
    if (seq >= this.start) {
      this.lost--;
      this.lostRuns.remove(seq);
    }
    if (held < this.floorAt!) {
      this.seen[i] = seq + 1;
      this.copies[i] = 1;
    }
  }

  /** Settles the numbers up to `upTo`: those that never arrived count as lost. */
  private finalize(upTo: number): void {
    if (this.floorAt === undefined) return;
    // The holes up to upTo are lost runs now.
    for (let h = this.holes.first(); h && h[0] <= upTo; h = this.holes.first()) {
      const end = Math.min(h[1], upTo);
      const last = this.lostRuns.last();
      if (last && last[1] + 1 === h[0]) last[1] = end;
      else this.lostRuns.push(h[0], end);
      if (end === h[1]) this.holes.dropFirst();
      else h[0] = end + 1;
    }
    const forgotten = this.lostRuns.trim(LOST_RUNS);
    if (forgotten !== undefined) this.forgottenBelow = forgotten;
    for (let s = this.floorAt; s <= upTo; s++) {
      const i = s % WINDOW;
      if (this.seen[i] === s + 1) {
        this.received += this.copies[i]!;
        this.duplicated += this.copies[i]! - 1;
      } else this.lost++;
    }
    if (upTo + 1 > this.floorAt) this.floorAt = upTo + 1;
  }

  /** Every list that could hold a number up to `upTo` (unwrapped, see highest) is in: settles them. */
  settle(upTo: number): void {
    this.finalize(Math.min(upTo, this.highestSeen));
  }

  /** The highest number seen (unwrapped), or -1 before the first. */
  get highest(): number {
    return this.highestSeen;
  }

  /** The number after the highest seen (unwrapped), or undefined before the first. */
  get next(): number | undefined {
    return this.highestSeen >= 0 ? this.highestSeen + 1 : undefined;
  }

  /** Every number below this is settled (counted); undefined before the first. */
  get floor(): number | undefined {
    return this.floorAt;
  }

  /**
   * Continues where an earlier tracker of the same sequence had settled up to
   * (its `floor`): the numbers between that and the first one seen now count
   * as lost, and numbers below it (lists replayed from a journal) are not
   * counted again.
   */
  resumeAt(next: number): void {
    if (this.floorAt !== undefined || next <= 0) return;
    this.floorAt = this.start = next;
    this.ignoreBelow = next;
    this.highestSeen = next - 1;
  }

  /** Counts everything still missing below the highest number (end of a run). */
  finish(): void {
    this.finalize(this.highestSeen);
  }
}
