// The deparser: the valid headers in the deparser's order, then the
// payload; or the packet's own bytes when nothing could have changed them.
import type { Emitter } from "./emitter.js";

export function genDeparser(g: Emitter): void {
  const d = g.p.json.deparsers[0]!;
  const hs = d.order.map((name) => g.layout.header(name, `deparser '${d.name}'`));
  g.emit(`const ORDER = [${hs.map((h) => h.id).join(", ")}];`);
  // A program that never writes a header field, never changes a header's
  // validity and has no checksum to update gives back the bytes it parsed,
  // when it emits the valid headers in the order they were extracted.
  g.emit(`const IMMUTABLE = ${g.immutable};`);
  g.emit(`function unchanged() {`);
  g.emit(`  if (!IMMUTABLE) return false;`);
  g.emit(`  let k = 0;`);
  g.emit(`  for (let i = 0; i < ORDER.length; i++) { const h = ORDER[i]; if (V[h] === 1) { if (k >= nExtracted || EXTRACTED[k] !== h) return false; k++; } }`);
  g.emit(`  return k === nExtracted;`);
  g.emit(`}`);
  if (g.immutable) {
    // Where the parser found each header, from the order it extracted them:
    // the program writes no header, so the deparser copies their bytes.
    g.emit(`const HSIZE = [${g.layout.headers.map((h) => h.bytes).join(", ")}];`);
    g.emit(`const HOFF = new Int32Array(${Math.max(1, g.layout.headers.length)});`);
    g.emit(`function headerOffsets() {`);
    g.emit(`  if (nExtracted > EXTRACTED.length) throw new Error("the parser extracted more headers than the deparser can follow");`);
    g.emit(`  let o = 0;`);
    g.emit(`  for (let k = 0; k < nExtracted; k++) { const e = EXTRACTED[k]; if (e >= 0) { HOFF[e] = o; o += HSIZE[e]; } else o += -1 - e; }`);
    g.emit(`}`);
  }
  g.emit(`function deparse(buf, parsed, original) {`);
  g.emit(`  if (original !== undefined && unchanged()) return original;`);
  if (g.immutable) g.emit(`  headerOffsets();`);
  g.emit(`  const payload = buf.subarray(parsed);`);
  g.emit(`  let size = payload.length;`);
  for (const h of hs) g.emit(`  if (V[${h.id}] === 1) size += ${h.bytes}${h.varbit ? ` + (L[${h.varbit.varbit}] >> 3)` : ""};`);
  g.emit(`  const out = Buffer.allocUnsafe(size); out.fill(0, 0, size - payload.length); let off = 0;`);
  for (const h of hs) {
    if (g.immutable) {
      // Headers are as they were parsed (only the fields someone reads were extracted): their bytes from the packet.
      g.emit(`  if (V[${h.id}] === 1) { out.set(buf.subarray(HOFF[${h.id}], HOFF[${h.id}] + ${h.bytes}), off); off += ${h.bytes}; }`);
      continue;
    }
    const w: string[] = [];
    for (const f of h.fields) {
      if (f.varbit !== undefined) {
        w.push(g.writeField("out", `(off + ${f.bitOffset >> 3}) * 8 + ${f.bitOffset & 7}`, f));
        continue;
      }
      const byte = f.bitOffset >> 3;
      const shift = f.bitOffset & 7;
      if (f.kind === "n" && shift === 0 && f.width % 8 === 0 && f.width <= 48) {
        w.push(`out.writeUIntBE(${g.slot(f)}, off + ${byte}, ${f.width / 8});`);
      } else {
        w.push(g.writeField("out", `(off + ${byte}) * 8 + ${shift}`, f));
      }
    }
    g.emit(`  if (V[${h.id}] === 1) { ${w.join(" ")} off += ${h.bytes}${h.varbit ? ` + (L[${h.varbit.varbit}] >> 3)` : ""}; }`);
  }
  g.emit(`  out.set(payload, off);`);
  g.emit(`  return out;`);
  g.emit(`}`);
}
