// The Write RPC's common case, read straight from the request bytes: a table
// entry inserted, modified or deleted with a plain match key and a direct
// action. A watchlist rotation is two thousand of them; decoded into the
// generated message objects first, each would cost some thirty objects and
// five Buffers before it reached the table. Here an update becomes its match
// key and action call directly.
//
// The fast path never decides that an update is wrong: anything it does not
// cover or that does not check out (an unknown id, a value too wide, a
// missing parameter, a default entry, metadata, ...) is declined, and the
// server decodes that update the generic way, which gives the error.
// Wire format: p4/v1/p4runtime.proto.
import type { MeterArray } from "../bmv2/meters.js";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { MatchField_MatchType } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import { Uint128, Update, Update_Type, WriteRequest_Atomicity } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { P4RuntimeError, readBigUintBE, WireReader } from "@rdma-telemetry/p4runtime";
import type { ActionCall, KeyMatch, Value } from "../bmv2/table.js";
import type { PipelineBinding, TableBinding } from "./binding.js";

/** A WriteRequest whose updates are read one at a time, as they are applied. */
export interface LazyWriteRequest {
  deviceId: bigint;
  role: string;
  electionId: Uint128 | undefined;
  atomicity: WriteRequest_Atomicity;
  readonly count: number;
  /** update `i` as a table write, or undefined if the fast path declines it */
  fast(i: number, binding: PipelineBinding): TableWrite | undefined;
  /** update `i`, decoded by the generated decoder (throws on malformed bytes) */
  update(i: number): Update;
}

export interface TableWrite {
  type: Update_Type.INSERT | Update_Type.MODIFY | Update_Type.DELETE;
  table: TableBinding;
  match: KeyMatch[];
  priority: number;
  /** absent on DELETE */
  action: ActionCall | undefined;
  /** opaque controller metadata (the fast path declines entries that carry it) */
  metadata?: Uint8Array;
  controllerMetadata?: bigint;
  idleTimeoutNs?: bigint;
  /** the entry's direct meter cell (undefined: unconfigured; a MODIFY without one resets it) */
  meter?: MeterArray;
  /** the action profile member the entry points to (its `action` is the member's) */
  memberId?: number;
}

/** Top-level fields now; updates as byte ranges. */
export function decodeWriteRequest(buf: Uint8Array): LazyWriteRequest {
  const r = new BinaryReader(buf);
  const ranges: number[] = [];
  let deviceId = 0n;
  let role = "";
  let electionId: Uint128 | undefined;
  let atomicity = WriteRequest_Atomicity.CONTINUE_ON_ERROR;
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === WireType.Varint) deviceId = BigInt.asUintN(64, BigInt(r.uint64()));
    else if (field === 3 && wire === WireType.LengthDelimited) electionId = Uint128.decode(r, r.uint32());
    else if (field === 4 && wire === WireType.LengthDelimited) {
      const len = r.uint32();
      if (r.pos + len > r.len) throw new RangeError("WriteRequest: an update runs past the end of the message");
      ranges.push(r.pos, r.pos + len);
      r.pos += len;
    } else if (field === 5 && wire === WireType.Varint) atomicity = r.int32() as WriteRequest_Atomicity;
    else if (field === 6 && wire === WireType.LengthDelimited) role = r.string();
    else r.skip(wire, field);
  }
  return {
    deviceId,
    role,
    electionId,
    atomicity,
    count: ranges.length / 2,
    fast: (i, binding) => readTableWrite(buf, ranges[2 * i]!, ranges[2 * i + 1]!, binding),
    update(i) {
      // One reader for the whole request, moved to the update: no copy.
      r.pos = ranges[2 * i]!;
      try {
        return Update.decode(r, ranges[2 * i + 1]! - r.pos);
      } catch (err) {
        throw new P4RuntimeError(`update #${i} is not a valid p4.v1.Update: ${(err as Error).message}`, "INVALID_ARGUMENT");
      }
    },
  };
}

/** A bit<width> value from big-endian bytes; undefined if empty or too wide. */
function bits(buf: Uint8Array, start: number, end: number, width: number): bigint | undefined {
  if (end <= start) return undefined;
  const v = readBigUintBE(buf, start, end);
  return v >> BigInt(width) === 0n ? v : undefined;
}

function readTableWrite(buf: Uint8Array, start: number, end: number, b: PipelineBinding): TableWrite | undefined {
  // Update { type = 1; entity = 2 { table_entry = 2 } }
  const u = new WireReader(buf, start, end);
  let type = 0;
  let entry: [number, number] | undefined;
  while (u.more) {
    const tag = u.varint();
    if (tag === 8) type = u.varint();
    else if (tag === 18 && !entry) {
      const [s, e] = u.span();
      const en = new WireReader(buf, s, e);
      if (en.varint() !== 18) return undefined;
      entry = en.span();
      if (en.fail || en.pos !== en.end) return undefined;
    } else return undefined;
  }
  if (u.fail || !entry || (type !== Update_Type.INSERT && type !== Update_Type.MODIFY && type !== Update_Type.DELETE)) return undefined;

  // TableEntry { table_id = 1; match = 2; action = 3; priority = 4 } and nothing else
  const c = new WireReader(buf, entry[0], entry[1]);
  let tableId = 0;
  let priority = 0;
  const matches: Array<[number, number]> = [];
  let action: [number, number] | undefined;
  while (c.more) {
    const tag = c.varint();
    if (tag === 8) tableId = c.varint();
    else if (tag === 18) matches.push(c.span());
    else if (tag === 26) action = c.span();
    else if (tag === 32) priority = c.varint();
    else return undefined;
  }
  if (c.fail || priority > 0x7fffffff) return undefined;
  const table = b.tables.get(tableId);
  // (Const tables and keyless ones are refused by the full decoder, with the reason.)
  if (!table || table.table.constEntries || table.info.matchFields.length === 0 || table.table.actionProfile) return undefined;

  const fields = table.info.matchFields;
  const match = new Array<KeyMatch | undefined>(fields.length);
  for (const [s, e] of matches) {
    const m = readMatch(buf, s, e, table, match);
    if (!m) return undefined;
  }
  for (let i = 0; i < match.length; i++) match[i] ??= ANY;
  if (table.table.validate(match as KeyMatch[], priority) !== undefined) return undefined;

  let call: ActionCall | undefined;
  if (type !== Update_Type.DELETE) {
    if (!action) return undefined;
    call = readAction(buf, action[0], action[1], table, b);
    if (!call) return undefined;
  }
  return { type, table, match: match as KeyMatch[], priority, action: call };
}

const ANY: KeyMatch = { kind: "any" };

/** One FieldMatch into `out` (by the field's index); false to decline. */
function readMatch(buf: Uint8Array, start: number, end: number, t: TableBinding, out: Array<KeyMatch | undefined>): boolean {
  // FieldMatch { field_id = 1; exact = 2 | ternary = 3 | lpm = 4 | range = 6 | optional = 7 }
  const c = new WireReader(buf, start, end);
  let fieldId = 0;
  let kind = 0;
  let body: [number, number] | undefined;
  while (c.more) {
    const tag = c.varint();
    if (tag === 8) fieldId = c.varint();
    else if ((tag & 7) === 2 && !body) {
      kind = tag >>> 3;
      body = c.span();
    } else return false;
  }
  const idx = t.fieldIndex.get(fieldId);
  if (c.fail || !body || idx === undefined || out[idx]) return false;
  const f = t.info.matchFields[idx]!;
  const type = f.match?.$case === "matchType" ? f.match.value : MatchField_MatchType.UNSPECIFIED;
  const w = f.bitwidth;
  // The body's fields: bytes 1 and 2 (value/mask, low/high), or value 1 and prefix_len 2 (varint).
  const m = new WireReader(buf, body[0], body[1]);
  let a: [number, number] | undefined;
  let z: [number, number] | undefined;
  let prefixLen = 0;
  while (m.more) {
    const tag = m.varint();
    if (tag === 10) a = m.span();
    else if (tag === 18 && kind !== 4) z = m.span();
    else if (tag === 16 && kind === 4) prefixLen = m.varint();
    else return false;
  }
  if (m.fail || !a) return false;
  const v = bits(buf, a[0], a[1], w);
  if (v === undefined) return false;
  if (kind === 2 && type === MatchField_MatchType.EXACT && !z) out[idx] = { kind: "exact", value: v };
  else if (kind === 7 && type === MatchField_MatchType.OPTIONAL && !z) out[idx] = { kind: "optional", value: v };
  else if (kind === 4 && type === MatchField_MatchType.LPM && prefixLen > 0 && prefixLen <= w) out[idx] = { kind: "lpm", value: v, prefixLen };
  else if ((kind === 3 && type === MatchField_MatchType.TERNARY) || (kind === 6 && type === MatchField_MatchType.RANGE)) {
    const v2 = z && bits(buf, z[0], z[1], w);
    if (v2 === undefined) return false;
    if (kind === 3) {
      if (v2 === 0n) return false;
      out[idx] = { kind: "ternary", value: v, mask: v2 };
    } else out[idx] = { kind: "range", low: v, high: v2 };
  } else return false;
  return true;
}

/** TableAction { action = 1 { action_id = 1; params = 4 { param_id = 2; value = 3 } } }; undefined to decline. */
function readAction(buf: Uint8Array, start: number, end: number, t: TableBinding, b: PipelineBinding): ActionCall | undefined {
  const ta = new WireReader(buf, start, end);
  if (ta.varint() !== 10) return undefined;
  const [s, e] = ta.span();
  if (ta.fail || ta.pos !== ta.end) return undefined;
  const c = new WireReader(buf, s, e);
  let actionId = 0;
  const params: Array<[number, number, number]> = [];
  while (c.more) {
    const tag = c.varint();
    if (tag === 8) actionId = c.varint();
    else if (tag === 34) {
      const [ps, pe] = c.span();
      const p = new WireReader(buf, ps, pe);
      let id = 0;
      let value: [number, number] | undefined;
      while (p.more) {
        const ptag = p.varint();
        if (ptag === 16) id = p.varint();
        else if (ptag === 26) value = p.span();
        else return undefined;
      }
      if (p.fail || !value) return undefined;
      params.push([id, value[0], value[1]]);
    } else return undefined;
  }
  const a = b.actions.get(actionId);
  if (c.fail || !a) return undefined;
  const ref = t.info.actionRefs.find((r) => r.id === actionId);
  if (!ref || ref.scope === 2 || params.length !== a.info.params.length) return undefined; // DEFAULT_ONLY
  const data: Value[] = [];
  for (const p of a.info.params) {
    const given = params.filter((x) => x[0] === p.id);
    if (given.length !== 1) return undefined;
    const v = bits(buf, given[0]![1], given[0]![2], p.bitwidth);
    if (v === undefined) return undefined;
    data.push(p.bitwidth <= 52 ? Number(v) : v);
  }
  return { actionId: t.programActions.get(actionId) ?? a.programId, data };
}
