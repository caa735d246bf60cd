// Several captures in one replay (SPEC §7): each is a switch with its own
// clock, and the clocks may be far apart. The same RoCE packet crosses both
// ToRs of an I/O, so the offset between two captures is read off the packets
// they share: the median difference of their capture times (the fabric's
// microseconds are noise beside the seconds this is for). Replay feeds the
// captures merged on the common clock this gives, and the exporter compares
// switches' progress on it; records keep each capture's own clock.
import type { FeedPacket } from "./rig.js";
import { runInSlices } from "@rdma-telemetry/traffic";

/** How many packets of each capture are looked at. */
export const ALIGNMENT_SCAN_PACKETS = 200_000;
const SCAN = ALIGNMENT_SCAN_PACKETS;

/** Ethernet (802.1Q) / IPv4 / UDP 4791 / BTH: a key naming the packet (addresses, opcode, QP, PSN), or undefined. */
export function roceKey(frame: Uint8Array): string | undefined {
  let off = 12;
  let type = (frame[off]! << 8) | frame[off + 1]!;
  if (type === 0x8100) {
    off += 4;
    type = (frame[off]! << 8) | frame[off + 1]!;
  }
  const ip = off + 2;
  if (type !== 0x0800 || frame.length < ip + 20 + 8 + 12 || (frame[ip]! & 0x0f) !== 5 || frame[ip + 9] !== 17) return undefined;
  const udp = ip + 20;
  if (((frame[udp + 2]! << 8) | frame[udp + 3]!) !== 4791) return undefined;
  const b = udp + 8;
  // src, dst, opcode, dest QP, PSN: one RC packet, retransmissions aside.
  return Buffer.from(frame.subarray(ip + 12, ip + 20)).toString("hex") + Buffer.from(frame.subarray(b, b + 1)).toString("hex")
    + Buffer.from(frame.subarray(b + 5, b + 8)).toString("hex") + Buffer.from(frame.subarray(b + 9, b + 12)).toString("hex");
}

/** The first SCAN packets of a capture (read once, and no further: a stream is left early and closes). */
function* prefix(packets: Iterable<FeedPacket>): Generator<FeedPacket> {
  let n = 0;
  for (const p of packets) {
    yield p;
    if (++n >= SCAN) return;
  }
}

/**
 * For each capture, the ns to add to its times to put it on the first
 * capture's clock: from the packets it shares with the first capture, else
 * by aligning the first packets. Only the first SCAN packets of each are
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

/** The scan of estimateAlignments, pausing (yield) every 1024 packets. */
function* alignmentSteps(captures: ReadonlyArray<Iterable<FeedPacket>>): Generator<void, bigint[]> {
  let n = 0;
  const first = captures[0];
  if (!first || captures.length === 1) return captures.map(() => 0n);
  const seen = new Map<string, bigint>();
  let firstStart: bigint | undefined;
  for (const p of prefix(first)) {
    if ((++n & 1023) === 0) yield;
    firstStart ??= p.timestampNs;
    const k = roceKey(p.data);
    if (k !== undefined && !seen.has(k)) seen.set(k, p.timestampNs);
  }
  const out: bigint[] = [0n];
  for (const packets of captures.slice(1)) {
    const diffs: bigint[] = [];
    const used = new Set<string>();
    let start: bigint | undefined;
    for (const p of prefix(packets)) {
      if ((++n & 1023) === 0) yield;
      start ??= p.timestampNs;
      const k = roceKey(p.data);
      if (k === undefined || used.has(k)) continue;
      used.add(k);
      const t0 = seen.get(k);
      if (t0 !== undefined) diffs.push(t0 - p.timestampNs);
    }
    if (diffs.length === 0) {
      out.push((firstStart ?? 0n) - (start ?? 0n));
      continue;
    }
    diffs.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    out.push(diffs[diffs.length >> 1]!);
  }
  return out;
}
