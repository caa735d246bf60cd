// Where every header and field of a program lives at run time: fields up to
// 52 bits in a Float64Array (N), wider or signed ones in a bigint array (B),
// header validity in a Uint8Array (V); a varbit field's value in B and its
// length now in the generated code's L. Header stacks, header unions (one
// member valid at a time) and stacks of unions group headers.
import { NUM_BITS } from "./bits.js";
import { InvalidProgramError, UnsupportedProgramError } from "./errors.js";
import type { Bmv2Json } from "./json.js";

export interface FieldInfo {
  header: HeaderInfo;
  name: string;
  width: number;
  signed: boolean;
  kind: "n" | "b";
  slot: number;
  /** bit offset inside the header */
  bitOffset: number;
  /** a variable-length (varbit) field: `width` is its largest size, its length now is L[varbit] */
  varbit?: number;
}

export interface HeaderInfo {
  id: number;
  name: string;
  typeName: string;
  metadata: boolean;
  fields: FieldInfo[];
  /** bytes on the wire (0 for metadata) */
  bytes: number;
  /** its variable-length field, last in the header; `bytes` counts the fixed part */
  varbit?: FieldInfo;
  /** bytes of the whole header at most (varbit headers) */
  maxBytes?: number;
  /** the header union it belongs to: one member valid at a time */
  union?: UnionInfo;
}

export interface UnionInfo {
  id: number;
  name: string;
  /** members in the union type's order */
  headers: HeaderInfo[];
  memberNames: string[];
}

export interface UnionStackInfo {
  name: string;
  /** its next-index counter in SN, after those of the header stacks */
  slot: number;
  unions: UnionInfo[];
}

export interface StackInfo {
  id: number;
  name: string;
  elements: HeaderInfo[];
}

export class Layout {
  readonly headers: HeaderInfo[] = [];
  readonly stacks: StackInfo[] = [];
  readonly unions: UnionInfo[] = [];
  readonly unionStacks: UnionStackInfo[] = [];
  private readonly unionByName = new Map<string, UnionInfo>();
  private readonly unionStackByName = new Map<string, UnionStackInfo>();
  private readonly stackByName = new Map<string, StackInfo>();
  private readonly byName = new Map<string, HeaderInfo>();
  private readonly aliases = new Map<string, [string, string]>();
  numSlots = 0;
  bigSlots = 0;
  /** varbit fields: their lengths live in L[0 .. varbitSlots - 1] */
  varbitSlots = 0;

  constructor(json: Bmv2Json) {
    const types = new Map(json.header_types.map((t) => [t.name, t]));
    for (const h of json.headers) {
      const t = types.get(h.header_type);
      if (!t) throw new InvalidProgramError(`header '${h.name}' has unknown type '${h.header_type}'`);
      const info: HeaderInfo = { id: this.headers.length, name: h.name, typeName: t.name, metadata: h.metadata, fields: [], bytes: 0 };
      let off = 0;
      t.fields.forEach(([name, width, signed], i) => {
        if (width === "*") {
          const where = `variable-length field ${h.name}.${name}`;
          if (i !== t.fields.length - 1) throw new UnsupportedProgramError(`${where}: a varbit field that is not the last of its header is not supported`);
          if (t.max_length === undefined) throw new InvalidProgramError(`${where}: header type '${t.name}' has no max_length`);
          const max = t.max_length * 8 - off;
          if (max < 0) throw new InvalidProgramError(`${where}: max_length ${t.max_length} is shorter than the fixed fields`);
          const f: FieldInfo = { header: info, name, width: max, signed: false, kind: "b", slot: this.bigSlots++, bitOffset: off, varbit: this.varbitSlots++ };
          info.fields.push(f);
          info.varbit = f;
          info.maxBytes = t.max_length;
          return;
        }
        const isSigned = signed === true;
        const kind = width <= NUM_BITS && !isSigned ? "n" : "b";
        const slot = kind === "n" ? this.numSlots++ : this.bigSlots++;
        info.fields.push({ header: info, name, width, signed: isSigned, kind, slot, bitOffset: off });
        off += width;
      });
      if (!h.metadata) {
        if (off % 8 !== 0) throw new InvalidProgramError(`header '${h.name}' is ${off} bits, not a whole number of bytes`);
        info.bytes = off / 8;
      }
      this.headers.push(info);
      this.byName.set(h.name, info);
    }
    for (const [alias, target] of json.field_aliases ?? []) this.aliases.set(alias, target);
    for (const raw of (json.header_stacks ?? []) as Array<{ name: string; header_ids: number[] }>) {
      const elements = raw.header_ids.map((id) => {
        const h = json.headers.find((x) => x.id === id);
        if (!h) throw new InvalidProgramError(`header stack '${raw.name}' names header id ${id}, which does not exist`);
        return this.byName.get(h.name)!;
      });
      const st = { id: this.stacks.length, name: raw.name, elements };
      this.stacks.push(st);
      this.stackByName.set(raw.name, st);
    }
    const unionTypes = new Map(((json.header_union_types ?? []) as Array<{ name: string; headers: Array<[string, string]> }>).map((t) => [t.name, t]));
    for (const raw of (json.header_unions ?? []) as Array<{ name: string; id: number; union_type: string; header_ids: number[] }>) {
      const t = unionTypes.get(raw.union_type);
      if (!t) throw new InvalidProgramError(`header union '${raw.name}' has unknown type '${raw.union_type}'`);
      const headers = raw.header_ids.map((id) => {
        const h = json.headers.find((x) => x.id === id);
        if (!h) throw new InvalidProgramError(`header union '${raw.name}' names header id ${id}, which does not exist`);
        return this.byName.get(h.name)!;
      });
      const u: UnionInfo = { id: raw.id, name: raw.name, headers, memberNames: t.headers.map(([n]) => n) };
      for (const h of headers) h.union = u;
      this.unions.push(u);
      this.unionByName.set(raw.name, u);
    }
    for (const raw of (json.header_union_stacks ?? []) as Array<{ name: string; header_union_ids: number[] }>) {
      const unions = raw.header_union_ids.map((id) => {
        const u = this.unions.find((x) => x.id === id);
        if (!u) throw new InvalidProgramError(`header union stack '${raw.name}' names union id ${id}, which does not exist`);
        return u;
      });
      const us = { name: raw.name, slot: this.stacks.length + this.unionStacks.length, unions };
      this.unionStacks.push(us);
      this.unionStackByName.set(raw.name, us);
    }
  }

  union(name: string, where: string): UnionInfo {
    const u = this.unionByName.get(name);
    if (!u) throw new InvalidProgramError(`${where}: no header union named '${name}'`);
    return u;
  }

  unionStack(name: string, where: string): UnionStackInfo {
    const u = this.unionStackByName.get(name);
    if (!u) throw new InvalidProgramError(`${where}: no header union stack named '${name}'`);
    return u;
  }

  stack(name: string, where: string): StackInfo {
    const st = this.stackByName.get(name);
    if (!st) throw new InvalidProgramError(`${where}: no header stack named '${name}'`);
    return st;
  }

  header(name: string, where: string): HeaderInfo {
    const h = this.byName.get(name);
    if (!h) throw new InvalidProgramError(`${where}: no header instance named '${name}'`);
    return h;
  }

  field(header: string, field: string, where: string): FieldInfo {
    const h = this.header(header, where);
    const f = h.fields.find((x) => x.name === field);
    if (!f) throw new InvalidProgramError(`${where}: header '${header}' has no field '${field}'`);
    return f;
  }

  /** A field by its BMv2 name ("standard_metadata.egress_spec"), following field aliases. */
  find(qualified: string): FieldInfo | undefined {
    const alias = this.aliases.get(qualified);
    const dot = qualified.indexOf(".");
    const [h, f] = alias ?? [qualified.slice(0, dot), qualified.slice(dot + 1)];
    const hdr = this.byName.get(h);
    return hdr?.fields.find((x) => x.name === f);
  }
}
