// The StreamMessageResponse carrying a DigestList, written straight to bytes:
// a list of a thousand samples of twenty members is forty thousand protobuf
// objects the generic encoder would build and walk. Byte-for-byte the same
// wire format (p4/v1/p4runtime.proto, p4/v1/p4data.proto):
//   StreamMessageResponse.digest = 3 { digest_id = 1, list_id = 2,
//     data = 3 [P4Data.struct = 5 { members = 1 [P4Data.bitstring = 1] }], timestamp = 4 }
import type { Value } from "../bmv2/table.js";

function varintLength(v: number | bigint): number {
  let x = BigInt(v);
  let n = 1;
  while (x >= 0x80n) {
    x >>= 7n;
    n++;
  }
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
}

/** Canonical bytes of a non-negative value: big-endian, no leading zeros, at least one byte. */
function valueBytes(v: Value, out: number[]): number {
  out.length = 0;
  if (typeof v === "number") {
    let x = v;
    do {
      out.push(x % 256);
      x = Math.floor(x / 256);
    } while (x > 0);
  } else {
    let x = v;
    do {
      out.push(Number(x & 0xffn));
      x >>= 8n;
    } while (x > 0n);
  }
  return out.length;
}

/** Encoded StreamMessageResponse { digest: DigestList } for `samples` of bit<W> members. */
export function encodeDigestListMessage(digestId: number, listId: bigint, timestampNs: bigint, samples: readonly Value[][]): Buffer {
  const scratch: number[] = [];
  // Sizes first: each member is P4Data{bitstring} = 0x0a len bytes.
  const sampleLens: number[] = [];
  const memberLens: number[][] = [];
  let dataLen = 0;
  for (const s of samples) {
    const lens = s.map((v) => valueBytes(v, scratch));
    memberLens.push(lens);
    let structLen = 0;
    for (const n of lens) {
      const member = 1 + varintLength(n) + n; // P4Data{bitstring}
      structLen += 1 + varintLength(member) + member; // P4StructLike.members
    }
    const p4data = 1 + varintLength(structLen) + structLen; // P4Data{struct}
    sampleLens.push(structLen);
    dataLen += 1 + varintLength(p4data) + p4data; // DigestList.data
  }
  const listLen = 1 + varintLength(digestId) + 1 + varintLength(listId) + dataLen + 1 + varintLength(timestampNs);
  const w = new Writer(1 + varintLength(listLen) + listLen);
  w.byte(0x1a);
  w.varint(listLen);
  w.byte(0x08);
  w.varint(digestId);
  w.byte(0x10);
  w.varint(listId);
  samples.forEach((s, i) => {
    const structLen = sampleLens[i]!;
    const p4data = 1 + varintLength(structLen) + structLen;
    w.byte(0x1a);
    w.varint(p4data);
    w.byte(0x2a);
    w.varint(structLen);
    s.forEach((v, j) => {
      const n = memberLens[i]![j]!;
      valueBytes(v, scratch);
      w.byte(0x0a);
      w.varint(1 + varintLength(n) + n);
      w.byte(0x0a);
      w.varint(n);
      for (let k = n - 1; k >= 0; k--) w.byte(scratch[k]!);
    });
  });
  w.byte(0x20);
  w.varint(timestampNs);
  return w.buf;
}
