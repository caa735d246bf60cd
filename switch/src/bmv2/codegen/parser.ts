// The parser: one function, a switch over the parse states; each state
// extracts headers (only the fields someone reads when packets leave
// unchanged), runs its operations and selects the next state.
import * as bits from "../bits.js";
import { InvalidProgramError, UnsupportedProgramError } from "../errors.js";
import type { Primitive } from "../json.js";
import type { FieldInfo, HeaderInfo } from "../layout.js";
import { primitive } from "./actions.js";
import type { Emitter } from "./emitter.js";
import { storeCode, toBool, toNum, type CExpr, type ExprScope } from "./expr.js";

export function genParser(g: Emitter): void {
  const parser = g.p.json.parsers[0]!;
  const states = parser.parse_states;
  const stateId = new Map(states.map((st, i) => [st.name, i]));
  const tooShort = g.p.errorCodes.get("PacketTooShort") ?? 1;
  const scope: ExprScope = { layout: g.layout, where: `parser '${parser.name}'` };
  // Checksums over the payload read the bytes the parser left.
  const payloadCalc = (g.p.json.calculations ?? []).some((c) => c.input.some((i) => i.type === "payload"));
  if (payloadCalc) g.emit(`function parse(buf, ctx) { const off = parseHeaders(buf, ctx); ctxPayload = buf.subarray(off); return off; }`);
  g.emit(`function ${payloadCalc ? "parseHeaders" : "parse"}(buf, ctx) {`);
  g.emit(`  const len = buf.length; let off = 0; nExtracted = 0; let st = ${stateId.get(parser.init_state) ?? -1};`);
  g.emit(`  for (;;) { switch (st) {`);
  for (const [i, st] of states.entries()) {
    const where = `parse state '${st.name}'`;
    const s: ExprScope = { ...scope, where };
    g.emit(`  case ${i}: {`);
    for (const op of st.parser_ops) {
      switch (op.op) {
        case "extract":
        case "extract_VL": {
          const p0 = op.parameters[0]!;
          const vlen = op.op === "extract_VL" ? g.value(op.parameters[1]!, s) : undefined;
          const outOfBounds = g.p.errorCodes.get("StackOutOfBounds") ?? 3;
          const one = (h: HeaderInfo, ind: string) => extractHeader(g, h, ind, vlen, where);
          if (p0.type === "stack") {
            const st = g.layout.stack(String(p0.value), where);
            g.emit(`    switch (SN[${st.id}]) {`);
            st.elements.forEach((h, k) => {
              g.emit(`    case ${k}:`);
              one(h, "      ");
              g.emit(`      break;`);
            });
            g.emit(`    default: ctx.parserError = ${outOfBounds}; return off;`);
            g.emit(`    }`);
            g.emit(`    SN[${st.id}]++;`);
            break;
          }
          if (p0.type === "union_stack") {
            // The member named of the union stack's next element.
            const [stackName, member] = p0.value as [string, string];
            const us = g.layout.unionStack(stackName, where);
            g.emit(`    switch (SN[${us.slot}]) {`);
            us.unions.forEach((u, k) => {
              const h = u.headers[u.memberNames.indexOf(member)];
              if (!h) throw new InvalidProgramError(`${where}: header union '${u.name}' has no member '${member}'`);
              g.emit(`    case ${k}:`);
              one(h, "      ");
              g.emit(`      break;`);
            });
            g.emit(`    default: ctx.parserError = ${outOfBounds}; return off;`);
            g.emit(`    }`);
            g.emit(`    SN[${us.slot}]++;`);
            break;
          }
          if (p0.type !== "regular") throw new UnsupportedProgramError(`${where}: extract into a ${p0.type}`);
          one(g.layout.header(String(p0.value), where), "    ");
          break;
        }
        case "set": {
          const f = g.fieldRef(op.parameters[0]!, where);
          if (f.varbit !== undefined) throw new UnsupportedProgramError(`${where}: 'set' of the varbit field ${f.header.name}.${f.name}`);
          const src = op.parameters[1]!;
          if (src.type === "lookahead") {
            const [bitOff, width] = src.value as [number, number];
            g.emit(`    if (off * 8 + ${bitOff + width} > len * 8) { ctx.parserError = ${tooShort}; return off; }`);
            const e: CExpr = width <= bits.NUM_BITS
              ? { code: `readBitsNum(buf, off * 8 + ${bitOff}, ${width})`, kind: "n", bits: width, neg: false }
              : { code: `readBitsBig(buf, off * 8 + ${bitOff}, ${width})`, kind: "b", bits: width, neg: false };
            g.emit(`    ${storeCode(g.slot(f), f.kind, f.width, f.signed, e)}`);
          } else {
            g.emit(`    ${storeCode(g.slot(f), f.kind, f.width, f.signed, g.value(src, s))}`);
          }
          break;
        }
        case "verify": {
          const cond = g.value(op.parameters[0]!, s);
          const err = g.value(op.parameters[1]!, s);
          g.emit(`    if (!${toBool(cond)}) { ctx.parserError = ${toNum(err)}; return off; }`);
          break;
        }
        case "advance":
        case "shift": {
          const amount = g.value(op.parameters[0]!, s);
          const bytesExpr = op.op === "shift" ? toNum(amount) : `(${toNum(amount)} / 8)`;
          // Skipped bytes are not emitted again: the packet no longer leaves as it came. The
          // entry (-1 - bytes) lets the deparser find the headers after them (deparser.ts).
          g.emit(`    { const n = ${bytesExpr}; if (off + n > len) { ctx.parserError = ${tooShort}; return off; } off += n; EXTRACTED[nExtracted++] = -1 - n; }`);
          break;
        }
        case "primitive": {
          const inner = op.parameters[0] as unknown as Primitive;
          g.emit(`    ${primitive(g, inner, s).replace("return;", "return off;")}`);
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
        const f = g.fieldRef(k, where);
        keyParts.push({ code: f.kind === "n" ? g.slot(f) : g.slot(f), padded: Math.ceil(f.width / 8) * 8, big: f.kind === "b" });
      } else if (k.type === "stack_field") {
        const e = g.value(k, s);
        keyParts.push({ code: e.code, padded: Math.ceil(e.bits / 8) * 8, big: e.kind === "b" });
      } else if (k.type === "lookahead") {
        const [bitOff, width] = k.value as [number, number];
        g.emit(`    if (off * 8 + ${bitOff + width} > len * 8) { ctx.parserError = ${tooShort}; return off; }`);
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
      g.emit(`    const key = ${acc};`);
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
    for (const c of conds) g.emit(c);
    g.emit(`  }`);
  }
  g.emit(`  default: return off;`);
  g.emit(`  } }`);
  g.emit(`}`);
}

/** Extracts header `h` at `off`; `vlen` is the bits of its varbit field (extract_VL), checked as simple_switch does. */
function extractHeader(g: Emitter, h: HeaderInfo, ind: string, vlen: CExpr | undefined, where: string): void {
  const tooShort = g.p.errorCodes.get("PacketTooShort") ?? 1;
  const fixed = h.fields.filter((f) => f.varbit === undefined && needed(g, f));
  if (!vlen) {
    if (h.varbit) throw new UnsupportedProgramError(`${where}: extract of '${h.name}', which has a varbit field, without a length`);
    g.emit(`${ind}if (off + ${h.bytes} > len) { ctx.parserError = ${tooShort}; return off; }`);
    for (const f of fixed) g.emit(`${ind}${readField(g, f, "off")}`);
    g.emit(`${ind}${g.setValid(h)} off += ${h.bytes}; EXTRACTED[nExtracted++] = ${h.id};`);
    return;
  }
  const vf = h.varbit;
  if (!vf) throw new InvalidProgramError(`${where}: extract_VL into '${h.name}', which has no varbit field`);
  const invalidArgument = g.p.errorCodes.get("ParserInvalidArgument") ?? 9;
  const headerTooShort = g.p.errorCodes.get("HeaderTooShort") ?? 4;
  g.emit(`${ind}{ const nb = ${toNum(vlen)};`);
  g.emit(`${ind}  if (nb % 8 !== 0) { ctx.parserError = ${invalidArgument}; return off; }`);
  g.emit(`${ind}  const n = ${h.bytes} + nb / 8;`);
  g.emit(`${ind}  if (nb < 0 || off + n > len) { ctx.parserError = ${tooShort}; return off; }`);
  g.emit(`${ind}  if (n > ${h.maxBytes}) { ctx.parserError = ${headerTooShort}; return off; }`);
  for (const f of fixed) g.emit(`${ind}  ${readField(g, f, "off")}`);
  g.emit(`${ind}  ${g.slot(vf)} = nb > 0 ? readBitsBig(buf, (off + ${vf.bitOffset >> 3}) * 8 + ${vf.bitOffset & 7}, nb) : 0n; L[${vf.varbit}] = nb;`);
  g.emit(`${ind}  ${g.setValid(h)} off += n; EXTRACTED[nExtracted++] = ${h.id}; }`);
}

function needed(g: Emitter, f: FieldInfo): boolean {
  return !g.immutable || g.referenced.has(`${f.header.name}.${f.name}`);
}

function readField(g: Emitter, f: FieldInfo, off: string): string {
  const byte = f.bitOffset >> 3;
  const shift = f.bitOffset & 7;
  const o = `${off} + ${byte}`;
  if (f.kind === "n" && shift === 0 && f.width % 8 === 0 && f.width <= 48) {
    const n = f.width / 8;
    if (n === 1) return `${g.slot(f)} = buf[${o}];`;
    if (n === 2) return `${g.slot(f)} = (buf[${o}] << 8) | buf[${o} + 1];`;
    return `${g.slot(f)} = ${Array.from({ length: n }, (_, i) => `buf[${o} + ${i}] * ${2 ** (8 * (n - 1 - i))}`).join(" + ")};`;
  }
  if (f.kind === "n" && shift + f.width <= 32) {
    // Within four bytes: one 32-bit window, shifted and masked.
    const nb = (shift + f.width + 7) >> 3;
    const bytes = Array.from({ length: nb }, (_, i) => `(buf[${o} + ${i}] << ${8 * (nb - 1 - i)})`).join(" | ");
    const drop = nb * 8 - shift - f.width;
    return `${g.slot(f)} = ((${bytes}) >>> ${drop}) ${f.width === 32 ? ">>> 0" : `& ${2 ** f.width - 1}`};`;
  }
  if (f.kind === "n") return `${g.slot(f)} = readBitsNum(buf, (${o}) * 8 + ${shift}, ${f.width});`;
  const raw = `readBitsBig(buf, (${o}) * 8 + ${shift}, ${f.width})`;
  return `${g.slot(f)} = ${f.signed ? `BigInt.asIntN(${f.width}, ${raw})` : raw};`;
}
