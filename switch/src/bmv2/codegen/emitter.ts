// What every part of the code generator shares: the lines emitted so far,
// the program being compiled, and how a field, a header or a value is
// written in the generated JavaScript.
import { UnsupportedProgramError } from "../errors.js";
import type { Bmv2Json, TypedValue } from "../json.js";
import type { FieldInfo, HeaderInfo, Layout } from "../layout.js";
import type { CounterArray, RegisterArray, StandardMetadata } from "../state.js";
import type { DirectMeterInfo, MeterArray } from "../meters.js";
import { compileValue, type CExpr, type ExprScope } from "./expr.js";

/** What the generator needs of a program: its JSON, its layout and its run-time state's names. */
export interface CodegenInput {
  readonly json: Bmv2Json;
  readonly layout: Layout;
  readonly std: StandardMetadata;
  readonly registers: ReadonlyMap<string, RegisterArray>;
  readonly counters: ReadonlyMap<string, CounterArray>;
  readonly meters: ReadonlyMap<string, MeterArray>;
  readonly directMeters: ReadonlyMap<string, DirectMeterInfo>;
  readonly errorCodes: ReadonlyMap<string, number>;
}

export class Emitter {
  readonly out: string[] = [];
  readonly layout: Layout;
  /** calculation name -> index of its calc_<i> function, filled as they are generated */
  readonly calcIndex = new Map<string, number>();

  /**
   * @param referenced fields that the program reads anywhere but in the deparser
   * @param immutable no packet header is ever written: packets leave as they came,
   *   so fields nobody reads need not be extracted
   */
  constructor(readonly p: CodegenInput, readonly referenced: ReadonlySet<string>, readonly immutable: boolean) {
    this.layout = p.layout;
  }

  emit(line: string): void {
    this.out.push(line);
  }

  /** The slot of a field: N[i] (a number) or B[i] (a bigint). */
  slot(f: FieldInfo): string {
    return f.kind === "n" ? `N[${f.slot}]` : `B[${f.slot}]`;
  }

  fieldRef(tv: TypedValue, where: string): FieldInfo {
    if (tv.type !== "field") throw new UnsupportedProgramError(`${where}: expected a field, got '${tv.type}'`);
    const [h, f] = tv.value as [string, string];
    return this.layout.field(h, f, where);
  }

  headerRef(tv: TypedValue, where: string): HeaderInfo {
    if (tv.type !== "header") throw new UnsupportedProgramError(`${where}: expected a header, got '${tv.type}'`);
    return this.layout.header(String(tv.value), where);
  }

  value(tv: TypedValue, scope: ExprScope): CExpr {
    return compileValue(tv, scope);
  }

  /** Marks a header valid; in a header union, the other members become invalid (BMv2's union membership). */
  setValid(h: HeaderInfo): string {
    const others = h.union ? h.union.headers.filter((x) => x !== h).map((x) => ` V[${x.id}] = 0;`).join("") : "";
    return `V[${h.id}] = 1;${others}`;
  }

  /** The bits field `f` takes now: its width, or a varbit field's length. */
  widthOf(f: FieldInfo): string {
    return f.varbit !== undefined ? `L[${f.varbit}]` : String(f.width);
  }

  /** Code that writes field `f` into `buf` at bit offset `bitOff`. */
  writeField(buf: string, bitOff: string, f: FieldInfo): string {
    if (f.varbit !== undefined) return `if (L[${f.varbit}] > 0) writeBitsBig(${buf}, ${bitOff}, L[${f.varbit}], ${this.slot(f)});`;
    return f.kind === "n" ? `writeBitsNum(${buf}, ${bitOff}, ${f.width}, ${this.slot(f)});` : `writeBitsBig(${buf}, ${bitOff}, ${f.width}, ${this.slot(f)});`;
  }
}
