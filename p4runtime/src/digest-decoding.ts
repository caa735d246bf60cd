// Stream messages carrying a DigestList, read straight from the bytes: each
// sample becomes an array of its members, a number for a bitstring of up to
// six bytes (48 bits, exact in a double) and a view into the message for a
// longer one. The generated P4Data objects are built only if someone asks
// for `data`. Other messages go through the generated decoder.
import type { P4Data } from "./generated/p4/v1/p4data.js";
import { StreamMessageResponse, type DigestList } from "./generated/p4/v1/p4runtime.js";

/** One member of a digest sample: its value if it has at most 48 bits, else its bitstring. */
export type DigestMember = number | Uint8Array;

/** A DigestList whose samples are also available member by member. */
export interface FastDigestList extends DigestList {
  readonly samples: DigestMember[][];
}

/** The canonical bitstring of a member (big-endian, no leading zeros, at least one byte). */
export function memberBytes(m: DigestMember): Buffer {
  if (typeof m !== "number") return Buffer.from(m);
  let n = 1;
  while (n < 6 && m >= 2 ** (8 * n)) n++;
  const b = Buffer.allocUnsafe(n);
  b.writeUIntBE(m, 0, n);
  return b;
}

export function isFastDigestList(d: DigestList): d is FastDigestList {
  return Array.isArray((d as Partial<FastDigestList>).samples);
}

class Reader {
  pos: number;
  constructor(readonly buf: Uint8Array, start = 0, readonly end = buf.length) {
    this.pos = start;
  }
  varint(): bigint {
    let shift = 0n;
    let v = 0n;
    for (;;) {
      const b = this.buf[this.pos++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
      shift += 7n;
    }
  }
  small(): number {
    let shift = 0;
    let v = 0;
    for (;;) {
      const b = this.buf[this.pos++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
      shift += 7;
    }
  }
  skip(wire: number): void {
    if (wire === 0) this.small();
    else if (wire === 2) this.pos += this.small();
    else if (wire === 5) this.pos += 4;
    else if (wire === 1) this.pos += 8;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

function members(buf: Uint8Array, start: number, end: number): DigestMember[] | undefined {
  // P4Data { struct = 5: P4StructLike { members = 1: P4Data { bitstring = 1 } } }
  const r = new Reader(buf, start, end);
  let out: DigestMember[] | undefined;
  while (r.pos < r.end) {
    const tag = r.small();
    if (tag !== ((5 << 3) | 2)) return undefined;
    const len = r.small();
    const s = new Reader(buf, r.pos, r.pos + len);
    out = [];
    while (s.pos < s.end) {
      if (s.small() !== ((1 << 3) | 2)) return undefined;
      const mlen = s.small();
      const m = new Reader(buf, s.pos, s.pos + mlen);
      if (m.small() !== ((1 << 3) | 2)) return undefined;
      const blen = m.small();
      if (blen <= 6) {
        let x = 0;
        for (let i = m.pos; i < m.pos + blen; i++) x = x * 256 + buf[i]!;
        out.push(x);
      } else out.push(buf.subarray(m.pos, m.pos + blen));
      s.pos += mlen;
    }
    r.pos += len;
  }
  return out;
}

/** Decodes a StreamMessageResponse, reading digest lists without building P4Data objects. */
export function decodeStreamMessageResponse(buf: Buffer): StreamMessageResponse {
  // StreamMessageResponse.digest is field 3, length-delimited.
  if (buf.length < 2 || buf[0] !== ((3 << 3) | 2)) return StreamMessageResponse.decode(buf);
  const outer = new Reader(buf);
  outer.small();
  const len = outer.small();
  if (outer.pos + len !== buf.length) return StreamMessageResponse.decode(buf);
  const r = new Reader(buf, outer.pos, outer.pos + len);
  let digestId = 0;
  let listId = 0n;
  let timestamp = 0n;
  const samples: DigestMember[][] = [];
  while (r.pos < r.end) {
    const tag = r.small();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === 0) digestId = r.small();
    else if (field === 2 && wire === 0) listId = r.varint();
    else if (field === 4 && wire === 0) timestamp = BigInt.asIntN(64, r.varint());
    else if (field === 3 && wire === 2) {
      const l = r.small();
      const m = members(buf, r.pos, r.pos + l);
      if (!m) return StreamMessageResponse.decode(buf); // not a struct of bitstrings: the general path
      samples.push(m);
      r.pos += l;
    } else r.skip(wire);
  }
  let data: P4Data[] | undefined;
  const list = {
    digestId,
    listId,
    timestamp,
    samples,
    get data(): P4Data[] {
      data ??= samples.map((s) => ({ data: { $case: "struct" as const, value: { members: s.map((v) => ({ data: { $case: "bitstring" as const, value: memberBytes(v) } })) } } }));
      return data;
    },
  } as FastDigestList;
  return { update: { $case: "digest", value: list } };
}
