// Replay puts several captures on one clock by the RoCE packets they share
// (app/clock-alignment.ts): over IPv4 and IPv6, and in a fabric whose
// compute-side ToRs share no packet with one another, only with the
// storage side's.
import { describe, expect, test } from "vitest";
import { estimateAlignments } from "../../app/clock-alignment.js";
import type { FeedPacket } from "../../app/rig.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { ipText } from "../../traffic/src/ip.js";
import { parseRoce } from "../../traffic/src/roce.js";

const skewed = (ps: readonly FeedPacket[], by: bigint): FeedPacket[] => ps.map((p) => ({ ...p, timestampNs: p.timestampNs + by }));
/** Within the fabric's delay of the truth (the generator's ToRs are 3 µs apart). */
const near = (got: bigint, want: bigint) => expect(Math.abs(Number(got - want)), `${got} ns against ${want} ns`).toBeLessThan(10_000);

describe("replay's clock alignment", () => {
  for (const ip of [4, 6, "mixed"] as const) {
    test(`IPv${ip === "mixed" ? "4 and IPv6 mixed" : ip}: the storage side's capture started 40 % later, on a clock 7.3 s behind: aligned on the packets both hold`, () => {
      const traffic = generateTraffic({ seed: 3, durationNs: 200_000_000, hosts: 3, targets: 2, ip });
      const [c, s] = traffic.switches.map((w) => w.packets as FeedPacket[]);
      const late = s!.slice(Math.floor(s!.length * 0.4));
      const skew = -7_300_000_123n;
      const [a0, a1] = estimateAlignments([c!, skewed(late, skew)]);
      expect(a0).toBe(0n);
      near(a1!, -skew);
    });
  }

  test("a fabric of two compute-side ToRs and a storage-side one, each on its own clock: the compute sides, which share no packet, are aligned through the storage side", () => {
    const traffic = generateTraffic({ seed: 4, durationNs: 200_000_000, hosts: 4, targets: 2, ip: 6 });
    const [c, s] = traffic.switches.map((w) => w.packets as FeedPacket[]);
    // Hosts 1 and 2 under one ToR, 3 and 4 under the other: each keeps the packets between its hosts and the targets.
    const under = (hosts: string[]) => c!.filter((p) => {
      const r = parseRoce(Buffer.from(p.data));
      if (!r) return false;
      const [src, dst] = [ipText(r.src), ipText(r.dst)];
      return (hosts.includes(src) && dst.startsWith("2001:db8:0:2::")) || (hosts.includes(dst) && src.startsWith("2001:db8:0:2::"));
    });
    const c1 = under(["2001:db8:0:1::1", "2001:db8:0:1::2"]);
    const c2 = under(["2001:db8:0:1::3", "2001:db8:0:1::4"]);
    expect(c1.length).toBeGreaterThan(1000);
    expect(c2.length).toBeGreaterThan(1000);
    // c2's capture starts late: its first packet is no guide.
    const c2Late = c2.slice(Math.floor(c2.length / 3));
    const got = estimateAlignments([skewed(c1, 1_000_000_000n), skewed(c2Late, -4_000_000_007n), skewed(s!, 2_500_000_000n)]);
    expect(got[0]).toBe(0n);
    near(got[1]!, 5_000_000_007n);
    near(got[2]!, -1_500_000_000n);
  });

  test("a capture that shares no RoCE packet with any other is aligned by its first packet", () => {
    const traffic = generateTraffic({ seed: 5, durationNs: 50_000_000, hosts: 2, targets: 1 });
    const [c] = traffic.switches.map((w) => w.packets as FeedPacket[]);
    const other: FeedPacket[] = [{ timestampNs: 5_000n, data: new Uint8Array(64) }];
    expect(estimateAlignments([c!, other])).toEqual([0n, c![0]!.timestampNs - 5_000n]);
  });
});
