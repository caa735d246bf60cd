// Pure, symmetric encoding of P4Runtime values (SPEC: canonical bytestrings).
// A bitstring of width W is big-endian, without leading zero bytes, at least
// one byte long, and must fit in W bits.
import { P4ValueError } from "./errors.js";
import { bitstringSize, readBigUintBE, WireWriter } from "./wire.js";

export type Scalar = bigint | number | string | Uint8Array;

/** Canonical bytestring of `value` for a field of `bitwidth` bits. */
export function encodeBits(value: bigint | number, bitwidth: number, what = "value"): Buffer {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0 && value < 2 ** Math.min(bitwidth, 48)) return smallBits(value);
  const v = typeof value === "number" ? BigInt(value) : value;
  if (typeof value === "number" && !Number.isSafeInteger(value)) throw new P4ValueError(`${what}: ${value} is not an integer`);
  if (v < 0n) throw new P4ValueError(`${what}: ${v} is negative`);
  if (v >> BigInt(bitwidth) !== 0n) throw new P4ValueError(`${what}: ${v} does not fit in ${bitwidth} bits`);
  if (v < 0x1000000000000n) return smallBits(Number(v));
  const w = WireWriter.alloc(bitstringSize(v));
  w.bitstring(v, w.buf.length);
  return w.buf;
}

/** Canonical bytes of 0 <= x < 2^48: number arithmetic. */
function smallBits(x: number): Buffer {
  const n = bitstringSize(x);
  const out = Buffer.allocUnsafe(n);
  out.writeUIntBE(x, 0, n);
  return out;
}

/** Value of a bytestring for a field of `bitwidth` bits; accepts non-canonical leading zeros. */
export function decodeBits(bytes: Uint8Array, bitwidth: number, what = "value"): bigint {
  if (bytes.length === 0) throw new P4ValueError(`${what}: empty bytestring`);
  const v = readBigUintBE(bytes, 0, bytes.length);
  if (v >> BigInt(bitwidth) !== 0n) throw new P4ValueError(`${what}: 0x${Buffer.from(bytes).toString("hex")} does not fit in ${bitwidth} bits`);
  return v;
}

/** Strips leading zero bytes (keeping one). */
export function canonical(bytes: Uint8Array): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  return Buffer.from(bytes.subarray(i));
}

export function parseIpv4(text: string, what = "address"): bigint {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text.trim());
  if (!m) throw new P4ValueError(`${what}: '${text}' is not an IPv4 address`);
  let v = 0n;
  for (const part of m.slice(1)) {
    const n = Number(part);
    if (n > 255) throw new P4ValueError(`${what}: '${text}' is not an IPv4 address`);
    v = (v << 8n) | BigInt(n);
  }
  return v;
}

export function formatIpv4(v: bigint | number): string {
  const n = BigInt(v);
  return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join(".");
}

export function parseMac(text: string, what = "address"): bigint {
  const m = /^([0-9a-f]{2})[:-]([0-9a-f]{2})[:-]([0-9a-f]{2})[:-]([0-9a-f]{2})[:-]([0-9a-f]{2})[:-]([0-9a-f]{2})$/i.exec(text.trim());
  if (!m) throw new P4ValueError(`${what}: '${text}' is not a MAC address`);
  return BigInt("0x" + m.slice(1).join(""));
}

export function formatMac(v: bigint | number): string {
  return BigInt(v).toString(16).padStart(12, "0").replace(/(..)(?!$)/g, "$1:");
}

export function parseIpv6(text: string, what = "address"): bigint {
  const t = text.trim();
  const halves = t.split("::");
  if (halves.length > 2) throw new P4ValueError(`${what}: '${text}' is not an IPv6 address`);
  const part = (s: string) => (s === "" ? [] : s.split(":"));
  const head = part(halves[0]!);
  const tail = halves.length === 2 ? part(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if ((halves.length === 1 && missing !== 0) || missing < 0) throw new P4ValueError(`${what}: '${text}' is not an IPv6 address`);
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  let v = 0n;
  for (const g of groups) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) throw new P4ValueError(`${what}: '${text}' is not an IPv6 address`);
    v = (v << 16n) | BigInt("0x" + g);
  }
  return v;
}

export function formatIpv6(v: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => ((v >> BigInt((7 - i) * 16)) & 0xffffn).toString(16));
  return groups.join(":").replace(/(^|:)0(:0)+(:|$)/, "::");
}

/**
 * A value for a field of `bitwidth` bits from a user's scalar: a bigint or
 * number, bytes, or a string: "10.0.0.1" (32 bits), a MAC (48), an IPv6
 * address (128), "0x..." hex, or decimal.
 */
export function parseScalar(value: Scalar, bitwidth: number, what = "value"): bigint {
  let v: bigint;
  if (typeof value === "bigint") v = value;
  else if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new P4ValueError(`${what}: ${value} is not an integer`);
    v = BigInt(value);
  } else if (value instanceof Uint8Array) return decodeBits(value, bitwidth, what);
  else {
    const s = value.trim();
    if (bitwidth === 32 && s.includes(".")) v = parseIpv4(s, what);
    else if (bitwidth === 48 && /[:-]/.test(s)) v = parseMac(s, what);
    else if (bitwidth === 128 && s.includes(":")) v = parseIpv6(s, what);
    else if (/^0x[0-9a-f]+$/i.test(s) || /^\d+$/.test(s)) v = BigInt(s);
    else throw new P4ValueError(`${what}: cannot read '${value}' as a ${bitwidth}-bit value`);
  }
  if (v < 0n || v >> BigInt(bitwidth) !== 0n) throw new P4ValueError(`${what}: ${v} does not fit in ${bitwidth} bits`);
  return v;
}

/** "10.0.0.0/8" -> value and prefix length, checked against the width. */
export function parsePrefix(text: string, bitwidth: number, what = "prefix"): { value: bigint; prefixLen: number } {
  const [addr, len] = text.split("/");
  const prefixLen = len === undefined ? bitwidth : Number(len);
  if (!Number.isInteger(prefixLen) || prefixLen < 0 || prefixLen > bitwidth) throw new P4ValueError(`${what}: bad prefix length in '${text}'`);
  const v = parseScalar(addr!, bitwidth, what);
  const mask = prefixLen === 0 ? 0n : ((1n << BigInt(prefixLen)) - 1n) << BigInt(bitwidth - prefixLen);
  return { value: v & mask, prefixLen };
}
