// The protobuf wire format, as the hand-written codecs need it: the client's
// WriteRequest encoder and DigestList decoder, and the software switch's
// WriteRequest decoder and DigestList encoder. Sizes are computed before
// anything is written, so a message is written into one buffer of its exact
// length; reading never runs past the range it is given. Only unsigned
// varints and length-delimited fields: what P4Runtime's table entries and
// digest lists are made of. Also P4Runtime's Uint128 (election ids).
import type { Uint128 } from "./generated/p4/v1/p4runtime.js";

/** Wire types (the low three bits of a tag). */
export const WireType = { Varint: 0, Fixed64: 1, Delimited: 2, Fixed32: 5 } as const;

/** The tag of field `field` with wire type `wire`; a one-byte tag for fields 1 to 15. */
export const tag = (field: number, wire: number): number => (field << 3) | wire;

export const isUint32 = (n: number): boolean => Number.isInteger(n) && n >= 0 && n <= 0xffffffff;

/** Bytes of the varint of a non-negative integer below 2^53. */
export function varintSize(n: number): number {
  if (n < 0x80) return 1;
  if (n < 0x4000) return 2;
  if (n < 0x200000) return 3;
  if (n < 0x10000000) return 4;
  if (n < 0x800000000) return 5;
  if (n < 0x40000000000) return 6;
  return n < 0x2000000000000 ? 7 : 8;
}

/** Bytes of the varint of a non-negative bigint (a uint64). */
export function varintSize64(v: bigint): number {
  let n = 1;
  for (let x = v; x >= 0x80n; x >>= 7n) n++;
  return n;
}

/** Bytes of a length-delimited field with a one-byte tag: tag, length, `len` bytes of content. */
export const delimitedSize = (len: number): number => 1 + varintSize(len) + len;

/** Bytes of a bytes field with a one-byte tag; none when empty (proto3 leaves it out). */
export const bytesFieldSize = (b: Uint8Array): number => (b.length ? delimitedSize(b.length) : 0);

/** Bytes of a varint field with a one-byte tag; none when zero (proto3 leaves it out). */
export const varintFieldSize = (n: number): number => (n ? 1 + varintSize(n) : 0);

/** Bytes of the canonical bitstring of a non-negative integer: big-endian, no leading zeros, at least one byte. */
export function bitstringSize(v: number | bigint): number {
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

/** The unsigned big-endian integer in buf[start, end) of at most 6 bytes, as a number. */
export function readUintBE(buf: Uint8Array, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) n = n * 256 + buf[i]!;
  return n;
}

/** The unsigned big-endian integer in buf[start, end), as a bigint. */
export function readBigUintBE(buf: Uint8Array, start: number, end: number): bigint {
  if (end - start <= 6) return BigInt(readUintBE(buf, start, end));
  let v = 0n;
  for (let i = start; i < end; i++) v = (v << 8n) | BigInt(buf[i]!);
  return v;
}

/** Writes a message into a buffer sized for it beforehand. Tags are one byte. */
export class WireWriter {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  static alloc(size: number): WireWriter {
    return new WireWriter(Buffer.allocUnsafe(size));
  }

  byte(b: number): void {
    this.buf[this.pos++] = b;
  }

  /** The varint of a non-negative integer below 2^53. */
  varint(n: number): void {
    // Division, not >>> 7: exact to 2^53, and no faster in V8 (>>> makes a uint32 of n).
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }

  /** The varint of a non-negative bigint (a uint64). */
  varint64(v: bigint): void {
    const buf = this.buf;
    let x = v;
    while (x >= 0x80n) {
      buf[this.pos++] = Number(x & 0x7fn) | 0x80;
      x >>= 7n;
    }
    buf[this.pos++] = Number(x);
  }

  /** A tag and a varint, always: a varint field, or the head (tag and length) of a length-delimited one. */
  head(tag: number, n: number): void {
    this.buf[this.pos++] = tag;
    this.varint(n);
  }

  /** A tag and a uint64 varint, always. */
  head64(tag: number, v: bigint): void {
    this.buf[this.pos++] = tag;
    this.varint64(v);
  }

  /** A varint field, left out when zero. */
  varintField(tag: number, n: number): void {
    if (!n) return;
    this.buf[this.pos++] = tag;
    this.varint(n);
  }

  /** A bytes field, left out when empty. */
  bytesField(tag: number, b: Uint8Array): void {
    if (!b.length) return;
    this.head(tag, b.length);
    this.raw(b);
  }

  /** Bytes as they are (an encoded message, or a field's content). */
  raw(b: Uint8Array): void {
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** The `n`-byte big-endian bitstring of a non-negative `v` (`n` from bitstringSize). */
  bitstring(v: number | bigint, n: number): void {
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

  /** The buffer, once it is exactly full (a wrong size plan is a bug, not a message). */
  finish(what: string): Buffer {
    if (this.pos !== this.buf.length) throw new Error(`${what} encoding: wrote ${this.pos} bytes, planned ${this.buf.length}`);
    return this.buf;
  }
}

/**
 * Reads [pos, end) of a buffer. Nothing reads past `end`: a truncated or
 * overlong field sets `fail` instead (and a varint read then gives 0), so a
 * decoder can decline the message and leave it to the generated decoder.
 */
export class WireReader {
  fail = false;
  constructor(readonly buf: Uint8Array, public pos = 0, readonly end = buf.length) {}

  /** True while there is more to read and nothing has failed. */
  get more(): boolean {
    return this.pos < this.end && !this.fail;
  }

  /** A varint of up to 8 bytes, as a number (exact below 2^53). */
  varint(): number {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      if (this.pos >= this.end) break;
      const b = this.buf[this.pos++]!;
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 128;
    }
    this.fail = true; // truncated, or beyond 2^56
    return 0;
  }

  /** A varint of up to 10 bytes, as an unsigned bigint (uint64; BigInt.asIntN(64, ...) for int64). */
  varint64(): bigint {
    let v = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) break;
      const b = this.buf[this.pos++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return BigInt.asUintN(64, v);
      shift += 7n;
    }
    this.fail = true;
    return 0n;
  }

  /** Enters a length-delimited field: the reader stands at its content; returns where the content ends. */
  enter(): number {
    const len = this.varint();
    const end = this.pos + len;
    if (end > this.end) this.fail = true;
    return end;
  }

  /** [start, end) of a length-delimited field's content; the reader moves past it. */
  span(): [number, number] {
    const len = this.varint();
    const start = this.pos;
    this.pos += len;
    if (this.pos > this.end) this.fail = true;
    return [start, this.pos];
  }

  /** Skips a field's value of wire type `wire`. */
  skip(wire: number): void {
    if (wire === WireType.Varint) {
      while (this.pos < this.end && this.buf[this.pos]! >= 0x80) this.pos++;
      this.pos++;
    } else if (wire === WireType.Delimited) this.pos = this.enter();
    else if (wire === WireType.Fixed32) this.pos += 4;
    else if (wire === WireType.Fixed64) this.pos += 8;
    else this.fail = true;
    if (this.pos > this.end) this.fail = true;
  }
}

/** A 128-bit unsigned integer (an election id) as P4Runtime's Uint128. */
export function toUint128(v: bigint): Uint128 {
  return { high: v >> 64n, low: v & 0xffffffffffffffffn };
}

/** P4Runtime's Uint128 as a bigint; undefined stays undefined (an absent election id). */
export function fromUint128(v: Uint128 | undefined): bigint | undefined {
  return v === undefined ? undefined : (v.high << 64n) | v.low;
}
