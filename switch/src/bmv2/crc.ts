// Hash algorithms of BMv2 (src/bm_sim/calculations.cpp), bit-exact.

function makeTable(poly: number, width: 16 | 32): Uint32Array {
  const table = new Uint32Array(256);
  const top = width === 32 ? 0x80000000 : 0x8000;
  const mask = width === 32 ? 0xffffffff : 0xffff;
  for (let i = 0; i < 256; i++) {
    let r = (i << (width - 8)) >>> 0;
    for (let b = 0; b < 8; b++) r = (r & top ? ((r << 1) ^ poly) : r << 1) & mask;
    table[i] = r >>> 0;
  }
  return table;
}

function reflect(v: number, bits: number): number {
  let r = 0;
  for (let i = 0; i < bits; i++) {
    if (v & (1 << i)) r |= 1 << (bits - 1 - i);
  }
  return r >>> 0;
}

const CCITT_TABLE = makeTable(0x1021, 16);

/** Table of a reflected CRC (input and output bit-reversed), one byte at a time. */
function makeReflectedTable(reflectedPoly: number): Uint32Array {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let b = 0; b < 8; b++) c = c & 1 ? (c >>> 1) ^ reflectedPoly : c >>> 1;
    table[i] = c >>> 0;
  }
  return table;
}

const CRC32_REFLECTED = makeReflectedTable(reflect(0x04c11db7, 32));
const CRC16_REFLECTED = makeReflectedTable(reflect(0x8005, 16));

/** CRC-32 (IEEE 802.3; BMv2 "crc32"): reflected in and out, so no bit reversal per byte. */
export function crc32(buf: Uint8Array, len = buf.length): number {
  let c = 0xffffffff;
  for (let i = 0; i < len; i++) c = CRC32_REFLECTED[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** CRC-16/ARC (BMv2 "crc16"): reflected in and out. */
export function crc16(buf: Uint8Array, len = buf.length): number {
  let c = 0;
  for (let i = 0; i < len; i++) c = CRC16_REFLECTED[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return c;
}

/** CRC-16/CCITT-FALSE (BMv2 "crcCCITT"). */
export function crcCcitt(buf: Uint8Array, len = buf.length): number {
  let rem = 0xffff;
  for (let i = 0; i < len; i++) {
    const data = buf[i]! ^ (rem >>> 8);
    rem = (CCITT_TABLE[data]! ^ (rem << 8)) & 0xffff;
  }
  return rem;
}

/** Internet checksum (BMv2 "csum16"). */
export function csum16(whole: Uint8Array, len = whole.length): number {
  const buf = len === whole.length ? whole : whole.subarray(0, len);
  let sum = 0;
  for (let i = 0; i + 1 < buf.length; i += 2) sum += (buf[i]! << 8) | buf[i + 1]!;
  if (buf.length & 1) sum += buf[buf.length - 1]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  return ~sum & 0xffff;
}

/** BMv2 "identity": the input bytes as a big-endian integer (low 64 bits). */
export function identity(whole: Uint8Array, len = whole.length): bigint {
  const buf = len === whole.length ? whole : whole.subarray(0, len);
  let v = 0n;
  for (const b of buf) v = ((v << 8n) | BigInt(b)) & 0xffffffffffffffffn;
  return v;
}

/** BMv2 "xor16": XOR of the input's 16-bit words. */
export function xor16(whole: Uint8Array, len = whole.length): number {
  const buf = len === whole.length ? whole : whole.subarray(0, len);
  let v = 0;
  for (let i = 0; i + 1 < buf.length; i += 2) v ^= (buf[i]! << 8) | buf[i + 1]!;
  if (buf.length & 1) v ^= buf[buf.length - 1]! << 8;
  return v;
}

export const HASH_ALGORITHMS: Readonly<Record<string, (buf: Uint8Array, len?: number) => number | bigint>> = {
  crc32,
  crc16,
  crcCCITT: crcCcitt,
  csum16,
  identity,
  xor16,
};
