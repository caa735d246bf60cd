// The StreamMessageResponse carrying a DigestList, written straight to bytes:
// a list of a thousand samples of twenty members is forty thousand protobuf
// objects the generic encoder would build and walk. Byte-for-byte the same
// wire format (p4/v1/p4runtime.proto, p4/v1/p4data.proto):
//   StreamMessageResponse.digest = 3 { digest_id = 1, list_id = 2,
//     data = 3 [P4Data.struct = 5 { members = 1 [P4Data.bitstring = 1] }], timestamp = 4 }
import type { Value } from "../bmv2/table.js";

function varintLength(v: number | bigint): number {
  if (typeof v === "number") {
    if (v < 0x80) return 1;
    if (v < 0x4000) return 2;
    if (v < 0x200000) return 3;
    if (v < 0x10000000) return 4;
  }
  let x = BigInt(v);
  let n = 1;
  while (x >= 0x80n) {
    x >>= 7n;
    n++;
  }
  return n;
}

/** Length of a non-negative value's canonical bitstring (big-endian, no leading zeros, at least one byte). */
function valueLength(v: Value): number {
  if (typeof v === "number") {
    if (v < 0x100) return 1;
    if (v < 0x10000) return 2;
    if (v < 0x1000000) return 3;
    if (v < 0x100000000) return 4;
    if (v < 0x10000000000) return 5;
    if (v < 0x1000000000000) return 6;
    return 7; // numbers stop at 2^53
  }
  let n = 1;
  for (let x = v >> 8n; x > 0n; x >>= 8n) n++;
  return n;
}

class Writer {
  readonly buf: Buffer;
  pos = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }
  byte(b: number): void {
    this.buf[this.pos++] = b;
  }
  varint(v: number | bigint): void {
    if (typeof v === "number" && v < 0x80000000) {
      let x = v;
      while (x >= 0x80) {
        this.buf[this.pos++] = (x & 0x7f) | 0x80;
        x >>>= 7;
      }
      this.buf[this.pos++] = x;
      return;
    }
    let x = BigInt(v);
    while (x >= 0x80n) {
      this.buf[this.pos++] = Number(x & 0x7fn) | 0x80;
      x >>= 7n;
    }
    this.buf[this.pos++] = Number(x);
  }
  /** A tag byte and a varint: a length-delimited field's head, or a varint field. */
  field(tag: number, v: number | bigint): void {
    this.byte(tag);
    this.varint(v);
  }
  /** The `n`-byte canonical bitstring of `v`. */
  value(v: Value, n: number): void {
    if (typeof v === "number") {
      if (n <= 6) this.buf.writeUIntBE(v, this.pos, n);
      else {
        this.buf[this.pos] = Math.floor(v / 2 ** 48);
        this.buf.writeUIntBE(v % 2 ** 48, this.pos + 1, 6);
      }
    } else {
      let x = v;
      for (let k = n - 1; k >= 0; k--) {
        this.buf[this.pos + k] = Number(x & 0xffn);
        x >>= 8n;
      }
    }
    this.pos += n;
  }
}

/** Member lengths of the last list encoded, reused between lists. */
let lengths = new Int32Array(1 << 14);

/** Encoded StreamMessageResponse { digest: DigestList } for `samples` of bit<W> members. */
export function encodeDigestListMessage(digestId: number, listId: bigint, timestampNs: bigint, samples: readonly Value[][]): Buffer {
  // Sizes first: each member is P4Data{bitstring} = 0x0a len bytes; each sample
  // is its struct's length followed by its members' lengths.
  let total = 0;
  for (const s of samples) total += s.length + 1;
  if (lengths.length < total) lengths = new Int32Array(total * 2);
  let dataLen = 0;
  let k = 0;
  for (const s of samples) {
    const at = k++;
    let structLen = 0;
    for (const v of s) {
      const n = valueLength(v);
      lengths[k++] = n;
      const member = 1 + varintLength(n) + n; // P4Data{bitstring}
      structLen += 1 + varintLength(member) + member; // P4StructLike.members
    }
    lengths[at] = structLen;
    const p4data = 1 + varintLength(structLen) + structLen; // P4Data{struct}
    dataLen += 1 + varintLength(p4data) + p4data; // DigestList.data
  }
  const listLen = 1 + varintLength(digestId) + 1 + varintLength(listId) + dataLen + 1 + varintLength(timestampNs);
  const w = new Writer(1 + varintLength(listLen) + listLen);
  w.field(0x1a, listLen);
  w.field(0x08, digestId);
  w.field(0x10, listId);
  k = 0;
  for (const s of samples) {
    const structLen = lengths[k++]!;
    w.field(0x1a, 1 + varintLength(structLen) + structLen);
    w.field(0x2a, structLen);
    for (const v of s) {
      const n = lengths[k++]!;
      w.field(0x0a, 1 + varintLength(n) + n);
      w.field(0x0a, n);
      w.value(v, n);
    }
  }
  w.field(0x20, timestampNs);
  return w.buf;
}
