// IoRecord, the exporter's most frequent message (one per I/O), written
// straight from the record into protobuf bytes: the same bytes as the
// generated IoRecord.encode(IoRecord.fromPartial(...)) (field order, default
// values left out), without building the message object, its BigInts and a
// BinaryWriter per record. The profile of `npm run bench -- kafka` had the
// generic path at a fifth of the exporter's own CPU time per record.
// test/unit/io-record-writer.test.ts holds it to the generated encoder.
import type { IoRecordJson, ModeName } from "@rdma-telemetry/contract";

let scratch = Buffer.allocUnsafe(4096);
let pos = 0;

function varint32(v: number): void {
  // uint32 (v >= 0) or a non-negative int32
  while (v > 127) {
    scratch[pos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  scratch[pos++] = v;
}

/** A 64-bit varint from its low and high 32 bits (unsigned). */
function varint64(lo: number, hi: number): void {
  while (hi > 0 || lo > 127) {
    scratch[pos++] = (lo & 0x7f) | 0x80;
    lo = ((lo >>> 7) | (hi << 25)) >>> 0;
    hi >>>= 7;
  }
  scratch[pos++] = lo;
}

const TWO32 = 4294967296;

/** An int64 or uint64 field's value given as a number (an integer, as BigInt(Math.round(v)) takes it). */
function varintNumber(v: number): void {
  if (v >= 0 && v <= Number.MAX_SAFE_INTEGER) {
    const hi = Math.floor(v / TWO32);
    varint64(v - hi * TWO32, hi);
  } else {
    const b = BigInt(v);
    if (BigInt.asIntN(64, b) !== b) throw new Error(`value provided for an int64 field too large: ${v}`);
    varintBig(BigInt.asUintN(64, b));
  }
}

function varintBig(b: bigint): void {
  varint64(Number(b & 0xffffffffn), Number(b >> 32n));
}

/** A uint64 field's value given as a decimal string; false when it is not plain digits or does not fit. */
function varintDecimal(s: string): boolean {
  if (s.length === 0 || s.length > 20) return false;
  let lo = 0;
  let hi = 0;
  for (let i = 0; i < s.length; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    const x = lo * 10 + d;
    const carry = Math.floor(x / TWO32);
    lo = x - carry * TWO32;
    hi = hi * 10 + carry;
    if (hi >= TWO32) return false;
  }
  if (lo === 0 && hi === 0) return true; // zero: the field is left out (the caller checks)
  varint64(lo, hi);
  return true;
}

function isZeroDecimal(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) !== 48) return false;
  return s.length > 0;
}

/** A uint64 field from a decimal string, as BigInt(s) would give it (throws as the generated encoder does). */
function uint64Field(tag: number, s: string): void {
  if (isZeroDecimal(s)) return;
  const at = pos;
  varint32(tag);
  if (varintDecimal(s)) return;
  pos = at;
  const b = BigInt(s);
  if (b === 0n) return;
  if (BigInt.asUintN(64, b) !== b) throw new Error(`value provided for a uint64 field too large: ${s}`);
  varint32(tag);
  varintBig(b);
}

function stringField(tag: number, s: string): void {
  if (s === "") return;
  varint32(tag);
  const n = s.length;
  if (n < 128) {
    const start = pos;
    scratch[pos++] = n;
    let i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) break;
      scratch[pos++] = c;
    }
    if (i === n) return;
    pos = start; // not ASCII: as UTF-8
  }
  const bytes = Buffer.byteLength(s);
  varint32(bytes);
  pos += scratch.write(s, pos, "utf8");
}

/** An optional int64 duration (BigInt(Math.round(v)) of the generic path). */
function int64Field(tag: number, v: number | null): void {
  if (v === null) return;
  varint32(tag);
  varintNumber(Math.round(v));
}

function uint32Field(tag: number, v: number): void {
  if (v === 0) return;
  if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new Error(`invalid uint32: ${v}`);
  varint32(tag);
  varint32(v);
}

const modeNumber = (m: ModeName): number => (m === "full" ? 1 : m === "polling" ? 2 : m === "summary" ? 3 : 0);

/** Interval bounds of the last start seen: records of one interval share it. */
let lastStart = "";
let lastLength = -1n;
let startLo = 0;
let startHi = 0;
let endLo = 0;
let endHi = 0;

function intervalField(start: string, lengthNs: bigint): void {
  if (start !== lastStart || lengthNs !== lastLength) {
    const s = BigInt(start);
    const e = s + lengthNs;
    if (BigInt.asUintN(64, s) !== s || BigInt.asUintN(64, e) !== e) throw new Error(`value provided for an interval bound too large: ${start}`);
    startLo = Number(s & 0xffffffffn);
    startHi = Number(s >> 32n);
    endLo = Number(e & 0xffffffffn);
    endHi = Number(e >> 32n);
    lastStart = start;
    lastLength = lengthNs;
  }
  scratch[pos++] = 18;
  const lengthAt = pos++;
  if (startLo !== 0 || startHi !== 0) {
    scratch[pos++] = 8;
    varint64(startLo, startHi);
  }
  if (endLo !== 0 || endHi !== 0) {
    scratch[pos++] = 16;
    varint64(endLo, endHi);
  }
  scratch[lengthAt] = pos - lengthAt - 1; // at most 22 bytes
}

/** The IoRecord of `r` in protobuf, `intervalNs` its interval's length. */
export function writeIoRecord(r: IoRecordJson, intervalNs: bigint): Buffer {
  // Room for the fixed fields (under 160 bytes) and every string as UTF-8.
  const room = 256 + 3 * (r.switch_id.length + r.host.length + r.target.length + (r.c_switch_id?.length ?? 0) + (r.s_switch_id?.length ?? 0));
  if (scratch.length < room) scratch = Buffer.allocUnsafe(room * 2);
  pos = 0;
  stringField(10, r.switch_id);
  intervalField(r.interval_start_unix_ns, intervalNs);
  stringField(26, r.host);
  stringField(34, r.target);
  uint32Field(40, r.cid);
  const op = r.op === "read" ? 1 : 2;
  scratch[pos++] = 48;
  scratch[pos++] = op;
  if (r.bytes !== 0) {
    if (!Number.isInteger(r.bytes) || r.bytes < 0) throw new Error(`invalid bytes: ${r.bytes}`);
    scratch[pos++] = 56;
    varintNumber(r.bytes);
  }
  uint32Field(64, r.nvme_status);
  int64Field(72, r.e2e_c_ns);
  int64Field(80, r.e2e_s_ns);
  int64Field(88, r.rtt_ns);
  int64Field(96, r.dal_ns);
  int64Field(104, r.dpl_ns);
  if (r.incomplete) {
    scratch[pos++] = 112;
    scratch[pos++] = 1;
  }
  const mode = modeNumber(r.mode);
  if (mode !== 0) {
    scratch[pos++] = 120;
    scratch[pos++] = mode;
  }
  stringField(130, r.c_switch_id ?? "");
  stringField(138, r.s_switch_id ?? "");
  uint64Field(144, r.cmd_unix_ns);
  uint32Field(152, r.host_qp);
  uint32Field(160, r.target_qp);
  uint32Field(168, r.cmd_psn);
  if (r.in_capsule) {
    varint32(176);
    scratch[pos++] = 1;
  }
  const out = Buffer.allocUnsafe(pos);
  scratch.copy(out, 0, 0, pos);
  return out;
}
