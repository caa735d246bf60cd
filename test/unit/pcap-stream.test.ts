// The streaming capture reader gives exactly what the whole-file parser
// gives, whatever the read size; the streaming writer gives what encodePcap
// gives.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { CaptureError, encodePcap, openCapture, parseCapture, PcapWriter, type CapturedPacket } from "../../traffic/src/pcap.js";

const dir = mkdtempSync(join(tmpdir(), "pcap-stream-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function file(buf: Buffer): string {
  const path = join(dir, `c${files++}.pcap`);
  writeFileSync(path, buf);
  return path;
}

/** Packets of assorted lengths: empty, smaller and larger than a 100-byte read. */
function frames(n: number): Array<{ data: Buffer; orig: number }> {
  return Array.from({ length: n }, (_, i) => {
    const data = Buffer.alloc([0, 1, 13, 60, 99, 100, 101, 250, 517][i % 9]!);
    for (let k = 0; k < data.length; k++) data[k] = (i * 31 + k) & 0xff;
    return { data, orig: data.length + (i % 3) * 50 };
  });
}

/** A classic pcap in either byte order, µs or ns. */
function pcap(le: boolean, nanos: boolean, packets: Array<{ sec: number; frac: number; data: Buffer; orig: number }>): Buffer {
  const u32 = (b: Buffer, v: number, o: number) => (le ? b.writeUInt32LE(v, o) : b.writeUInt32BE(v, o));
  const h = Buffer.alloc(24);
  u32(h, nanos ? 0xa1b23c4d : 0xa1b2c3d4, 0);
  (le ? h.writeUInt16LE.bind(h) : h.writeUInt16BE.bind(h))(2, 4);
  (le ? h.writeUInt16LE.bind(h) : h.writeUInt16BE.bind(h))(4, 6);
  u32(h, 65535, 16);
  u32(h, 1, 20);
  const recs = packets.map((p) => {
    const r = Buffer.alloc(16);
    u32(r, p.sec, 0);
    u32(r, p.frac, 4);
    u32(r, p.data.length, 8);
    u32(r, p.orig, 12);
    return Buffer.concat([r, p.data]);
  });
  return Buffer.concat([h, ...recs]);
}

/** A pcapng section in either byte order: an SHB, then the given blocks. */
function section(le: boolean, blocks: Array<{ type: number; body: Buffer }>): Buffer {
  const out: Buffer[] = [];
  const block = (type: number, body: Buffer) => {
    const pad = (4 - (body.length % 4)) % 4;
    const b = Buffer.alloc(12 + body.length + pad);
    if (le) {
      b.writeUInt32LE(type, 0);
      b.writeUInt32LE(b.length, 4);
      b.writeUInt32LE(b.length, b.length - 4);
    } else {
      b.writeUInt32BE(type, 0);
      b.writeUInt32BE(b.length, 4);
      b.writeUInt32BE(b.length, b.length - 4);
    }
    body.copy(b, 8);
    out.push(b);
  };
  const shb = Buffer.alloc(16);
  if (le) shb.writeUInt32LE(0x1a2b3c4d, 0);
  else shb.writeUInt32BE(0x1a2b3c4d, 0);
  shb.writeBigInt64LE(-1n, 8);
  block(0x0a0d0d0a, shb);
  for (const b of blocks) block(b.type, b.body);
  return Buffer.concat(out);
}

const ng = (le: boolean) => {
  const u32 = (v: number) => {
    const b = Buffer.alloc(4);
    if (le) b.writeUInt32LE(v);
    else b.writeUInt32BE(v);
    return b;
  };
  const u16 = (v: number) => {
    const b = Buffer.alloc(2);
    if (le) b.writeUInt16LE(v);
    else b.writeUInt16BE(v);
    return b;
  };
  return {
    idb: (tsresol?: number) => ({
      type: 1,
      body: Buffer.concat([u16(1), u16(0), u32(0), ...(tsresol === undefined ? [] : [u16(9), u16(1), Buffer.from([tsresol, 0, 0, 0])]), u16(0), u16(0)]),
    }),
    epb: (ifId: number, ts: bigint, data: Buffer, orig: number) => ({
      type: 6,
      body: Buffer.concat([u32(ifId), u32(Number(ts >> 32n)), u32(Number(ts & 0xffffffffn)), u32(data.length), u32(orig), data]),
    }),
    spb: (data: Buffer) => ({ type: 3, body: Buffer.concat([u32(data.length), data]) }),
    other: (type: number, n: number) => ({ type, body: Buffer.alloc(n, 0xee) }),
  };
};

/** Every packet of a capture read as a stream. */
function stream(path: string, chunkBytes?: number): CapturedPacket[] {
  return [...openCapture(path, chunkBytes === undefined ? undefined : { chunkBytes })];
}

/** The message a capture fails with, read whole and read as a stream. */
function failures(path: string, chunkBytes: number): { whole: string; streamed: string } {
  const message = (f: () => unknown) => {
    try {
      f();
    } catch (err) {
      expect(err).toBeInstanceOf(CaptureError);
      return (err as Error).message;
    }
    return "no error";
  };
  return { whole: message(() => parseCapture(readFileSync(path), path)), streamed: message(() => stream(path, chunkBytes)) };
}

const CHUNKS = [undefined, 1, 7, 100, 1000];

describe("streaming capture reader", () => {
  test.each([
    [true, false],
    [true, true],
    [false, false],
    [false, true],
  ])("pcap, little-endian %s, ns %s: the same packets as the whole-file parser, whatever the read size", (le, nanos) => {
    const packets = frames(40).map((f, i) => ({ ...f, sec: 1_800_000_000 + i, frac: nanos ? 999_999_999 - i : 999_999 - i }));
    const path = file(pcap(le, nanos, packets));
    const whole = parseCapture(readFileSync(path), path);
    expect(whole).toHaveLength(40);
    expect(whole[3]!.timestampNs).toBe(BigInt(1_800_000_003) * 1_000_000_000n + (nanos ? 999_999_996n : 999_996_000n));
    for (const chunk of CHUNKS) expect(stream(path, chunk), `read size ${chunk}`).toEqual(whole);
  });

  test("pcapng: two interfaces with their own resolutions, both byte orders, simple packets, other blocks skipped", () => {
    const l = ng(true);
    const b = ng(false);
    const f = frames(18);
    const buf = Buffer.concat([
      section(true, [
        l.idb(), // µs
        l.other(5, 40), // an interface statistics block
        l.idb(9), // ns
        ...f.slice(0, 6).map((x, i) => l.epb(i % 2, 1_800_000_000_000_000n + BigInt(i) * 1_000_003n, x.data, x.orig)),
        l.other(0x0bad, 300), // an unknown block larger than a read
        l.spb(f[6]!.data),
      ]),
      section(false, [
        b.idb(0x80 | 20), // 2^-20 s
        b.idb(6),
        ...f.slice(7).map((x, i) => b.epb(i % 2, 1_887_436_800_000_000n + BigInt(i) * 7n, x.data, x.orig)),
      ]),
    ]);
    const path = file(buf);
    const whole = parseCapture(readFileSync(path), path);
    expect(whole).toHaveLength(18);
    expect(whole.map((p) => p.interfaceId)).toEqual([0, 1, 0, 1, 0, 1, 0, ...f.slice(7).map((_, i) => i % 2)]);
    expect(whole[1]!.timestampNs).toBe(1_800_000_001_000_003n); // ns interface
    expect(whole[2]!.timestampNs).toBe(1_800_000_002_000_006_000n); // µs interface
    expect(whole[7]!.timestampNs).toBe((1_887_436_800_000_000n * 1_000_000_000n) / 2n ** 20n);
    for (const chunk of CHUNKS) expect(stream(path, chunk), `read size ${chunk}`).toEqual(whole);
  });

  test("each packet's bytes are its own: later reads do not overwrite them", () => {
    const f = frames(200);
    const path = file(encodePcap(f.map((x, i) => ({ timestampNs: BigInt(i), data: x.data, originalLength: x.orig }))));
    const read = stream(path, 100);
    expect(read.map((p) => p.data)).toEqual(f.map((x) => x.data));
  });

  test("progress, early stop and close", () => {
    const path = file(encodePcap(frames(30).map((x, i) => ({ timestampNs: BigInt(i), data: x.data }))));
    const size = readFileSync(path).length;
    const r = openCapture(path, { chunkBytes: 64 });
    expect(r.size).toBe(size);
    expect(r.bytesRead).toBe(0);
    r.next();
    expect(r.packetsRead).toBe(1);
    expect(r.bytesRead).toBe(24 + 16);
    for (const p of r) if (p.timestampNs === 10n) break;
    // Left early: the file is closed, nothing more comes.
    expect(r.packetsRead).toBe(11);
    expect(r.next().done).toBe(true);
    const all = openCapture(path);
    expect([...all]).toHaveLength(30);
    expect(all.bytesRead).toBe(size);
    all.close();
  });

  test("a pipe is read in order, without a size", () => {
    if (spawnSync("mkfifo", ["--version"]).status !== 0) return;
    const packets = frames(50).map((x, i) => ({ timestampNs: 1_800_000_000_000_000_000n + BigInt(i), data: x.data, originalLength: x.orig }));
    const path = file(encodePcap(packets));
    const fifo = join(dir, "fifo");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    const writer = spawn("sh", ["-c", `cat '${path}' > '${fifo}'`]);
    const r = openCapture(fifo, { chunkBytes: 100 });
    expect(r.size).toBeUndefined();
    expect([...r]).toEqual(parseCapture(readFileSync(path), path));
    writer.kill();
  });

  test("truncated and malformed captures fail with the whole-file parser's messages", () => {
    const good = encodePcap(frames(12).map((x, i) => ({ timestampNs: BigInt(i), data: x.data, originalLength: x.orig })));
    const withLink = Buffer.from(good);
    withLink.writeUInt32LE(105, 20);
    const inclOverOrig = encodePcap([{ timestampNs: 1n, data: Buffer.alloc(10) }, { timestampNs: 2n, data: Buffer.alloc(64), originalLength: 30 }]);
    const l = ng(true);
    const pcapng = section(true, [l.idb(9), l.epb(0, 5n, Buffer.alloc(150, 1), 150), l.epb(0, 6n, Buffer.alloc(20, 2), 20)]);
    const badLength = Buffer.from(pcapng);
    badLength.writeUInt32LE(0x1001, 28 + 32 + 4); // the first EPB's length (after a 28-byte SHB and a 32-byte IDB)
    const undescribed = section(true, [l.idb(), l.epb(3, 5n, Buffer.alloc(8), 8)]);
    const badBom = Buffer.from(pcapng);
    badBom.writeUInt32LE(0x12345678, 8);
    const cases: Array<[string, Buffer, RegExp]> = [
      ["empty", Buffer.alloc(0), /too short to be a pcap or pcapng file \(0 bytes\)/],
      ["not a capture", Buffer.from("hello world, not a capture"), /not a pcap or pcapng file \(magic 0x68656c6c\)/],
      ["truncated pcap header", good.subarray(0, 20), /truncated pcap header/],
      ["wrong link type", withLink, /link type 105 is not supported/],
      ["cut in a packet", good.subarray(0, good.length - 10), /packet record 12 at byte \d+ claims \d+ bytes, only \d+ remain/],
      ["cut in a record header", good.subarray(0, good.length - 16 - 13 + 5), /packet record 12 at byte \d+ has a truncated header/],
      ["a record captures more than the packet", inclOverOrig, /packet record 2 captured 64 bytes of a 30-byte packet/],
      ["pcapng cut in a block", pcapng.subarray(0, pcapng.length - 8), /pcapng block at byte 244 has bad length 52/],
      ["pcapng cut in a block header", pcapng.subarray(0, pcapng.length - 45), /truncated pcapng block at byte 244/],
      ["pcapng block of a bad length", badLength, /pcapng block at byte 60 has bad length 4097/],
      ["pcapng packet of an undescribed interface", undescribed, /names interface 3, which was not described/],
      ["pcapng bad byte-order magic", badBom, /bad pcapng byte-order magic at byte 0/],
    ];
    for (const [what, buf, want] of cases) {
      const path = file(buf);
      for (const chunk of [1, 100, 1 << 20]) {
        const f = failures(path, chunk);
        expect(f.whole, what).toMatch(want);
        expect(f.whole, what).toContain(path);
        expect(f.streamed, `${what}, read size ${chunk}`).toBe(f.whole);
      }
    }
  });

  test("stopAtDamage: a capture damaged after its header ends where the damage begins, as Wireshark reads it; the packets before it are delivered and the error kept", () => {
    const good = encodePcap(frames(12).map((x, i) => ({ timestampNs: BigInt(i), data: x.data, originalLength: x.orig })));
    const inclOverOrig = encodePcap([{ timestampNs: 1n, data: Buffer.alloc(10) }, { timestampNs: 2n, data: Buffer.alloc(64), originalLength: 30 }]);
    const l = ng(true);
    const pcapng = section(true, [l.idb(9), l.epb(0, 5n, Buffer.alloc(150, 1), 150), l.epb(0, 6n, Buffer.alloc(20, 2), 20)]);
    const cases: Array<[string, Buffer, number]> = [
      ["cut in a packet", good.subarray(0, good.length - 10), 11],
      ["cut in a record header", good.subarray(0, good.length - 16 - 13 + 5), 11],
      ["a record captures more than the packet", inclOverOrig, 1],
      ["pcapng cut in a block", pcapng.subarray(0, pcapng.length - 8), 1],
      ["pcapng cut in a block header", pcapng.subarray(0, pcapng.length - 45), 1],
    ];
    for (const [what, buf, before] of cases) {
      const path = file(buf);
      for (const chunk of [1, 100, 1 << 20]) {
        const r = openCapture(path, { chunkBytes: chunk, stopAtDamage: true });
        const got = [...r];
        expect(got.length, `${what}, read size ${chunk}`).toBe(before);
        expect(r.packetsRead).toBe(before);
        expect(r.damage?.message, what).toBe(failures(path, chunk).whole);
      }
      // Without it, the damage is thrown (after the same packets).
      expect(() => [...openCapture(path)], what).toThrow(CaptureError);
    }
    // An undamaged capture has none.
    const r = openCapture(file(good), { stopAtDamage: true });
    expect([...r]).toHaveLength(12);
    expect(r.damage).toBeUndefined();
  });

  test("a capture that cannot be opened is a CaptureError naming it", () => {
    const missing = join(dir, "missing.pcap");
    expect(() => openCapture(missing)).toThrow(CaptureError);
    expect(() => openCapture(missing)).toThrow(`cannot read capture ${missing}`);
    expect(() => [...openCapture(dir)]).toThrow(CaptureError);
  });
});

describe("streaming pcap writer", () => {
  const packets = frames(300).map((x, i) => ({ timestampNs: 1_800_000_000_123_456_789n + BigInt(i) * 1_000_001n, data: x.data, originalLength: i % 4 ? x.orig : undefined }));

  test("writes what encodePcap encodes, block by block, and reads back identically", () => {
    for (const [blockBytes, snaplen] of [[1, 128], [4096, 65535], [undefined, 64]] as const) {
      const path = join(dir, `w-${blockBytes}-${snaplen}.pcap`);
      const w = new PcapWriter(path, { blockBytes, snaplen });
      for (const p of packets) w.write(p);
      w.close();
      expect(w.packets).toBe(packets.length);
      const bytes = readFileSync(path);
      expect(bytes.equals(encodePcap(packets, snaplen))).toBe(true);
      expect(w.bytes).toBe(bytes.length);
      const back = stream(path, 100);
      expect(back.map((p) => p.timestampNs)).toEqual(packets.map((p) => p.timestampNs));
      expect(back.map((p) => p.data)).toEqual(packets.map((p) => p.data.subarray(0, snaplen)));
      expect(back.map((p) => p.originalLength)).toEqual(packets.map((p) => p.originalLength ?? p.data.length));
    }
  });

  test("an unwritable path throws at once", () => {
    expect(() => new PcapWriter(join(dir, "no-such-dir", "out.pcap"))).toThrow(/ENOENT/);
    expect(() => new PcapWriter(dir)).toThrow(/EISDIR/);
  });

  test("an empty capture is a header alone", () => {
    const path = join(dir, "empty.pcap");
    new PcapWriter(path).close();
    expect(readFileSync(path).equals(encodePcap([]))).toBe(true);
    expect(stream(path)).toEqual([]);
  });
});
