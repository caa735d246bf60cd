// WriteRequests serialized without the generic encoder's nested writers for
// the table-entry updates a controller sends by the thousand (a watchlist
// rotation is 2,048 of them): the bytes are those of WriteRequest.encode,
// computed in one pass for sizes and one for writing. Any update that uses
// something else (other entities, meters, counters, action profiles, `other`
// matches, negative numbers) is encoded by the generated encoder, in place.
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { Update, WriteRequest, type FieldMatch, type TableEntry } from "./generated/p4/v1/p4runtime.js";

/** Bytes of a uint32 varint. */
function vlen(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
}

/** A length-delimited field with a one-byte tag: tag, length, content. */
const delimited = (size: number) => 1 + vlen(size) + size;
/** A bytes field with a one-byte tag, absent when empty. */
const bytesField = (b: Uint8Array) => (b.length ? delimited(b.length) : 0);
/** A varint field with a one-byte tag, absent when zero. */
const varintField = (n: number) => (n ? 1 + vlen(n) : 0);

const isU32 = (n: number) => Number.isInteger(n) && n >= 0 && n <= 0xffffffff;

/** Content size of a FieldMatch, or -1 when the fast path does not cover it. */
function matchSize(m: FieldMatch): number {
  if (!isU32(m.fieldId)) return -1;
  const t = m.fieldMatchType;
  let inner: number;
  switch (t?.$case) {
    case undefined:
      return varintField(m.fieldId);
    case "exact":
    case "optional":
      inner = bytesField(t.value.value);
      break;
    case "lpm":
      if (!isU32(t.value.prefixLen) || t.value.prefixLen > 0x7fffffff) return -1;
      inner = bytesField(t.value.value) + varintField(t.value.prefixLen);
      break;
    case "ternary":
      inner = bytesField(t.value.value) + bytesField(t.value.mask);
      break;
    case "range":
      inner = bytesField(t.value.low) + bytesField(t.value.high);
      break;
    default:
      return -1;
  }
  return varintField(m.fieldId) + delimited(inner);
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
  if (!isU32(e.tableId) || e.controllerMetadata !== 0n || e.meterConfig || e.counterData || e.meterCounterData || e.timeSinceLastHit) return undefined;
  if (!Number.isInteger(e.priority) || e.priority < 0 || e.priority > 0x7fffffff || e.idleTimeoutNs !== 0n) return undefined;
  const matches: number[] = [];
  let size = varintField(e.tableId);
  for (const m of e.match) {
    const s = matchSize(m);
    if (s < 0) return undefined;
    matches.push(s);
    size += delimited(s);
  }
  const params: number[] = [];
  let action = 0;
  let tableAction = 0;
  if (e.action !== undefined) {
    const t = e.action.type;
    if (t !== undefined && t.$case !== "action") return undefined;
    if (t !== undefined) {
      if (!isU32(t.value.actionId)) return undefined;
      action = varintField(t.value.actionId);
      for (const p of t.value.params) {
        if (!isU32(p.paramId)) return undefined;
        const s = varintField(p.paramId) + bytesField(p.value);
        params.push(s);
        action += delimited(s);
      }
      tableAction = delimited(action); // TableAction { action = 1 }
    }
    size += delimited(tableAction);
  }
  size += varintField(e.priority) + (e.isDefaultAction ? 2 : 0) + bytesField(e.metadata) + (e.isConst ? 2 : 0);
  return { matches, params, action, tableAction, entry: size };
}

class Out {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  varint(n: number): void {
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }
  field(tag: number, n: number): void {
    if (!n) return;
    this.buf[this.pos++] = tag;
    this.varint(n);
  }
  open(tag: number, size: number): void {
    this.buf[this.pos++] = tag;
    this.varint(size);
  }
  bytes(tag: number, b: Uint8Array): void {
    if (!b.length) return;
    this.open(tag, b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
  /** A message of two bytes fields, 1 and 2 (ternary value/mask, range low/high). */
  pair(tag: number, a: Uint8Array, b: Uint8Array): void {
    this.open(tag, bytesField(a) + bytesField(b));
    this.bytes(10, a);
    this.bytes(18, b);
  }
}

function writeEntry(o: Out, e: TableEntry, p: Plan): void {
  o.field(8, e.tableId);
  e.match.forEach((m, i) => {
    o.open(18, p.matches[i]!);
    o.field(8, m.fieldId);
    const t = m.fieldMatchType;
    if (!t) return;
    switch (t.$case) {
      case "exact":
      case "optional":
        o.open(t.$case === "exact" ? 18 : 58, bytesField(t.value.value));
        o.bytes(10, t.value.value);
        break;
      case "lpm":
        o.open(34, bytesField(t.value.value) + varintField(t.value.prefixLen));
        o.bytes(10, t.value.value);
        o.field(16, t.value.prefixLen);
        break;
      case "ternary":
        o.pair(26, t.value.value, t.value.mask);
        break;
      case "range":
        o.pair(50, t.value.low, t.value.high);
        break;
    }
  });
  if (e.action !== undefined) {
    o.open(26, p.tableAction);
    const t = e.action.type;
    if (t?.$case === "action") {
      o.open(10, p.action);
      o.field(8, t.value.actionId);
      t.value.params.forEach((param, i) => {
        o.open(34, p.params[i]!);
        o.field(16, param.paramId);
        o.bytes(26, param.value);
      });
    }
  }
  o.field(32, e.priority);
  if (e.isDefaultAction) o.field(64, 1);
  o.bytes(90, e.metadata);
  if (e.isConst) o.field(104, 1);
}

/** WriteRequest.encode(req), byte for byte. */
export function encodeWriteRequest(req: WriteRequest): Buffer {
  const head = WriteRequest.encode({ ...req, updates: [], atomicity: 0 }).finish();
  const parts: Array<{ type: number; entry: TableEntry; plan: Plan; size: number } | Uint8Array> = [];
  let total = head.length + (req.atomicity ? 1 + vlen(req.atomicity) : 0);
  for (const u of req.updates) {
    const e = u.entity?.entity;
    const p = e?.$case === "tableEntry" && isU32(u.type) && u.type <= 0x7fffffff ? plan(e.value) : undefined;
    if (p && e?.$case === "tableEntry") {
      // Update { type = 1, entity = 2 { table_entry = 2 } }
      const size = varintField(u.type) + delimited(delimited(p.entry));
      parts.push({ type: u.type, entry: e.value, plan: p, size });
      total += delimited(size);
    } else {
      const b = Update.encode(u, new BinaryWriter()).finish();
      parts.push(b);
      total += delimited(b.length);
    }
  }
  const o = new Out(Buffer.allocUnsafe(total));
  o.buf.set(head, 0);
  o.pos = head.length;
  for (const part of parts) {
    if (part instanceof Uint8Array) {
      o.open(34, part.length);
      o.buf.set(part, o.pos);
      o.pos += part.length;
      continue;
    }
    o.open(34, part.size);
    o.field(8, part.type);
    o.open(18, delimited(part.plan.entry));
    o.open(18, part.plan.entry);
    writeEntry(o, part.entry, part.plan);
  }
  if (req.atomicity) o.field(40, req.atomicity);
  if (o.pos !== total) throw new Error(`WriteRequest encoding: wrote ${o.pos} bytes, planned ${total}`);
  return o.buf;
}
