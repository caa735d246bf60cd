// Match-action tables: exact, lpm, ternary, range and optional keys, entry
// priorities, default actions and direct counters.
import type { DirectMeterInfo, MeterArray } from "./meters.js";
import { SwitchError } from "./errors.js";
import { NUM_BITS } from "./bits.js";

export type Value = number | bigint;

/** A 64-bit counter value (packets, bytes). */
export interface CounterValue {
  packets: bigint;
  bytes: bigint;
}

/** A direct counter: doubles on the packet path, the part past 2^48 in `high` (counter-values.ts). */
export interface CounterCell {
  packets: number;
  bytes: number;
  high?: CounterValue;
}

export type KeyMatch =
  | { kind: "exact"; value: bigint }
  | { kind: "lpm"; value: bigint; prefixLen: number }
  | { kind: "ternary"; value: bigint; mask: bigint }
  | { kind: "range"; low: bigint; high: bigint }
  | { kind: "optional"; value: bigint }
  /** ternary, range, optional or lpm field left out: matches anything */
  | { kind: "any" };

export interface KeyField {
  name: string;
  matchType: "exact" | "lpm" | "ternary" | "range" | "optional";
  width: number;
}

export interface ActionCall {
  actionId: number;
  /** Parameter values, number for widths <= 52, bigint above. */
  data: Value[];
}

export interface TableEntry {
  match: KeyMatch[];
  /** Higher wins (P4Runtime semantics); 0 for exact and lpm tables. */
  priority: number;
  action: ActionCall;
  packets: number;
  bytes: number;
  /** the direct counter's part folded past 2^48 (counter-values.ts) */
  high?: CounterValue;
  /** opaque, returned on reads */
  metadata?: Uint8Array;
  /** P4Runtime's controller_metadata: opaque, returned on reads */
  controllerMetadata?: bigint;
  idleTimeoutNs?: bigint;
  /** the entry's direct meter cell, when the table has a direct meter and the cell is configured (else GREEN) */
  meter?: MeterArray | undefined;
  /** in a table with an action profile: the member whose action the entry runs (`action` is the member's own) */
  memberId?: number | undefined;
}

/** An action profile (BMv2 "indirect" tables): members, an action each, that table entries point to. */
export interface ActionProfile {
  name: string;
  id: number;
  maxSize: number;
  members: Map<number, ActionProfileMember>;
}

export interface ActionProfileMember {
  id: number;
  /** shared by the entries that point to the member: a MODIFY of the member changes it in place */
  action: ActionCall;
  /** entries pointing to it */
  refs: number;
}

/** The action of a miss in a table with an action profile and no default: none (BMv2). */
export const NO_ACTION = -1;

/** A table write that the table refuses, with the gRPC code it answers. */
export class TableError extends SwitchError {
  override readonly name = "TableError";
  constructor(message: string, override readonly code: "ALREADY_EXISTS" | "NOT_FOUND" | "RESOURCE_EXHAUSTED" | "INVALID_ARGUMENT" | "PERMISSION_DENIED") {
    super(message, code);
  }
}

const MASKS = Array.from({ length: 257 }, (_, w) => (1n << BigInt(w)) - 1n);
const mask = (w: number) => MASKS[w] ?? (1n << BigInt(w)) - 1n;

const outside = (v: bigint, max: bigint) => v < 0n || v > max;

function matches(m: KeyMatch, v: bigint, width: number): boolean {
  switch (m.kind) {
    case "exact":
    case "optional":
      return v === m.value;
    case "lpm":
      return m.prefixLen === 0 || v >> BigInt(width - m.prefixLen) === m.value >> BigInt(width - m.prefixLen);
    case "ternary":
      return (v & m.mask) === (m.value & m.mask);
    case "range":
      return v >= m.low && v <= m.high;
    case "any":
      return true;
  }
}

/** Canonical text of a match key, to detect duplicates. */
export function matchKeyText(match: readonly KeyMatch[], priority: number): string {
  return match.map((m) => {
    switch (m.kind) {
      case "exact":
      case "optional":
        return `${m.kind}:${m.value}`;
      case "lpm":
        return `lpm:${m.value}/${m.prefixLen}`;
      case "ternary":
        return `ternary:${m.value & m.mask}&${m.mask}`;
      case "range":
        return `range:${m.low}-${m.high}`;
      case "any":
        return "*";
    }
  }).join("|") + `#${priority}`;
}

export class MatchTable {
  readonly kind: "exact" | "lpm" | "scan";
  /** Entries by their match key: for exact tables the lookup key itself, else its canonical text. */
  private readonly byKey = new Map<number | string, TableEntry>();
  private lpmIndex: Array<{ prefixLen: number; map: Map<number | string, TableEntry> }> = [];
  private scanList: TableEntry[] = [];
  private readonly lpmField: number;
  defaultAction: ActionCall;
  /** the table's direct meter, if it has one */
  directMeter: DirectMeterInfo | undefined = undefined;
  /** the table's action profile, if its entries point to members */
  actionProfile: ActionProfile | undefined = undefined;
  /** the default entry's direct counter */
  readonly defaultCounter: CounterCell = { packets: 0, bytes: 0 };

  constructor(
    readonly name: string,
    readonly id: number,
    readonly keys: readonly KeyField[],
    readonly actionIds: readonly number[],
    readonly maxSize: number,
    defaultAction: ActionCall,
    readonly defaultConst: boolean,
    readonly withCounters: boolean,
    /** entries fixed by the program (const entries): read-only */
    readonly constEntries: boolean,
  ) {
    this.defaultAction = defaultAction;
    const types = keys.map((k) => k.matchType);
    this.lpmField = types.indexOf("lpm");
    if (types.every((t) => t === "exact")) this.kind = "exact";
    else if (types.every((t) => t === "exact" || t === "lpm") && types.filter((t) => t === "lpm").length === 1) this.kind = "lpm";
    else this.kind = "scan";
  }

  get size(): number {
    return this.byKey.size;
  }

  entries(): IterableIterator<TableEntry> {
    return this.byKey.values();
  }

  /** True when the table orders entries by priority (ternary, range, optional keys). */
  get needsPriority(): boolean {
    return this.kind === "scan";
  }

  /** The key of an entry in byKey (exact tables: the lookup key, so byKey is also the index). */
  private keyOf(match: readonly KeyMatch[], priority: number): number | string {
    // Exact tables take no priority (validate), so the values alone are the key.
    if (this.kind !== "exact") return matchKeyText(match, priority);
    if (match.length === 1) {
      const m = match[0]!;
      return m.kind === "exact" ? this.exactKey1(m.value) : "*";
    }
    // join() builds one flat string; += would keep a tree of pieces alive in every stored key.
    const parts = new Array<string>(match.length);
    for (let i = 0; i < match.length; i++) {
      const m = match[i]!;
      parts[i] = m.kind === "exact" ? String(m.value) : "*";
    }
    return parts.join(",");
  }

  private exactKey1(v: Value): number | string {
    if (typeof v === "number") return v;
    return this.keys[0]!.width <= NUM_BITS ? Number(v) : String(v);
  }

  private exactKey(values: readonly Value[]): number | string {
    if (values.length === 1) return this.exactKey1(values[0]!);
    return values.join(",");
  }

  private indexKey(e: TableEntry): number | string {
    const vals = e.match.map((m, i) => {
      if (m.kind === "exact") return this.keys[i]!.width <= NUM_BITS ? Number(m.value) : m.value;
      if (m.kind === "lpm") {
        const w = this.keys[i]!.width;
        const prefix = m.prefixLen === 0 ? 0n : m.value >> BigInt(w - m.prefixLen);
        return w <= NUM_BITS ? Number(prefix) : prefix;
      }
      return 0;
    });
    return this.exactKey(vals);
  }

  insert(e: TableEntry): void {
    const text = this.keyOf(e.match, e.priority);
    if (this.byKey.has(text)) throw new TableError(`table '${this.name}': an entry with this match key already exists`, "ALREADY_EXISTS");
    if (this.byKey.size >= this.maxSize) throw new TableError(`table '${this.name}' is full (${this.maxSize} entries)`, "RESOURCE_EXHAUSTED");
    this.byKey.set(text, e);
    this.addToIndex(e);
  }

  modify(match: readonly KeyMatch[], priority: number, action: ActionCall, metadata?: Uint8Array, controllerMetadata?: bigint): TableEntry {
    const e = this.byKey.get(this.keyOf(match, priority));
    if (!e) throw new TableError(`table '${this.name}': no entry with this match key`, "NOT_FOUND");
    e.action = action;
    if (metadata !== undefined) e.metadata = metadata;
    if (controllerMetadata !== undefined) e.controllerMetadata = controllerMetadata;
    return e;
  }

  delete(match: readonly KeyMatch[], priority: number): TableEntry {
    const text = this.keyOf(match, priority);
    const e = this.byKey.get(text);
    if (!e) throw new TableError(`table '${this.name}': no entry with this match key`, "NOT_FOUND");
    this.byKey.delete(text);
    this.removeFromIndex(e);
    return e;
  }

  /** The prefix length of an entry's lpm field (0 when the field is left out). */
  private prefixLen(e: TableEntry): number {
    const m = e.match[this.lpmField]!;
    return m.kind === "lpm" ? m.prefixLen : 0;
  }

  private lpmBucket(e: TableEntry): { prefixLen: number; map: Map<number | string, TableEntry> } | undefined {
    const len = this.prefixLen(e);
    return this.lpmIndex.find((b) => b.prefixLen === len);
  }

  private removeFromIndex(e: TableEntry): void {
    if (this.kind === "exact") return; // byKey is the index
    if (this.kind === "lpm") {
      const bucket = this.lpmBucket(e);
      const k = this.indexKey(e);
      if (bucket && bucket.map.get(k) === e) bucket.map.delete(k);
    } else {
      const i = this.scanList.indexOf(e);
      if (i >= 0) this.scanList.splice(i, 1);
    }
  }

  get(match: readonly KeyMatch[], priority: number): TableEntry | undefined {
    return this.byKey.get(this.keyOf(match, priority));
  }

  clear(): void {
    this.byKey.clear();
    this.rebuildIndex();
  }

  private addToIndex(e: TableEntry): void {
    if (this.kind === "exact") return; // byKey is the index
    if (this.kind === "lpm") {
      const len = this.prefixLen(e);
      let bucket = this.lpmBucket(e);
      if (!bucket) {
        bucket = { prefixLen: len, map: new Map() };
        this.lpmIndex.push(bucket);
        this.lpmIndex.sort((a, b) => b.prefixLen - a.prefixLen);
      }
      bucket.map.set(this.indexKey(e), e);
    } else {
      // Sorted by priority, highest first; among equal priorities the earlier entry wins.
      let lo = 0;
      let hi = this.scanList.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.scanList[mid]!.priority >= e.priority) lo = mid + 1;
        else hi = mid;
      }
      this.scanList.splice(lo, 0, e);
    }
  }

  private rebuildIndex(): void {
    this.lpmIndex = [];
    this.scanList = [];
    for (const e of this.byKey.values()) this.addToIndex(e);
  }

  /** lookup() for a table of one key field, without allocating a key array. */
  lookup1(v: Value): TableEntry | undefined {
    if (this.kind === "exact") {
      if (typeof v === "number") return this.byKey.get(v);
      return this.byKey.get(this.keys[0]!.width <= NUM_BITS ? Number(v) : String(v));
    }
    if (this.kind === "lpm" && typeof v === "number") {
      const w = this.keys[0]!.width;
      for (const b of this.lpmIndex) {
        const hit = b.map.get(b.prefixLen === 0 ? 0 : Math.floor(v / 2 ** (w - b.prefixLen)));
        if (hit) return hit;
      }
      return undefined;
    }
    return this.lookup([v]);
  }

  /** The entry that matches `key` (one value per key field), or undefined on a miss. */
  lookup(key: readonly Value[]): TableEntry | undefined {
    if (this.kind === "exact") return this.byKey.get(this.exactKey(key));
    if (this.kind === "lpm") {
      const f = this.lpmField;
      const w = this.keys[f]!.width;
      const v = key[f]!;
      const vals = key.slice();
      for (const b of this.lpmIndex) {
        const shift = w - b.prefixLen;
        if (typeof v === "number") vals[f] = b.prefixLen === 0 ? 0 : Math.floor(v / 2 ** shift);
        else vals[f] = b.prefixLen === 0 ? 0n : v >> BigInt(shift);
        if (w <= NUM_BITS && typeof vals[f] === "bigint") vals[f] = Number(vals[f]);
        const hit = b.map.get(this.exactKey(vals));
        if (hit) return hit;
      }
      return undefined;
    }
    const big = key.map((v) => BigInt(v));
    for (const e of this.scanList) {
      let ok = true;
      for (let i = 0; i < big.length; i++) {
        if (!matches(e.match[i]!, big[i]!, this.keys[i]!.width)) {
          ok = false;
          break;
        }
      }
      if (ok) return e;
    }
    return undefined;
  }

  /** Checks a match key against the table's key fields; returns a problem or undefined. */
  validate(match: readonly KeyMatch[], priority: number): string | undefined {
    if (match.length !== this.keys.length) return `table '${this.name}' has ${this.keys.length} key fields, got ${match.length}`;
    for (let i = 0; i < match.length; i++) {
      const m = match[i]!;
      const k = this.keys[i]!;
      const max = mask(k.width);
      if (m.kind === "any") {
        if (k.matchType === "exact") return `key field '${k.name}' is exact and cannot be omitted`;
        continue;
      }
      if (m.kind !== k.matchType && !(k.matchType === "optional" && m.kind === "optional")) {
        return `key field '${k.name}' is ${k.matchType}, got a ${m.kind} match`;
      }
      if ((m.kind === "exact" || m.kind === "optional") && outside(m.value, max)) return `value of key field '${k.name}' does not fit in ${k.width} bits`;
      if (m.kind === "lpm") {
        if (m.prefixLen < 0 || m.prefixLen > k.width) return `prefix length ${m.prefixLen} of '${k.name}' is outside 0..${k.width}`;
        if (outside(m.value, max)) return `value of key field '${k.name}' does not fit in ${k.width} bits`;
        const low = mask(k.width - m.prefixLen);
        if ((m.value & low) !== 0n) return `lpm value of '${k.name}' has bits set beyond its /${m.prefixLen} prefix`;
      }
      if (m.kind === "ternary") {
        if (outside(m.value, max) || outside(m.mask, max)) return `value or mask of key field '${k.name}' does not fit in ${k.width} bits`;
        if ((m.value & ~m.mask) !== 0n) return `ternary value of '${k.name}' has bits set outside its mask`;
      }
      if (m.kind === "range" && (outside(m.low, max) || outside(m.high, max) || m.low > m.high)) return `range of key field '${k.name}' is invalid`;
    }
    if (this.needsPriority && priority <= 0) return `table '${this.name}' needs a priority > 0 for each entry`;
    if (!this.needsPriority && priority !== 0) return `table '${this.name}' takes no priority`;
    return undefined;
  }
}
