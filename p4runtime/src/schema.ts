// P4Info with lookups by name, alias or id. Users name things; ids stay inside.
// A failed lookup says what exists: "no table named 'x'. Did you mean 'y'?"
import { P4Info, type Action, type Counter, type Digest, type DirectCounter, type MatchField, type Table } from "./generated/p4/config/v1/p4info.js";
import { P4SchemaError } from "./errors.js";

type Named = { preamble?: { id: number; name: string; alias: string } | undefined };

function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length]![b.length]!;
}

/** "Did you mean 'y'?" for the closest of `names`, or "" when nothing is close. */
export function suggest(name: string, names: Iterable<string>): string {
  let best: string | undefined;
  let bestD = Infinity;
  for (const n of names) {
    const short = n.split(".").pop()!;
    const d = Math.min(distance(name, n), distance(name, short));
    if (d < bestD) {
      bestD = d;
      best = n;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? ` Did you mean '${best}'?` : "";
}

class Registry<T extends Named> {
  private readonly byName = new Map<string, T>();
  private readonly byId = new Map<number, T>();

  constructor(private readonly kind: string, items: readonly T[]) {
    for (const it of items) {
      const p = it.preamble;
      if (!p) throw new P4SchemaError(`P4Info: a ${kind} has no preamble`);
      if (this.byId.has(p.id)) throw new P4SchemaError(`P4Info: two objects have id ${p.id}`);
      this.byId.set(p.id, it);
      this.byName.set(p.name, it);
      if (p.alias && !this.byName.has(p.alias)) this.byName.set(p.alias, it);
    }
  }

  get(key: string | number): T {
    let hit = typeof key === "number" ? this.byId.get(key) : this.byName.get(key);
    if (!hit && typeof key === "string") {
      hit = this.bySuffix(key);
      // The registry does not change: an unambiguous suffix resolves the same way next time.
      if (hit) this.byName.set(key, hit);
    }
    if (!hit) {
      if (typeof key === "number") throw new P4SchemaError(`no ${this.kind} with id ${key}`);
      throw new P4SchemaError(`no ${this.kind} named '${key}'.${suggest(key, this.names())}`.replace(/\.$/, ""));
    }
    return hit;
  }

  has(key: string | number): boolean {
    return typeof key === "number" ? this.byId.has(key) : this.byName.has(key) || this.bySuffix(key) !== undefined;
  }

  private bySuffix(name: string): T | undefined {
    // "forwarding.ipv4_routes" for "TelemetryIngress.forwarding.ipv4_routes", when unambiguous.
    const hits = [...this.byId.values()].filter((it) => it.preamble!.name.endsWith("." + name));
    return hits.length === 1 ? hits[0] : undefined;
  }

  names(): string[] {
    return [...this.byId.values()].map((it) => it.preamble!.name);
  }

  all(): T[] {
    return [...this.byId.values()];
  }
}

export class P4Schema {
  readonly tables: Registry<Table>;
  readonly actions: Registry<Action>;
  readonly digests: Registry<Digest>;
  readonly counters: Registry<Counter>;
  readonly directCounters: Registry<DirectCounter>;

  constructor(readonly p4info: P4Info) {
    this.tables = new Registry("table", p4info.tables);
    this.actions = new Registry("action", p4info.actions);
    this.digests = new Registry("digest", p4info.digests);
    this.counters = new Registry("counter", p4info.counters);
    this.directCounters = new Registry("direct counter", p4info.directCounters);
    for (const t of p4info.tables) {
      for (const r of t.actionRefs) {
        if (!this.actions.has(r.id)) throw new P4SchemaError(`P4Info: table '${t.preamble!.name}' refers to action id ${r.id}, which does not exist`);
      }
    }
  }

  /** From P4Info JSON text (p4c --p4runtime-files x.json). */
  static fromJson(text: string): P4Schema {
    let obj: unknown;
    try {
      obj = JSON.parse(text);
    } catch (err) {
      throw new P4SchemaError(`P4Info is not valid JSON: ${(err as Error).message}`);
    }
    return new P4Schema(P4Info.fromJSON(obj));
  }

  matchField(table: Table, key: string | number): MatchField {
    const f = table.matchFields.find((m) => (typeof key === "number" ? m.id === key : m.name === key));
    if (!f) {
      const what = typeof key === "number" ? `with id ${key}` : `named '${key}'`;
      throw new P4SchemaError(`table '${table.preamble!.name}' has no match field ${what}.${typeof key === "string" ? suggest(key, table.matchFields.map((m) => m.name)) : ""}`.replace(/\.$/, ""));
    }
    return f;
  }

  param(action: Action, key: string | number): Action["params"][number] {
    const p = action.params.find((m) => (typeof key === "number" ? m.id === key : m.name === key));
    if (!p) {
      const what = typeof key === "number" ? `with id ${key}` : `named '${key}'`;
      throw new P4SchemaError(`action '${action.preamble!.name}' has no parameter ${what}.${typeof key === "string" ? suggest(key, action.params.map((m) => m.name)) : ""}`.replace(/\.$/, ""));
    }
    return p;
  }

  /** Struct members of a digest, with widths, from the P4Info type info. */
  digestFields(digest: Digest): Array<{ name: string; bitwidth: number }> {
    const spec = digest.typeSpec?.typeSpec;
    if (spec?.$case !== "struct") throw new P4SchemaError(`digest '${digest.preamble!.name}' is not a struct`);
    const struct = this.p4info.typeInfo?.structs[spec.value.name];
    if (!struct) throw new P4SchemaError(`P4Info has no type info for struct '${spec.value.name}'`);
    return struct.members.map((m) => {
      const t = m.typeSpec?.typeSpec;
      if (t?.$case === "bitstring" && t.value.typeSpec?.$case === "bit") return { name: m.name, bitwidth: t.value.typeSpec.value.bitwidth };
      if (t?.$case === "bool") return { name: m.name, bitwidth: 1 };
      throw new P4SchemaError(`digest '${digest.preamble!.name}' member '${m.name}' is not a bit<W>`);
    });
  }
}
