import { describe, expect, test } from "vitest";
import { CaptureError, encodePcap, parseCapture } from "../../traffic/src/pcap.js";
import { pcapngBlock } from "../support/pcapng.js";

function pcapng(tsresol: number | undefined, packets: Array<{ ts: bigint; data: Buffer; orig?: number }>): Buffer {
  const blocks: Buffer[] = [];
  const block = (type: number, body: Buffer) => blocks.push(pcapngBlock(type, body));
  const shb = Buffer.alloc(16);
  shb.writeUInt32LE(0x1a2b3c4d, 0);
  shb.writeUInt16LE(1, 4);
  shb.writeBigInt64LE(-1n, 8);
  block(0x0a0d0d0a, shb);
  const opts = tsresol === undefined ? Buffer.alloc(4) : Buffer.from([9, 0, 1, 0, tsresol, 0, 0, 0, 0, 0, 0, 0]);
  const idb = Buffer.concat([Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]), opts]);
  block(1, idb);
  for (const p of packets) {
    const h = Buffer.alloc(20);
    h.writeUInt32LE(0, 0);
    h.writeUInt32LE(Number(p.ts >> 32n), 4);
    h.writeUInt32LE(Number(p.ts & 0xffffffffn), 8);
    h.writeUInt32LE(p.data.length, 12);
    h.writeUInt32LE(p.orig ?? p.data.length, 16);
    block(6, Buffer.concat([h, p.data]));
  }
  return Buffer.concat(blocks);
}

describe("captures", () => {
  test("pcap (ns) round-trips timestamps, bytes and original lengths", () => {
    const pkts = [
      { timestampNs: 1_800_000_000_123_456_789n, data: Buffer.from("0123456789abcdef", "hex"), originalLength: 200 },
      { timestampNs: 1_800_000_001_000_000_001n, data: Buffer.alloc(60, 7) },
    ];
    const back = parseCapture(encodePcap(pkts));
    expect(back.map((p) => p.timestampNs)).toEqual(pkts.map((p) => p.timestampNs));
    expect(back[0]!.originalLength).toBe(200);
    expect(back[1]!.data.equals(pkts[1]!.data)).toBe(true);
  });

  test("pcap with microsecond timestamps and big-endian headers", () => {
    const b = Buffer.alloc(24 + 16 + 4);
    b.writeUInt32BE(0xa1b2c3d4, 0);
    b.writeUInt32BE(1, 20);
    b.writeUInt32BE(100, 24);
    b.writeUInt32BE(250, 28);
    b.writeUInt32BE(4, 32);
    b.writeUInt32BE(64, 36);
    const [p] = parseCapture(b);
    expect(p!.timestampNs).toBe(100_000_250_000n);
    expect(p!.originalLength).toBe(64);
  });

  test("pcapng with default µs and with nanosecond if_tsresol", () => {
    const us = parseCapture(pcapng(undefined, [{ ts: 1_500_000n, data: Buffer.alloc(20) }]));
    expect(us[0]!.timestampNs).toBe(1_500_000_000n);
    const ns = parseCapture(pcapng(9, [{ ts: 1_500_000_123n, data: Buffer.alloc(20), orig: 900 }]));
    expect(ns[0]!.timestampNs).toBe(1_500_000_123n);
    expect(ns[0]!.originalLength).toBe(900);
  });

  test("pcapng: an interface's if_tsoffset (seconds) is added to its timestamps", () => {
    const shb = Buffer.alloc(16);
    shb.writeUInt32LE(0x1a2b3c4d, 0);
    shb.writeUInt16LE(1, 4);
    shb.writeBigInt64LE(-1n, 8);
    const idb = (offset: bigint) => {
      const b = Buffer.alloc(8 + 8 + 12 + 4);
      b.writeUInt16LE(1, 0);
      b.writeUInt16LE(9, 8); // if_tsresol: ns
      b.writeUInt16LE(1, 10);
      b[12] = 9;
      b.writeUInt16LE(14, 16); // if_tsoffset
      b.writeUInt16LE(8, 18);
      b.writeBigInt64LE(offset, 20);
      return b;
    };
    const epb = (ifId: number, ts: bigint) => {
      const h = Buffer.alloc(20);
      h.writeUInt32LE(ifId, 0);
      h.writeUInt32LE(Number(ts >> 32n), 4);
      h.writeUInt32LE(Number(ts & 0xffffffffn), 8);
      h.writeUInt32LE(20, 12);
      h.writeUInt32LE(20, 16);
      return pcapngBlock(6, Buffer.concat([h, Buffer.alloc(20)]));
    };
    const file = Buffer.concat([pcapngBlock(0x0a0d0d0a, shb), pcapngBlock(1, idb(1_700_000_000n)), pcapngBlock(1, idb(0n)), epb(0, 123n), epb(1, 1_700_000_000_000_000_456n)]);
    expect(parseCapture(file).map((p) => p.timestampNs)).toEqual([1_700_000_000_000_000_123n, 1_700_000_000_000_000_456n]);
  });

  test("malformed captures are rejected with the reason", () => {
    expect(() => parseCapture(Buffer.from("hello world, not a capture"))).toThrow(/not a pcap or pcapng file/);
    const good = encodePcap([{ timestampNs: 1n, data: Buffer.alloc(64) }]);
    expect(() => parseCapture(good.subarray(0, good.length - 10))).toThrow(CaptureError);
    expect(() => parseCapture(good.subarray(0, good.length - 10))).toThrow(/packet record 1 .* claims 64 bytes/);
    const wrongLink = Buffer.from(good);
    wrongLink.writeUInt32LE(105, 20);
    expect(() => parseCapture(wrongLink)).toThrow(/link type 105 is not supported/);
  });
});
