// Replay reads captures as streams: a capture read from its file, packet by
// packet, gives exactly the records of the same packets replayed from memory.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { replayCaptures, replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import type { FeedPacket } from "../../app/rig.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { PcapWriter, encodePcap, parseCapture, readCapture, writePcap } from "../../traffic/src/pcap.js";
import { pcapngBlock } from "../support/pcapng.js";

const dir = mkdtempSync(join(tmpdir(), "replay-stream-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A record file's lines, sorted: the same records whatever order they were written in. */
const lines = (f: string): string[] => readFileSync(f, "utf8").trim().split("\n").sort();

function write(path: string, packets: readonly FeedPacket[]): void {
  const w = new PcapWriter(path, { snaplen: 128, blockBytes: 64 << 10 });
  for (const p of packets) w.write(p);
  w.close();
}

test("a capture streamed from its file gives the records of its packets replayed from memory", async () => {
  const traffic = generateTraffic({ seed: 3, layout: "single", durationNs: 150_000_000, hosts: 2, targets: 2, snaplen: 128 });
  const sw = traffic.switches[0]!;
  const topology = Topology.parse(sw.topology);
  const capture = join(dir, `${sw.name}.pcap`);
  write(capture, sw.packets);

  const progress: Array<[number, number]> = [];
  const streamed = await replayCaptures([{ path: capture, topology }], {
    out: join(dir, "streamed.jsonl"),
    forwarded: join(dir, "forwarded.pcap"),
    onProgress: (done, total) => progress.push([done, total]),
  });
  const memory = await replaySwitches([{ name: sw.name, topology, packets: sw.packets }], { out: join(dir, "memory.jsonl") });

  expect(streamed.packets).toBe(sw.packets.length);
  expect(memory.packets).toBe(sw.packets.length);
  expect(streamed.records).toBeGreaterThan(100);
  expect(streamed.records).toBe(memory.records);
  expect(lines(join(dir, "streamed.jsonl"))).toEqual(lines(join(dir, "memory.jsonl")));
  // The total of a stream is estimated from the bytes read, and exact at the end.
  expect(progress.at(-1)).toEqual([sw.packets.length, sw.packets.length]);
  for (const [done, total] of progress.filter(([d]) => d >= sw.packets.length / 4)) {
    expect(total).toBeGreaterThanOrEqual(done);
    expect(Math.abs(total - sw.packets.length)).toBeLessThan(sw.packets.length * 0.1);
  }
  // Forwarded packets were written as they went: every one the switch sent out, unchanged.
  const forwarded = readCapture(join(dir, "forwarded.pcap"));
  expect(forwarded.length).toBe(streamed.rigs[0]!.sw.stats().packetsOut);
  expect(forwarded.length).toBeGreaterThan(sw.packets.length * 0.9);
  expect(forwarded[100]!.data.equals(sw.packets[100]!.data)).toBe(true);
  expect(forwarded[100]!.timestampNs).toBe(sw.packets[100]!.timestampNs);
}, 120_000);

test("two captures streamed, streams read once, and arrays give the same records (clock alignment included)", async () => {
  const traffic = generateTraffic({ seed: 3, durationNs: 150_000_000, hosts: 2, targets: 2 });
  // The storage side's clock is 2.5 s behind the compute side's.
  const skew = 2_500_000_017n;
  const switches = traffic.switches.map((s) => ({
    name: s.name,
    topology: Topology.parse(s.topology),
    packets: s.name === "tor-s" ? s.packets.map((p) => ({ ...p, timestampNs: p.timestampNs - skew })) : s.packets,
  }));
  for (const s of switches) write(join(dir, `${s.name}.pcap`), s.packets);

  await replayCaptures(switches.map((s) => ({ path: join(dir, `${s.name}.pcap`), topology: s.topology })), { out: join(dir, "two-streamed.jsonl") });
  await replaySwitches(switches, { out: join(dir, "two-arrays.jsonl") });
  // Streams that cannot be read twice: their first packets are read ahead for the alignment.
  const once = await replaySwitches(
    switches.map((s) => ({ ...s, packets: (function* () { yield* s.packets; })() })),
    { out: join(dir, "two-once.jsonl") },
  );

  expect(once.packets).toBe(switches.reduce((a, s) => a + s.packets.length, 0));
  const want = lines(join(dir, "two-arrays.jsonl"));
  expect(want.filter((l) => l.includes('"rtt_ns":') && !l.includes('"rtt_ns":null')).length).toBeGreaterThan(50);
  expect(lines(join(dir, "two-streamed.jsonl"))).toEqual(want);
  expect(lines(join(dir, "two-once.jsonl"))).toEqual(want);
}, 180_000);

/** The capture's Ethernet frames under another link type's header, as libpcap writes them (a VLAN tag stays in the frame: libpcap puts it back). */
function relink(linktype: number, data: Buffer, i: number): Buffer {
  const [dst, src, type, rest] = [data.subarray(0, 6), data.subarray(6, 12), data.readUInt16BE(12), data.subarray(14)];
  if (linktype === 113) {
    const h = Buffer.alloc(16);
    h.writeUInt16BE(i % 2 === 0 ? 0 : 4, 0); // received by this host, or sent by it
    h.writeUInt16BE(1, 2); // ARPHRD_ETHER
    h.writeUInt16BE(6, 4);
    src.copy(h, 6);
    h.writeUInt16BE(type, 14);
    return Buffer.concat([h, rest]);
  }
  if (linktype === 276) {
    const h = Buffer.alloc(20);
    h.writeUInt16BE(type, 0);
    h.writeUInt32BE(3 + (i % 2), 4); // interface index
    h.writeUInt16BE(1, 8);
    h[10] = i % 2 === 0 ? 0 : 4;
    h[11] = 6;
    src.copy(h, 12);
    return Buffer.concat([h, rest]);
  }
  void dst;
  return Buffer.from(rest); // raw IP
}

test("captures of Linux's any device (cooked v1 and v2) and of raw IP, pcap and pcapng, give the records of the Ethernet capture", async () => {
  const traffic = generateTraffic({ seed: 5, layout: "single", durationNs: 100_000_000, hosts: 2, targets: 2, ip: "mixed" });
  const sw = traffic.switches[0]!;
  const topology = Topology.parse(sw.topology);
  const ethernet = join(dir, "ethernet.pcap");
  writePcap(ethernet, sw.packets);
  await replayCaptures([{ path: ethernet, topology, switchId: sw.name }], { out: join(dir, "ethernet.jsonl") });
  const expected = lines(join(dir, "ethernet.jsonl"));
  expect(expected.filter((l) => l.includes('"type":"io"') && l.includes("2001:db8")).length).toBeGreaterThan(10);
  expect(expected.filter((l) => l.includes('"type":"io"') && !l.includes("2001:db8")).length).toBeGreaterThan(10);

  for (const linktype of [113, 276, 101]) {
    const frames = sw.packets.map((p, i) => ({ timestampNs: p.timestampNs, data: relink(linktype, Buffer.from(p.data), i) }));
    // pcap: the link type in the file header.
    const pcap = encodePcap(frames);
    pcap.writeUInt32LE(linktype, 20);
    // pcapng: the link type of the interface, nanosecond timestamps.
    const shb = Buffer.alloc(16);
    shb.writeUInt32LE(0x1a2b3c4d, 0);
    shb.writeUInt16LE(1, 4);
    shb.writeBigInt64LE(-1n, 8);
    const idb = Buffer.from([linktype & 0xff, linktype >> 8, 0, 0, 0, 0, 0, 0, 9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
    const pcapng = Buffer.concat([pcapngBlock(0x0a0d0d0a, shb), pcapngBlock(1, idb), ...frames.map((f) => {
      const h = Buffer.alloc(20);
      h.writeUInt32LE(Number(f.timestampNs >> 32n), 4);
      h.writeUInt32LE(Number(f.timestampNs & 0xffffffffn), 8);
      h.writeUInt32LE(f.data.length, 12);
      h.writeUInt32LE(f.data.length, 16);
      return pcapngBlock(6, Buffer.concat([h, f.data]));
    })]);
    for (const [ext, bytes] of [["pcap", pcap], ["pcapng", pcapng]] as const) {
      const path = join(dir, `link${linktype}.${ext}`);
      writeFileSync(path, bytes);
      const out = join(dir, `link${linktype}-${ext}.jsonl`);
      const r = await replayCaptures([{ path, topology, switchId: sw.name }], { out });
      expect(r.packets, `link type ${linktype}, ${ext}`).toBe(sw.packets.length);
      expect(lines(out), `link type ${linktype}, ${ext}`).toEqual(expected);
    }
  }
}, 120_000);

test("a link type the reader does not take is named in one line; a frame cut inside its cooked header is a packet the switch could not parse", () => {
  const pcap = encodePcap([{ timestampNs: 1n, data: Buffer.alloc(64) }]);
  pcap.writeUInt32LE(105, 20); // IEEE 802.11
  expect(() => parseCapture(pcap)).toThrow(/link type 105 is not supported \(Ethernet \(1\), Linux cooked v1 \(113\) and v2 \(276\), raw IP \(101, 228, 229\) are\)/);
  const cut = encodePcap([{ timestampNs: 1n, data: Buffer.alloc(10, 1), originalLength: 90 }, { timestampNs: 2n, data: Buffer.alloc(40, 2) }]);
  cut.writeUInt32LE(276, 20);
  const [short, whole] = parseCapture(cut);
  expect(short!.data.length).toBeLessThan(14);
  expect(short!.originalLength).toBe(90 - 20 + 14);
  expect(whole!.data.length).toBe(40 - 20 + 14);
  expect(whole!.data.readUInt16BE(12)).toBe(0x0202);
});
