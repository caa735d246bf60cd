// Checksums: verifyChecksums() after parsing and updateChecksums() before
// deparsing, over the calculations (calculations.ts).
import { InvalidProgramError } from "../errors.js";
import type { Emitter } from "./emitter.js";
import { storeCode, toBig, toBool } from "./expr.js";

export function genChecksums(g: Emitter): void {
  const verify: string[] = [];
  const update: string[] = [];
  for (const c of g.p.json.checksums ?? []) {
    const where = `checksum '${c.name}'`;
    const ci = g.calcIndex.get(c.calculation);
    if (ci === undefined) throw new InvalidProgramError(`${where}: no calculation named '${c.calculation}'`);
    const [h, f] = c.target;
    const fi = g.layout.field(h, f, where);
    const cond = c.if_cond ? toBool(g.value(c.if_cond, { layout: g.layout, where })) : "true";
    if (c.verify !== false) verify.push(`  if (${cond} && BigInt(calc_${ci}(ctxPayload)) !== ${toBig({ code: g.slot(fi), kind: fi.kind, bits: fi.width, neg: false })}) ok = false;`);
    if (c.update !== false) update.push(`  if (${cond}) { ${storeCode(g.slot(fi), fi.kind, fi.width, false, { code: `calc_${ci}(ctxPayload)`, kind: "n", bits: 53, neg: false })} }`);
  }
  g.emit(`let ctxPayload = new Uint8Array(0);`);
  g.emit(`function verifyChecksums() { let ok = true;`);
  verify.forEach((l) => g.emit(l));
  g.emit(`  return ok; }`);
  g.emit(`function updateChecksums() {`);
  update.forEach((l) => g.emit(l));
  g.emit(`}`);
}
