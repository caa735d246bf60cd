// Replay reads captures as streams: a capture read from its file, packet by
// packet, gives exactly the records of the same packets replayed from memory.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { replayCaptures, replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import type { FeedPacket } from "../../app/rig.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { PcapWriter, readCapture } from "../../traffic/src/pcap.js";

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
