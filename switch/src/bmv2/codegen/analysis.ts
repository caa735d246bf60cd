// What the generator needs to know of the whole program before it emits
// anything: which fields are ever read, and whether packet headers are ever
// written (if not, packets leave as they came).
import type { Bmv2Json, Primitive } from "../json.js";
import type { Layout } from "../layout.js";

/** Fields ("header.field") that the program reads anywhere but in the deparser. */
export function referencedFields(json: Bmv2Json, layout: Layout): Set<string> {
  const referenced = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) {
      for (const x of v) walk(x);
      return;
    }
    if (!v || typeof v !== "object") return;
    const o = v as { type?: unknown; value?: unknown };
    if ((o.type === "field" || o.type === "stack_field") && Array.isArray(o.value)) {
      const [h, f] = o.value as [string, string];
      if (o.type === "stack_field") for (const e of layout.stack(h, "references").elements) referenced.add(`${e.name}.${f}`);
      else referenced.add(`${h}.${f}`);
    }
    for (const x of Object.values(o)) walk(x);
  };
  walk([json.parsers, json.pipelines, json.actions, json.calculations, json.learn_lists, json.checksums]);
  // Table keys and checksum targets name fields as bare [header, field] pairs.
  for (const p of json.pipelines) for (const t of p.tables) for (const k of t.key) if (Array.isArray(k.target)) referenced.add(`${k.target[0]}.${k.target[1]}`);
  for (const c of json.checksums ?? []) referenced.add(`${c.target[0]}.${c.target[1]}`);
  // access_field on a stack element reads by offset: keep every field of stacks read that way.
  if (JSON.stringify(json.pipelines).includes('"access_field"') || JSON.stringify(json.actions).includes('"access_field"')) {
    for (const st of layout.stacks) for (const e of st.elements) for (const f of e.fields) referenced.add(`${e.name}.${f.name}`);
  }
  return referenced;
}

/** True when no action or parser writes a packet header or its validity, and no checksum is updated. */
export function immutableHeaders(json: Bmv2Json, layout: Layout): boolean {
  // Varbit headers have no fixed size to copy from the packet.
  if (layout.headers.some((h) => h.varbit && !h.metadata)) return false;
  const isPacketHeader = (name: string) => {
    const h = layout.headers.find((x) => x.name === name);
    return h !== undefined && !h.metadata;
  };
  const writes = (prim: Primitive): boolean => {
    const p0 = prim.parameters[0];
    switch (prim.op) {
      case "assign":
      case "modify_field":
      case "register_read":
      case "modify_field_with_hash_based_offset":
        return p0?.type === "field" ? isPacketHeader((p0.value as [string, string])[0]) : p0?.type !== undefined && p0.type !== "field";
      case "assign_header":
      case "add_header":
      case "add_header_fast":
      case "remove_header":
        return p0?.type === "header" ? isPacketHeader(String(p0.value)) : true;
      case "push":
      case "pop":
      case "assign_header_stack":
      case "assign_union":
      case "assign_union_stack":
        return true;
      default:
        return false;
    }
  };
  if (json.actions.some((a) => a.primitives.some(writes))) return false;
  const parser = json.parsers[0]!;
  for (const st of parser.parse_states) {
    let extracted = false;
    for (const op of st.parser_ops) {
      if (op.op === "extract") extracted = true;
      if (op.op === "set" && op.parameters[0]?.type === "field" && isPacketHeader((op.parameters[0].value as [string, string])[0])) return false;
      if (op.op !== "primitive") continue;
      const prim = op.parameters[0] as unknown as Primitive;
      // p4c starts a parser by invalidating its `out` headers: nothing is emitted differently.
      if (prim.op === "remove_header" && st.name === parser.init_state && !extracted) continue;
      if (writes(prim)) return false;
    }
  }
  if ((json.checksums ?? []).some((c) => c.update !== false)) return false;
  return true;
}
