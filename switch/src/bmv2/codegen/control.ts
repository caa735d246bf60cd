// A control (ingress, egress): one function, a switch over its tables and
// conditionals; a table looks its key up, runs the action and picks the
// next node by hit/miss or by action.
import * as bits from "../bits.js";
import { InvalidProgramError } from "../errors.js";
import type { Pipeline } from "../json.js";
import type { Emitter } from "./emitter.js";
import { storeCode, toBool, type CExpr } from "./expr.js";

export function genPipeline(g: Emitter, p: Pipeline): void {
  const names = new Map<string, number>();
  p.tables.forEach((t, i) => names.set(t.name, i));
  p.conditionals.forEach((c, i) => names.set(c.name, p.tables.length + i));
  const node = (name: string | null, where: string) => {
    if (name === null) return -1;
    const n = names.get(name);
    if (n === undefined) throw new InvalidProgramError(`${where}: no table or conditional named '${name}'`);
    return n;
  };
  const actionName = new Map(g.p.json.actions.map((a) => [a.id, a.name]));
  g.emit(`function pipe_${p.name}(ctx) {`);
  g.emit(`  let n = ${node(p.init_table, `pipeline '${p.name}'`)};`);
  g.emit(`  for (;;) { switch (n) {`);
  p.tables.forEach((t, i) => {
    const where = `table '${t.name}'`;
    const keyCode = t.key.map((k) => {
      const [h, f] = k.target as [string, string];
      if (f === "$valid$") return `V[${g.layout.header(h, where).id}]`;
      const fi = g.layout.field(h, f, where);
      if (k.mask !== null) {
        const m = bits.parseHexstr(k.mask);
        return fi.kind === "n" ? `and52(${g.slot(fi)}, ${m})` : `(${g.slot(fi)} & ${m}n)`;
      }
      return g.slot(fi);
    });
    g.emit(`  case ${i}: {`);
    // A keyless table whose default is const (p4c's wrapper for a direct
    // action call) always runs that action: call it, with its fixed data.
    const constDefault = t.key.length === 0 && t.default_entry?.action_const === true && !t.with_counters;
    if (constDefault) {
      g.emit(`    const e = undefined;`);
      g.emit(`    act_${t.default_entry!.action_id}(T[${t.id}].defaultAction.data, ctx);`);
    } else {
      if (t.key.length === 0) {
        g.emit(`    const e = undefined;`);
      } else {
        g.emit(keyCode.length === 1 ? `    const e = T[${t.id}].lookup1(${keyCode[0]});` : `    const e = T[${t.id}].lookup([${keyCode.join(", ")}]);`);
      }
      g.emit(`    const a = e === undefined ? T[${t.id}].defaultAction : e.action;`);
      // A direct meter runs on a hit, before the action (BMv2): an entry without a configured cell is GREEN.
      const dm = g.p.directMeters.get(t.name);
      if (dm) {
        const color: CExpr = { code: `(e.meter === undefined ? 0 : H.executeMeter(e.meter, 0, ctx.packetLength, ctx.nowNs))`, kind: "n", bits: 2, neg: false };
        g.emit(`    if (e !== undefined) { ${storeCode(g.slot(dm.target), dm.target.kind, dm.target.width, dm.target.signed, color)} }`);
      }
      if (t.with_counters) g.emit(`    if (e !== undefined) { e.packets++; e.bytes += ctx.packetLength; } else { const d = T[${t.id}].defaultCounter; d.packets++; d.bytes += ctx.packetLength; }`);
      g.emit(`    switch (a.actionId) {`);
      for (const id of t.action_ids) g.emit(`      case ${id}: act_${id}(a.data, ctx); break;`);
      g.emit(`    }`);
    }
    g.emit(`    if (ctx.exit) return;`);
    const nt = t.next_tables;
    if ("__HIT__" in nt || "__MISS__" in nt) {
      g.emit(`    n = e !== undefined ? ${node(nt.__HIT__ ?? null, where)} : ${node(nt.__MISS__ ?? null, where)}; break;`);
    } else {
      const targets = new Set(t.action_ids.map((id) => node(nt[actionName.get(id) ?? ""] ?? t.base_default_next, where)));
      if (targets.size === 1) {
        g.emit(`    n = ${[...targets][0]}; break;`);
      } else {
        g.emit(`    switch (a.actionId) {`);
        for (const id of t.action_ids) g.emit(`      case ${id}: n = ${node(nt[actionName.get(id) ?? ""] ?? t.base_default_next, where)}; break;`);
        g.emit(`      default: n = ${node(t.base_default_next, where)};`);
        g.emit(`    }`);
        g.emit(`    break;`);
      }
    }
    g.emit(`  }`);
  });
  p.conditionals.forEach((c, i) => {
    const where = `conditional '${c.name}'`;
    const e = g.value(c.expression, { layout: g.layout, where });
    g.emit(`  case ${p.tables.length + i}: n = ${toBool(e)} ? ${node(c.true_next, where)} : ${node(c.false_next, where)}; break;`);
  });
  g.emit(`  default: return;`);
  g.emit(`  } }`);
  g.emit(`}`);
}
