// Hash and checksum inputs: one calc_<i> function a calculation, which
// gathers its input bits into a scratch buffer and hashes them.
import * as bits from "../bits.js";
import { UnsupportedProgramError } from "../errors.js";
import type { Calculation } from "../json.js";
import type { Emitter } from "./emitter.js";

export function genCalculation(g: Emitter, c: Calculation, i: number): void {
  if (genStaticCalculation(g, c, i)) return;
  genDynamicCalculation(g, c, i);
}

/**
 * Inputs that are all metadata fields (always valid) or constants sit at
 * fixed offsets: store their bytes directly. p4c copies hash inputs into
 * metadata, so this is the common case.
 */
function genStaticCalculation(g: Emitter, c: Calculation, i: number): boolean {
  const where = `calculation '${c.name}'`;
  const parts: string[] = [];
  let off = 0;
  for (const inp of c.input) {
    if (inp.type !== "field") return false;
    const f = g.fieldRef(inp, where);
    if (!f.header.metadata || f.kind !== "n") return false;
    if (off % 8 === 0 && f.width % 8 === 0 && f.width <= 32) {
      const n = f.width / 8;
      for (let b = 0; b < n; b++) {
        const shift = 8 * (n - 1 - b);
        parts.push(`TMP[${off / 8 + b}] = ${f.width === 32 ? `(${g.slot(f)} >>> ${shift}) & 255` : `(${g.slot(f)} >> ${shift}) & 255`};`);
      }
    } else {
      parts.push(`writeBitsNum(TMP, ${off}, ${f.width}, ${g.slot(f)});`);
    }
    off += f.width;
  }
  if (off > 256 * 8) return false;
  const bytes = Math.ceil(off / 8);
  const needsZero = parts.some((p) => p.startsWith("writeBitsNum"));
  g.out.push(`function calc_${i}() {`);
  if (needsZero) g.out.push(`  TMP.fill(0, 0, ${bytes});`);
  g.out.push(...parts.map((p) => "  " + p));
  g.out.push(`  return HASH_${c.algo}(TMP, ${bytes});`, `}`);
  return true;
}

function genDynamicCalculation(g: Emitter, c: Calculation, i: number): void {
  const where = `calculation '${c.name}'`;
  const lines: string[] = [`function calc_${i}(payload) {`, `  TMP.fill(0, 0, CALC_BYTES_${i}); let off = 0;`];
  let maxBits = 0;
  for (const inp of c.input) {
    if (inp.type === "field") {
      const f = g.fieldRef(inp, where);
      maxBits += f.width;
      lines.push(`  if (V[${f.header.id}] === 1) { ${g.writeField("TMP", "off", f)} off += ${g.widthOf(f)}; }`);
    } else if (inp.type === "hexstr") {
      const w = inp.bitwidth ?? 0;
      maxBits += w;
      lines.push(`  writeBits(TMP, off, ${w}, ${bits.parseHexstr(String(inp.value))}n); off += ${w};`);
    } else if (inp.type === "header") {
      const h = g.headerRef(inp, where);
      maxBits += (h.maxBytes ?? h.bytes) * 8;
      lines.push(`  if (V[${h.id}] === 1) { ${h.fields.map((f) => `${g.writeField("TMP", "off", f)} off += ${g.widthOf(f)};`).join(" ")} }`);
    } else if (inp.type === "payload") {
      g.out.push(`const CALC_BYTES_${i} = 256;`);
      lines.push(`  const head = TMP.slice(0, (off + 7) >> 3); const all = new Uint8Array(head.length + payload.length); all.set(head); all.set(payload, head.length);`);
      lines.push(`  return HASH[${JSON.stringify(c.algo)}](all);`);
      lines.push(`}`);
      g.out.push(...lines);
      return;
    } else {
      throw new UnsupportedProgramError(`${where}: input of type '${inp.type}'`);
    }
  }
  if (maxBits > 256 * 8) throw new UnsupportedProgramError(`${where}: input wider than 256 bytes`);
  g.out.push(`const CALC_BYTES_${i} = ${Math.ceil(maxBits / 8)};`);
  lines.push(`  return HASH_${c.algo}(TMP, (off + 7) >> 3);`, `}`);
  g.out.push(...lines);
}
