import { describe, expect, test } from "vitest";
import { generateTraffic } from "../../traffic/src/generator.js";

describe("traffic generator", () => {
  const small = { durationNs: 120_000_000, hosts: 3, targets: 2, ioRate: 500 };

  test("is reproducible from its seed", () => {
    const a = generateTraffic({ ...small, seed: 7 });
    const b = generateTraffic({ ...small, seed: 7 });
    const c = generateTraffic({ ...small, seed: 8 });
    expect(a.ios).toEqual(b.ios);
    expect(a.switches[0]!.packets.map((p) => p.timestampNs)).toEqual(b.switches[0]!.packets.map((p) => p.timestampNs));
    expect(a.ios).not.toEqual(c.ios);
  });

  test("captures are time-ordered and truncated to the snap length, with wire lengths kept", () => {
    const g = generateTraffic({ ...small, seed: 3 });
    for (const sw of g.switches) {
      for (let i = 1; i < sw.packets.length; i++) expect(sw.packets[i]!.timestampNs >= sw.packets[i - 1]!.timestampNs).toBe(true);
      expect(sw.packets.every((p) => p.data.length <= 128 && p.originalLength >= p.data.length)).toBe(true);
      expect(sw.packets.some((p) => p.originalLength > 4000)).toBe(true);
    }
  });

  test("ground truth obeys the metric definitions", () => {
    const g = generateTraffic({ ...small, seed: 5, faults: [{ kind: "loss", host: 0, fromNs: 0, toNs: 1e9, probability: 0.02 }] });
    for (const io of g.ios) {
      expect(io.rtt_ns).toBe(io.e2e_c_ns - io.e2e_s_ns);
      expect(io.rtt_ns).toBeGreaterThan(0);
      if (io.op === "read") expect(io.dpl_ns).toBeNull();
      else expect(io.dpl_ns).toBeGreaterThan(0);
      expect(io.dal_ns).toBeLessThanOrEqual(io.e2e_s_ns);
    }
    expect(g.messages.some((m) => m.retransmitted > 0 || m.late_retransmitted > 0)).toBe(true);
    for (const m of g.messages) {
      expect(m.fnr).toBeCloseTo(m.retransmitted / m.packets, 12);
      expect(m.packets).toBeGreaterThanOrEqual(Math.ceil(m.bytes / 4096));
    }
  });
});
