// Loss and duplication of a switch's digests from their sequence numbers.
// Digests of different types travel in different lists, so they arrive out
// of order; a number is settled (counted received, duplicated or lost) once
// its owner says every list that could hold it is in (settle: an interval
// closing), or once it is WINDOW numbers behind the highest one seen, or at
// the end. The counts are of settled numbers only, so that a run that
// resumes at `floor` (resumeAt) after a crash counts every number once.

const WINDOW = 1 << 16;
const U32 = 2 ** 32;

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
  received = 0;
  lost = 0;
  duplicated = 0;

  add(seq32: number): void {
    // Unwrap the 32-bit number around the highest seen.
    let seq = seq32;
    if (this.highestSeen >= 0) {
      const hi32 = this.highestSeen % U32;
      let delta = seq32 - hi32;
      if (delta > U32 / 2) delta -= U32;
      else if (delta < -U32 / 2) delta += U32;
      seq = this.highestSeen + delta;
    }
    if (seq < this.ignoreBelow) return;
    if (this.floorAt === undefined) this.floorAt = this.start = seq;
    if (seq < this.floorAt) {
      this.settledArrival(seq);
      return;
    }
    if (seq > this.highestSeen) {
      this.finalize(seq - WINDOW);
      this.highestSeen = seq;
    }
    const i = seq % WINDOW;
    if (this.seen[i] === seq + 1) this.copies[i]!++;
    else {
      this.seen[i] = seq + 1;
      this.copies[i] = 1;
    }
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
    if (seq >= this.start) this.lost--;
    if (held < this.floorAt!) {
      this.seen[i] = seq + 1;
      this.copies[i] = 1;
    }
  }

  /** Settles the numbers up to `upTo`: those that never arrived count as lost. */
  private finalize(upTo: number): void {
    if (this.floorAt === undefined) return;
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
