import { crc32 as zlibCrc32 } from "node:zlib";
import { describe, expect, test } from "vitest";
import { and52, mod2k, or52, readBitsBig, readBitsNum, toBytes, writeBits, xor52 } from "../../switch/src/bmv2/bits.js";
import { crc16, crc32, crcCcitt } from "../../switch/src/bmv2/crc.js";

describe("exact-width helpers", () => {
  test("mod2k wraps negative differences like 48-bit unsigned subtraction", () => {
    expect(mod2k(5 - 7, 48)).toBe(2 ** 48 - 2);
    expect(mod2k(2 ** 48 + 3, 48)).toBe(3);
  });

  test("52-bit bitwise operations agree with bigint", () => {
    const vals = [0, 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 47 + 12345, 2 ** 52 - 1];
    for (const a of vals) {
      for (const b of vals) {
        expect(and52(a, b)).toBe(Number(BigInt(a) & BigInt(b)));
        expect(or52(a, b)).toBe(Number(BigInt(a) | BigInt(b)));
        expect(xor52(a, b)).toBe(Number(BigInt(a) ^ BigInt(b)));
      }
    }
  });

  test("bit fields read back what was written at any offset", () => {
    for (const [off, width, value] of [[0, 4, 9n], [4, 4, 5n], [3, 13, 0x1abcn], [7, 48, 0xabcdef012345n], [5, 88, (1n << 87n) + 12345n]] as const) {
      const buf = new Uint8Array(16);
      writeBits(buf, off, width, value);
      expect(readBitsBig(buf, off, width)).toBe(value);
      if (width <= 52) expect(readBitsNum(buf, off, width)).toBe(Number(value));
    }
  });

  test("number and bigint writes agree at every offset and width", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
    for (let i = 0; i < 2000; i++) {
      const width = 1 + Math.floor(rnd() * 52);
      const off = Math.floor(rnd() * 24);
      const value = Math.floor(rnd() * 2 ** Math.min(width, 52));
      const a = new Uint8Array(12);
      const b = new Uint8Array(12);
      writeBits(a, off, width, value);
      writeBits(b, off, width, BigInt(value));
      expect([...a]).toEqual([...b]);
      expect(readBitsNum(a, off, width)).toBe(value);
    }
  });

  test("canonical bytes are big-endian and sized by the width", () => {
    expect([...toBytes(0x0a0b, 12)]).toEqual([0x0a, 0x0b]);
    expect([...toBytes(1n, 24)]).toEqual([0, 0, 1]);
  });
});

describe("BMv2 hash algorithms", () => {
  test("match the standard check values", () => {
    const check = Buffer.from("123456789");
    expect(crc32(check)).toBe(0xcbf43926);
    expect(crc16(check)).toBe(0xbb3d);
    expect(crcCcitt(check)).toBe(0x29b1);
  });

  test("crc32 equals zlib's and crc16 a bitwise CRC-16/ARC on random keys", () => {
    const arc = (b: Uint8Array) => {
      let c = 0;
      for (const x of b) {
        c ^= x;
        for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xa001 : c >>> 1;
      }
      return c;
    };
    let seed = 7;
    for (let n = 0; n < 200; n++) {
      const b = Uint8Array.from({ length: n % 41 }, () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24);
      expect(crc32(b)).toBe(zlibCrc32(b));
      expect(crc16(b)).toBe(arc(b));
    }
  });
});

test("mulmod is (a * b) mod 2^k, exact above 2^53 too", async () => {
  const { mulmod } = await import("../../switch/src/bmv2/bits.js");
  const cases: Array<[number, number, number]> = [[0, 5, 48], [2 ** 47 + 3, 1, 48], [2 ** 47 + 3, 1000, 48], [2 ** 48 - 1, 2 ** 32 - 1, 48], [123456789, 987654321, 52], [7, 9, 3]];
  for (const [a, b, k] of cases) expect(mulmod(a, b, k)).toBe(Number((BigInt(a) * BigInt(b)) % (1n << BigInt(k))));
});
