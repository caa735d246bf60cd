// Loss and duplication of a switch's digests from their sequence numbers.
// Digests of different types travel in different lists, so they arrive out
// of order; a number is counted lost only once it is WINDOW numbers behind
// the highest one seen (or at the end), and counted duplicated when seen twice.

const WINDOW = 1 << 16;
const U32 = 2 ** 32;

export class SeqTracker {
  private readonly seen = new Float64Array(WINDOW);
  private floor: number | undefined;
  private start = 0;
  private highest = -1;
  received = 0;
  lost = 0;
  duplicated = 0;

  add(seq32: number): void {
    this.received++;
    // Unwrap the 32-bit number around the highest seen.
    let seq = seq32;
    if (this.highest >= 0) {
      const hi32 = this.highest % U32;
      let delta = seq32 - hi32;
      if (delta > U32 / 2) delta -= U32;
      else if (delta < -U32 / 2) delta += U32;
      seq = this.highest + delta;
    }
    if (this.floor === undefined) this.floor = this.start = seq;
    if (seq < this.floor - WINDOW || seq < 0) {
      this.duplicated++;
      return;
    }
    const i = seq % WINDOW;
    if (this.seen[i] === seq + 1) {
      this.duplicated++;
      return;
    }
    if (seq > this.highest) {
      this.finalize(seq - WINDOW);
      this.highest = seq;
    }
    // Later than the window (or before the first number seen): counted lost already, or never counted.
    if (seq < this.floor && seq >= this.start) this.lost--;
    this.seen[i] = seq + 1;
  }

  /** Counts the numbers up to `upTo` that never arrived. */
  private finalize(upTo: number): void {
    if (this.floor === undefined) return;
    for (let s = this.floor; s <= upTo; s++) if (this.seen[s % WINDOW] !== s + 1) this.lost++;
    if (upTo + 1 > this.floor) this.floor = upTo + 1;
  }

  /** The number after the highest seen (unwrapped), or undefined before the first. */
  get next(): number | undefined {
    return this.highest >= 0 ? this.highest + 1 : undefined;
  }

  /**
   * Continues where an earlier tracker of the same sequence stopped (its
   * `next`): the numbers between that and the first one seen now count as lost.
   */
  resumeAt(next: number): void {
    if (this.floor !== undefined || next <= 0) return;
    this.floor = this.start = next;
    this.highest = next - 1;
  }

  /** Counts everything still missing below the highest number (end of a run). */
  finish(): void {
    this.finalize(this.highest);
  }
}
