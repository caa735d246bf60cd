// Entities by name: table entries with every match kind, counters and digest
// entries, built from a P4Schema and decoded back symmetrically.
import { MatchField_MatchType, type Table } from "./generated/p4/config/v1/p4info.js";
import type { P4Data } from "./generated/p4/v1/p4data.js";
import { TableEntry, type Entity, type FieldMatch } from "./generated/p4/v1/p4runtime.js";
import { P4ValueError } from "./errors.js";
import type { P4Schema } from "./schema.js";
import { decodeBits, encodeBits, parsePrefix, parseScalar, type Scalar } from "./values.js";

export type MatchValue =
  | Scalar
  | { prefix: Scalar; length: number }
  | { value: Scalar; mask: Scalar }
  | { low: Scalar; high: Scalar };

export interface ActionSpec {
  name: string;
  params?: Record<string, Scalar>;
}

export interface TableEntrySpec {
  table: string;
  match?: Record<string, MatchValue>;
  action?: ActionSpec;
  priority?: number;
  /** the table's default entry (no match) */
  isDefault?: boolean;
}

/** A decoded entry: values as bigint, lpm as {prefix, length}. */
export interface DecodedTableEntry {
  table: string;
  match: Record<string, bigint | { prefix: bigint; length: number } | { value: bigint; mask: bigint } | { low: bigint; high: bigint }>;
  action: { name: string; params: Record<string, bigint> } | undefined;
  priority: number;
  isDefault: boolean;
}

/** The canonical bytes of a scalar (a number goes straight to them, without a bigint). */
const scalarBits = (v: Scalar, w: number, what: string): Buffer => encodeBits(typeof v === "number" ? v : parseScalar(v, w, what), w, what);

/**
 * A match field as P4Runtime writes it; undefined for a don't-care match (LPM
 * /0, an all-zero ternary mask, the full range), which the spec says to omit.
 */
function encodeMatch(schema: P4Schema, table: Table, field: string, v: MatchValue): FieldMatch | undefined {
  const f = schema.matchField(table, field);
  const w = f.bitwidth;
  const what = `table '${table.preamble!.name}' field '${field}'`;
  const type = f.match?.$case === "matchType" ? f.match.value : MatchField_MatchType.UNSPECIFIED;
  switch (type) {
    case MatchField_MatchType.EXACT:
      return { fieldId: f.id, fieldMatchType: { $case: "exact", value: { value: scalarBits(v as Scalar, w, what) } } };
    case MatchField_MatchType.OPTIONAL:
      return { fieldId: f.id, fieldMatchType: { $case: "optional", value: { value: scalarBits(v as Scalar, w, what) } } };
    case MatchField_MatchType.LPM: {
      let value: bigint;
      let prefixLen: number;
      if (typeof v === "string") ({ value, prefixLen } = parsePrefix(v, w, what));
      else if (typeof v === "object" && v !== null && "prefix" in v) {
        prefixLen = v.length;
        const mask = prefixLen === 0 ? 0n : ((1n << BigInt(prefixLen)) - 1n) << BigInt(w - prefixLen);
        value = parseScalar(v.prefix, w, what) & mask;
      } else {
        value = parseScalar(v as Scalar, w, what);
        prefixLen = w;
      }
      if (prefixLen === 0) return undefined;
      return { fieldId: f.id, fieldMatchType: { $case: "lpm", value: { value: encodeBits(value, w, what), prefixLen } } };
    }
    case MatchField_MatchType.TERNARY: {
      if (typeof v !== "object" || v === null || !("mask" in v)) throw new P4ValueError(`${what} is ternary: give { value, mask }`);
      const mask = parseScalar(v.mask, w, what);
      if (mask === 0n) return undefined;
      return { fieldId: f.id, fieldMatchType: { $case: "ternary", value: { value: encodeBits(parseScalar(v.value, w, what) & mask, w, what), mask: encodeBits(mask, w, what) } } };
    }
    case MatchField_MatchType.RANGE: {
      if (typeof v !== "object" || v === null || !("low" in v)) throw new P4ValueError(`${what} is range: give { low, high }`);
      const low = parseScalar(v.low, w, what);
      const high = parseScalar(v.high, w, what);
      if (low === 0n && high === (1n << BigInt(w)) - 1n) return undefined;
      return { fieldId: f.id, fieldMatchType: { $case: "range", value: { low: encodeBits(low, w, what), high: encodeBits(high, w, what) } } };
    }
    default:
      throw new P4ValueError(`${what}: unsupported match type`);
  }
}

export function buildTableEntry(schema: P4Schema, spec: TableEntrySpec): TableEntry {
  const table = schema.tables.get(spec.table);
  const match = Object.entries(spec.match ?? {}).flatMap(([k, v]) => encodeMatch(schema, table, k, v) ?? []);
  let action: TableEntry["action"];
  if (spec.action) {
    const a = schema.actions.get(spec.action.name);
    const given = spec.action.params ?? {};
    for (const k of Object.keys(given)) schema.param(a, k);
    action = {
      type: {
        $case: "action",
        value: {
          actionId: a.preamble!.id,
          params: a.params.map((p) => {
            const v = given[p.name];
            if (v === undefined) throw new P4ValueError(`action '${a.preamble!.name}': parameter '${p.name}' missing`);
            const what = `action '${a.preamble!.name}' parameter '${p.name}'`;
            return { paramId: p.id, value: scalarBits(v, p.bitwidth, what) };
          }),
        },
      },
    };
  }
  // The defaults of every other field; match and action are complete already (no deep copy).
  return { ...TableEntry.fromPartial({}), tableId: table.preamble!.id, match, action, priority: spec.priority ?? 0, isDefaultAction: spec.isDefault ?? false };
}

export function tableEntity(schema: P4Schema, spec: TableEntrySpec): Entity {
  return { entity: { $case: "tableEntry", value: buildTableEntry(schema, spec) } };
}

export function decodeTableEntry(schema: P4Schema, te: TableEntry): DecodedTableEntry {
  const table = schema.tables.get(te.tableId);
  const match: DecodedTableEntry["match"] = {};
  for (const m of te.match) {
    const f = schema.matchField(table, m.fieldId);
    const w = f.bitwidth;
    const t = m.fieldMatchType;
    if (!t) continue;
    if (t.$case === "exact" || t.$case === "optional") match[f.name] = decodeBits(t.value.value, w);
    else if (t.$case === "lpm") match[f.name] = { prefix: decodeBits(t.value.value, w), length: t.value.prefixLen };
    else if (t.$case === "ternary") match[f.name] = { value: decodeBits(t.value.value, w), mask: decodeBits(t.value.mask, w) };
    else if (t.$case === "range") match[f.name] = { low: decodeBits(t.value.low, w), high: decodeBits(t.value.high, w) };
  }
  let action: DecodedTableEntry["action"];
  if (te.action?.type?.$case === "action") {
    const a = schema.actions.get(te.action.type.value.actionId);
    const params: Record<string, bigint> = {};
    for (const p of te.action.type.value.params) {
      const info = schema.param(a, p.paramId);
      params[info.name] = decodeBits(p.value, info.bitwidth);
    }
    action = { name: a.preamble!.name, params };
  }
  return { table: table.preamble!.name, match, action, priority: te.priority, isDefault: te.isDefaultAction };
}

/** Values of a digest sample (a P4Data struct of bitstrings), in member order. */
export function digestValues(data: P4Data): Uint8Array[] {
  if (data.data?.$case !== "struct") throw new P4ValueError(`digest sample is a ${data.data?.$case ?? "nothing"}, not a struct`);
  return data.data.value.members.map((m, i) => {
    if (m.data?.$case !== "bitstring") throw new P4ValueError(`digest member ${i} is a ${m.data?.$case ?? "nothing"}, not a bitstring`);
    return m.data.value;
  });
}
