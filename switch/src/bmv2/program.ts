// Compiles a p4c BMv2 JSON (v1model) into JavaScript functions, once, at load.
// The generated code runs the parser, the ingress and egress pipelines and
// the deparser over a packet with BMv2's semantics; it is specialised to the
// program, so no JSON is walked per packet.
import * as bits from "./bits.js";
import { HASH_ALGORITHMS } from "./crc.js";
import { InvalidProgramError, UnsupportedProgramError } from "./errors.js";
import { compileValue, storeCode, toBig, toBool, toNum, type CExpr, type ExprScope } from "./expr.js";
import type { Action, Bmv2Json, Calculation, Pipeline, Primitive, TypedValue } from "./json.js";
import { Layout, type FieldInfo, type HeaderInfo } from "./layout.js";
import { MatchTable, type ActionCall, type KeyField, type KeyMatch, type Value } from "./table.js";

export const DROP_PORT = 511;

export interface RegisterArray {
  name: string;
  id: number;
  width: number;
  size: number;
  values: Float64Array | bigint[];
}

export interface CounterArray {
  name: string;
  id: number;
  size: number;
  direct: boolean;
  packets: Float64Array;
  bytes: Float64Array;
}

export interface LearnListInfo {
  id: number;
  name: string;
  fields: Array<{ name: string; width: number }>;
}

export interface ActionInfo {
  id: number;
  name: string;
  params: Array<{ name: string; width: number }>;
}

/** Per-packet context shared with the generated code. */
export interface PacketContext {
  exit: boolean;
  learnId: number;
  /** bytes counted by counters: the packet's length on the wire */
  packetLength: number;
  parserError: number;
  truncateTo: number;
  /** assert()/assume() failure message, if any */
  failed: string | undefined;
}

export interface CompiledFunctions {
  parse(buf: Uint8Array, ctx: PacketContext): number;
  verifyChecksums(): boolean;
  ingress(ctx: PacketContext): void;
  egress(ctx: PacketContext): void;
  updateChecksums(): void;
  /** The packet to send: headers as they are now, then the bytes after `parsed`. */
  deparse(buf: Uint8Array, parsed: number, original?: Buffer): Buffer;
  learn(id: number): Value[];
  reset(): void;
  /** reset(), then the standard metadata a packet arrives with */
  begin(port: number, packetLength: number, ingressTs: number): void;
  /** parser_error and checksum_error after parsing */
  parsed(parserError: number, checksumError: number): void;
  /** egress_port and egress_global_timestamp as egress starts */
  toEgress(port: number, egressTs: number): void;
}

const SUPPORTED_HASHES = new Set(Object.keys(HASH_ALGORITHMS));

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
  readonly actions = new Map<number, ActionInfo>();
  readonly actionsByName = new Map<string, ActionInfo>();
  readonly learnLists = new Map<number, LearnListInfo>();
  readonly errorCodes = new Map<string, number>();
  readonly fn: CompiledFunctions;
  readonly source: string;
  readonly std: { ingressPort: FieldInfo; egressSpec: FieldInfo; egressPort: FieldInfo; packetLength: FieldInfo; instanceType?: FieldInfo; ingressTs?: FieldInfo; egressTs?: FieldInfo; parserError?: FieldInfo; checksumError?: FieldInfo; mcastGrp?: FieldInfo };

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
      };
      for (const r of json.register_arrays ?? []) {
        this.registers.set(r.name, {
          name: r.name, id: r.id, width: r.bitwidth, size: r.size,
          values: r.bitwidth <= bits.NUM_BITS ? new Float64Array(r.size) : new Array<bigint>(r.size).fill(0n),
        });
      }
      for (const c of json.counter_arrays ?? []) {
        const arr: CounterArray = { name: c.name, id: c.id, size: c.size, direct: c.is_direct, packets: new Float64Array(c.size), bytes: new Float64Array(c.size) };
        this.counters.set(c.name, arr);
        if (c.is_direct && c.binding) this.directCounters.set(c.binding, arr);
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
      for (const p of json.pipelines) {
        for (const t of p.tables) {
          const table = this.buildTable(t);
          this.tables.set(t.name, table);
          this.tablesById[t.id] = table;
        }
      }
      const gen = new Generator(this);
      this.source = gen.generate();
      const factory = new Function("H", "S", "X", this.source) as (h: unknown, s: unknown, x: unknown) => CompiledFunctions;
      this.fn = factory(
        { ...bits, HASH: HASH_ALGORITHMS, tcm, satCast, usatCast, shr },
        { N: this.N, B: this.B, V: this.V },
        {
          tables: this.tablesById,
          registers: [...this.registers.values()].sort((a, b) => a.id - b.id).map((r) => r.values),
          counters: [...this.counters.values()].sort((a, b) => a.id - b.id),
        },
      );
    } catch (err) {
      if (err instanceof UnsupportedProgramError || err instanceof InvalidProgramError) throw err;
      throw new InvalidProgramError(`malformed BMv2 JSON: ${(err as Error).message}`);
    }
  }

  private buildTable(t: Pipeline["tables"][number]): MatchTable {
    const where = `table '${t.name}'`;
    if (t.type !== "simple") throw new UnsupportedProgramError(`${where}: ${t.type} tables (action profiles/selectors) are not supported yet`);
    if (t.direct_meters) throw new UnsupportedProgramError(`${where}: direct meters are not supported yet`);
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
      : { actionId: t.action_ids[0]!, data: [] };
    const table = new MatchTable(t.name, t.id, keys, t.action_ids, t.max_size, defaultAction, def?.action_const === true, t.with_counters, (t.entries ?? []).length > 0);
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

function tcm(x: number, w: number): number {
  const m = bits.mod2k(x, w);
  return m >= 2 ** (w - 1) ? m - 2 ** w : m;
}

function satCast(x: bigint, w: number): bigint {
  const max = (1n << BigInt(w - 1)) - 1n;
  const min = -(1n << BigInt(w - 1));
  return x > max ? max : x < min ? min : x;
}

function usatCast(x: bigint, w: number): bigint {
  const max = (1n << BigInt(w)) - 1n;
  return x > max ? max : x < 0n ? 0n : x;
}

function shr(x: number, s: number): number {
  return s >= 53 ? (x < 0 ? -1 : 0) : Math.floor(x / 2 ** s);
}

function checkSupported(json: Bmv2Json): void {
  if (typeof json !== "object" || json === null || !Array.isArray(json.header_types) || !Array.isArray(json.pipelines)) {
    throw new InvalidProgramError("not a BMv2 JSON program (no header_types or pipelines)");
  }
  const major = json.__meta__?.version?.[0];
  if (major === undefined) throw new UnsupportedProgramError("BMv2 JSON without __meta__.version (format 1.x, from p4c-bm): compile the program with p4c");
  if (major !== 2) throw new UnsupportedProgramError(`BMv2 JSON format version ${major}.x (expected 2.x)`);
  if ((json.meter_arrays ?? []).length) throw new UnsupportedProgramError("meters are not supported yet");
  if ((json.parse_vsets ?? []).length) throw new UnsupportedProgramError("parser value sets are not supported yet");
  if ((json.extern_instances ?? []).length) throw new UnsupportedProgramError("extern instances are not supported yet");
  for (const p of json.pipelines) {
    if (p.action_profiles.length) throw new UnsupportedProgramError(`pipeline '${p.name}': action profiles are not supported yet`);
    if ((p.action_calls ?? []).length) throw new UnsupportedProgramError(`pipeline '${p.name}': action_calls are not supported`);
  }
  if (json.parsers.length !== 1) throw new UnsupportedProgramError(`expected one parser, found ${json.parsers.length}`);
  if (json.deparsers.length !== 1) throw new UnsupportedProgramError(`expected one deparser, found ${json.deparsers.length}`);
  for (const c of json.calculations ?? []) {
    if (!SUPPORTED_HASHES.has(c.algo)) throw new UnsupportedProgramError(`calculation '${c.name}': hash algorithm '${c.algo}'`);
  }
}

/** Emits the JavaScript source of a CompiledProgram. */
class Generator {
  private readonly out: string[] = [];
  private readonly layout: Layout;
  private readonly calcIndex = new Map<string, number>();
  /** When packets leave as they came, fields nobody reads need not be extracted. */
  private skipUnread = false;

  constructor(private readonly p: CompiledProgram) {
    this.layout = p.layout;
  }

  private emit(line: string): void {
    this.out.push(line);
  }

  /** Fields that the program reads anywhere but in the deparser. */
  private referenced = new Set<string>();

  private collectReferences(): void {
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) {
        for (const x of v) walk(x);
        return;
      }
      if (!v || typeof v !== "object") return;
      const o = v as { type?: unknown; value?: unknown };
      if ((o.type === "field" || o.type === "stack_field") && Array.isArray(o.value)) {
        const [h, f] = o.value as [string, string];
        if (o.type === "stack_field") for (const e of this.layout.stack(h, "references").elements) this.referenced.add(`${e.name}.${f}`);
        else this.referenced.add(`${h}.${f}`);
      }
      for (const x of Object.values(o)) walk(x);
    };
    const json = this.p.json;
    walk([json.parsers, json.pipelines, json.actions, json.calculations, json.learn_lists, json.checksums]);
    // Table keys and checksum targets name fields as bare [header, field] pairs.
    for (const p of json.pipelines) for (const t of p.tables) for (const k of t.key) if (Array.isArray(k.target)) this.referenced.add(`${k.target[0]}.${k.target[1]}`);
    for (const c of json.checksums ?? []) this.referenced.add(`${c.target[0]}.${c.target[1]}`);
    // access_field on a stack element reads by offset: keep every field of stacks read that way.
    if (JSON.stringify(json.pipelines).includes('"access_field"') || JSON.stringify(json.actions).includes('"access_field"')) {
      for (const st of this.layout.stacks) for (const e of st.elements) for (const f of e.fields) this.referenced.add(`${e.name}.${f.name}`);
    }
  }

  generate(): string {
    const json = this.p.json;
    this.collectReferences();
    this.skipUnread = this.immutableHeaders();
    this.emit(`"use strict";`);
    this.emit(`const { mod2k, mulmod, and52, or52, xor52, readBitsNum, readBitsBig, writeBits, writeBitsNum, writeBitsBig, tcm, satCast, usatCast, shr, HASH } = H;`);
    this.emit(`const N = S.N, B = S.B, V = S.V;`);
    this.emit(`const SN = new Int32Array(${Math.max(1, this.layout.stacks.length)}); // next index of each header stack`);
    this.emit(`const T = X.tables, R = X.registers, C = X.counters;`);
    this.emit(`const TMP = new Uint8Array(256);`);
    for (const algo of Object.keys(HASH_ALGORITHMS)) this.emit(`const HASH_${algo} = HASH[${JSON.stringify(algo)}];`);
    // Metadata headers are always valid.
    const meta = this.layout.headers.filter((h) => h.metadata).map((h) => h.id);
    // Short arrays are cleared slot by slot: cheaper than a fill() call each.
    const unrolled = (name: string, n: number, value: (i: number) => string) => Array.from({ length: n }, (_, i) => `${name}[${i}] = ${value(i)};`).join(" ");
    const headers = this.layout.headers.length;
    const clearB = this.layout.bigSlots <= 16 ? unrolled("B", this.layout.bigSlots, () => "0n") : "B.fill(0n);";
    const clearV = headers <= 16 ? unrolled("V", headers, (i) => (meta.includes(i) ? "1" : "0")) : `V.fill(0); ${meta.map((i) => `V[${i}] = 1;`).join(" ")}`;
    const stacks = Math.max(1, this.layout.stacks.length);
    const clearSN = stacks <= 16 ? unrolled("SN", stacks, () => "0") : "SN.fill(0);";
    this.emit(`function reset() { N.fill(0); ${clearB} ${clearV} ${clearSN} }`);
    json.calculations.forEach((c, i) => {
      this.calcIndex.set(c.name, i);
      this.genCalculation(c, i);
    });
    for (const a of json.actions) this.genAction(a);
    this.genParser();
    for (const p of json.pipelines) this.genPipeline(p);
    if (!json.pipelines.some((p) => p.name === "ingress")) throw new InvalidProgramError("no 'ingress' pipeline");
    if (!json.pipelines.some((p) => p.name === "egress")) this.emit(`function pipe_egress(ctx) {}`);
    this.genChecksums();
    this.genDeparser();
    this.genLearn();
    this.genStandardMetadata();
    this.emit(`return { parse, verifyChecksums, ingress: pipe_ingress, egress: pipe_egress, updateChecksums, deparse, learn, reset, begin, parsed, toEgress };`);
    return this.out.join("\n");
  }

  // ---- values -------------------------------------------------------------

  private fieldRef(tv: TypedValue, where: string): FieldInfo {
    if (tv.type !== "field") throw new UnsupportedProgramError(`${where}: expected a field, got '${tv.type}'`);
    const [h, f] = tv.value as [string, string];
    return this.layout.field(h, f, where);
  }

  /** Stores of standard metadata, truncated to the fields' widths (instance_type stays 0 from reset). */
  private genStandardMetadata(): void {
    const std = this.p.std;
    const store = (f: FieldInfo | undefined, v: string) => (f ? storeCode(this.slot(f), f.kind, f.width, false, { code: v, kind: "n", bits: 53, neg: false }) : "");
    this.emit(`function begin(port, length, ts) { reset(); ${store(std.ingressPort, "port")} ${store(std.packetLength, "length")} ${store(std.ingressTs, "ts")} }`);
    this.emit(`function parsed(err, csum) { ${store(std.parserError, "err")} ${store(std.checksumError, "csum")} }`);
    this.emit(`function toEgress(port, ts) { ${store(std.egressPort, "port")} ${store(std.egressTs, "ts")} }`);
  }

  private slot(f: FieldInfo): string {
    return f.kind === "n" ? `N[${f.slot}]` : `B[${f.slot}]`;
  }

  private headerRef(tv: TypedValue, where: string): HeaderInfo {
    if (tv.type !== "header") throw new UnsupportedProgramError(`${where}: expected a header, got '${tv.type}'`);
    return this.layout.header(String(tv.value), where);
  }

  private value(tv: TypedValue, scope: ExprScope): CExpr {
    return compileValue(tv, scope);
  }

  // ---- calculations (hash inputs) -----------------------------------------

  private genCalculation(c: Calculation, i: number): void {
    if (this.genStaticCalculation(c, i)) return;
    this.genDynamicCalculation(c, i);
  }

  /**
   * Inputs that are all metadata fields (always valid) or constants sit at
   * fixed offsets: store their bytes directly. p4c copies hash inputs into
   * metadata, so this is the common case.
   */
  private genStaticCalculation(c: Calculation, i: number): boolean {
    const where = `calculation '${c.name}'`;
    const parts: string[] = [];
    let off = 0;
    for (const inp of c.input) {
      if (inp.type !== "field") return false;
      const f = this.fieldRef(inp, where);
      if (!f.header.metadata || f.kind !== "n") return false;
      if (off % 8 === 0 && f.width % 8 === 0 && f.width <= 32) {
        const n = f.width / 8;
        for (let b = 0; b < n; b++) {
          const shift = 8 * (n - 1 - b);
          parts.push(`TMP[${off / 8 + b}] = ${f.width === 32 ? `(${this.slot(f)} >>> ${shift}) & 255` : `(${this.slot(f)} >> ${shift}) & 255`};`);
        }
      } else {
        parts.push(`writeBitsNum(TMP, ${off}, ${f.width}, ${this.slot(f)});`);
      }
      off += f.width;
    }
    if (off > 256 * 8) return false;
    const bytes = Math.ceil(off / 8);
    const needsZero = parts.some((p) => p.startsWith("writeBitsNum"));
    this.out.push(`function calc_${i}() {`);
    if (needsZero) this.out.push(`  TMP.fill(0, 0, ${bytes});`);
    this.out.push(...parts.map((p) => "  " + p));
    this.out.push(`  return HASH_${c.algo}(TMP, ${bytes});`, `}`);
    return true;
  }

  private genDynamicCalculation(c: Calculation, i: number): void {
    const where = `calculation '${c.name}'`;
    const lines: string[] = [`function calc_${i}(payload) {`, `  TMP.fill(0, 0, CALC_BYTES_${i}); let off = 0;`];
    let maxBits = 0;
    for (const inp of c.input) {
      if (inp.type === "field") {
        const f = this.fieldRef(inp, where);
        maxBits += f.width;
        lines.push(`  if (V[${f.header.id}] === 1) { ${this.writeField("TMP", "off", f)} off += ${f.width}; }`);
      } else if (inp.type === "hexstr") {
        const w = inp.bitwidth ?? 0;
        maxBits += w;
        lines.push(`  writeBits(TMP, off, ${w}, ${bits.parseHexstr(String(inp.value))}n); off += ${w};`);
      } else if (inp.type === "header") {
        const h = this.headerRef(inp, where);
        maxBits += h.bytes * 8;
        lines.push(`  if (V[${h.id}] === 1) { ${h.fields.map((f) => `${this.writeField("TMP", "off", f)} off += ${f.width};`).join(" ")} }`);
      } else if (inp.type === "payload") {
        this.out.push(`const CALC_BYTES_${i} = 256;`);
        lines.push(`  const head = TMP.slice(0, (off + 7) >> 3); const all = new Uint8Array(head.length + payload.length); all.set(head); all.set(payload, head.length);`);
        lines.push(`  return HASH[${JSON.stringify(c.algo)}](all);`);
        lines.push(`}`);
        this.out.push(...lines);
        return;
      } else {
        throw new UnsupportedProgramError(`${where}: input of type '${inp.type}'`);
      }
    }
    if (maxBits > 256 * 8) throw new UnsupportedProgramError(`${where}: input wider than 256 bytes`);
    this.out.push(`const CALC_BYTES_${i} = ${Math.ceil(maxBits / 8)};`);
    lines.push(`  return HASH_${c.algo}(TMP, (off + 7) >> 3);`, `}`);
    this.out.push(...lines);
  }

  // ---- actions and primitives ----------------------------------------------

  private genAction(a: Action): void {
    const scope: ExprScope = { layout: this.layout, runtimeData: a.runtime_data.map((r) => r.bitwidth), where: `action '${a.name}'` };
    this.emit(`function act_${a.id}(D, ctx) {`);
    for (const prim of a.primitives) this.emit("  " + this.primitive(prim, scope));
    this.emit(`}`);
  }

  private primitive(prim: Primitive, scope: ExprScope): string {
    const where = `${scope.where}, primitive '${prim.op}'`;
    const ps = prim.parameters;
    const s: ExprScope = { ...scope, where };
    const arg = (i: number) => {
      const v = ps[i];
      if (!v) throw new InvalidProgramError(`${where}: missing parameter ${i}`);
      return v;
    };
    switch (prim.op) {
      case "assign":
      case "modify_field": {
        const f = this.fieldRef(arg(0), where);
        return storeCode(this.slot(f), f.kind, f.width, f.signed, this.value(arg(1), s));
      }
      case "assign_header": {
        const d = this.headerRef(arg(0), where);
        const src = this.headerRef(arg(1), where);
        return `V[${d.id}] = V[${src.id}]; ` + d.fields.map((f, i) => `${this.slot(f)} = ${this.slot(src.fields[i]!)};`).join(" ");
      }
      case "add_header":
      case "add_header_fast": {
        const h = this.headerRef(arg(0), where);
        return `if (V[${h.id}] === 0) { V[${h.id}] = 1; ${h.fields.map((f) => `${this.slot(f)} = ${f.kind === "n" ? "0" : "0n"};`).join(" ")} }`;
      }
      case "remove_header": {
        const h = this.headerRef(arg(0), where);
        return `V[${h.id}] = 0;`;
      }
      case "mark_to_drop":
      case "drop": {
        const std = this.p.std;
        return `${this.slot(std.egressSpec)} = ${DROP_PORT};` + (std.mcastGrp ? ` ${this.slot(std.mcastGrp)} = 0;` : "");
      }
      case "register_read": {
        const f = this.fieldRef(arg(0), where);
        const r = this.registerRef(arg(1), where);
        const idx = this.value(arg(2), s);
        const reg = `R[${r.id}]`;
        const cell: CExpr = { code: `${reg}[i]`, kind: r.width <= bits.NUM_BITS ? "n" : "b", bits: r.width, neg: false };
        return `{ const i = ${toNum(idx)}; if (i < ${r.size}) { ${storeCode(this.slot(f), f.kind, f.width, f.signed, cell)} } }`;
      }
      case "register_write": {
        const r = this.registerRef(arg(0), where);
        const idx = this.value(arg(1), s);
        const v = this.value(arg(2), s);
        return `{ const i = ${toNum(idx)}; if (i < ${r.size}) { ${storeCode(`R[${r.id}][i]`, r.width <= bits.NUM_BITS ? "n" : "b", r.width, false, v)} } }`;
      }
      case "count": {
        const c = this.counterRef(arg(0), where);
        const idx = this.value(arg(1), s);
        return `{ const i = ${toNum(idx)}; if (i < ${c.size}) { C[${c.id}].packets[i]++; C[${c.id}].bytes[i] += ctx.packetLength; } }`;
      }
      case "modify_field_with_hash_based_offset": {
        const f = this.fieldRef(arg(0), where);
        const base = this.value(arg(1), s);
        const calcName = String(arg(2).value);
        const ci = this.calcIndex.get(calcName);
        if (ci === undefined) throw new InvalidProgramError(`${where}: no calculation named '${calcName}'`);
        const size = this.value(arg(3), s);
        const hv: CExpr = { code: `(Number(h) % sz + ${toNum(base)})`, kind: "n", bits: 53, neg: false };
        return `{ const h = calc_${ci}(); const sz = Math.max(1, ${toNum(size)}); ${storeCode(this.slot(f), f.kind, f.width, f.signed, { ...hv, bits: Math.min(53, Math.max(size.bits, base.bits) + 1) })} }`;
      }
      case "generate_digest": {
        const id = this.value(arg(1), s);
        return `ctx.learnId = ${toNum(id)};`;
      }
      case "push":
      case "pop": {
        // P4_16 push_front/pop_front (BMv2 StackP4_16): shift elements, invalidate the vacated ones.
        if (arg(0).type !== "header_stack") throw new UnsupportedProgramError(`${where}: ${prim.op} on a ${arg(0).type}`);
        const st = this.layout.stack(String(arg(0).value), where);
        const cnt = this.value(arg(1), s);
        if (cnt.constant === undefined) throw new UnsupportedProgramError(`${where}: ${prim.op} by a non-constant count`);
        const n = Number(cnt.constant);
        const size = st.elements.length;
        const copy = (to: HeaderInfo, from: HeaderInfo) => `V[${to.id}] = V[${from.id}]; ` + to.fields.map((f, i) => `${this.slot(f)} = ${this.slot(from.fields[i]!)};`).join(" ");
        const parts: string[] = [];
        if (prim.op === "pop") {
          for (let i = 0; i < size; i++) parts.push(i + n < size ? copy(st.elements[i]!, st.elements[i + n]!) : `V[${st.elements[i]!.id}] = 0;`);
          parts.push(`SN[${st.id}] = Math.max(0, SN[${st.id}] - ${n});`);
        } else {
          for (let i = size - 1; i >= 0; i--) parts.push(i - n >= 0 ? copy(st.elements[i]!, st.elements[i - n]!) : `V[${st.elements[i]!.id}] = 0;`);
          parts.push(`SN[${st.id}] = Math.min(${size}, SN[${st.id}] + ${n});`);
        }
        return `{ ${parts.join(" ")} }`;
      }
      case "exit":
        return `ctx.exit = true; return;`;
      case "no_op":
      case "log_msg":
        return ``;
      case "assert":
      case "assume": {
        const c = this.value(arg(0), s);
        return `if (!${toBool(c)}) { ctx.failed = ${JSON.stringify(`${prim.op} failed in ${scope.where}`)}; ctx.exit = true; return; }`;
      }
      case "truncate": {
        const n = this.value(arg(0), s);
        return `ctx.truncateTo = ${toNum(n)};`;
      }
      default:
        throw new UnsupportedProgramError(`${where}: primitive '${prim.op}' is not supported`);
    }
  }

  private registerRef(tv: TypedValue, where: string) {
    if (tv.type !== "register_array") throw new UnsupportedProgramError(`${where}: expected a register array, got '${tv.type}'`);
    const r = this.p.registers.get(String(tv.value));
    if (!r) throw new InvalidProgramError(`${where}: no register array named '${String(tv.value)}'`);
    return r;
  }

  private counterRef(tv: TypedValue, where: string) {
    if (tv.type !== "counter_array") throw new UnsupportedProgramError(`${where}: expected a counter array, got '${tv.type}'`);
    const c = this.p.counters.get(String(tv.value));
    if (!c) throw new InvalidProgramError(`${where}: no counter array named '${String(tv.value)}'`);
    return c;
  }

  // ---- parser ---------------------------------------------------------------

  private genParser(): void {
    const parser = this.p.json.parsers[0]!;
    const states = parser.parse_states;
    const stateId = new Map(states.map((st, i) => [st.name, i]));
    const tooShort = this.p.errorCodes.get("PacketTooShort") ?? 1;
    const scope: ExprScope = { layout: this.layout, where: `parser '${parser.name}'` };
    this.emit(`function parse(buf, ctx) {`);
    this.emit(`  const len = buf.length; let off = 0; nExtracted = 0; let st = ${stateId.get(parser.init_state) ?? -1};`);
    this.emit(`  for (;;) { switch (st) {`);
    for (const [i, st] of states.entries()) {
      const where = `parse state '${st.name}'`;
      const s: ExprScope = { ...scope, where };
      this.emit(`  case ${i}: {`);
      for (const op of st.parser_ops) {
        switch (op.op) {
          case "extract": {
            const p0 = op.parameters[0]!;
            if (p0.type === "stack") {
              const st = this.layout.stack(String(p0.value), where);
              const outOfBounds = this.p.errorCodes.get("StackOutOfBounds") ?? 3;
              this.emit(`    switch (SN[${st.id}]) {`);
              st.elements.forEach((h, k) => {
                this.emit(`    case ${k}:`);
                this.emit(`      if (off + ${h.bytes} > len) { ctx.parserError = ${tooShort}; return off; }`);
                for (const f of h.fields) if (this.needed(f)) this.emit(`      ${this.readField(f, "off")}`);
                this.emit(`      V[${h.id}] = 1; off += ${h.bytes}; EXTRACTED[nExtracted++] = ${h.id}; break;`);
              });
              this.emit(`    default: ctx.parserError = ${outOfBounds}; return off;`);
              this.emit(`    }`);
              this.emit(`    SN[${st.id}]++;`);
              break;
            }
            if (p0.type !== "regular") throw new UnsupportedProgramError(`${where}: extract into a ${p0.type}`);
            const h = this.layout.header(String(p0.value), where);
            this.emit(`    if (off + ${h.bytes} > len) { ctx.parserError = ${tooShort}; return off; }`);
            for (const f of h.fields) if (this.needed(f)) this.emit(`    ${this.readField(f, "off")}`);
            this.emit(`    V[${h.id}] = 1; off += ${h.bytes}; EXTRACTED[nExtracted++] = ${h.id};`);
            break;
          }
          case "set": {
            const f = this.fieldRef(op.parameters[0]!, where);
            const src = op.parameters[1]!;
            if (src.type === "lookahead") {
              const [bitOff, width] = src.value as [number, number];
              this.emit(`    if (off * 8 + ${bitOff + width} > len * 8) { ctx.parserError = ${tooShort}; return off; }`);
              const e: CExpr = width <= bits.NUM_BITS
                ? { code: `readBitsNum(buf, off * 8 + ${bitOff}, ${width})`, kind: "n", bits: width, neg: false }
                : { code: `readBitsBig(buf, off * 8 + ${bitOff}, ${width})`, kind: "b", bits: width, neg: false };
              this.emit(`    ${storeCode(this.slot(f), f.kind, f.width, f.signed, e)}`);
            } else {
              this.emit(`    ${storeCode(this.slot(f), f.kind, f.width, f.signed, this.value(src, s))}`);
            }
            break;
          }
          case "verify": {
            const cond = this.value(op.parameters[0]!, s);
            const err = this.value(op.parameters[1]!, s);
            this.emit(`    if (!${toBool(cond)}) { ctx.parserError = ${toNum(err)}; return off; }`);
            break;
          }
          case "advance":
          case "shift": {
            const amount = this.value(op.parameters[0]!, s);
            const bytesExpr = op.op === "shift" ? toNum(amount) : `(${toNum(amount)} / 8)`;
            this.emit(`    { const n = ${bytesExpr}; if (off + n > len) { ctx.parserError = ${tooShort}; return off; } off += n; }`);
            break;
          }
          case "primitive": {
            const inner = op.parameters[0] as unknown as Primitive;
            this.emit(`    ${this.primitive(inner, s).replace("return;", "return off;")}`);
            break;
          }
          default:
            throw new UnsupportedProgramError(`${where}: parser operation '${op.op}'`);
        }
      }
      // Transition key: byte-padded fields concatenated.
      const keyParts: Array<{ code: string; padded: number; big: boolean }> = [];
      for (const k of st.transition_key) {
        if (k.type === "field") {
          const f = this.fieldRef(k, where);
          keyParts.push({ code: f.kind === "n" ? this.slot(f) : this.slot(f), padded: Math.ceil(f.width / 8) * 8, big: f.kind === "b" });
        } else if (k.type === "stack_field") {
          const e = this.value(k, s);
          keyParts.push({ code: e.code, padded: Math.ceil(e.bits / 8) * 8, big: e.kind === "b" });
        } else if (k.type === "lookahead") {
          const [bitOff, width] = k.value as [number, number];
          this.emit(`    if (off * 8 + ${bitOff + width} > len * 8) { ctx.parserError = ${tooShort}; return off; }`);
          keyParts.push({ code: width <= bits.NUM_BITS ? `readBitsNum(buf, off * 8 + ${bitOff}, ${width})` : `readBitsBig(buf, off * 8 + ${bitOff}, ${width})`, padded: Math.ceil(width / 8) * 8, big: width > bits.NUM_BITS });
        } else {
          throw new UnsupportedProgramError(`${where}: transition key of type '${k.type}'`);
        }
      }
      const total = keyParts.reduce((a, k) => a + k.padded, 0);
      const bigKey = total > bits.NUM_BITS;
      if (keyParts.length) {
        let acc = "";
        let shift = total;
        for (const k of keyParts) {
          shift -= k.padded;
          const term = bigKey ? `(${k.big ? k.code : `BigInt(${k.code})`} << ${shift}n)` : `${k.code} * ${2 ** shift}`;
          acc = acc ? `${acc} ${bigKey ? "|" : "+"} ${term}` : term;
        }
        this.emit(`    const key = ${acc};`);
      }
      const next = (name: string | null) => (name === null ? -1 : stateId.get(name) ?? (() => { throw new InvalidProgramError(`${where}: no parse state '${name}'`); })());
      const conds: string[] = [];
      for (const t of st.transitions) {
        // Older p4c output leaves out `type` ("value": "default" or a hexstr).
        const type = t.type ?? (t.value === "default" ? "default" : "hexstr");
        if (type === "default") {
          conds.push(`    st = ${next(t.next_state)}; break;`);
          break;
        }
        if (type !== "hexstr") throw new UnsupportedProgramError(`${where}: transition of type '${type}'`);
        const v = bits.parseHexstr(String(t.value));
        const m = t.mask === null ? undefined : bits.parseHexstr(t.mask);
        let test: string;
        if (bigKey) test = m === undefined ? `key === ${v}n` : `(key & ${m}n) === ${v & m}n`;
        else if (m === undefined) test = `key === ${v}`;
        else test = `and52(key, ${m}) === ${v & m}`;
        conds.push(`    if (${test}) { st = ${next(t.next_state)}; break; }`);
      }
      if (!st.transitions.some((t) => (t.type ?? (t.value === "default" ? "default" : "hexstr")) === "default")) conds.push(`    st = -1; break;`);
      for (const c of conds) this.emit(c);
      this.emit(`  }`);
    }
    this.emit(`  default: return off;`);
    this.emit(`  } }`);
    this.emit(`}`);
  }

  private needed(f: FieldInfo): boolean {
    return !this.skipUnread || this.referenced.has(`${f.header.name}.${f.name}`);
  }

  private writeField(buf: string, bitOff: string, f: FieldInfo): string {
    return f.kind === "n" ? `writeBitsNum(${buf}, ${bitOff}, ${f.width}, ${this.slot(f)});` : `writeBitsBig(${buf}, ${bitOff}, ${f.width}, ${this.slot(f)});`;
  }

  private readField(f: FieldInfo, off: string): string {
    const byte = f.bitOffset >> 3;
    const shift = f.bitOffset & 7;
    const o = `${off} + ${byte}`;
    if (f.kind === "n" && shift === 0 && f.width % 8 === 0 && f.width <= 48) {
      const n = f.width / 8;
      if (n === 1) return `${this.slot(f)} = buf[${o}];`;
      if (n === 2) return `${this.slot(f)} = (buf[${o}] << 8) | buf[${o} + 1];`;
      return `${this.slot(f)} = ${Array.from({ length: n }, (_, i) => `buf[${o} + ${i}] * ${2 ** (8 * (n - 1 - i))}`).join(" + ")};`;
    }
    if (f.kind === "n" && shift + f.width <= 32) {
      // Within four bytes: one 32-bit window, shifted and masked.
      const nb = (shift + f.width + 7) >> 3;
      const bytes = Array.from({ length: nb }, (_, i) => `(buf[${o} + ${i}] << ${8 * (nb - 1 - i)})`).join(" | ");
      const drop = nb * 8 - shift - f.width;
      return `${this.slot(f)} = ((${bytes}) >>> ${drop}) ${f.width === 32 ? ">>> 0" : `& ${2 ** f.width - 1}`};`;
    }
    if (f.kind === "n") return `${this.slot(f)} = readBitsNum(buf, (${o}) * 8 + ${shift}, ${f.width});`;
    const raw = `readBitsBig(buf, (${o}) * 8 + ${shift}, ${f.width})`;
    return `${this.slot(f)} = ${f.signed ? `BigInt.asIntN(${f.width}, ${raw})` : raw};`;
  }

  // ---- pipelines --------------------------------------------------------------

  private genPipeline(p: Pipeline): void {
    const names = new Map<string, number>();
    p.tables.forEach((t, i) => names.set(t.name, i));
    p.conditionals.forEach((c, i) => names.set(c.name, p.tables.length + i));
    const node = (name: string | null, where: string) => {
      if (name === null) return -1;
      const n = names.get(name);
      if (n === undefined) throw new InvalidProgramError(`${where}: no table or conditional named '${name}'`);
      return n;
    };
    const actionName = new Map(this.p.json.actions.map((a) => [a.id, a.name]));
    this.emit(`function pipe_${p.name}(ctx) {`);
    this.emit(`  let n = ${node(p.init_table, `pipeline '${p.name}'`)};`);
    this.emit(`  for (;;) { switch (n) {`);
    p.tables.forEach((t, i) => {
      const where = `table '${t.name}'`;
      const keyCode = t.key.map((k) => {
        const [h, f] = k.target as [string, string];
        if (f === "$valid$") return `V[${this.layout.header(h, where).id}]`;
        const fi = this.layout.field(h, f, where);
        if (k.mask !== null) {
          const m = bits.parseHexstr(k.mask);
          return fi.kind === "n" ? `and52(${this.slot(fi)}, ${m})` : `(${this.slot(fi)} & ${m}n)`;
        }
        return this.slot(fi);
      });
      this.emit(`  case ${i}: {`);
      // A keyless table whose default is const (p4c's wrapper for a direct
      // action call) always runs that action: call it, with its fixed data.
      const constDefault = t.key.length === 0 && t.default_entry?.action_const === true && !t.with_counters;
      if (constDefault) {
        this.emit(`    const e = undefined;`);
        this.emit(`    act_${t.default_entry!.action_id}(T[${t.id}].defaultAction.data, ctx);`);
      } else {
        if (t.key.length === 0) {
          this.emit(`    const e = undefined;`);
        } else {
          this.emit(keyCode.length === 1 ? `    const e = T[${t.id}].lookup1(${keyCode[0]});` : `    const e = T[${t.id}].lookup([${keyCode.join(", ")}]);`);
        }
        this.emit(`    const a = e === undefined ? T[${t.id}].defaultAction : e.action;`);
        if (t.with_counters) this.emit(`    if (e !== undefined) { e.packets++; e.bytes += ctx.packetLength; } else { T[${t.id}].defaultPackets++; T[${t.id}].defaultBytes += ctx.packetLength; }`);
        this.emit(`    switch (a.actionId) {`);
        for (const id of t.action_ids) this.emit(`      case ${id}: act_${id}(a.data, ctx); break;`);
        this.emit(`    }`);
      }
      this.emit(`    if (ctx.exit) return;`);
      const nt = t.next_tables;
      if ("__HIT__" in nt || "__MISS__" in nt) {
        this.emit(`    n = e !== undefined ? ${node(nt.__HIT__ ?? null, where)} : ${node(nt.__MISS__ ?? null, where)}; break;`);
      } else {
        const targets = new Set(t.action_ids.map((id) => node(nt[actionName.get(id) ?? ""] ?? t.base_default_next, where)));
        if (targets.size === 1) {
          this.emit(`    n = ${[...targets][0]}; break;`);
        } else {
          this.emit(`    switch (a.actionId) {`);
          for (const id of t.action_ids) this.emit(`      case ${id}: n = ${node(nt[actionName.get(id) ?? ""] ?? t.base_default_next, where)}; break;`);
          this.emit(`      default: n = ${node(t.base_default_next, where)};`);
          this.emit(`    }`);
          this.emit(`    break;`);
        }
      }
      this.emit(`  }`);
    });
    p.conditionals.forEach((c, i) => {
      const where = `conditional '${c.name}'`;
      const e = this.value(c.expression, { layout: this.layout, where });
      this.emit(`  case ${p.tables.length + i}: n = ${toBool(e)} ? ${node(c.true_next, where)} : ${node(c.false_next, where)}; break;`);
    });
    this.emit(`  default: return;`);
    this.emit(`  } }`);
    this.emit(`}`);
  }

  // ---- checksums, deparser, learn lists --------------------------------------

  private genChecksums(): void {
    const verify: string[] = [];
    const update: string[] = [];
    for (const c of this.p.json.checksums ?? []) {
      const where = `checksum '${c.name}'`;
      const ci = this.calcIndex.get(c.calculation);
      if (ci === undefined) throw new InvalidProgramError(`${where}: no calculation named '${c.calculation}'`);
      const [h, f] = c.target;
      const fi = this.layout.field(h, f, where);
      const cond = c.if_cond ? toBool(this.value(c.if_cond, { layout: this.layout, where })) : "true";
      if (c.verify !== false) verify.push(`  if (${cond} && BigInt(calc_${ci}(ctxPayload)) !== ${toBig({ code: this.slot(fi), kind: fi.kind, bits: fi.width, neg: false })}) ok = false;`);
      if (c.update !== false) update.push(`  if (${cond}) { ${storeCode(this.slot(fi), fi.kind, fi.width, false, { code: `calc_${ci}(ctxPayload)`, kind: "n", bits: 53, neg: false })} }`);
    }
    this.emit(`let ctxPayload = new Uint8Array(0);`);
    this.emit(`function verifyChecksums() { let ok = true;`);
    verify.forEach((l) => this.emit(l));
    this.emit(`  return ok; }`);
    this.emit(`function updateChecksums() {`);
    update.forEach((l) => this.emit(l));
    this.emit(`}`);
  }

  private genDeparser(): void {
    const d = this.p.json.deparsers[0]!;
    const hs = d.order.map((name) => this.layout.header(name, `deparser '${d.name}'`));
    const maxHeaders = this.layout.headers.length;
    this.emit(`const EXTRACTED = new Int32Array(${Math.max(1, maxHeaders * 4)}); let nExtracted = 0;`);
    this.emit(`const ORDER = [${hs.map((h) => h.id).join(", ")}];`);
    // A program that never writes a header field, never changes a header's
    // validity and has no checksum to update gives back the bytes it parsed,
    // when it emits the valid headers in the order they were extracted.
    this.emit(`const IMMUTABLE = ${this.immutableHeaders()};`);
    this.emit(`function unchanged() {`);
    this.emit(`  if (!IMMUTABLE) return false;`);
    this.emit(`  let k = 0;`);
    this.emit(`  for (let i = 0; i < ORDER.length; i++) { const h = ORDER[i]; if (V[h] === 1) { if (k >= nExtracted || EXTRACTED[k] !== h) return false; k++; } }`);
    this.emit(`  return k === nExtracted;`);
    this.emit(`}`);
    this.emit(`function deparse(buf, parsed, original) {`);
    this.emit(`  if (original !== undefined && unchanged()) return original;`);
    this.emit(`  const payload = buf.subarray(parsed);`);
    this.emit(`  let size = payload.length;`);
    for (const h of hs) this.emit(`  if (V[${h.id}] === 1) size += ${h.bytes};`);
    this.emit(`  const out = Buffer.allocUnsafe(size); out.fill(0, 0, size - payload.length); let off = 0;`);
    for (const h of hs) {
      const w: string[] = [];
      for (const f of h.fields) {
        const byte = f.bitOffset >> 3;
        const shift = f.bitOffset & 7;
        if (f.kind === "n" && shift === 0 && f.width % 8 === 0 && f.width <= 48) {
          w.push(`out.writeUIntBE(${this.slot(f)}, off + ${byte}, ${f.width / 8});`);
        } else {
          w.push(this.writeField("out", `(off + ${byte}) * 8 + ${shift}`, f));
        }
      }
      this.emit(`  if (V[${h.id}] === 1) { ${w.join(" ")} off += ${h.bytes}; }`);
    }
    this.emit(`  out.set(payload, off);`);
    this.emit(`  return out;`);
    this.emit(`}`);
  }

  /** True when no action or parser writes a packet header or its validity, and no checksum is updated. */
  private immutableHeaders(): boolean {
    const json = this.p.json;
    const isPacketHeader = (name: string) => {
      const h = this.layout.headers.find((x) => x.name === name);
      return h !== undefined && !h.metadata;
    };
    const writes = (prim: Primitive): boolean => {
      const p0 = prim.parameters[0];
      switch (prim.op) {
        case "assign":
        case "modify_field":
        case "register_read":
        case "modify_field_with_hash_based_offset":
          return p0?.type === "field" ? isPacketHeader((p0.value as [string, string])[0]) : p0?.type !== undefined && p0.type !== "field";
        case "assign_header":
        case "add_header":
        case "add_header_fast":
        case "remove_header":
          return p0?.type === "header" ? isPacketHeader(String(p0.value)) : true;
        case "push":
        case "pop":
          return true;
        default:
          return false;
      }
    };
    if (json.actions.some((a) => a.primitives.some(writes))) return false;
    const parser = json.parsers[0]!;
    for (const st of parser.parse_states) {
      let extracted = false;
      for (const op of st.parser_ops) {
        if (op.op === "extract") extracted = true;
        if (op.op === "set" && op.parameters[0]?.type === "field" && isPacketHeader((op.parameters[0].value as [string, string])[0])) return false;
        if (op.op !== "primitive") continue;
        const prim = op.parameters[0] as unknown as Primitive;
        // p4c starts a parser by invalidating its `out` headers: nothing is emitted differently.
        if (prim.op === "remove_header" && st.name === parser.init_state && !extracted) continue;
        if (writes(prim)) return false;
      }
    }
    if ((json.checksums ?? []).some((c) => c.update !== false)) return false;
    return true;
  }

  private genLearn(): void {
    this.emit(`function learn(id) { switch (id) {`);
    for (const l of this.p.json.learn_lists ?? []) {
      const vals = l.elements.map((e) => this.slot(this.fieldRef(e, `learn list '${l.name}'`)));
      this.emit(`  case ${l.id}: return [${vals.join(", ")}];`);
    }
    this.emit(`  default: return [];`);
    this.emit(`} }`);
  }
}
