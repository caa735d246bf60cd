// Several captures in one replay (SPEC §7): each is a switch with its own
// clock, and the clocks may be far apart. The same RoCE packet crosses both
// ToRs of an I/O, so the offset between two captures is read off the packets
// they share: the median difference of their capture times (the fabric's
// microseconds are noise beside the seconds this is for). Replay feeds the
// captures merged on the common clock this gives, and the exporter compares
// switches' progress on it; records keep each capture's own clock.
import type { FeedPacket } from "./rig.js";
import { runInSlices } from "@rdma-telemetry/traffic";

/** How many packets of each capture are looked at (fewer each when there are many captures: ALIGNMENT_SCAN_BUDGET in all). */
export const ALIGNMENT_SCAN_PACKETS = 200_000;
const ALIGNMENT_SCAN_BUDGET = 2_000_000;

/** The packets of each capture looked at, of `n` captures. */
function scanOf(n: number): number {
  return Math.max(20_000, Math.min(ALIGNMENT_SCAN_PACKETS, Math.floor(ALIGNMENT_SCAN_BUDGET / Math.max(1, n))));
}

/**
 * Ethernet (802.1Q, 802.1ad) / IPv4 or IPv6 / UDP 4791 / BTH: a number
 * naming the packet (a 53-bit hash of its addresses, opcode, QP and PSN: one
 * RC packet, retransmissions aside), or undefined.
 */
export function roceKey(frame: Uint8Array): number | undefined {
  let off = 12;
  let type = (frame[off]! << 8) | frame[off + 1]!;
  while ((type === 0x8100 || type === 0x88a8) && frame.length >= off + 6) {
    off += 4;
    type = (frame[off]! << 8) | frame[off + 1]!;
  }
  const ip = off + 2;
  let addr: number;
  let addrLen: number;
  let udp: number;
  if (type === 0x0800) {
    if (frame.length < ip + 20 || (frame[ip]! & 0x0f) !== 5 || frame[ip + 9] !== 17) return undefined;
    addr = ip + 12;
    addrLen = 8;
    udp = ip + 20;
  } else if (type === 0x86dd) {
    if (frame.length < ip + 40 || frame[ip + 6] !== 17) return undefined;
    addr = ip + 8;
    addrLen = 32;
    udp = ip + 40;
  } else return undefined;
  if (frame.length < udp + 8 + 12 || ((frame[udp + 2]! << 8) | frame[udp + 3]!) !== 4791) return undefined;
  const b = udp + 8;
  // FNV-1a, twice (two seeds), over the addresses, the opcode, the dest QP and the PSN.
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ 0x5bd1e995;
  const mix = (byte: number) => {
    h1 = Math.imul(h1 ^ byte, 0x01000193);
    h2 = Math.imul(h2 ^ byte, 0x01000193);
  };
  for (let i = addr; i < addr + addrLen; i++) mix(frame[i]!);
  mix(frame[b]!);
  for (let i = b + 5; i < b + 8; i++) mix(frame[i]!);
  for (let i = b + 9; i < b + 12; i++) mix(frame[i]!);
  return (h1 >>> 0) * 0x200000 + ((h2 >>> 0) & 0x1fffff);
}

/** The first `scan` packets of a capture (read once, and no further: a stream is left early and closes). */
function* prefix(packets: Iterable<FeedPacket>, scan: number): Generator<FeedPacket> {
  let n = 0;
  for (const p of packets) {
    yield p;
    if (++n >= scan) return;
  }
}

/**
 * For each capture, the ns to add to its times to put it on the first
 * capture's clock. Captures that share RoCE packets (the two ToRs of an I/O,
 * or of a flow) are aligned on those, by the median difference; the
 * others are reached through them (a fabric's compute-side ToRs share no
 * packet with one another, only with the storage-side ToRs), along the
 * pairs that share the most. A capture that shares none with any reached
 * one is aligned by its first packet. Only the first packets of each are
 * read: a capture may be an array or a stream opened for this scan alone.
 */
export function estimateAlignments(captures: ReadonlyArray<Iterable<FeedPacket>>): bigint[] {
  const steps = alignmentSteps(captures);
  for (;;) {
    const s = steps.next();
    if (s.done) return s.value;
  }
}

/** estimateAlignments giving the event loop a turn every `sliceMs` of scanning (a process serving /metrics keeps answering). */
export function estimateAlignmentsAsync(captures: ReadonlyArray<Iterable<FeedPacket>>, sliceMs = 10): Promise<bigint[]> {
  return runInSlices(alignmentSteps(captures), sliceMs);
}

/** One capture's scan: its first packet's time, and each RoCE packet's time after it (ns) by its key, first sighting. */
interface Scan {
  start: bigint | undefined;
  at: Map<number, number>;
}

/** The scan of estimateAlignments, pausing (yield) every 1024 packets. */
function* alignmentSteps(captures: ReadonlyArray<Iterable<FeedPacket>>): Generator<void, bigint[]> {
  if (captures.length < 2) return captures.map(() => 0n);
  let n = 0;
  const scan = scanOf(captures.length);
  const scans: Scan[] = [];
  for (const packets of captures) {
    const s: Scan = { start: undefined, at: new Map() };
    for (const p of prefix(packets, scan)) {
      if ((++n & 1023) === 0) yield;
      s.start ??= p.timestampNs;
      const k = roceKey(p.data);
      if (k !== undefined && !s.at.has(k)) s.at.set(k, Number(p.timestampNs - s.start));
    }
    scans.push(s);
  }
  // Each pair's offset (the ns to add to j's times to put them on i's clock) and how many packets it rests on.
  const pairs = new Map<string, { offset: bigint; shared: number }>();
  for (let i = 0; i < scans.length; i++) {
    for (let j = i + 1; j < scans.length; j++) {
      const [a, b] = [scans[i]!, scans[j]!];
      const diffs: number[] = [];
      const [small, large, sign] = a.at.size <= b.at.size ? [a.at, b.at, 1] : [b.at, a.at, -1];
      for (const [k, t] of small) {
        if ((++n & 1023) === 0) yield;
        const u = large.get(k);
        if (u !== undefined) diffs.push(sign * (t - u));
      }
      if (diffs.length === 0 || a.start === undefined || b.start === undefined) continue;
      diffs.sort((x, y) => x - y);
      // t_i - t_j = (start_i + at_i) - (start_j + at_j)
      const offset = a.start - b.start + BigInt(Math.round(diffs[diffs.length >> 1]!));
      pairs.set(`${i}|${j}`, { offset, shared: diffs.length });
    }
  }
  // From the first capture along the pairs that share the most (a maximum spanning tree, grown one capture at a time).
  const out: Array<bigint | undefined> = scans.map((_, i) => (i === 0 ? 0n : undefined));
  for (;;) {
    let best: { from: number; to: number; shared: number } | undefined;
    for (let i = 0; i < scans.length; i++) {
      if (out[i] === undefined) continue;
      for (let j = 0; j < scans.length; j++) {
        if (out[j] !== undefined) continue;
        const p = pairs.get(i < j ? `${i}|${j}` : `${j}|${i}`);
        if (p && (!best || p.shared > best.shared)) best = { from: i, to: j, shared: p.shared };
      }
    }
    if (!best) break;
    const { from, to } = best;
    const p = pairs.get(from < to ? `${from}|${to}` : `${to}|${from}`)!;
    // p.offset puts the higher index on the lower one's clock.
    out[to] = out[from]! + (from < to ? p.offset : -p.offset);
  }
  const firstStart = scans[0]!.start ?? 0n;
  return out.map((o, i) => o ?? firstStart - (scans[i]!.start ?? 0n));
}
