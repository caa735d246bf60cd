// Polling-mode rotation (SPEC §5): the known flows (and NVMe host-target
// pairs) in the order they were learned, and a window of at most N of each
// that advances round robin, so that every known flow is measured within
// ceil(known / N) periods.

export interface WatchedFlow {
  src: number;
  dst: number;
  destQp: number;
  /** register slot for this flow in the window (0..N-1) */
  slot: number;
  /** the window that first gave it this slot: a new epoch resets the slot */
  epoch: number;
}

export interface WatchedPair {
  host: number;
  target: number;
  /**
   * The pair's window occurrence (1..255): a new value each time the pair
   * joins the window, kept while it stays. The switch stamps it on the
   * pair's I/O digests (io_watchlist's `gen`), so that a response whose
   * command came in an earlier occurrence is told apart whatever the
   * digests' timing.
   */
  gen: number;
}

/** The occurrence after `gen` (1..255, never 0: 0 is "not watched"). */
export function nextGen(gen: number): number {
  return (gen % 255) + 1;
}

export interface Window {
  index: number;
  flows: WatchedFlow[];
  pairs: WatchedPair[];
}

export class Rotation {
  private readonly flows: Array<{ src: number; dst: number; destQp: number }> = [];
  private readonly flowKeys = new Set<string>();
  /** the known pairs, each with the occurrence it last joined the window in */
  private readonly pairs: WatchedPair[] = [];
  private readonly pairKeys = new Set<string>();
  private flowCursor = 0;
  private pairCursor = 0;
  private index = 0;
  private window: Window = { index: 0, flows: [], pairs: [] };
  /** per pair (host|target), occurrences an earlier controller's window left on the switch: never given to the pair again by this one */
  private readonly leftBefore = new Map<string, Set<number>>();
  /** flows and pairs that joined the current window as they were learned, not yet taken (takeJoined) */
  private joined: { flows: WatchedFlow[]; pairs: WatchedPair[] } = { flows: [], pairs: [] };

  /**
   * `genBase`: where each pair's occurrences start (1..255), so that a
   * controller taking over a switch (a new epoch) does not begin with the
   * occurrences the one before it gave.
   */
  constructor(readonly flowCapacity: number, readonly pairCapacity: number, private readonly genBase = 1) {
    if (flowCapacity < 1 || pairCapacity < 1) throw new RangeError("watchlist capacities must be at least 1");
  }

  get knownFlows(): number {
    return this.flows.length;
  }

  get knownPairs(): number {
    return this.pairs.length;
  }

  /** Adds a flow; false when it was already known. */
  addFlow(src: number, dst: number, destQp: number): boolean {
    const k = `${src}|${dst}|${destQp}`;
    if (this.flowKeys.has(k)) return false;
    this.flowKeys.add(k);
    this.flows.push({ src, dst, destQp });
    // While the window has room, a new flow joins it at once.
    if (this.window.flows.length < this.flowCapacity && this.flows.length <= this.flowCapacity) {
      const f = { src, dst, destQp, slot: this.window.flows.length, epoch: this.index + 1 };
      this.window.flows.push(f);
      this.joined.flows.push(f);
      this.flowCursor = this.window.flows.length;
    }
    return true;
  }

  addPair(host: number, target: number): boolean {
    const k = `${host}|${target}`;
    if (this.pairKeys.has(k)) return false;
    this.pairKeys.add(k);
    // Not in any window yet: its first occurrence is genBase.
    const pair = { host, target, gen: this.genBase === 1 ? 255 : this.genBase - 1 };
    this.pairs.push(pair);
    if (this.window.pairs.length < this.pairCapacity && this.pairs.length <= this.pairCapacity) {
      pair.gen = this.nextGenOf(pair);
      const p = { host, target, gen: pair.gen };
      this.window.pairs.push(p);
      this.joined.pairs.push(p);
      this.pairCursor = this.window.pairs.length;
    }
    return true;
  }

  /**
   * The switch's watchlist, read back, holds this pair of the window with
   * occurrence `gen` (a controller before this one gave it): the pair keeps
   * it, so that taking the switch over does not cut its occurrence short.
   * False when the pair is not in the window.
   */
  adoptGen(host: number, target: number, gen: number): boolean {
    const inWindow = this.window.pairs.find((p) => p.host === host && p.target === target);
    if (!inWindow || gen < 1 || gen > 255) return false;
    inWindow.gen = gen;
    const known = this.pairs.find((p) => p.host === host && p.target === target);
    if (known) known.gen = gen;
    return true;
  }

  /**
   * An earlier controller's window held this pair in occurrence `gen` on the
   * switch, and its entry is being deleted (told as left): this controller
   * never gives the pair that occurrence. Digests of it may still reach the
   * exporter after this controller's join of the pair (the earlier one
   * publishing its backlog), and must stay those of an ended occurrence.
   */
  leftByEarlier(host: number, target: number, gen: number): void {
    if (gen < 1 || gen > 255) return;
    const k = `${host}|${target}`;
    let set = this.leftBefore.get(k);
    if (!set) this.leftBefore.set(k, (set = new Set()));
    set.add(gen);
  }

  /** The pair's next occurrence, past those an earlier controller left. */
  private nextGenOf(p: { host: number; target: number; gen: number }): number {
    const avoid = this.leftBefore.get(`${p.host}|${p.target}`);
    let gen = nextGen(p.gen);
    while (avoid?.has(gen) && avoid.size < 255) gen = nextGen(gen);
    return gen;
  }

  current(): Window {
    return this.window;
  }

  /** The flows and pairs that joined the current window as they were learned (the window had room) since the last call or window. */
  takeJoined(): { flows: WatchedFlow[]; pairs: WatchedPair[] } {
    const j = this.joined;
    // Asked at every digest list: nothing new allocated when nothing joined.
    if (j.flows.length === 0 && j.pairs.length === 0) return j;
    this.joined = { flows: [], pairs: [] };
    return j;
  }

  /** The next window: the N known flows after the previous window's, wrapping around. */
  advance(): Window {
    this.index++;
    const prev = new Map(this.window.flows.map((f) => [`${f.src}|${f.dst}|${f.destQp}`, f]));
    const flows: WatchedFlow[] = [];
    const n = Math.min(this.flowCapacity, this.flows.length);
    const used = new Set<number>();
    const picked = Array.from({ length: n }, (_, i) => this.flows[(this.flowCursor + i) % this.flows.length]!);
    // A flow that stays in the window keeps its slot and epoch; the others get fresh ones.
    for (const f of picked) {
      const kept = prev.get(`${f.src}|${f.dst}|${f.destQp}`);
      if (kept) {
        flows.push(kept);
        used.add(kept.slot);
      }
    }
    let slot = 0;
    for (const f of picked) {
      if (prev.has(`${f.src}|${f.dst}|${f.destQp}`)) continue;
      while (used.has(slot)) slot++;
      used.add(slot);
      flows.push({ ...f, slot, epoch: this.index + 1 });
    }
    this.flowCursor = this.flows.length ? (this.flowCursor + n) % this.flows.length : 0;
    const m = Math.min(this.pairCapacity, this.pairs.length);
    // A pair that stays in the window keeps its occurrence; one that joins gets its next.
    const stays = new Set(this.window.pairs.map((p) => `${p.host}|${p.target}`));
    const pairs = Array.from({ length: m }, (_, i) => {
      const p = this.pairs[(this.pairCursor + i) % this.pairs.length]!;
      if (!stays.has(`${p.host}|${p.target}`)) p.gen = this.nextGenOf(p);
      return { host: p.host, target: p.target, gen: p.gen };
    });
    this.pairCursor = this.pairs.length ? (this.pairCursor + m) % this.pairs.length : 0;
    this.window = { index: this.index, flows, pairs };
    this.joined = { flows: [], pairs: [] };
    return this.window;
  }
}
