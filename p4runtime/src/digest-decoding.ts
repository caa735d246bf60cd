// Stream messages carrying a DigestList, read straight from the bytes: each
// sample becomes an array of its members, a number for a bitstring of up to
// six bytes (48 bits, exact in a double) and a view into the message for a
// longer one. The generated P4Data objects are built only if someone asks
// for `data`. Other messages go through the generated decoder.
import type { P4Data } from "./generated/p4/v1/p4data.js";
import { StreamMessageResponse, type DigestList } from "./generated/p4/v1/p4runtime.js";
import { encodeBits } from "./values.js";
import { readUintBE, tag, WireReader, WireType } from "./wire.js";

/** One member of a digest sample: its value if it has at most 48 bits, else its bitstring. */
export type DigestMember = number | Uint8Array;

/** A DigestList whose samples are also available member by member. */
export interface FastDigestList extends DigestList {
  readonly samples: DigestMember[][];
}

/** The canonical bitstring of a member (big-endian, no leading zeros, at least one byte). */
export function memberBytes(m: DigestMember): Buffer {
  return typeof m === "number" ? encodeBits(m, 48) : Buffer.from(m);
}

export function isFastDigestList(d: DigestList): d is FastDigestList {
  return Array.isArray((d as Partial<FastDigestList>).samples);
}

// StreamMessageResponse { digest = 3: DigestList { digest_id = 1, list_id = 2, data = 3, timestamp = 4 } }
const DIGEST = tag(3, WireType.Delimited);
const DIGEST_ID = tag(1, WireType.Varint);
const LIST_ID = tag(2, WireType.Varint);
const DATA = tag(3, WireType.Delimited);
const TIMESTAMP = tag(4, WireType.Varint);
// P4Data { struct = 5: P4StructLike { members = 1: P4Data { bitstring = 1 } } }
const STRUCT = tag(5, WireType.Delimited);
const MEMBERS = tag(1, WireType.Delimited);
const BITSTRING = tag(1, WireType.Delimited);

/** The members of a sample (a P4Data ending at `end`), or undefined if it is not a struct of bitstrings. */
function members(r: WireReader, end: number): DigestMember[] | undefined {
  const buf = r.buf;
  let out: DigestMember[] | undefined;
  while (r.pos < end && !r.fail) {
    if (r.varint() !== STRUCT) return undefined;
    const structEnd = r.enter();
    out = [];
    while (r.pos < structEnd && !r.fail) {
      if (r.varint() !== MEMBERS) return undefined;
      const memberEnd = r.enter();
      if (r.varint() !== BITSTRING) return undefined;
      const bitsEnd = r.enter();
      if (bitsEnd > memberEnd) return undefined;
      if (bitsEnd - r.pos <= 6) out.push(readUintBE(buf, r.pos, bitsEnd));
      else out.push(buf.subarray(r.pos, bitsEnd));
      r.pos = memberEnd;
    }
    r.pos = structEnd;
  }
  return r.fail ? undefined : out;
}

/** Decodes a StreamMessageResponse, reading digest lists without building P4Data objects. */
export function decodeStreamMessageResponse(buf: Buffer): StreamMessageResponse {
  if (buf.length < 2 || buf[0] !== DIGEST) return StreamMessageResponse.decode(buf);
  const r = new WireReader(buf, 1);
  const end = r.enter();
  if (end !== buf.length || r.fail) return StreamMessageResponse.decode(buf);
  let digestId = 0;
  let listId = 0n;
  let timestamp = 0n;
  const samples: DigestMember[][] = [];
  while (r.more) {
    const t = r.varint();
    if (t === DIGEST_ID) digestId = r.varint();
    else if (t === LIST_ID) listId = r.varint64();
    else if (t === TIMESTAMP) timestamp = BigInt.asIntN(64, r.varint64());
    else if (t === DATA) {
      const sampleEnd = r.enter();
      const m = members(r, sampleEnd);
      if (!m) return StreamMessageResponse.decode(buf); // not a struct of bitstrings: the general path
      samples.push(m);
      r.pos = sampleEnd;
    } else r.skip(t & 7);
  }
  if (r.fail) return StreamMessageResponse.decode(buf); // malformed: the generated decoder says how
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
