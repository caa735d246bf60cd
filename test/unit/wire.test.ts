// The wire helpers of the hand-written codecs against @bufbuild/protobuf's
// reader and writer (what the generated codecs use), and the codecs built on
// them against the generated codecs, on random messages.
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";
import { expect, test } from "vitest";
import { StreamMessageResponse } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { decodeStreamMessageResponse, isFastDigestList, memberBytes } from "../../p4runtime/src/digest-decoding.js";
import { encodeBits } from "../../p4runtime/src/values.js";
import {
  bitstringSize,
  bytesFieldSize,
  delimitedSize,
  fromUint128,
  readBigUintBE,
  readUintBE,
  tag,
  toUint128,
  varintFieldSize,
  varintSize,
  varintSize64,
  WireReader,
  WireType,
  WireWriter,
} from "../../p4runtime/src/wire.js";
import { encodeDigestListMessage } from "../../switch/src/p4runtime/digest-encoding.js";

let seed = 77;
const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n;
/** Integers at and around every varint length boundary, up to 2^64 - 1. */
const boundaries: bigint[] = [0n, 1n];
for (let k = 7; k <= 63; k += 7) boundaries.push((1n << BigInt(k)) - 1n, 1n << BigInt(k), (1n << BigInt(k)) + 1n);
boundaries.push(2n ** 31n - 1n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 64n - 1n);

test("varints: sizes, bytes and values as @bufbuild/protobuf writes and reads them", () => {
  for (const v of boundaries) {
    const want = new BinaryWriter().uint64(v).finish();
    expect(varintSize64(v), `size of ${v}n`).toBe(want.length);
    const w = WireWriter.alloc(want.length);
    w.varint64(v);
    expect([...w.finish("varint")], `bytes of ${v}n`).toEqual([...want]);
    expect(new WireReader(want).varint64()).toBe(v);
    if (v <= BigInt(Number.MAX_SAFE_INTEGER)) {
      const n = Number(v);
      expect(varintSize(n), `size of ${n}`).toBe(want.length);
      const wn = WireWriter.alloc(want.length);
      wn.varint(n);
      expect([...wn.finish("varint")], `bytes of ${n}`).toEqual([...want]);
      if (want.length <= 8) expect(new WireReader(want).varint()).toBe(n);
    }
  }
  expect(varintFieldSize(0)).toBe(0);
  expect(varintFieldSize(300)).toBe(3);
  expect(delimitedSize(200)).toBe(1 + 2 + 200);
  expect(bytesFieldSize(new Uint8Array(0))).toBe(0);
  expect(bytesFieldSize(new Uint8Array(3))).toBe(5);
  expect(tag(4, WireType.Delimited)).toBe(34);
});

test("fields: what the writer leaves out, heads and raw bytes, as @bufbuild/protobuf writes them", () => {
  for (let n = 0; n < 200; n++) {
    const want = new BinaryWriter();
    const fields: Array<[number, number | Uint8Array]> = Array.from({ length: 1 + rnd(6) }, () => [1 + rnd(15), rnd(2) ? [0, 1, 127, 128, 2 ** 31, 2 ** 32 - 1][rnd(6)]! : new Uint8Array(Array.from({ length: rnd(3) * 70 }, () => rnd(256)))]);
    let size = 0;
    for (const [f, v] of fields) {
      if (typeof v === "number") {
        if (v) want.tag(f, 0).uint32(v);
        size += varintFieldSize(v);
      } else {
        if (v.length) want.tag(f, 2).bytes(v);
        size += bytesFieldSize(v);
      }
    }
    const w = WireWriter.alloc(size);
    for (const [f, v] of fields) {
      if (typeof v === "number") w.varintField(tag(f, WireType.Varint), v);
      else w.bytesField(tag(f, WireType.Delimited), v);
    }
    expect(Buffer.compare(w.finish("fields"), want.finish()), `message ${n}`).toBe(0);
  }
  const w = WireWriter.alloc(3);
  w.head(tag(2, WireType.Delimited), 1);
  expect(() => w.finish("short")).toThrow(/wrote 2 bytes, planned 3/);
});

test("the reader walks fields as @bufbuild/protobuf does, and never reads past its range", () => {
  const bytes = new BinaryWriter().tag(1, 0).uint64(2n ** 60n).tag(2, 2).bytes(new Uint8Array([7, 8, 9])).tag(3, 5).fixed32(5).tag(4, 1).fixed64(6n).tag(5, 0).uint32(300).finish();
  const r = new WireReader(bytes);
  const seen: number[] = [];
  let span: [number, number] | undefined;
  while (r.more) {
    const t = r.varint();
    seen.push(t >>> 3);
    if (t === tag(2, WireType.Delimited)) span = r.span();
    else if (t === tag(5, WireType.Varint)) expect(r.varint()).toBe(300);
    else r.skip(t & 7);
  }
  expect(r.fail).toBe(false);
  expect(seen).toEqual([1, 2, 3, 4, 5]);
  expect([...bytes.subarray(...span!)]).toEqual([7, 8, 9]);
  const generic = new BinaryReader(bytes);
  generic.tag();
  generic.uint64();
  generic.tag();
  expect(generic.pos).toBe(span![0] - 1);

  // Truncated: a varint, a length, a fixed field that run past the end all fail, reading nothing beyond.
  for (let cut = 1; cut < bytes.length; cut++) {
    const t = new WireReader(bytes, 0, cut);
    while (t.more) {
      const x = t.varint();
      if (x === tag(5, WireType.Varint)) t.varint();
      else t.skip(x & 7);
    }
    expect(t.pos <= cut + 8, `cut at ${cut}`).toBe(true);
  }
  const long = new WireReader(new Uint8Array([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]));
  expect([long.varint(), long.fail]).toEqual([0, true]); // beyond 8 bytes: not a number
  const past = new WireReader(new Uint8Array([0x0a, 0x05, 1, 2]));
  past.varint();
  past.span();
  expect(past.fail).toBe(true);
  const group = new WireReader(new Uint8Array([0x0b]));
  group.skip(group.varint() & 7);
  expect(group.fail).toBe(true);
});

test("bitstrings: canonical sizes and bytes, read back as numbers and bigints", () => {
  const values: Array<number | bigint> = [0, 1, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 40, 2 ** 48 - 1, 2 ** 48, 2 ** 53 - 1, 0n, 255n, 2n ** 48n, 2n ** 64n - 1n, (1n << 1200n) - 3n];
  for (const v of values) {
    const want = encodeBits(BigInt(v), 2000);
    expect(bitstringSize(v), `size of ${v}`).toBe(want.length);
    const w = WireWriter.alloc(want.length);
    w.bitstring(v, want.length);
    expect(Buffer.compare(w.finish("bitstring"), want), `bytes of ${v}`).toBe(0);
    expect(readBigUintBE(want, 0, want.length)).toBe(BigInt(v));
    if (want.length <= 6) expect(readUintBE(want, 0, want.length)).toBe(Number(v));
  }
  // Leading zeros are read, not refused (P4Runtime servers accept them).
  expect(readBigUintBE(new Uint8Array([0, 0, 0, 0, 0, 0, 0, 1, 2]), 0, 9)).toBe(258n);
});

test("Uint128: election ids both ways", () => {
  for (const v of [0n, 1n, 2n ** 64n - 1n, 2n ** 64n, 2n ** 128n - 1n]) expect(fromUint128(toUint128(v))).toBe(v);
  expect(toUint128(2n ** 64n + 5n)).toEqual({ high: 1n, low: 5n });
  expect(fromUint128(undefined)).toBeUndefined();
});

test("digest lists: the switch's encoder writes what the generated encoder writes, and the client's decoder reads what the generated decoder reads", () => {
  for (let n = 0; n < 200; n++) {
    const width = [1, 8, 16, 32, 48, 53, 64, 128, 1200][rnd(9)]!;
    const member = (): number | bigint => {
      const v = BigInt.asUintN(width, BigInt(rnd(2 ** 24)) * BigInt(rnd(2 ** 24)) * (rnd(2) ? 1n : BigInt(rnd(2 ** 24)) << 40n));
      return width <= 52 && rnd(2) ? Number(v) : v;
    };
    const samples = Array.from({ length: rnd(40) }, () => Array.from({ length: 1 + rnd(6) }, member));
    const digestId = 1 + rnd(2 ** 31);
    const listId = BigInt(1 + rnd(2 ** 24)) << BigInt(rnd(40));
    const ts = BigInt(1 + rnd(2 ** 24)) << BigInt(rnd(40));
    const bytes = encodeDigestListMessage(digestId, listId, ts, samples);
    const generic = StreamMessageResponse.decode(bytes);
    expect(Buffer.compare(bytes, Buffer.from(StreamMessageResponse.encode(generic).finish())), `list ${n}`).toBe(0);
    const fast = decodeStreamMessageResponse(bytes);
    if (fast.update?.$case !== "digest" || !isFastDigestList(fast.update.value)) throw new Error("not read by the fast path");
    expect(fast.update.value.samples.map((s) => s.map((m) => readBigUintBE(memberBytes(m), 0, memberBytes(m).length)))).toEqual(samples.map((s) => s.map(BigInt)));
    expect(StreamMessageResponse.toJSON(fast)).toEqual(StreamMessageResponse.toJSON(generic));
  }
});

test("a truncated or malformed digest list goes to the generated decoder (which says what is wrong) instead of being misread", () => {
  const bytes = encodeDigestListMessage(3, 9n, 1234n, [[1, 2n ** 70n, 3], [4, 5, 6]]);
  for (let cut = 2; cut < bytes.length; cut++) {
    const part = Buffer.from(bytes.subarray(0, cut));
    part[1] = cut - 2; // the outer length still matches: the damage is inside
    let fast: unknown;
    let generic: unknown;
    try {
      fast = StreamMessageResponse.toJSON(decodeStreamMessageResponse(part));
    } catch (err) {
      fast = (err as Error).message;
    }
    try {
      generic = StreamMessageResponse.toJSON(StreamMessageResponse.decode(part));
    } catch (err) {
      generic = (err as Error).message;
    }
    expect(fast, `cut at ${cut}`).toEqual(generic);
  }
});
