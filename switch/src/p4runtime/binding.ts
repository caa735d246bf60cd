// Binds a P4Info to a compiled BMv2 program: P4Runtime ids to the program's
// tables, actions, counters and learn lists, and P4Runtime entities to table
// entries. A P4Info that does not describe the program is rejected here with
// the name of the first object that disagrees.
import type { Action as P4InfoAction, Table as P4InfoTable } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import { MatchField_MatchType } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import { TableEntry as P4TableEntry, type FieldMatch, type TableAction } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { P4RuntimeError } from "@rdma-telemetry/p4runtime";
import { P4Schema } from "@rdma-telemetry/p4runtime";
import { decodeBits, encodeBits } from "@rdma-telemetry/p4runtime";
import { readCell } from "../bmv2/counter-values.js";
import type { CompiledProgram } from "../bmv2/program.js";
import type { CounterArray } from "../bmv2/state.js";
import type { MeterArray } from "../bmv2/meters.js";
import { NO_ACTION, type ActionCall, type ActionProfile, type CounterValue, type KeyMatch, type MatchTable, type TableEntry, type Value } from "../bmv2/table.js";
import { p4MeterConfig } from "./meter-config.js";

export interface TableBinding {
  info: P4InfoTable;
  table: MatchTable;
  directCounterId: number | undefined;
  /** match field id -> index in the key */
  fieldIndex: Map<number, number>;
  /** "table 't' match field 'f'", per key index, for errors */
  fieldWhat: string[];
  /**
   * The table's own actions: P4Info action id -> the device config's action
   * id, and back. p4c may emit two actions of one name (an action used by
   * two tables); only the table's own copy runs in it.
   */
  programActions: Map<number, number>;
  p4infoActions: Map<number, ActionBinding>;
}

export interface ActionBinding {
  info: P4InfoAction;
  programId: number;
}

export interface DigestBinding {
  id: number;
  name: string;
  listId: number;
  fields: Array<{ name: string; bitwidth: number }>;
}

const ANY: KeyMatch = { kind: "any" };
const MATCH_KIND: Partial<Record<MatchField_MatchType, KeyMatchKind>> = {
  [MatchField_MatchType.EXACT]: "exact",
  [MatchField_MatchType.LPM]: "lpm",
  [MatchField_MatchType.TERNARY]: "ternary",
  [MatchField_MatchType.RANGE]: "range",
  [MatchField_MatchType.OPTIONAL]: "optional",
};
type KeyMatchKind = MatchTable["keys"][number]["matchType"];
const invalid = (msg: string) => new P4RuntimeError(msg, "INVALID_ARGUMENT");
const notFound = (msg: string) => new P4RuntimeError(msg, "NOT_FOUND");

export class PipelineBinding {
  readonly schema: P4Schema;
  readonly tables = new Map<number, TableBinding>();
  private readonly tablesByProgramId = new Map<number, TableBinding>();
  readonly actions = new Map<number, ActionBinding>();
  private readonly actionsByProgramId = new Map<number, ActionBinding>();
  readonly counters = new Map<number, CounterArray>();
  readonly directCounters = new Map<number, CounterArray>();
  readonly meters = new Map<number, MeterArray>();
  /** action profiles by P4Info id, with the tables (bindings) that use them */
  readonly actionProfiles = new Map<number, { profile: ActionProfile; tables: TableBinding[] }>();
  readonly digests = new Map<number, DigestBinding>();
  readonly digestsByListId = new Map<number, DigestBinding>();

  constructor(schema: P4Schema, readonly program: CompiledProgram) {
    this.schema = schema;
    for (const a of schema.p4info.actions) {
      const name = a.preamble!.name;
      const pa = program.actionsByName.get(name);
      if (!pa) throw invalid(`P4Info action '${name}' is not in the device config`);
      if (pa.params.length !== a.params.length) throw invalid(`action '${name}': P4Info has ${a.params.length} parameters, the device config ${pa.params.length}`);
      a.params.forEach((p, i) => {
        if (pa.params[i]!.width !== p.bitwidth) throw invalid(`action '${name}' parameter '${p.name}': P4Info says ${p.bitwidth} bits, the device config ${pa.params[i]!.width}`);
      });
      const b = { info: a, programId: pa.id };
      this.actions.set(a.preamble!.id, b);
      this.actionsByProgramId.set(pa.id, b);
    }
    for (const t of schema.p4info.tables) {
      const name = t.preamble!.name;
      const table = program.tables.get(name);
      if (!table) throw invalid(`P4Info table '${name}' is not in the device config`);
      if (table.keys.length !== t.matchFields.length) throw invalid(`table '${name}': P4Info has ${t.matchFields.length} match fields, the device config ${table.keys.length}`);
      t.matchFields.forEach((f, i) => {
        const key = table.keys[i]!;
        if (key.width !== f.bitwidth) throw invalid(`table '${name}' match field '${f.name}': P4Info says ${f.bitwidth} bits, the device config ${key.width}`);
        const kind = f.match?.$case === "matchType" ? MATCH_KIND[f.match.value] : undefined;
        if (kind && kind !== key.matchType) throw invalid(`table '${name}' match field '${f.name}': P4Info says ${kind}, the device config ${key.matchType}`);
      });
      if (t.size > 0n && BigInt(table.maxSize) !== t.size) throw invalid(`table '${name}': P4Info says ${t.size} entries, the device config ${table.maxSize}`);
      const direct = schema.p4info.directCounters.find((d) => d.directTableId === t.preamble!.id);
      const programActions = new Map<number, number>();
      const p4infoActions = new Map<number, ActionBinding>();
      for (const programId of table.actionIds) {
        const pa = program.actions.get(programId);
        const ref = pa && t.actionRefs.find((r) => this.actions.get(r.id)?.info.preamble!.name === pa.name);
        if (!ref) continue;
        programActions.set(ref.id, programId);
        p4infoActions.set(programId, this.actions.get(ref.id)!);
      }
      const b = {
        programActions,
        p4infoActions,
        info: t,
        table,
        directCounterId: direct?.preamble?.id,
        fieldIndex: new Map(t.matchFields.map((f, i) => [f.id, i])),
        fieldWhat: t.matchFields.map((f) => `table '${name}' match field '${f.name}'`),
      };
      this.tables.set(t.preamble!.id, b);
      this.tablesByProgramId.set(table.id, b);
    }
    for (const c of schema.p4info.counters) {
      const arr = program.counters.get(c.preamble!.name);
      if (!arr) throw invalid(`P4Info counter '${c.preamble!.name}' is not in the device config`);
      if (BigInt(arr.size) !== c.size) throw invalid(`counter '${c.preamble!.name}': P4Info says ${c.size} cells, the device config ${arr.size}`);
      this.counters.set(c.preamble!.id, arr);
    }
    for (const ap of schema.p4info.actionProfiles) {
      const profile = program.actionProfiles.get(ap.preamble!.name);
      if (!profile) throw invalid(`P4Info action profile '${ap.preamble!.name}' is not in the device config`);
      const tables = ap.tableIds.map((id) => this.tables.get(id)).filter((t): t is TableBinding => t !== undefined);
      if (tables.length === 0) throw invalid(`P4Info action profile '${ap.preamble!.name}' has no table`);
      this.actionProfiles.set(ap.preamble!.id, { profile, tables });
    }
    for (const m of schema.p4info.meters) {
      const arr = program.meters.get(m.preamble!.name);
      if (!arr) throw invalid(`P4Info meter '${m.preamble!.name}' is not in the device config`);
      this.meters.set(m.preamble!.id, arr);
    }
    for (const c of schema.p4info.directCounters) {
      const t = this.tables.get(c.directTableId);
      if (!t) throw invalid(`P4Info direct counter '${c.preamble!.name}' is bound to table id ${c.directTableId}, which does not exist`);
      const arr = program.directCounters.get(t.info.preamble!.name) ?? program.counters.get(c.preamble!.name);
      if (arr) this.directCounters.set(c.preamble!.id, arr);
    }
    // BMv2 gives no access to registers over P4Runtime, but a P4Info whose registers are not the program's is another program's.
    for (const r of schema.p4info.registers) {
      const name = r.preamble!.name;
      const arr = program.registers.get(name);
      if (!arr) throw invalid(`P4Info register '${name}' is not in the device config`);
      if (arr.size !== r.size) throw invalid(`register '${name}': P4Info says ${r.size} cells, the device config ${arr.size}`);
      const t = r.typeSpec?.typeSpec;
      const width = t?.$case === "bitstring" && t.value.typeSpec?.$case === "bit" ? t.value.typeSpec.value.bitwidth : undefined;
      if (width !== undefined && width !== arr.width) throw invalid(`register '${name}': P4Info says ${width} bits, the device config ${arr.width}`);
    }
    const lists = [...program.learnLists.values()];
    for (const d of schema.p4info.digests) {
      const fields = schema.digestFields(d);
      const name = d.preamble!.name;
      const list = lists.find((l) => l.name === name) ?? lists.find((l) => l.fields.length === fields.length && l.fields.every((f, i) => f.width === fields[i]!.bitwidth && f.name.endsWith(fields[i]!.name)));
      if (!list) throw invalid(`P4Info digest '${name}' matches no learn list of the device config`);
      // The samples are decoded by the P4Info's fields: they must be the learn list's, one for one.
      const wrong = fields.findIndex((f, i) => f.bitwidth !== list.fields[i]?.width);
      if (wrong >= 0 || fields.length !== list.fields.length) {
        const at = wrong >= 0 ? wrong : Math.min(fields.length, list.fields.length);
        const ours = fields[at] ? `'${fields[at].name}' is ${fields[at].bitwidth} bits in the P4Info` : "is not in the P4Info";
        const theirs = list.fields[at] ? `${list.fields[at].width} in the device config` : "not in the device config";
        throw invalid(`P4Info digest '${name}' does not match the device config's learn list: ${fields.length} fields against ${list.fields.length}; field ${at + 1} ${ours}, ${theirs}`);
      }
      const b = { id: d.preamble!.id, name, listId: list.id, fields };
      this.digests.set(b.id, b);
      this.digestsByListId.set(list.id, b);
    }
  }

  table(id: number): TableBinding {
    const t = this.tables.get(id);
    if (!t) throw notFound(`no table with id ${id}`);
    return t;
  }

  /** A P4Runtime table entry's match key, checked against the table. */
  decodeMatch(t: TableBinding, match: readonly FieldMatch[]): KeyMatch[] {
    const fields = t.info.matchFields;
    const out = new Array<KeyMatch | undefined>(fields.length);
    for (const fm of match) {
      const idx = t.fieldIndex.get(fm.fieldId);
      if (idx === undefined) throw invalid(`table '${t.info.preamble!.name}' has no match field with id ${fm.fieldId}`);
      if (out[idx]) throw invalid(`table '${t.info.preamble!.name}': match field id ${fm.fieldId} given twice`);
      const f = fields[idx]!;
      const w = f.bitwidth;
      const what = t.fieldWhat[idx]!;
      const type = f.match?.$case === "matchType" ? f.match.value : MatchField_MatchType.UNSPECIFIED;
      const m = fm.fieldMatchType;
      if (!m) throw invalid(`${what}: no match value`);
      switch (m.$case) {
        case "exact":
          if (type !== MatchField_MatchType.EXACT) throw invalid(`${what} is not exact`);
          out[idx] = { kind: "exact", value: decodeBits(m.value.value, w, what) };
          break;
        case "lpm": {
          if (type !== MatchField_MatchType.LPM) throw invalid(`${what} is not lpm`);
          if (m.value.prefixLen <= 0 || m.value.prefixLen > w) throw invalid(`${what}: prefix length ${m.value.prefixLen} outside 1..${w} (omit the field for a wildcard)`);
          out[idx] = { kind: "lpm", value: decodeBits(m.value.value, w, what), prefixLen: m.value.prefixLen };
          break;
        }
        case "ternary": {
          if (type !== MatchField_MatchType.TERNARY) throw invalid(`${what} is not ternary`);
          const mask = decodeBits(m.value.mask, w, what);
          if (mask === 0n) throw invalid(`${what}: all-zero mask (omit the field for a wildcard)`);
          out[idx] = { kind: "ternary", value: decodeBits(m.value.value, w, what), mask };
          break;
        }
        case "range": {
          if (type !== MatchField_MatchType.RANGE) throw invalid(`${what} is not range`);
          out[idx] = { kind: "range", low: decodeBits(m.value.low, w, what), high: decodeBits(m.value.high, w, what) };
          break;
        }
        case "optional":
          if (type !== MatchField_MatchType.OPTIONAL) throw invalid(`${what} is not optional`);
          out[idx] = { kind: "optional", value: decodeBits(m.value.value, w, what) };
          break;
        default:
          throw new P4RuntimeError(`${what}: '${m.$case}' matches are not supported`, "UNIMPLEMENTED");
      }
    }
    // Widths and prefixes are checked by the caller (with the entry's priority), once.
    for (let i = 0; i < out.length; i++) out[i] ??= ANY;
    return out as KeyMatch[];
  }

  encodeMatch(t: TableBinding, match: readonly KeyMatch[]): FieldMatch[] {
    const out: FieldMatch[] = [];
    match.forEach((m, i) => {
      const f = t.info.matchFields[i]!;
      const w = f.bitwidth;
      switch (m.kind) {
        case "exact":
          out.push({ fieldId: f.id, fieldMatchType: { $case: "exact", value: { value: encodeBits(m.value, w) } } });
          break;
        case "lpm":
          if (m.prefixLen > 0) out.push({ fieldId: f.id, fieldMatchType: { $case: "lpm", value: { value: encodeBits(m.value, w), prefixLen: m.prefixLen } } });
          break;
        case "ternary":
          out.push({ fieldId: f.id, fieldMatchType: { $case: "ternary", value: { value: encodeBits(m.value, w), mask: encodeBits(m.mask, w) } } });
          break;
        case "range":
          out.push({ fieldId: f.id, fieldMatchType: { $case: "range", value: { low: encodeBits(m.low, w), high: encodeBits(m.high, w) } } });
          break;
        case "optional":
          out.push({ fieldId: f.id, fieldMatchType: { $case: "optional", value: { value: encodeBits(m.value, w) } } });
          break;
        case "any":
          break;
      }
    });
    return out;
  }

  decodeAction(t: TableBinding, action: TableAction | undefined, forDefault: boolean): ActionCall {
    const name = t.info.preamble!.name;
    if (!action?.type) throw invalid(`table '${name}': entry has no action`);
    if (action.type.$case !== "action") throw new P4RuntimeError(`table '${name}': ${action.type.$case} is not a direct action`, "INVALID_ARGUMENT");
    const a = action.type.value;
    const b = this.actions.get(a.actionId);
    if (!b) throw invalid(`no action with id ${a.actionId}`);
    const ref = t.info.actionRefs.find((r) => r.id === a.actionId);
    if (!ref) throw invalid(`action '${b.info.preamble!.name}' is not an action of table '${name}'`);
    if (forDefault && ref.scope === 1) throw invalid(`action '${b.info.preamble!.name}' of table '${name}' cannot be the default action (TABLE_ONLY)`);
    if (!forDefault && ref.scope === 2) throw invalid(`action '${b.info.preamble!.name}' of table '${name}' can only be the default action (DEFAULT_ONLY)`);
    const values: Value[] = b.info.params.map((p) => {
      const given = a.params.filter((x) => x.paramId === p.id);
      if (given.length !== 1) throw invalid(`action '${b.info.preamble!.name}': parameter '${p.name}' ${given.length ? "given twice" : "missing"}`);
      const v = decodeBits(given[0]!.value, p.bitwidth, `action '${b.info.preamble!.name}' parameter '${p.name}'`);
      return p.bitwidth <= 52 ? Number(v) : v;
    });
    for (const x of a.params) {
      if (!b.info.params.some((p) => p.id === x.paramId)) throw invalid(`action '${b.info.preamble!.name}' has no parameter with id ${x.paramId}`);
    }
    return { actionId: t.programActions.get(a.actionId) ?? b.programId, data: values };
  }

  encodeAction(call: ActionCall, t?: TableBinding): TableAction {
    const b = t?.p4infoActions.get(call.actionId) ?? this.actionsByProgramId.get(call.actionId);
    if (!b) throw new P4RuntimeError(`action ${call.actionId} of the device config is not in the P4Info`, "INTERNAL");
    return {
      type: {
        $case: "action",
        value: { actionId: b.info.preamble!.id, params: b.info.params.map((p, i) => ({ paramId: p.id, value: encodeBits(BigInt(call.data[i]!), p.bitwidth) })) },
      },
    };
  }

  encodeEntry(t: TableBinding, e: TableEntry, withCounters: boolean, withMeter = false): P4TableEntry {
    return P4TableEntry.fromPartial({
      tableId: t.info.preamble!.id,
      match: this.encodeMatch(t, e.match),
      action: e.memberId !== undefined ? { type: { $case: "actionProfileMemberId", value: e.memberId } } : this.encodeAction(e.action, t),
      priority: e.priority,
      metadata: Buffer.from(e.metadata ?? []),
      controllerMetadata: e.controllerMetadata ?? 0n,
      idleTimeoutNs: e.idleTimeoutNs ?? 0n,
      counterData: withCounters && t.table.withCounters ? counterData(readCell(e)) : undefined,
      meterConfig: withMeter ? p4MeterConfig(e.meter?.config[0]) : undefined,
      isConst: t.table.constEntries,
    });
  }

  encodeDefault(t: TableBinding, withCounters: boolean): P4TableEntry {
    return P4TableEntry.fromPartial({
      tableId: t.info.preamble!.id,
      // A table with an action profile and no default runs no action on a miss: no action to read.
      action: t.table.defaultAction.actionId === NO_ACTION ? undefined : this.encodeAction(t.table.defaultAction, t),
      isDefaultAction: true,
      counterData: withCounters && t.table.withCounters ? counterData(readCell(t.table.defaultCounter)) : undefined,
    });
  }
}

/** P4Runtime's CounterData of a counter value. */
export function counterData(v: CounterValue): { packetCount: bigint; byteCount: bigint } {
  return { packetCount: v.packets, byteCount: v.bytes };
}
