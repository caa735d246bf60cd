// Compiles a p4c BMv2 JSON (v1model) into the JavaScript source of one
// function body, run once at load (runtime.ts): the parser, the ingress and
// egress pipelines, the checksums and the deparser, specialised to the
// program, so no JSON is walked per packet. This module lays out the
// generated source: its prelude, reset(), each part in turn (one module a
// part), and the entry points the pipeline calls.
import { HASH_ALGORITHMS } from "../crc.js";
import { InvalidProgramError } from "../errors.js";
import { DROP_PORT } from "../state.js";
import type { FieldInfo } from "../layout.js";
import { genAction } from "./actions.js";
import { immutableHeaders, referencedFields } from "./analysis.js";
import { genCalculation } from "./calculations.js";
import { genChecksums } from "./checksums.js";
import { genPipeline } from "./control.js";
import { genDeparser } from "./deparser.js";
import { Emitter, type CodegenInput } from "./emitter.js";
import { storeCode } from "./expr.js";
import { genParser } from "./parser.js";

export type { CodegenInput } from "./emitter.js";

/** The source of the body of `function (H, S, X)` that returns the program's CompiledFunctions. */
export function generateSource(program: CodegenInput): string {
  const json = program.json;
  const g = new Emitter(program, referencedFields(json, program.layout), immutableHeaders(json, program.layout));
  g.emit(`"use strict";`);
  g.emit(`const { mod2k, mulmod, and52, or52, xor52, readBitsNum, readBitsBig, writeBits, writeBitsNum, writeBitsBig, tcm, satCast, usatCast, shr, oob, HASH } = H;`);
  g.emit(`const N = S.N, B = S.B, V = S.V;`);
  const stacks = Math.max(1, g.layout.stacks.length + g.layout.unionStacks.length);
  g.emit(`const SN = new Int32Array(${stacks}); // next index of each header stack, then of each header union stack`);
  g.emit(`const T = X.tables, R = X.registers, C = X.counters;`);
  g.emit(`const TMP = new Uint8Array(256);`);
  // The headers the parser extracted, in order (and the bytes it skipped), for
  // the deparser; declared before the functions that use them, so the parser
  // pays no temporal-dead-zone checks. Every entry takes a byte of the packet
  // or more: a jumbo frame's worth is room enough (more fails the packet).
  g.emit(`const EXTRACTED = new Int32Array(${Math.max(16384, g.layout.headers.length * 4)}); let nExtracted = 0;`);
  for (const algo of Object.keys(HASH_ALGORITHMS)) g.emit(`const HASH_${algo} = HASH[${JSON.stringify(algo)}];`);
  // Metadata headers are always valid.
  const meta = g.layout.headers.filter((h) => h.metadata).map((h) => h.id);
  // Short arrays are cleared slot by slot: cheaper than a fill() call each.
  const unrolled = (name: string, n: number, value: (i: number) => string) => Array.from({ length: n }, (_, i) => `${name}[${i}] = ${value(i)};`).join(" ");
  const headers = g.layout.headers.length;
  const clearB = g.layout.bigSlots <= 16 ? unrolled("B", g.layout.bigSlots, () => "0n") : "B.fill(0n);";
  const clearV = headers <= 16 ? unrolled("V", headers, (i) => (meta.includes(i) ? "1" : "0")) : `V.fill(0); ${meta.map((i) => `V[${i}] = 1;`).join(" ")}`;
  const clearSN = stacks <= 16 ? unrolled("SN", stacks, () => "0") : "SN.fill(0);";
  g.emit(`const L = new Int32Array(${Math.max(1, g.layout.varbitSlots)}); // bits now in each varbit field`);
  const clearL = g.layout.varbitSlots ? "L.fill(0);" : "";
  g.emit(`function reset() { N.fill(0); ${clearB} ${clearV} ${clearSN} ${clearL} }`);
  json.calculations.forEach((c, i) => {
    g.calcIndex.set(c.name, i);
    genCalculation(g, c, i);
  });
  for (const a of json.actions) genAction(g, a);
  genParser(g);
  for (const p of json.pipelines) genPipeline(g, p);
  if (!json.pipelines.some((p) => p.name === "ingress")) throw new InvalidProgramError("no 'ingress' pipeline");
  if (!json.pipelines.some((p) => p.name === "egress")) g.emit(`function pipe_egress(ctx) {}`);
  genChecksums(g);
  genDeparser(g);
  genLearn(g);
  genStandardMetadata(g);
  g.emit(`return { parse, verifyChecksums, ingress: pipe_ingress, egress: pipe_egress, updateChecksums, deparse, learn, reset, begin, parsed, toEgress, SN };`);
  return g.out.join("\n");
}

function genLearn(g: Emitter): void {
  g.emit(`function learn(id) { switch (id) {`);
  for (const l of g.p.json.learn_lists ?? []) {
    const vals = l.elements.map((e) => g.slot(g.fieldRef(e, `learn list '${l.name}'`)));
    g.emit(`  case ${l.id}: return [${vals.join(", ")}];`);
  }
  g.emit(`  default: return [];`);
  g.emit(`} }`);
}

/** Stores of standard metadata, truncated to the fields' widths (instance_type stays 0 from reset). */
function genStandardMetadata(g: Emitter): void {
  const std = g.p.std;
  const store = (f: FieldInfo | undefined, v: string) => (f ? storeCode(g.slot(f), f.kind, f.width, false, { code: v, kind: "n", bits: 53, neg: false }) : "");
  g.emit(`function begin(port, length, ts) { reset(); ${store(std.ingressPort, "port")} ${store(std.packetLength, "length")} ${store(std.ingressTs, "ts")} }`);
  g.emit(`function parsed(err, csum) { ${store(std.parserError, "err")} ${store(std.checksumError, "csum")} }`);
  // simple_switch starts egress with egress_spec one past the drop port, so that only a drop in egress drops.
  g.emit(`function toEgress(port, ts, length) { ${store(std.egressPort, "port")} ${store(std.egressTs, "ts")} ${store(std.packetLength, "length")} ${store(std.egressSpec, String(DROP_PORT + 1))} }`);
}
