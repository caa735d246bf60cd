// A p4c BMv2 JSON (v1model) loaded: the program's run-time state (field
// slots, match tables with their const entries, registers, counters, the
// standard metadata fields, actions and learn lists by id) and its compiled
// functions, generated once at load (codegen/).
import * as bits from "./bits.js";
import { generateSource } from "./codegen/generate.js";
import { instantiate } from "./codegen/runtime.js";
import { foldArray, foldCell } from "./counter-values.js";
import { InvalidProgramError, UnsupportedProgramError } from "./errors.js";
import type { Bmv2Json, Pipeline } from "./json.js";
import { Layout, type FieldInfo } from "./layout.js";
import { newMeterArray, type DirectMeterInfo, type MeterArray } from "./meters.js";
import type { ActionInfo, CompiledFunctions, CounterArray, LearnListInfo, RegisterArray, StandardMetadata } from "./state.js";
import { checkSupported } from "./supported.js";
import { MatchTable, NO_ACTION, type ActionProfile, type ActionCall, type KeyField, type KeyMatch, type Value } from "./table.js";

/** The compiled program and its run-time state (tables, registers, counters). */
export class CompiledProgram {
  readonly layout: Layout;
  readonly N: Float64Array;
  readonly B: bigint[];
  readonly V: Uint8Array;
  readonly tables = new Map<string, MatchTable>();
  readonly tablesById: MatchTable[] = [];
  readonly registers = new Map<string, RegisterArray>();
  readonly counters = new Map<string, CounterArray>();
  readonly directCounters = new Map<string, CounterArray>();
  readonly meters = new Map<string, MeterArray>();
  /** direct meters by the table they are bound to */
  readonly directMeters = new Map<string, DirectMeterInfo>();
  readonly actionProfiles = new Map<string, ActionProfile>();
  readonly actions = new Map<number, ActionInfo>();
  readonly actionsByName = new Map<string, ActionInfo>();
  readonly learnLists = new Map<number, LearnListInfo>();
  /** the fields each field list preserves (clone, resubmit, recirculate), by id */
  readonly fieldLists = new Map<number, FieldInfo[]>();
  readonly errorCodes = new Map<string, number>();
  readonly fn: CompiledFunctions;
  readonly source: string;
  readonly std: StandardMetadata;

  constructor(readonly json: Bmv2Json) {
    checkSupported(json);
    try {
      this.layout = new Layout(json);
      this.N = new Float64Array(this.layout.numSlots);
      this.B = new Array<bigint>(this.layout.bigSlots).fill(0n);
      this.V = new Uint8Array(this.layout.headers.length);
      for (const [name, code] of json.errors ?? []) this.errorCodes.set(name, code);
      const std = (name: string) => {
        const f = this.layout.find(name);
        if (!f) throw new InvalidProgramError(`the program lacks ${name}, which simple_switch requires (is it a v1model program?)`);
        return f;
      };
      const opt = (name: string) => this.layout.find(name);
      this.std = {
        ingressPort: std("standard_metadata.ingress_port"),
        egressSpec: std("standard_metadata.egress_spec"),
        egressPort: std("standard_metadata.egress_port"),
        packetLength: std("standard_metadata.packet_length"),
        instanceType: opt("standard_metadata.instance_type"),
        ingressTs: opt("standard_metadata.ingress_global_timestamp") ?? opt("intrinsic_metadata.ingress_global_timestamp"),
        egressTs: opt("standard_metadata.egress_global_timestamp") ?? opt("intrinsic_metadata.egress_global_timestamp"),
        parserError: opt("standard_metadata.parser_error"),
        checksumError: opt("standard_metadata.checksum_error"),
        mcastGrp: opt("standard_metadata.mcast_grp") ?? opt("intrinsic_metadata.mcast_grp"),
        egressRid: opt("standard_metadata.egress_rid") ?? opt("intrinsic_metadata.egress_rid"),
      };
      for (const r of json.register_arrays ?? []) {
        this.registers.set(r.name, {
          name: r.name, id: r.id, width: r.bitwidth, size: r.size,
          values: r.bitwidth <= bits.NUM_BITS ? new Float64Array(r.size) : new Array<bigint>(r.size).fill(0n),
        });
      }
      for (const c of json.counter_arrays ?? []) {
        const arr: CounterArray = { name: c.name, id: c.id, size: c.size, direct: c.is_direct, packets: new Float64Array(c.size), bytes: new Float64Array(c.size), high: new Map() };
        this.counters.set(c.name, arr);
        if (c.is_direct && c.binding) this.directCounters.set(c.binding, arr);
      }
      for (const m of json.meter_arrays ?? []) {
        if (!m.is_direct) {
          this.meters.set(m.name, newMeterArray(m.name, m.id, m.size, m.type === "bytes"));
          continue;
        }
        const [h, f] = m.result_target!;
        this.directMeters.set(m.binding!, { name: m.name, id: m.id, bytes: m.type === "bytes", target: this.layout.field(h, f, `direct meter '${m.name}'`) });
      }
      for (const a of json.actions) {
        const info = { id: a.id, name: a.name, params: a.runtime_data.map((p) => ({ name: p.name, width: p.bitwidth })) };
        this.actions.set(a.id, info);
        this.actionsByName.set(a.name, info);
      }
      for (const l of json.learn_lists ?? []) {
        this.learnLists.set(l.id, {
          id: l.id,
          name: l.name,
          fields: l.elements.map((e) => {
            if (e.type !== "field") throw new UnsupportedProgramError(`learn list '${l.name}': element of type '${e.type}'`);
            const [h, f] = e.value as [string, string];
            const fi = this.layout.field(h, f, `learn list '${l.name}'`);
            return { name: fi.name, width: fi.width };
          }),
        });
      }
      for (const fl of json.field_lists ?? []) {
        this.fieldLists.set(fl.id, fl.elements.map((e) => {
          if (e.type !== "field") throw new UnsupportedProgramError(`field list '${fl.name}': element of type '${e.type}'`);
          const [h, f] = e.value as [string, string];
          return this.layout.field(h, f, `field list '${fl.name}'`);
        }));
      }
      for (const p of json.pipelines) {
        for (const ap of p.action_profiles) this.actionProfiles.set(ap.name, { name: ap.name, id: ap.id, maxSize: ap.max_size, members: new Map() });
      }
      for (const p of json.pipelines) {
        for (const t of p.tables) {
          const table = this.buildTable(t);
          this.tables.set(t.name, table);
          this.tablesById[t.id] = table;
        }
      }
      this.source = generateSource(this);
      this.fn = instantiate(
        this.source,
        { N: this.N, B: this.B, V: this.V },
        {
          tables: this.tablesById,
          registers: [...this.registers.values()].sort((a, b) => a.id - b.id).map((r) => r.values),
          counters: [...this.counters.values()].sort((a, b) => a.id - b.id),
          meters: [...this.meters.values()].reduce<MeterArray[]>((arr, m) => ((arr[m.id] = m), arr), []),
        },
      );
    } catch (err) {
      if (err instanceof UnsupportedProgramError || err instanceof InvalidProgramError) throw err;
      throw new InvalidProgramError(`malformed BMv2 JSON: ${(err as Error).message}`);
    }
  }

  /** Folds every counter past 2^48 into its 64-bit part (counter-values.ts); the switch calls it once a second of its time. */
  foldCounters(): void {
    for (const arr of this.counters.values()) if (!arr.direct) foldArray(arr);
    for (const t of this.tablesById) {
      if (!t?.withCounters) continue;
      foldCell(t.defaultCounter);
      for (const e of t.entries()) foldCell(e);
    }
  }

  private buildTable(t: Pipeline["tables"][number]): MatchTable {
    const where = `table '${t.name}'`;
    if (t.type !== "simple" && t.type !== "indirect") throw new UnsupportedProgramError(`${where}: ${t.type} tables (action selectors) are not supported yet`);
    const profile = t.type === "indirect" ? this.actionProfiles.get(t.action_profile ?? "") : undefined;
    if (t.type === "indirect" && !profile) throw new InvalidProgramError(`${where}: no action profile named '${t.action_profile}'`);
    if (profile && (t.entries ?? []).length) throw new UnsupportedProgramError(`${where}: const entries in a table with an action profile`);
    if (t.direct_meters && !this.directMeters.has(t.name)) throw new InvalidProgramError(`${where}: direct meter '${t.direct_meters}' is not bound to it`);
    const keys: KeyField[] = t.key.map((k) => {
      if (k.match_type === "valid") throw new UnsupportedProgramError(`${where}: 'valid' match kind is not supported`);
      if (!["exact", "lpm", "ternary", "range", "optional"].includes(k.match_type)) throw new UnsupportedProgramError(`${where}: match kind '${k.match_type}'`);
      const [h, f] = k.target as [string, string];
      const width = f === "$valid$" ? 1 : this.layout.field(h, f, where).width;
      return { name: k.name ?? `${h}.${f}`, matchType: k.match_type as KeyField["matchType"], width };
    });
    const def = t.default_entry;
    const defaultAction: ActionCall = def
      ? { actionId: def.action_id, data: this.actionData(def.action_id, def.action_data.map(bits.parseHexstr), where) }
      : { actionId: profile ? NO_ACTION : t.action_ids[0]!, data: [] };
    const table = new MatchTable(t.name, t.id, keys, t.action_ids, t.max_size, defaultAction, def?.action_const === true, t.with_counters, (t.entries ?? []).length > 0);
    table.directMeter = this.directMeters.get(t.name);
    table.actionProfile = profile;
    for (const e of t.entries ?? []) {
      const match: KeyMatch[] = e.match_key.map((m) => {
        switch (m.match_type) {
          case "exact":
            return { kind: "exact", value: bits.parseHexstr(String(m.key)) };
          case "lpm":
            return { kind: "lpm", value: bits.parseHexstr(String(m.key)), prefixLen: m.prefix_length ?? 0 };
          case "ternary":
            return { kind: "ternary", value: bits.parseHexstr(String(m.key)), mask: bits.parseHexstr(String(m.mask)) };
          case "range":
            return { kind: "range", low: bits.parseHexstr(String(m.start)), high: bits.parseHexstr(String(m.end)) };
          case "optional":
            return { kind: "optional", value: bits.parseHexstr(String(m.key)) };
          default:
            throw new UnsupportedProgramError(`${where}: const entry match kind '${m.match_type}'`);
        }
      });
      // BMv2 JSON priorities: lower number = higher priority. Keep P4Runtime's order (higher wins).
      const priority = table.needsPriority ? 0x7fffffff - (e.priority ?? 0) : 0;
      table.insert({
        match,
        priority,
        action: { actionId: e.action_entry.action_id, data: this.actionData(e.action_entry.action_id, e.action_entry.action_data.map(bits.parseHexstr), where) },
        packets: 0,
        bytes: 0,
        meter: undefined,
        memberId: undefined,
      });
    }
    return table;
  }

  /** Action data in the run-time representation, checked against the parameters. */
  actionData(actionId: number, values: readonly bigint[], where: string): Value[] {
    const a = this.actions.get(actionId);
    if (!a) throw new InvalidProgramError(`${where}: no action with id ${actionId}`);
    if (values.length !== a.params.length) throw new InvalidProgramError(`${where}: action '${a.name}' takes ${a.params.length} parameters, got ${values.length}`);
    return values.map((v, i) => {
      const w = a.params[i]!.width;
      const t = BigInt.asUintN(w, v);
      return w <= bits.NUM_BITS ? Number(t) : t;
    });
  }
}
