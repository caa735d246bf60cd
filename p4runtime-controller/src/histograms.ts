// The data plane's latency histograms (p4/include/control/histograms.p4):
// pair and flow ids written into the switch's id tables as the controller
// learns pairs and flows, and the counter arrays read every interval into
// per-bucket deltas.
//
// A read takes two round trips: the per-id activity counters whole (one
// cell per pair and op, one per flow), then the bucket cells of the ids
// that moved since the last read. Id 0 is the overflow: what had no id.
// An id idle for `idleMs` is given to a new pair when none is free; its
// cells then start from the values last read (they had not moved).
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

/** How often a refused pair or flow is looked at again. */
const RETRY_REFUSED_MS = 1000;

interface Holder {
  id: number;
  key: string;
  /** what the id names: [host, target] or [src, dst, dest_qp] */
  names: number[];
  lastMovedMs: number;
}

/** Ids 1..capacity-1 of one table (0 is the overflow). */
class IdTable {
  readonly byKey = new Map<string, Holder>();
  readonly byId = new Map<number, Holder>();
  private next = 1;
  /** pairs (flows) refused and waiting, with when an id was last looked for them */
  private readonly refusedAt = new Map<string, number>();
  /** pairs (flows) refused an id, each counted once (never goes down) */
  refused = 0;

  constructor(readonly capacity: number, private readonly idleMs: number) {}

  /**
   * The id of `names`: undefined when refused; `replaced` is the holder whose
   * id it took. A refused one is looked for again at most once a second (its
   * every digest asks), and counted once.
   */
  assign(names: number[], nowMs: number): { id: number; added: boolean; replaced?: Holder } | undefined {
    const key = names.join("|");
    const held = this.byKey.get(key);
    if (held) return { id: held.id, added: false };
    const triedAt = this.refusedAt.get(key);
    if (triedAt !== undefined && nowMs - triedAt < RETRY_REFUSED_MS) return undefined;
    let id: number | undefined;
    let replaced: Holder | undefined;
    if (this.next < this.capacity) id = this.next++;
    else {
      for (const h of this.byId.values()) {
        if (nowMs - h.lastMovedMs >= this.idleMs && (!replaced || h.lastMovedMs < replaced.lastMovedMs)) replaced = h;
      }
      if (!replaced) {
        if (triedAt === undefined) this.refused++;
        this.refusedAt.set(key, nowMs);
        return undefined;
      }
      id = replaced.id;
      this.byKey.delete(replaced.key);
    }
    this.refusedAt.delete(key);
    const h: Holder = { id, key, names, lastMovedMs: nowMs };
    this.byKey.set(key, h);
    this.byId.set(id, h);
    return { id, added: true, replaced };
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
  /** the id tables (pairs, flows) */
  readonly tableIds: readonly number[];

  /** The program's histograms, or undefined for a program without them (Tofino builds). */
  static of(schema: P4Schema, idleMs: number): HistogramTables | undefined {
    const names = [...Object.values(FIGURE_COUNTERS), C.io_tracker_histograms_pair_ios.name, C.flow_tracker_histograms_fct.name, C.flow_tracker_histograms_flow_messages.name];
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
    this.tableIds = [T.io_tracker_histograms_io_pairs.name, T.flow_tracker_histograms_flows.name].map((n) => schema.tables.get(n).preamble!.id);
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

  /** The id table entry for a new pair (to write), or undefined when the pair has one or none is left. */
  pairEntry(host: number, target: number, nowMs: number): { table: string; match: Record<string, number>; action: { name: string; params: Record<string, number> }; replaced?: Record<string, number> } | undefined {
    const r = this.pairs.assign([host, target], nowMs);
    if (!r?.added) return undefined;
    return {
      table: T.io_tracker_histograms_io_pairs.name,
      match: { host, target },
      action: { name: A.io_tracker_histograms_set_pair.name, params: { id: r.id } },
      ...(r.replaced ? { replaced: { host: r.replaced.names[0]!, target: r.replaced.names[1]! } } : {}),
    };
  }

  flowEntry(src: number, dst: number, destQp: number, nowMs: number): { table: string; match: Record<string, number>; action: { name: string; params: Record<string, number> }; replaced?: Record<string, number> } | undefined {
    const r = this.flows.assign([src, dst, destQp], nowMs);
    if (!r?.added) return undefined;
    return {
      table: T.flow_tracker_histograms_flows.name,
      match: { src, dst, dest_qp: destQp },
      action: { name: A.flow_tracker_histograms_set_flow.name, params: { id: r.id } },
      ...(r.replaced ? { replaced: { src: r.replaced.names[0]!, dst: r.replaced.names[1]!, dest_qp: r.replaced.names[2]! } } : {}),
    };
  }

  /** A switch whose counters start anew (pipeline pushed): every cell is 0. */
  resetBaselines(): void {
    this.last = new Map();
  }

  /** Takes the cells' current values as the baselines, without deltas (a switch attached to with counts from before). */
  async baseline(read: (entities: Entity[]) => AsyncIterable<Entity>): Promise<void> {
    this.last = new Map();
    const ids = [...this.figureIds.map(([, id]) => id), this.pairIos, this.fct, this.flowMessages];
    for await (const e of read(ids.map((counterId) => ({ entity: { $case: "counterEntry" as const, value: { counterId, index: undefined, data: undefined } } })))) {
      this.take(e);
    }
  }

  /** A cell's value read: the delta since the last read (and the new baseline). */
  private take(e: Entity): { counterId: number; index: number; delta: number } | undefined {
    if (e.entity?.$case !== "counterEntry") return undefined;
    const counterId = e.entity.value.counterId;
    const index = Number(e.entity.value.index?.index ?? -1);
    const value = Number(e.entity.value.data?.packetCount ?? 0n);
    let cells = this.last.get(counterId);
    if (!cells) this.last.set(counterId, (cells = new Map()));
    const delta = value - (cells.get(index) ?? 0);
    if (value === 0) cells.delete(index);
    else cells.set(index, value);
    return { counterId, index, delta };
  }

  /** Everything counted since the last read, per histogram. */
  async read(read: (entities: Entity[]) => AsyncIterable<Entity>, nowMs: number): Promise<HistogramRead> {
    const moved: Array<{ id: number; op: number }> = [];
    const movedFlows: number[] = [];
    const activity = [this.pairIos, this.flowMessages].map((counterId) => ({ entity: { $case: "counterEntry" as const, value: { counterId, index: undefined, data: undefined } } }));
    for await (const e of read(activity)) {
      const t = this.take(e);
      if (!t || t.delta === 0) continue;
      if (t.counterId === this.pairIos) moved.push({ id: t.index >> 1, op: t.index & 1 });
      else movedFlows.push(t.index);
    }
    const cells: Entity[] = [];
    for (const { id, op } of moved) {
      for (const [, counterId] of this.figureIds) {
        for (let b = 0; b < HIST_BUCKETS_USED; b++) cells.push(cellEntity(counterId, (id << 9) | (op << 8) | b));
      }
    }
    for (const id of movedFlows) for (let b = 0; b < HIST_BUCKETS_USED; b++) cells.push(cellEntity(this.fct, (id << 8) | b));
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
    return { io: [...io.values()], fct: [...fct.values()], pairs: this.pairs.byKey.size, flows: this.flows.byKey.size, pairsRefused: this.pairs.refused, flowsRefused: this.flows.refused };
  }
}

function cellEntity(counterId: number, index: number): Entity {
  return { entity: { $case: "counterEntry", value: { counterId, index: { index: BigInt(index) }, data: undefined } } };
}
