// The data plane's latency histograms (p4/include/control/histograms.p4):
// pair and flow ids written into the switch's id tables as the controller
// learns pairs and flows, and the counter arrays read every interval into
// per-bucket deltas.
//
// A read takes three round trips, each reading only what the one before
// found moved since the last read: the per-id activity counters whole (one
// cell per pair and op, one per flow), then the range cells of the ids that
// moved (per figure, eight ranges of 32 buckets), then the bucket cells of
// the ranges that moved. Id 0 is the overflow: what had no id. On Tofino
// (p4/tna) io_ranges counts one cell per response, its e2e figure's (a
// counter is addressed once per packet): there a moved e2e range also has
// the other e2e figure's range read, and the DAL and DPL ranges up to it
// (both are parts of the I/O's e2e, so never in a higher range).
// A cell read lower than the last read: on Tofino, whose cells are 32 bits,
// a wrap (taken modulo 2^32: no cell moves 2^31 in one interval); on BMv2
// (64 bits) nothing explains it (counters cleared behind the controller's
// back), so the cell counts nothing and every cell's baseline is read anew
// at the end of that read. Both are counted (cellsWrapped, cellsDecreased).
// An id idle for `idleMs` is given to a new pair when none is free, in
// three steps, so that no count of the old pair is read as the new one's:
// the old pair's entry is removed (its I/Os count in the overflow from then
// on), the next read after that removal is written takes what the old pair
// counted since the last read, and only then is the id free.
import { HIST_BUCKETS_USED, IO_FIGURES, P4_NAMES, type FctHistogramDelta, type HistogramRead, type IoFigure, type IoHistogramDelta } from "@rdma-telemetry/contract";
import type { P4Schema } from "@rdma-telemetry/p4runtime";
import type { Entity } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";


const C = P4_NAMES.counters;
const T = P4_NAMES.tables;
const A = P4_NAMES.actions;

/** The counter arrays of each figure (P4 names). */
const FIGURE_COUNTERS: Record<IoFigure, string> = {
  e2e_c: C.io_tracker_histograms_e2e_c.name,
  e2e_s: C.io_tracker_histograms_e2e_s.name,
  dal: C.io_tracker_histograms_dal_s.name,
  dpl: C.io_tracker_histograms_dpl_c.name,
};

/** The Tofino builds' architectures: io_ranges counts one cell per response, and the cells are 32 bits. */
const TOFINO_ARCHS = ["tna", "t2na"];
/** Where a Tofino cell wraps. */
const TOFINO_CELL_WRAP = 2 ** 32;

/** Buckets in ranges of 32 (bucket[7:5]): the io_ranges and fct_ranges activity arrays count per range. */
const HIST_RANGES = 8;
const HIST_RANGE_BUCKETS = 32;

/** How often a refused pair or flow is looked at again. */
const RETRY_REFUSED_MS = 1000;

interface Holder {
  id: number;
  key: string;
  /** what the id names: [host, target] or [src, dst, dest_qp] */
  names: number[];
  lastMovedMs: number;
  /** being let go: its entry's removal waiting to be written, or written (the id is free after the next read) */
  release?: "pending" | "written";
}

/** What asking for an id gives: the id (added: new, to write), or an idle holder whose entry to remove first. */
export type Assigned = { id: number; added: boolean } | { release: Holder };

/** Ids 1..capacity-1 of one table (0 is the overflow). */
class IdTable {
  /** the holders with an entry */
  readonly byKey = new Map<string, Holder>();
  /** the holders by id, those being let go included */
  readonly byId = new Map<number, Holder>();
  private next = 1;
  /** ids let go and read out */
  private readonly free: number[] = [];
  /** pairs (flows) refused and waiting, with when an id was last looked for them */
  private readonly refusedAt = new Map<string, number>();
  /** newcomers waiting for the id an idle holder is letting go */
  private readonly waiting = new Map<string, number>();
  /** pairs (flows) refused an id, each counted once (never goes down) */
  refused = 0;
  /** ids taken back from idle holders for newcomers */
  released = 0;

  constructor(readonly capacity: number, private readonly idleMs: number) {}

  /**
   * The id of `names`, or the idle holder to let go for it (the newcomer gets
   * an id once that one's is read out), or undefined: refused, or waiting. A
   * refused one is looked for again at most once a second (its every digest
   * asks), and counted once.
   */
  assign(names: number[], nowMs: number): Assigned | undefined {
    const key = names.join("|");
    const held = this.byKey.get(key);
    if (held) return { id: held.id, added: false };
    const waitingFor = this.waiting.get(key);
    if (waitingFor !== undefined) {
      if (this.byId.get(waitingFor)?.release) return undefined;
      this.waiting.delete(key);
    }
    const triedAt = this.refusedAt.get(key);
    if (triedAt !== undefined && nowMs - triedAt < RETRY_REFUSED_MS) return undefined;
    let id: number | undefined;
    if (this.next < this.capacity) id = this.next++;
    else if (this.free.length) id = this.free.pop()!;
    else {
      let idle: Holder | undefined;
      for (const h of this.byKey.values()) {
        if (nowMs - h.lastMovedMs >= this.idleMs && (!idle || h.lastMovedMs < idle.lastMovedMs)) idle = h;
      }
      if (!idle) {
        if (triedAt === undefined) this.refused++;
        this.refusedAt.set(key, nowMs);
        return undefined;
      }
      this.byKey.delete(idle.key);
      idle.release = "pending";
      this.released++;
      this.waiting.set(key, idle.id);
      this.refusedAt.delete(key);
      return { release: idle };
    }
    this.refusedAt.delete(key);
    const h: Holder = { id, key, names, lastMovedMs: nowMs };
    this.byKey.set(key, h);
    this.byId.set(id, h);
    return { id, added: true };
  }

  /** The holders being let go whose entry's removal is to be written ("pending") or is written ("written"). */
  releasing(state: "pending" | "written"): Holder[] {
    return [...this.byId.values()].filter((h) => h.release === state);
  }

  /** After a read: the ids whose removal was written before it are free. */
  freeReleased(hs: Holder[]): void {
    for (const h of hs) {
      this.byId.delete(h.id);
      this.free.push(h.id);
    }
  }
}

export class HistogramTables {
  private readonly pairs: IdTable;
  private readonly flows: IdTable;
  /** counter id -> index -> the value last read */
  private last = new Map<number, Map<number, number>>();
  private readonly figureIds: Array<[IoFigure, number]>;
  private readonly pairIos: number;
  private readonly fct: number;
  private readonly flowMessages: number;
  private readonly ioRanges: number;
  private readonly fctRanges: number;
  /** the id tables (pairs, flows) */
  readonly tableIds: readonly number[];
  /** a Tofino build: io_ranges counts only the e2e figure's range of each response, and the cells wrap at 2^32 (BMv2's are 64 bits) */
  private readonly tofino: boolean;

  /** The program's histograms, or undefined for a program without them (Tofino builds). */
  static of(schema: P4Schema, idleMs: number): HistogramTables | undefined {
    const names = [...Object.values(FIGURE_COUNTERS), C.io_tracker_histograms_pair_ios.name, C.io_tracker_histograms_io_ranges.name, C.flow_tracker_histograms_fct.name, C.flow_tracker_histograms_flow_messages.name, C.flow_tracker_histograms_fct_ranges.name];
    if (!names.every((n) => schema.counters.has(n)) || !schema.tables.has(T.io_tracker_histograms_io_pairs.name) || !schema.tables.has(T.flow_tracker_histograms_flows.name)) return undefined;
    return new HistogramTables(schema, idleMs);
  }

  private constructor(schema: P4Schema, idleMs: number) {
    this.pairs = new IdTable(Number(schema.tables.get(T.io_tracker_histograms_io_pairs.name).size), idleMs);
    this.flows = new IdTable(Number(schema.tables.get(T.flow_tracker_histograms_flows.name).size), idleMs);
    this.figureIds = IO_FIGURES.map((f) => [f, schema.counters.get(FIGURE_COUNTERS[f]).preamble!.id]);
    this.pairIos = schema.counters.get(C.io_tracker_histograms_pair_ios.name).preamble!.id;
    this.fct = schema.counters.get(C.flow_tracker_histograms_fct.name).preamble!.id;
    this.flowMessages = schema.counters.get(C.flow_tracker_histograms_flow_messages.name).preamble!.id;
    this.ioRanges = schema.counters.get(C.io_tracker_histograms_io_ranges.name).preamble!.id;
    this.fctRanges = schema.counters.get(C.flow_tracker_histograms_fct_ranges.name).preamble!.id;
    this.tableIds = [T.io_tracker_histograms_io_pairs.name, T.flow_tracker_histograms_flows.name].map((n) => schema.tables.get(n).preamble!.id);
    this.tofino = TOFINO_ARCHS.includes(schema.p4info.pkgInfo?.arch ?? "");
  }

  get pairCount(): number {
    return this.pairs.byKey.size;
  }

  get flowCount(): number {
    return this.flows.byKey.size;
  }

  /** Pairs and flows refused an id (every id taken, none idle long enough): counted in the overflow. */
  get pairsRefused(): number {
    return this.pairs.refused;
  }

  get flowsRefused(): number {
    return this.flows.refused;
  }

  /** Ids taken back from idle pairs and flows for newcomers. */
  get pairsReleased(): number {
    return this.pairs.released;
  }

  get flowsReleased(): number {
    return this.flows.released;
  }

  /**
   * The id table entry to write for a new pair, or the entry of an idle pair
   * to remove first (its id is the newcomer's once read out); undefined when
   * the pair has an id, waits for one, or is refused.
   */
  pairEntry(host: number, target: number, nowMs: number): IdEntry | undefined {
    const r = this.pairs.assign([host, target], nowMs);
    if (!r) return undefined;
    if ("release" in r) return { table: T.io_tracker_histograms_io_pairs.name, release: { host: r.release.names[0]!, target: r.release.names[1]! } };
    if (!r.added) return undefined;
    return { table: T.io_tracker_histograms_io_pairs.name, match: { host, target }, action: { name: A.io_tracker_histograms_set_pair.name, params: { id: r.id } } };
  }

  flowEntry(src: number, dst: number, destQp: number, nowMs: number): IdEntry | undefined {
    const r = this.flows.assign([src, dst, destQp], nowMs);
    if (!r) return undefined;
    if ("release" in r) return { table: T.flow_tracker_histograms_flows.name, release: { src: r.release.names[0]!, dst: r.release.names[1]!, dest_qp: r.release.names[2]! } };
    if (!r.added) return undefined;
    return { table: T.flow_tracker_histograms_flows.name, match: { src, dst, dest_qp: destQp }, action: { name: A.flow_tracker_histograms_set_flow.name, params: { id: r.id } } };
  }

  /** The ids being let go whose entries' removal is still to be written (pass back to releasesWritten once it is). */
  releasesPending(): readonly object[] {
    return [...this.pairs.releasing("pending"), ...this.flows.releasing("pending")];
  }

  /** Their removal is written: the next read reads their ids out, then frees them. */
  releasesWritten(pending: readonly object[]): void {
    for (const h of pending as Holder[]) if (h.release === "pending") h.release = "written";
  }

  /** A switch whose counters start anew (pipeline pushed): every cell is 0. */
  resetBaselines(): void {
    this.last = new Map();
  }

  /** Takes the cells' current values as the baselines, without deltas (a switch attached to with counts from before). */
  async baseline(read: (entities: Entity[]) => AsyncIterable<Entity>): Promise<void> {
    this.last = new Map();
    const ids = [...this.figureIds.map(([, id]) => id), this.pairIos, this.ioRanges, this.fct, this.flowMessages, this.fctRanges];
    for await (const e of read(ids.map((counterId) => ({ entity: { $case: "counterEntry" as const, value: { counterId, index: undefined, data: undefined } } })))) {
      this.take(e);
    }
  }

  /** Counter cells read (every cell a read returned), since the start. */
  cellsRead = 0;
  /** Cells read lower than before and taken as wrapped at 2^32 (Tofino). */
  cellsWrapped = 0;
  /** Cells read lower than before with nothing to explain it (64-bit cells): that read counted nothing for them. */
  cellsDecreased = 0;

  /** A cell's value read: the delta since the last read (and the new baseline). */
  private take(e: Entity): { counterId: number; index: number; delta: number } | undefined {
    if (e.entity?.$case !== "counterEntry") return undefined;
    this.cellsRead++;
    const counterId = e.entity.value.counterId;
    const index = Number(e.entity.value.index?.index ?? -1);
    const value = Number(e.entity.value.data?.packetCount ?? 0n);
    let cells = this.last.get(counterId);
    if (!cells) this.last.set(counterId, (cells = new Map()));
    let delta = value - (cells.get(index) ?? 0);
    if (delta < 0) {
      if (this.tofino && -delta > TOFINO_CELL_WRAP / 2) {
        delta += TOFINO_CELL_WRAP;
        this.cellsWrapped++;
      } else {
        delta = 0;
        this.cellsDecreased++;
      }
    }
    if (value === 0) cells.delete(index);
    else cells.set(index, value);
    return { counterId, index, delta };
  }

  /** Everything counted since the last read, per histogram. */
  async read(read: (entities: Entity[]) => AsyncIterable<Entity>, nowMs: number): Promise<HistogramRead> {
    // Ids whose entries' removal was written before this read: what they counted is their old holder's, then they are free.
    const releasedPairs = this.pairs.releasing("written");
    const releasedFlows = this.flows.releasing("written");
    const decreased = this.cellsDecreased;
    const moved: Array<{ id: number; op: number }> = [];
    const movedFlows: number[] = [];
    const activity = [this.pairIos, this.flowMessages].map((counterId) => ({ entity: { $case: "counterEntry" as const, value: { counterId, index: undefined, data: undefined } } }));
    for await (const e of read(activity)) {
      const t = this.take(e);
      if (!t || t.delta === 0) continue;
      if (t.counterId === this.pairIos) moved.push({ id: t.index >> 1, op: t.index & 1 });
      else movedFlows.push(t.index);
    }
    // The ranges of 32 buckets of what moved, then the buckets of the ranges that moved.
    const ranges: Entity[] = [];
    for (const { id, op } of moved) for (let f = 0; f < this.figureIds.length; f++) for (let r = 0; r < HIST_RANGES; r++) ranges.push(cellEntity(this.ioRanges, (id << 6) | (op << 5) | (f << 3) | r));
    for (const id of movedFlows) for (let r = 0; r < HIST_RANGES; r++) ranges.push(cellEntity(this.fctRanges, (id << 3) | r));
    const cells: Entity[] = [];
    const bucketsOf = (counterId: number, base: number, r: number) => {
      for (let b = r * HIST_RANGE_BUCKETS; b < Math.min((r + 1) * HIST_RANGE_BUCKETS, HIST_BUCKETS_USED); b++) cells.push(cellEntity(counterId, base | b));
    };
    if (ranges.length) {
      const asked = new Set<string>();
      const ioBuckets = (f: number, base: number, r: number) => {
        const k = `${f}|${base}|${r}`;
        if (asked.has(k)) return;
        asked.add(k);
        bucketsOf(this.figureIds[f]![1], base, r);
      };
      for await (const e of read(ranges)) {
        const t = this.take(e);
        if (!t || t.delta === 0) continue;
        const r = t.index & 7;
        if (t.counterId === this.fctRanges) {
          bucketsOf(this.fct, (t.index >> 3) << 8, r);
          continue;
        }
        const f = (t.index >> 3) & 3;
        const base = (t.index >> 6) << 9 | ((t.index >> 5) & 1) << 8;
        ioBuckets(f, base, r);
        if (this.tofino && f < 2) {
          ioBuckets(1 - f, base, r);
          for (let q = 0; q <= r; q++) for (const g of [2, 3]) ioBuckets(g, base, q);
        }
      }
    }
    const io = new Map<string, IoHistogramDelta>();
    const fct = new Map<number, FctHistogramDelta>();
    const figureOf = new Map(this.figureIds.map(([f, id]) => [id, f]));
    if (cells.length) {
      for await (const e of read(cells)) {
        const t = this.take(e);
        if (!t || t.delta === 0) continue;
        const bucket = t.index & 0xff;
        if (t.counterId === this.fct) {
          const id = t.index >> 8;
          let d = fct.get(id);
          if (!d) {
            const h = this.flows.byId.get(id);
            if (h) h.lastMovedMs = nowMs;
            d = { src: h?.names[0] ?? null, dst: h?.names[1] ?? null, destQp: h?.names[2] ?? null, buckets: [] };
            fct.set(id, d);
          }
          d.buckets.push([bucket, t.delta]);
          continue;
        }
        const figure = figureOf.get(t.counterId)!;
        const id = t.index >> 9;
        const op = (t.index >> 8) & 1;
        const key = `${id}|${op}|${figure}`;
        let d = io.get(key);
        if (!d) {
          const h = this.pairs.byId.get(id);
          if (h) h.lastMovedMs = nowMs;
          d = { host: h?.names[0] ?? null, target: h?.names[1] ?? null, op: op ? "write" : "read", figure, buckets: [] };
          io.set(key, d);
        }
        d.buckets.push([bucket, t.delta]);
      }
    }
    this.pairs.freeReleased(releasedPairs);
    this.flows.freeReleased(releasedFlows);
    // A cell lower with nothing to explain it (counters cleared behind the controller's back): every cell's baseline is taken anew.
    if (this.cellsDecreased > decreased) await this.baseline(read);
    return { io: [...io.values()], fct: [...fct.values()], pairs: this.pairs.byKey.size, flows: this.flows.byKey.size, pairsRefused: this.pairs.refused, flowsRefused: this.flows.refused };
  }
}

/** An id table write: an entry to add, or (release) the entry of an idle holder to remove. */
export type IdEntry =
  | { table: string; match: Record<string, number>; action: { name: string; params: Record<string, number> }; release?: undefined }
  | { table: string; release: Record<string, number>; match?: undefined; action?: undefined };

function cellEntity(counterId: number, index: number): Entity {
  return { entity: { $case: "counterEntry", value: { counterId, index: { index: BigInt(index) }, data: undefined } } };
}
