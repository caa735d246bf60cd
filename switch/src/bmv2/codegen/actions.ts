// Actions: one act_<id> function an action, its primitives in order.
// Primitives also appear in parser states (parser.ts).
import * as bits from "../bits.js";
import { InvalidProgramError, UnsupportedProgramError } from "../errors.js";
import type { Action, ExpressionNode, Primitive, TypedValue } from "../json.js";
import type { HeaderInfo } from "../layout.js";
import { DROP_PORT } from "../state.js";
import type { Emitter } from "./emitter.js";
import { stackElementAt, stackFieldAt, storeCode, toBool, toNum, type CExpr, type ExprScope } from "./expr.js";

export function genAction(g: Emitter, a: Action): void {
  const scope: ExprScope = { layout: g.layout, runtimeData: a.runtime_data.map((r) => r.bitwidth), where: `action '${a.name}'` };
  g.emit(`function act_${a.id}(D, ctx) {`);
  if (a.primitives.some((p) => p.op === "_jump" || p.op === "_jump_if_zero")) {
    // Conditionals inside the action: p4c writes them as jumps to a primitive's index.
    const target = (tv: TypedValue | undefined, where: string) => {
      const n = tv?.type === "hexstr" ? Number(bits.parseHexstr(String(tv.value))) : NaN;
      if (!Number.isInteger(n) || n < 0 || n > a.primitives.length) throw new InvalidProgramError(`${where}: jump target is not a primitive index`);
      return n;
    };
    g.emit(`  let pc = 0;`);
    g.emit(`  for (;;) { switch (pc) {`);
    a.primitives.forEach((prim, i) => {
      const where = `${scope.where}, primitive ${i} '${prim.op}'`;
      g.emit(`  case ${i}:`);
      if (prim.op === "_jump") g.emit(`    pc = ${target(prim.parameters[0], where)}; continue;`);
      else if (prim.op === "_jump_if_zero") {
        const c = g.value(prim.parameters[0]!, { ...scope, where });
        g.emit(`    if (${c.kind === "bool" ? `!${c.code}` : `${toNum(c)} === 0`}) { pc = ${target(prim.parameters[1], where)}; continue; }`);
      } else g.emit("    " + primitive(g, prim, scope));
    });
    g.emit(`  default: return;`);
    g.emit(`  } }`);
  } else {
    for (const prim of a.primitives) g.emit("  " + primitive(g, prim, scope));
  }
  g.emit(`}`);
}

export function primitive(g: Emitter, prim: Primitive, scope: ExprScope): string {
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
      const dst = arg(0);
      if (dst.type === "expression") {
        // A field of a stack element chosen at run time.
        const node = (dst.value as { type?: string; value?: unknown; op?: string });
        const inner = (node.type === "expression" ? node.value : node) as ExpressionNode;
        if (inner.op !== "access_field") throw new UnsupportedProgramError(`${where}: assignment to a '${inner.op}' expression`);
        const t = stackFieldAt(inner, s);
        const v = g.value(arg(1), s);
        const cases = t.fields.map((f, k) => `case ${k}: ${storeCode(g.slot(f), f.kind, f.width, f.signed, { code: "v", kind: v.kind, bits: v.bits, neg: v.neg })} break;`).join(" ");
        return `{ const v = ${v.code}; switch (${t.index}) { ${cases} default: oob(${JSON.stringify(t.stack.name)}, ${t.index}); } }`;
      }
      const f = g.fieldRef(dst, where);
      if (f.varbit !== undefined) throw new UnsupportedProgramError(`${where}: '${prim.op}' to the varbit field ${f.header.name}.${f.name} (expected assign_VL)`);
      return storeCode(g.slot(f), f.kind, f.width, f.signed, g.value(arg(1), s));
    }
    case "assign_VL": {
      const d = g.fieldRef(arg(0), where);
      const src = g.fieldRef(arg(1), where);
      if (d.varbit === undefined || src.varbit === undefined) throw new UnsupportedProgramError(`${where}: assign_VL between fields that are not both varbit`);
      return `if (L[${src.varbit}] > ${d.width}) throw new Error(${JSON.stringify(`${where}: value longer than ${d.header.name}.${d.name} holds`)}); ${g.slot(d)} = ${g.slot(src)}; L[${d.varbit}] = L[${src.varbit}];`;
    }
    case "assign_header": {
      return onHeaders(g, arg(0), s, (d) => onHeaders(g, arg(1), s, (src) => copyHeader(g, d, src)));
    }
    case "assign_header_stack": {
      const d = stackRef(g, arg(0), where);
      const src = stackRef(g, arg(1), where);
      if (d.elements.length !== src.elements.length) throw new InvalidProgramError(`${where}: stacks '${d.name}' and '${src.name}' differ in size`);
      return `SN[${d.id}] = SN[${src.id}]; ` + d.elements.map((h, i) => copyHeader(g, h, src.elements[i]!)).join(" ");
    }
    case "assign_union": {
      const d = unionRef(g, arg(0), where);
      const src = unionRef(g, arg(1), where);
      return d.headers.map((h, i) => copyHeader(g, h, src.headers[i]!)).join(" ");
    }
    case "assign_union_stack": {
      const d = unionStackRef(g, arg(0), where);
      const src = unionStackRef(g, arg(1), where);
      if (d.unions.length !== src.unions.length) throw new InvalidProgramError(`${where}: union stacks '${d.name}' and '${src.name}' differ in size`);
      return `SN[${d.slot}] = SN[${src.slot}]; ` + d.unions.map((u, k) => u.headers.map((h, i) => copyHeader(g, h, src.unions[k]!.headers[i]!)).join(" ")).join(" ");
    }
    case "add_header":
    case "add_header_fast": {
      return onHeaders(g, arg(0), s, (h) => `if (V[${h.id}] === 0) { ${g.setValid(h)} ${h.fields.map((f) => `${g.slot(f)} = ${f.kind === "n" ? "0" : "0n"};${f.varbit !== undefined ? ` L[${f.varbit}] = 0;` : ""}`).join(" ")} }`);
    }
    case "remove_header": {
      return onHeaders(g, arg(0), s, (h) => `V[${h.id}] = 0;`);
    }
    case "mark_to_drop":
    case "drop": {
      const std = g.p.std;
      return `${g.slot(std.egressSpec)} = ${DROP_PORT};` + (std.mcastGrp ? ` ${g.slot(std.mcastGrp)} = 0;` : "");
    }
    case "register_read": {
      const f = g.fieldRef(arg(0), where);
      const r = registerRef(g, arg(1), where);
      const idx = g.value(arg(2), s);
      const reg = `R[${r.id}]`;
      const cell: CExpr = { code: `${reg}[i]`, kind: r.width <= bits.NUM_BITS ? "n" : "b", bits: r.width, neg: false };
      return `{ const i = ${toNum(idx)}; if (i < ${r.size}) { ${storeCode(g.slot(f), f.kind, f.width, f.signed, cell)} } }`;
    }
    case "register_write": {
      const r = registerRef(g, arg(0), where);
      const idx = g.value(arg(1), s);
      const v = g.value(arg(2), s);
      return `{ const i = ${toNum(idx)}; if (i < ${r.size}) { ${storeCode(`R[${r.id}][i]`, r.width <= bits.NUM_BITS ? "n" : "b", r.width, false, v)} } }`;
    }
    case "count": {
      const c = counterRef(g, arg(0), where);
      const idx = g.value(arg(1), s);
      return `{ const i = ${toNum(idx)}; if (i < ${c.size}) { C[${c.id}].packets[i]++; C[${c.id}].bytes[i] += ctx.packetLength; } }`;
    }
    case "execute_meter": {
      if (arg(0).type !== "meter_array") throw new UnsupportedProgramError(`${where}: expected a meter array, got '${arg(0).type}'`);
      const m = g.p.meters.get(String(arg(0).value));
      if (!m) throw new InvalidProgramError(`${where}: no meter array named '${String(arg(0).value)}'`);
      const idx = g.value(arg(1), s);
      const f = g.fieldRef(arg(2), where);
      const color: CExpr = { code: `H.executeMeter(X.meters[${m.id}], i, ctx.packetLength, ctx.nowNs)`, kind: "n", bits: 2, neg: false };
      return `{ const i = ${toNum(idx)}; if (i < ${m.size}) { ${storeCode(g.slot(f), f.kind, f.width, f.signed, color)} } }`;
    }
    case "modify_field_with_hash_based_offset": {
      const f = g.fieldRef(arg(0), where);
      const base = g.value(arg(1), s);
      const calcName = String(arg(2).value);
      const ci = g.calcIndex.get(calcName);
      if (ci === undefined) throw new InvalidProgramError(`${where}: no calculation named '${calcName}'`);
      const size = g.value(arg(3), s);
      const hv: CExpr = { code: `(Number(h) % sz + ${toNum(base)})`, kind: "n", bits: 53, neg: false };
      return `{ const h = calc_${ci}(); const sz = Math.max(1, ${toNum(size)}); ${storeCode(g.slot(f), f.kind, f.width, f.signed, { ...hv, bits: Math.min(53, Math.max(size.bits, base.bits) + 1) })} }`;
    }
    case "generate_digest": {
      const id = g.value(arg(1), s);
      return `ctx.learnId = ${toNum(id)};`;
    }
    case "push":
    case "pop": {
      // P4_16 push_front/pop_front (BMv2 StackP4_16): shift elements, invalidate the vacated ones.
      if (arg(0).type !== "header_stack") throw new UnsupportedProgramError(`${where}: ${prim.op} on a ${arg(0).type}`);
      const st = g.layout.stack(String(arg(0).value), where);
      const cnt = g.value(arg(1), s);
      if (cnt.constant === undefined) throw new UnsupportedProgramError(`${where}: ${prim.op} by a non-constant count`);
      const n = Number(cnt.constant);
      const size = st.elements.length;
      const copy = (to: HeaderInfo, from: HeaderInfo) => copyHeader(g, to, from);
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
    // simple_switch keeps these in per-packet registers and acts on them after
    // ingress (clone, resubmit) or egress (clone, recirculate); the last call wins.
    case "clone_ingress_pkt_to_egress":
    case "clone_egress_pkt_to_egress": {
      const session = g.value(arg(0), s);
      const list = g.value(arg(1), s);
      return `ctx.clone = (${toNum(session)} & 0xffff) | 0x8000; ctx.cloneFieldList = ${toNum(list)} & 0xffff;`;
    }
    case "resubmit":
    case "recirculate": {
      const list = g.value(arg(0), s);
      return `ctx.${prim.op} = ${toNum(list)} & 0xffff;`;
    }
    case "exit":
      return `ctx.exit = true; return;`;
    case "no_op":
    case "log_msg":
      return ``;
    case "assert":
    case "assume": {
      const c = g.value(arg(0), s);
      return `if (!${toBool(c)}) { ctx.failed = ${JSON.stringify(`${prim.op} failed in ${scope.where}`)}; ctx.exit = true; return; }`;
    }
    case "truncate": {
      const n = g.value(arg(0), s);
      return `ctx.truncateTo = ${toNum(n)};`;
    }
    default:
      throw new UnsupportedProgramError(`${where}: primitive '${prim.op}' is not supported`);
  }
}

function registerRef(g: Emitter, tv: TypedValue, where: string) {
  if (tv.type !== "register_array") throw new UnsupportedProgramError(`${where}: expected a register array, got '${tv.type}'`);
  const r = g.p.registers.get(String(tv.value));
  if (!r) throw new InvalidProgramError(`${where}: no register array named '${String(tv.value)}'`);
  return r;
}

function counterRef(g: Emitter, tv: TypedValue, where: string) {
  if (tv.type !== "counter_array") throw new UnsupportedProgramError(`${where}: expected a counter array, got '${tv.type}'`);
  const c = g.p.counters.get(String(tv.value));
  if (!c) throw new InvalidProgramError(`${where}: no counter array named '${String(tv.value)}'`);
  return c;
}

function stackRef(g: Emitter, tv: TypedValue, where: string) {
  if (tv.type !== "header_stack") throw new UnsupportedProgramError(`${where}: expected a header stack, got '${tv.type}'`);
  return g.layout.stack(String(tv.value), where);
}

/** Code for `body` on a header, or on a stack element chosen at run time (one case an element). */
function onHeaders(g: Emitter, tv: TypedValue, scope: ExprScope, body: (h: HeaderInfo) => string): string {
  if (tv.type === "header") return body(g.headerRef(tv, scope.where));
  if (tv.type !== "expression") throw new UnsupportedProgramError(`${scope.where}: expected a header, got '${tv.type}'`);
  const el = stackElementAt(tv, scope);
  return `switch (${el.index}) { ${el.headers.map((h, k) => `case ${k}: { ${body(h)} } break;`).join(" ")} default: oob(${JSON.stringify(el.stack.name)}, ${el.index}); }`;
}

/** BMv2's assign_header: an invalid source makes the destination invalid and leaves its fields. */
function copyHeader(g: Emitter, d: HeaderInfo, src: HeaderInfo): string {
  if (d === src) return "";
  const copies = d.fields.map((f, i) => {
    const from = src.fields[i]!;
    return `${g.slot(f)} = ${g.slot(from)};${f.varbit !== undefined && from.varbit !== undefined ? ` L[${f.varbit}] = L[${from.varbit}];` : ""}`;
  });
  return `if (V[${src.id}] === 1) { ${g.setValid(d)} ${copies.join(" ")} } else { V[${d.id}] = 0; }`;
}

function unionRef(g: Emitter, tv: TypedValue, where: string) {
  if (tv.type !== "header_union") throw new UnsupportedProgramError(`${where}: expected a header union, got '${tv.type}'`);
  return g.layout.union(String(tv.value), where);
}

function unionStackRef(g: Emitter, tv: TypedValue, where: string) {
  if (tv.type !== "header_union_stack") throw new UnsupportedProgramError(`${where}: expected a header union stack, got '${tv.type}'`);
  return g.layout.unionStack(String(tv.value), where);
}
