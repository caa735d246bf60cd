// Compiles BMv2 JSON expressions into JavaScript source with exact
// infinite-precision semantics (values are truncated only when stored).
// Sub-expressions whose magnitude provably stays below 2^52 are plain
// number arithmetic; anything wider falls back to bigint.
import { bitLength, NUM_BITS, parseHexstr } from "../bits.js";
import type { ExpressionNode, TypedValue } from "../json.js";
import type { FieldInfo, HeaderInfo, Layout, StackInfo } from "../layout.js";
import { InvalidProgramError, UnsupportedProgramError } from "../errors.js";

export type Kind = "n" | "b" | "bool";

export interface CExpr {
  code: string;
  kind: Kind;
  /** |value| < 2^bits */
  bits: number;
  /** may be negative */
  neg: boolean;
  /** known at compile time */
  constant?: bigint;
  /** a product of two non-negative numbers, kept as operands for `(a * b) & (2^k - 1)` */
  mul?: [string, string];
}

const WIDE = 1 << 20;

export interface ExprScope {
  layout: Layout;
  /** Widths of the action's runtime data (undefined outside actions). */
  runtimeData?: readonly number[];
  where: string;
}

export function toBig(e: CExpr): string {
  if (e.kind === "b") return e.code;
  if (e.kind === "n") return e.constant !== undefined ? `${e.constant}n` : `BigInt(${e.code})`;
  return `(${e.code} ? 1n : 0n)`;
}

export function toNum(e: CExpr): string {
  if (e.kind === "n") return e.code;
  if (e.kind === "b") return `Number(${e.code})`;
  return `(${e.code} ? 1 : 0)`;
}

export function toBool(e: CExpr): string {
  if (e.kind === "bool") return e.code;
  return e.kind === "n" ? `(${e.code} !== 0)` : `(${e.code} !== 0n)`;
}

function constant(v: bigint): CExpr {
  const bits = bitLength(v);
  if (bits <= NUM_BITS) return { code: v < 0n ? `(${v})` : `${v}`, kind: "n", bits, neg: v < 0n, constant: v };
  return { code: `${v}n`, kind: "b", bits, neg: v < 0n, constant: v };
}

/** Code that stores expression `e` into a slot of width `width`, truncating. */
export function storeCode(target: string, targetKind: "n" | "b", width: number, signed: boolean, e: CExpr): string {
  if (signed) {
    const v = `BigInt.asIntN(${width}, ${toBig(e)})`;
    return targetKind === "b" ? `${target} = ${v};` : `${target} = Number(${v});`;
  }
  if (targetKind === "b") {
    if (e.kind === "b" && !e.neg && e.bits <= width) return `${target} = ${e.code};`;
    return `${target} = BigInt.asUintN(${width}, ${toBig(e)});`;
  }
  if (e.kind === "n") {
    if (!e.neg && e.bits <= width) return `${target} = ${e.code};`;
    return `${target} = mod2k(${e.code}, ${width});`;
  }
  if (e.kind === "bool") return `${target} = ${e.code} ? 1 : 0;`;
  return `${target} = Number(BigInt.asUintN(${width}, ${e.code}));`;
}

export function compileValue(tv: TypedValue, scope: ExprScope): CExpr {
  switch (tv.type) {
    case "hexstr":
      return constant(parseHexstr(String(tv.value)));
    case "bool":
      return { code: tv.value ? "true" : "false", kind: "bool", bits: 1, neg: false };
    case "field": {
      const [h, f] = tv.value as [string, string];
      if (f === "$valid$") {
        const hdr = scope.layout.header(h, scope.where);
        return { code: `V[${hdr.id}]`, kind: "n", bits: 1, neg: false };
      }
      const fi = scope.layout.field(h, f, scope.where);
      return {
        code: fi.kind === "n" ? `N[${fi.slot}]` : `B[${fi.slot}]`,
        kind: fi.kind,
        bits: fi.width,
        neg: fi.signed,
      };
    }
    case "runtime_data":
    case "local": {
      const i = Number(tv.value);
      const w = scope.runtimeData?.[i];
      if (w === undefined) throw new UnsupportedProgramError(`${scope.where}: runtime data #${i} outside an action with that many parameters`);
      return { code: `D[${i}]`, kind: w <= NUM_BITS ? "n" : "b", bits: w, neg: false };
    }
    case "expression":
      return compileExpression(tv.value as ExpressionNode | TypedValue, scope);
    case "stack_field": {
      // A field of the last extracted element of a stack.
      const [stackName, field] = tv.value as [string, string];
      const st = scope.layout.stack(stackName, scope.where);
      const fields = st.elements.map((h) => h.fields.find((f) => f.name === field));
      if (fields.some((f) => !f)) throw new InvalidProgramError(`${scope.where}: header stack '${stackName}' has no field '${field}'`);
      const f0 = fields[0]!;
      const slot = (f: NonNullable<(typeof fields)[number]>) => (f.kind === "n" ? `N[${f.slot}]` : `B[${f.slot}]`);
      const code = fields.slice(0, -1).reduceRight((acc, f, i) => `(SN[${st.id}] === ${i + 1} ? ${slot(f!)} : ${acc})`, slot(fields[fields.length - 1]!));
      return { code, kind: f0.kind, bits: f0.width, neg: f0.signed };
    }
    default:
      throw new UnsupportedProgramError(`${scope.where}: unsupported value type '${tv.type}'`);
  }
}

function compileExpression(node: ExpressionNode | TypedValue, scope: ExprScope): CExpr {
  // Nested {type: "expression", value: {...}} wrappers.
  if ("type" in node && !("op" in node)) return compileValue(node as TypedValue, scope);
  const n = node as ExpressionNode;
  const { op } = n;
  const R = () => {
    if (!n.right) throw new UnsupportedProgramError(`${scope.where}: '${op}' without an operand`);
    return compileValue(n.right, scope);
  };
  const L = () => {
    if (!n.left) throw new UnsupportedProgramError(`${scope.where}: '${op}' without a left operand`);
    return compileValue(n.left, scope);
  };

  switch (op) {
    case "last_stack_index":
    case "size_stack": {
      const r = n.right!;
      if (r.type !== "header_stack") throw new UnsupportedProgramError(`${scope.where}: '${op}' on ${r.type}`);
      const st = scope.layout.stack(String(r.value), scope.where);
      return op === "size_stack"
        ? { code: `SN[${st.id}]`, kind: "n", bits: 32, neg: false }
        : { code: `(SN[${st.id}] - 1)`, kind: "n", bits: 32, neg: true };
    }
    case "access_field": {
      // left: dereference_header_stack(stack, index); right: field offset.
      const t = stackFieldAt(n, scope);
      const slot = (f: FieldInfo) => (f.kind === "n" ? `N[${f.slot}]` : `B[${f.slot}]`);
      const code = t.fields.reduceRight((acc, f, k) => `(${t.index} === ${k} ? ${slot(f)} : ${acc})`, `oob(${JSON.stringify(t.stack.name)}, ${t.index})`);
      return { code, kind: t.fields[0]!.kind, bits: t.fields[0]!.width, neg: t.fields[0]!.signed };
    }
    case "valid": {
      const r = n.right!;
      if (r.type === "expression") {
        const inner = r.value as ExpressionNode;
        if (inner.op === "dereference_header_stack") {
          const st = scope.layout.stack(String(inner.left!.value), scope.where);
          const idx = compileValue(inner.right!, scope);
          const i = idx.kind === "n" ? idx.code : `Number(${idx.code})`;
          const code = st.elements.reduceRight((acc, h, k) => `(${i} === ${k} ? V[${h.id}] === 1 : ${acc})`, `oob(${JSON.stringify(st.name)}, ${i})`);
          return { code, kind: "bool", bits: 1, neg: false };
        }
      }
      if (r.type !== "header") throw new UnsupportedProgramError(`${scope.where}: 'valid' on ${r.type}`);
      const hdr = scope.layout.header(String(r.value), scope.where);
      return { code: `(V[${hdr.id}] === 1)`, kind: "bool", bits: 1, neg: false };
    }
    case "valid_union": {
      const r = n.right!;
      if (r.type !== "header_union") throw new UnsupportedProgramError(`${scope.where}: 'valid_union' on ${r.type}`);
      const u = scope.layout.union(String(r.value), scope.where);
      return { code: `(${u.headers.map((h) => `V[${h.id}] === 1`).join(" || ") || "false"})`, kind: "bool", bits: 1, neg: false };
    }
    case "d2b":
      return { code: toBool(R()), kind: "bool", bits: 1, neg: false };
    case "b2d": {
      const r = R();
      return { code: `(${toBool(r)} ? 1 : 0)`, kind: "n", bits: 1, neg: false };
    }
    case "not":
      return { code: `(!${toBool(R())})`, kind: "bool", bits: 1, neg: false };
    case "and":
    case "or": {
      const l = L(), r = R();
      return { code: `(${toBool(l)} ${op === "and" ? "&&" : "||"} ${toBool(r)})`, kind: "bool", bits: 1, neg: false };
    }
    case "==":
    case "!=":
    case "<":
    case ">":
    case "<=":
    case ">=": {
      const l = L(), r = R();
      const jsop = op === "==" ? "===" : op === "!=" ? "!==" : op;
      if (l.kind === "bool" && r.kind === "bool") return { code: `(${l.code} ${jsop} ${r.code})`, kind: "bool", bits: 1, neg: false };
      if (l.kind === "n" && r.kind === "n") return { code: `(${l.code} ${jsop} ${r.code})`, kind: "bool", bits: 1, neg: false };
      return { code: `(${toBig(l)} ${jsop} ${toBig(r)})`, kind: "bool", bits: 1, neg: false };
    }
    case "?": {
      if (!n.cond) throw new UnsupportedProgramError(`${scope.where}: '?' without a condition`);
      const c = compileValue(n.cond, scope);
      const l = L(), r = R();
      if (l.kind === r.kind) {
        return { code: `(${toBool(c)} ? ${l.code} : ${r.code})`, kind: l.kind, bits: Math.max(l.bits, r.bits), neg: l.neg || r.neg };
      }
      if (l.kind !== "b" && r.kind !== "b") {
        return { code: `(${toBool(c)} ? ${toNum(l)} : ${toNum(r)})`, kind: "n", bits: Math.max(l.bits, r.bits), neg: l.neg || r.neg };
      }
      return { code: `(${toBool(c)} ? ${toBig(l)} : ${toBig(r)})`, kind: "b", bits: Math.max(l.bits, r.bits), neg: l.neg || r.neg };
    }
    case "two_comp_mod": {
      const l = L(), r = R();
      if (r.constant === undefined) throw new UnsupportedProgramError(`${scope.where}: two_comp_mod with a non-constant width`);
      const w = Number(r.constant);
      if (l.kind === "n" && w <= NUM_BITS) return { code: `tcm(${l.code}, ${w})`, kind: "n", bits: w, neg: true };
      return { code: `BigInt.asIntN(${w}, ${toBig(l)})`, kind: "b", bits: w, neg: true };
    }
    case "usat_cast":
    case "sat_cast": {
      const l = L(), r = R();
      if (r.constant === undefined) throw new UnsupportedProgramError(`${scope.where}: ${op} with a non-constant width`);
      const w = Number(r.constant);
      return { code: `${op === "sat_cast" ? "satCast" : "usatCast"}(${toBig(l)}, ${w})`, kind: "b", bits: w, neg: op === "sat_cast" };
    }
    case "~": {
      const r = R();
      if (r.kind === "n" && r.bits < NUM_BITS) return { code: `(-${r.code} - 1)`, kind: "n", bits: r.bits + 1, neg: true };
      return { code: `(~${toBig(r)})`, kind: "b", bits: r.bits + 1, neg: true };
    }
    case "+":
    case "-": {
      const l = L(), r = R();
      const bits = Math.max(l.bits, r.bits) + 1;
      const neg = op === "-" || l.neg || r.neg;
      if (l.kind === "n" && r.kind === "n" && bits <= NUM_BITS) return { code: `(${l.code} ${op} ${r.code})`, kind: "n", bits, neg };
      return { code: `(${toBig(l)} ${op} ${toBig(r)})`, kind: "b", bits, neg };
    }
    case "*": {
      const l = L(), r = R();
      const bits = l.bits + r.bits;
      const neg = l.neg || r.neg;
      if (l.kind === "n" && r.kind === "n" && bits <= NUM_BITS) return { code: `(${l.code} * ${r.code})`, kind: "n", bits, neg };
      const mul: [string, string] | undefined = l.kind === "n" && r.kind === "n" && !neg ? [l.code, r.code] : undefined;
      return { code: `(${toBig(l)} * ${toBig(r)})`, kind: "b", bits, neg, ...(mul ? { mul } : {}) };
    }
    case "<<": {
      const l = L(), r = R();
      if (r.constant !== undefined) {
        const s = Number(r.constant);
        const bits = l.bits + s;
        if (l.kind === "n" && bits <= NUM_BITS) return { code: `(${l.code} * ${2 ** s})`, kind: "n", bits, neg: l.neg };
        return { code: `(${toBig(l)} << ${s}n)`, kind: "b", bits, neg: l.neg };
      }
      return { code: `(${toBig(l)} << ${toBig(r)})`, kind: "b", bits: WIDE, neg: l.neg };
    }
    case ">>": {
      const l = L(), r = R();
      if (l.kind === "n") {
        if (r.constant !== undefined) {
          const s = Number(r.constant);
          if (s >= 53) return constant(0n);
          if (!l.neg && l.bits <= 32) return { code: `(${l.code} >>> ${s})`, kind: "n", bits: Math.max(l.bits - s, 0), neg: false };
          return { code: `Math.floor(${l.code} / ${2 ** s})`, kind: "n", bits: l.bits, neg: l.neg };
        }
        return { code: `shr(${l.code}, ${toNum(r)})`, kind: "n", bits: l.bits, neg: l.neg };
      }
      return { code: `(${l.code} >> ${toBig(r)})`, kind: "b", bits: l.bits, neg: l.neg };
    }
    case "&":
    case "|":
    case "^": {
      const l = L(), r = R();
      if (l.kind === "n" && r.kind === "n") {
        if (!l.neg && !r.neg) {
          const bits = op === "&" ? Math.min(l.bits, r.bits) : Math.max(l.bits, r.bits);
          if (l.bits <= 31 && r.bits <= 31) return { code: `(${l.code} ${op} ${r.code})`, kind: "n", bits, neg: false };
          if (l.bits <= 32 && r.bits <= 32) return { code: `((${l.code} ${op} ${r.code}) >>> 0)`, kind: "n", bits, neg: false };
          const fn = op === "&" ? "and52" : op === "|" ? "or52" : "xor52";
          return { code: `${fn}(${l.code}, ${r.code})`, kind: "n", bits, neg: false };
        }
        if (op === "&") {
          // x & (2^k - 1) of a possibly negative x: x mod 2^k.
          const [v, m] = r.constant !== undefined ? [l, r.constant] : l.constant !== undefined ? [r, l.constant] : [undefined, undefined];
          if (v && m !== undefined && m >= 0n && (m & (m + 1n)) === 0n) {
            const k = bitLength(m);
            return { code: `mod2k(${v.code}, ${k})`, kind: "n", bits: k, neg: false };
          }
        }
      }
      if (op === "&") {
        // (a * b) & (2^k - 1) of two numbers, k <= 52 (a 48-bit timestamp times
        // its scale): number arithmetic while the product is exact.
        const [v, m] = l.mul && r.constant !== undefined ? [l, r.constant] : r.mul && l.constant !== undefined ? [r, l.constant] : [undefined, undefined];
        if (v?.mul && m !== undefined && m > 0n && (m & (m + 1n)) === 0n && bitLength(m) <= NUM_BITS) {
          const k = bitLength(m);
          return { code: `mulmod(${v.mul[0]}, ${v.mul[1]}, ${k})`, kind: "n", bits: k, neg: false };
        }
      }
      const neg = op === "&" ? l.neg && r.neg : l.neg || r.neg;
      const bits = op === "&" && (!l.neg || !r.neg)
        ? Math.min(l.neg ? WIDE : l.bits, r.neg ? WIDE : r.bits)
        : Math.max(l.bits, r.bits);
      const code = `(${toBig(l)} ${op} ${toBig(r)})`;
      if (!neg && bits <= NUM_BITS && op === "&") return { code: `Number${code}`, kind: "n", bits, neg: false };
      return { code, kind: "b", bits, neg };
    }
    default:
      throw new UnsupportedProgramError(`${scope.where}: unsupported expression operator '${op}'`);
  }
}

/** A header stack element chosen at run time: the stack, the index's code, the element's headers. */
export function stackElementAt(tv: TypedValue | ExpressionNode | null, scope: ExprScope): { stack: StackInfo; index: string; headers: HeaderInfo[] } {
  const inner = (tv && "type" in tv && tv.type === "expression" ? tv.value : tv) as ExpressionNode | null;
  if (!inner || inner.op !== "dereference_header_stack") throw new UnsupportedProgramError(`${scope.where}: expected an element of a header stack`);
  const stack = scope.layout.stack(String(inner.left!.value), scope.where);
  const idx = compileValue(inner.right!, scope);
  const index = idx.constant !== undefined ? String(idx.constant) : idx.kind === "n" ? idx.code : `Number(${idx.code})`;
  return { stack, index: /^[\w.[\]]+$/.test(index) ? index : `(${index})`, headers: stack.elements };
}

/** access_field(dereference_header_stack(stack, index), offset): the field at `offset` of each element. */
export function stackFieldAt(n: ExpressionNode, scope: ExprScope): { stack: StackInfo; index: string; fields: FieldInfo[] } {
  const el = stackElementAt(n.left, scope);
  const offset = Number(n.right as unknown as number);
  const fields = el.headers.map((h) => h.fields[offset]);
  if (fields.some((f) => !f)) throw new InvalidProgramError(`${scope.where}: stack '${el.stack.name}' has no field at offset ${offset}`);
  return { stack: el.stack, index: el.index, fields: fields as FieldInfo[] };
}
