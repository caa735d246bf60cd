// Exact-width integer helpers for compiled P4 code. Values up to 52 bits
// travel as JavaScript numbers (exact below 2^53); wider ones as bigint.

/** Widest field kept in a number. */
export const NUM_BITS = 52;

export const POW2: readonly number[] = Array.from({ length: 54 }, (_, i) => 2 ** i);

/** x mod 2^k for an integer number x (possibly negative), k <= 52. */
export function mod2k(x: number, k: number): number {
  const p = POW2[k]!;
  const r = x % p;
  return r < 0 ? r + p : r;
}

/** (a * b) mod 2^k of two non-negative integers below 2^53, k <= 52: exact. */
export function mulmod(a: number, b: number, k: number): number {
  const p = a * b;
  // A product above 2^53 - 1 rounds to at least 2^53, so this test is exact.
  if (p <= Number.MAX_SAFE_INTEGER) return p < POW2[k]! ? p : p % POW2[k]!;
  return Number((BigInt(a) * BigInt(b)) & ((1n << BigInt(k)) - 1n));
}

/** Bitwise AND of two non-negative integers below 2^53. */
export function and52(a: number, b: number): number {
  if (a < 0x100000000 && b < 0x100000000) return (a & b) >>> 0;
  const ah = Math.floor(a / 0x100000000);
  const bh = Math.floor(b / 0x100000000);
  return ((ah & bh) >>> 0) * 0x100000000 + ((a & b) >>> 0);
}

export function or52(a: number, b: number): number {
  if (a < 0x100000000 && b < 0x100000000) return (a | b) >>> 0;
  const ah = Math.floor(a / 0x100000000);
  const bh = Math.floor(b / 0x100000000);
  return ((ah | bh) >>> 0) * 0x100000000 + ((a | b) >>> 0);
}

export function xor52(a: number, b: number): number {
  if (a < 0x100000000 && b < 0x100000000) return (a ^ b) >>> 0;
  const ah = Math.floor(a / 0x100000000);
  const bh = Math.floor(b / 0x100000000);
  return ((ah ^ bh) >>> 0) * 0x100000000 + ((a ^ b) >>> 0);
}

/** Two's complement value of `x` in `w` bits (BMv2 two_comp_mod). */
export function twoCompMod(x: bigint, w: number): bigint {
  return BigInt.asIntN(w, x);
}

/** Reads `width` bits starting `bitOff` bits into `buf`, as a number (width <= 52). */
export function readBitsNum(buf: Uint8Array, bitOff: number, width: number): number {
  const byte = bitOff >>> 3;
  const shift = bitOff & 7;
  const total = shift + width;
  const nbytes = (total + 7) >>> 3;
  if (total <= 48) {
    let v = 0;
    for (let i = 0; i < nbytes; i++) v = v * 256 + buf[byte + i]!;
    const drop = nbytes * 8 - total;
    return mod2k(Math.floor(v / POW2[drop]!), width);
  }
  return Number(readBitsBig(buf, bitOff, width));
}

/** Reads `width` bits starting `bitOff` bits into `buf`, as a bigint. */
export function readBitsBig(buf: Uint8Array, bitOff: number, width: number): bigint {
  const byte = bitOff >>> 3;
  const shift = bitOff & 7;
  const total = shift + width;
  const nbytes = (total + 7) >>> 3;
  let v = 0n;
  for (let i = 0; i < nbytes; i++) v = (v << 8n) | BigInt(buf[byte + i]!);
  const drop = BigInt(nbytes * 8 - total);
  return BigInt.asUintN(width, v >> drop);
}

/** ORs the low `width` bits of a number into `buf` at `bitOff` (the bits must be zero); width <= 52. */
export function writeBitsNum(buf: Uint8Array, bitOff: number, width: number, value: number): void {
  const shift = bitOff & 7;
  const byte = bitOff >>> 3;
  let v = value >= 0 && value < POW2[width]! ? value : mod2k(value, width);
  if (shift === 0 && (width & 7) === 0) {
    // Byte-aligned: big-endian bytes.
    for (let i = (width >>> 3) - 1; i >= 0; i--) {
      buf[byte + i] = v % 256;
      v = Math.floor(v / 256);
    }
    return;
  }
  const total = shift + width;
  if (total <= 32) {
    const w = (v * POW2[32 - total]!) >>> 0;
    buf[byte] = buf[byte]! | (w >>> 24);
    if (total > 8) buf[byte + 1] = buf[byte + 1]! | ((w >>> 16) & 0xff);
    if (total > 16) buf[byte + 2] = buf[byte + 2]! | ((w >>> 8) & 0xff);
    if (total > 24) buf[byte + 3] = buf[byte + 3]! | (w & 0xff);
    return;
  }
  writeBitsBig(buf, bitOff, width, BigInt(v));
}

/** ORs the low `width` bits of a bigint into `buf` at `bitOff` (the bits must be zero). */
export function writeBitsBig(buf: Uint8Array, bitOff: number, width: number, value: bigint): void {
  let v = BigInt.asUintN(width, value);
  let end = bitOff + width; // exclusive
  while (end > bitOff) {
    const lastByte = (end - 1) >>> 3;
    const bitInByteFromLeft = (end - 1) & 7; // position of bit end-1 within its byte
    const avail = Math.min(bitInByteFromLeft + 1, end - bitOff);
    const chunk = Number(v & ((1n << BigInt(avail)) - 1n));
    const shiftLeft = 7 - bitInByteFromLeft;
    buf[lastByte] = buf[lastByte]! | (chunk << shiftLeft);
    v >>= BigInt(avail);
    end -= avail;
  }
}

/** ORs the low `width` bits of `value` into `buf` at `bitOff` (the bits must be zero). */
export function writeBits(buf: Uint8Array, bitOff: number, width: number, value: number | bigint): void {
  if (typeof value === "number" && width <= 52) writeBitsNum(buf, bitOff, width, value);
  else writeBitsBig(buf, bitOff, width, BigInt(value));
}

/** Canonical big-endian bytes of `value` in `width` bits (ceil(width/8) bytes). */
export function toBytes(value: number | bigint, width: number): Buffer {
  const n = (width + 7) >>> 3;
  const out = Buffer.alloc(n);
  let v = typeof value === "bigint" ? BigInt.asUintN(width, value) : BigInt(value);
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

export function fromBytes(bytes: Uint8Array): bigint {
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  return v;
}

/** Parses a BMv2 JSON hexstr ("0x0a", "-0x1"). */
export function parseHexstr(s: string): bigint {
  const neg = s.startsWith("-");
  const body = neg ? s.slice(1) : s;
  const v = BigInt(body.startsWith("0x") || body.startsWith("0X") ? body : "0x" + body);
  return neg ? -v : v;
}

/** Number of bits needed for |v| (0 for 0). */
export function bitLength(v: bigint): number {
  let x = v < 0n ? -v : v;
  let n = 0;
  while (x > 0n) {
    x >>= 1n;
    n++;
  }
  return n;
}
