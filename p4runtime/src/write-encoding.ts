// WriteRequests serialized without the generic encoder's nested writers for
// the table-entry updates a controller sends by the thousand (a watchlist
// rotation is 2,048 of them): the bytes are those of WriteRequest.encode,
// computed in one pass for sizes and one for writing. Any update that uses
// something else (other entities, meters, counters, action profiles, `other`
// matches, negative numbers) is encoded by the generated encoder, in place.
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { Update, WriteRequest, type FieldMatch, type TableEntry } from "./generated/p4/v1/p4runtime.js";
import { bytesFieldSize, delimitedSize, isUint32, varintFieldSize, WireWriter } from "./wire.js";

/** Content size of a FieldMatch, or -1 when the fast path does not cover it. */
function matchSize(m: FieldMatch): number {
  if (!isUint32(m.fieldId)) return -1;
  const t = m.fieldMatchType;
  let inner: number;
  switch (t?.$case) {
    case undefined:
      return varintFieldSize(m.fieldId);
    case "exact":
    case "optional":
      inner = bytesFieldSize(t.value.value);
      break;
    case "lpm":
      if (!isUint32(t.value.prefixLen) || t.value.prefixLen > 0x7fffffff) return -1;
      inner = bytesFieldSize(t.value.value) + varintFieldSize(t.value.prefixLen);
      break;
    case "ternary":
      inner = bytesFieldSize(t.value.value) + bytesFieldSize(t.value.mask);
      break;
    case "range":
      inner = bytesFieldSize(t.value.low) + bytesFieldSize(t.value.high);
      break;
    default:
      return -1;
  }
  return varintFieldSize(m.fieldId) + delimitedSize(inner);
}

interface Plan {
  /** content sizes of the FieldMatches, the Action's params, the Action, the TableAction and the TableEntry */
  matches: number[];
  params: number[];
  action: number;
  tableAction: number;
  entry: number;
}

/** Sizes of a table entry's parts, or undefined when the fast path does not cover it. */
function plan(e: TableEntry): Plan | undefined {
  if (!isUint32(e.tableId) || e.controllerMetadata !== 0n || e.meterConfig || e.counterData || e.meterCounterData || e.timeSinceLastHit) return undefined;
  if (!Number.isInteger(e.priority) || e.priority < 0 || e.priority > 0x7fffffff || e.idleTimeoutNs !== 0n) return undefined;
  const matches: number[] = [];
  let size = varintFieldSize(e.tableId);
  for (const m of e.match) {
    const s = matchSize(m);
    if (s < 0) return undefined;
    matches.push(s);
    size += delimitedSize(s);
  }
  const params: number[] = [];
  let action = 0;
  let tableAction = 0;
  if (e.action !== undefined) {
    const t = e.action.type;
    if (t !== undefined && t.$case !== "action") return undefined;
    if (t !== undefined) {
      if (!isUint32(t.value.actionId)) return undefined;
      action = varintFieldSize(t.value.actionId);
      for (const p of t.value.params) {
        if (!isUint32(p.paramId)) return undefined;
        const s = varintFieldSize(p.paramId) + bytesFieldSize(p.value);
        params.push(s);
        action += delimitedSize(s);
      }
      tableAction = delimitedSize(action); // TableAction { action = 1 }
    }
    size += delimitedSize(tableAction);
  }
  size += varintFieldSize(e.priority) + (e.isDefaultAction ? 2 : 0) + bytesFieldSize(e.metadata) + (e.isConst ? 2 : 0);
  return { matches, params, action, tableAction, entry: size };
}

/** A message of two bytes fields, 1 and 2 (ternary value/mask, range low/high). */
function pair(o: WireWriter, tag: number, a: Uint8Array, b: Uint8Array): void {
  o.head(tag, bytesFieldSize(a) + bytesFieldSize(b));
  o.bytesField(10, a);
  o.bytesField(18, b);
}

function writeEntry(o: WireWriter, e: TableEntry, p: Plan): void {
  o.varintField(8, e.tableId);
  e.match.forEach((m, i) => {
    o.head(18, p.matches[i]!);
    o.varintField(8, m.fieldId);
    const t = m.fieldMatchType;
    if (!t) return;
    switch (t.$case) {
      case "exact":
      case "optional":
        o.head(t.$case === "exact" ? 18 : 58, bytesFieldSize(t.value.value));
        o.bytesField(10, t.value.value);
        break;
      case "lpm":
        o.head(34, bytesFieldSize(t.value.value) + varintFieldSize(t.value.prefixLen));
        o.bytesField(10, t.value.value);
        o.varintField(16, t.value.prefixLen);
        break;
      case "ternary":
        pair(o, 26, t.value.value, t.value.mask);
        break;
      case "range":
        pair(o, 50, t.value.low, t.value.high);
        break;
    }
  });
  if (e.action !== undefined) {
    o.head(26, p.tableAction);
    const t = e.action.type;
    if (t?.$case === "action") {
      o.head(10, p.action);
      o.varintField(8, t.value.actionId);
      t.value.params.forEach((param, i) => {
        o.head(34, p.params[i]!);
        o.varintField(16, param.paramId);
        o.bytesField(26, param.value);
      });
    }
  }
  o.varintField(32, e.priority);
  if (e.isDefaultAction) o.varintField(64, 1);
  o.bytesField(90, e.metadata);
  if (e.isConst) o.varintField(104, 1);
}

/** WriteRequest.encode(req), byte for byte. */
export function encodeWriteRequest(req: WriteRequest): Buffer {
  const head = WriteRequest.encode({ ...req, updates: [], atomicity: 0 }).finish();
  const parts: Array<{ type: number; entry: TableEntry; plan: Plan; size: number } | Uint8Array> = [];
  let total = head.length + varintFieldSize(req.atomicity);
  for (const u of req.updates) {
    const e = u.entity?.entity;
    const p = e?.$case === "tableEntry" && isUint32(u.type) && u.type <= 0x7fffffff ? plan(e.value) : undefined;
    if (p && e?.$case === "tableEntry") {
      // Update { type = 1, entity = 2 { table_entry = 2 } }
      const size = varintFieldSize(u.type) + delimitedSize(delimitedSize(p.entry));
      parts.push({ type: u.type, entry: e.value, plan: p, size });
      total += delimitedSize(size);
    } else {
      const b = Update.encode(u, new BinaryWriter()).finish();
      parts.push(b);
      total += delimitedSize(b.length);
    }
  }
  const o = WireWriter.alloc(total);
  o.raw(head);
  for (const part of parts) {
    if (part instanceof Uint8Array) {
      o.head(34, part.length);
      o.raw(part);
      continue;
    }
    o.head(34, part.size);
    o.varintField(8, part.type);
    o.head(18, delimitedSize(part.plan.entry));
    o.head(18, part.plan.entry);
    writeEntry(o, part.entry, part.plan);
  }
  if (req.atomicity) o.varintField(40, req.atomicity);
  return o.finish("WriteRequest");
}
