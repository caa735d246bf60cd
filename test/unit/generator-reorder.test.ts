// Reordering paths in the generator (adaptive routing, packet spraying): a
// share of the RDMA WRITE messages reach the switch with packets displaced
// 1..N places, some with one packet lost after the switch and resent
// go-back-N. The ground truth is checked against the capture itself, read
// packet by packet with SPEC §4's definitions: retransmitted = a PSN already
// seen; FCT from the first sighting of the first PSN to the first sighting of
// the last; the message holds every packet seen up to then, later ones count
// for the flow only.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { generateTraffic, readTruth } from "../../traffic/src/generator.js";
import { ipText } from "../../traffic/src/ip.js";
import { parseRoce } from "../../traffic/src/roce.js";
import type { GeneratedTraffic, MessageTruth } from "../../traffic/src/types.js";
import { CLI } from "../support/cli.js";

const PSN = 0x1000000;

/** Each message's figures as the capture at the sender's switch shows them, keyed like the truth. */
function fromCapture(g: GeneratedTraffic) {
  const flows = new Map<string, MessageTruth[]>();
  for (const m of g.messages) {
    const k = `${m.src}|${m.dst}|${m.dest_qp}`;
    (flows.get(k) ?? flows.set(k, []).get(k)!).push(m);
  }
  const sightings = new Map<MessageTruth, Array<{ k: number; t: bigint; ce: boolean }>>();
  for (const p of g.switches[0]!.packets) {
    const f = parseRoce(p.data);
    if (!f || f.opcode < 0x06 || f.opcode > 0x0b) continue;
    const msgs = flows.get(`${ipText(f.src)}|${ipText(f.dst)}|${f.destQp}`);
    const m = msgs?.find((x) => (f.psn - x.first_psn + PSN) % PSN <= (x.last_psn - x.first_psn + PSN) % PSN);
    if (!m) continue;
    (sightings.get(m) ?? sightings.set(m, []).get(m)!).push({ k: (f.psn - m.first_psn + PSN) % PSN, t: p.timestampNs, ce: (f.trafficClass & 3) === 3 });
  }
  const out = new Map<MessageTruth, Record<string, unknown>>();
  for (const msgs of flows.values()) {
    let prevLast: bigint | undefined;
    for (const m of msgs) {
      const s = sightings.get(m)!;
      const n = (m.last_psn - m.first_psn + PSN) % PSN + 1;
      const seen = new Set<number>();
      const retx = s.map((x) => (seen.has(x.k) ? true : (seen.add(x.k), false)));
      const first = s.findIndex((x) => x.k === 0);
      const last = s.findIndex((x) => x.k === n - 1);
      const inMsg = s.slice(0, last + 1);
      out.set(m, {
        packets: inMsg.length,
        retransmitted: retx.slice(0, last + 1).filter(Boolean).length,
        fct_ns: Number(s[last]!.t - s[first]!.t),
        ecn_ce_packets: inMsg.filter((x) => x.ce).length,
        gap_ns: prevLast === undefined ? null : Number(s[first]!.t - prevLast),
        firstNs: s[first]!.t,
        late_packets: s.length - inMsg.length,
        late_retransmitted: retx.slice(last + 1).filter(Boolean).length,
        late: s.slice(last + 1).map((x, i) => ({ after_first_ns: Number(x.t - s[first]!.t), retransmitted: retx[last + 1 + i], ecn_ce: x.ce })),
        reordered: s.some((x, i) => i > 0 && x.k < s[i - 1]!.k && !retx[i]),
        displacement: Math.max(...s.map((x, i) => (retx[i] ? 0 : Math.abs(i - x.k)))),
        firstOvertaken: first > 0,
      });
      prevLast = s[last]!.t;
    }
  }
  return out;
}

const truthFields = (m: MessageTruth) => ({
  packets: m.packets, retransmitted: m.retransmitted, fct_ns: m.fct_ns, ecn_ce_packets: m.ecn_ce_packets, gap_ns: m.gap_ns,
  firstNs: m.firstNs, late_packets: m.late_packets, late_retransmitted: m.late_retransmitted, late: m.late, reordered: m.reordered,
});

describe("reordering paths", () => {
  const base = { seed: 13, durationNs: 200_000_000, hosts: 4, targets: 1, ioRate: 200, gradientGapNs: 1_000_000, faults: [{ kind: "congestion" as const, fromNs: 0, toNs: 200_000_000, extraNs: 0, ecnFraction: 0.05 }] };

  test("a share of the messages displaced 1..N places, no loss: the truth is what the capture shows by SPEC §4, nothing counted as retransmitted", () => {
    const g = generateTraffic({ ...base, reorderShare: 0.4, reorderMaxDisplacement: 6 });
    const seen = fromCapture(g);
    expect(seen.size).toBe(g.messages.length);
    for (const m of g.messages) {
      const { displacement, firstOvertaken: _f, ...figures } = seen.get(m)!;
      expect(figures, `${m.src}>${m.dst} psn ${m.first_psn}`).toEqual(truthFields(m));
      expect(displacement as number).toBeLessThanOrEqual(6);
      expect(m.retransmitted + m.late_retransmitted).toBe(0);
      if (m.bytes === 64) continue; // the receiver's CTS: one packet
      expect(m.packets + m.late_packets).toBe(64);
      expect(m.fct_ns).toBeGreaterThan(0);
    }
    const reordered = g.messages.filter((m) => m.reordered);
    const data = g.messages.filter((m) => m.bytes !== 64);
    expect(reordered.length / data.length).toBeGreaterThan(0.25);
    expect(reordered.length / data.length).toBeLessThan(0.55);
    // The cases a switch gets wrong when it assumes order: a FIRST overtaken, packets after the LAST, displacement of the full 6.
    expect(reordered.some((m) => seen.get(m)!.firstOvertaken)).toBe(true);
    expect(reordered.some((m) => m.late_packets > 0)).toBe(true);
    expect(reordered.some((m) => seen.get(m)!.displacement === 6)).toBe(true);
    expect(g.messages.some((m) => m.ecn_ce_packets > 0 && m.reordered)).toBe(true);
  });

  test("one packet lost after the switch and resent go-back-N among reordered ones: retransmitted = a PSN already seen, every packet in the flow's totals", () => {
    const g = generateTraffic({ ...base, reorderShare: 0.5, reorderMaxDisplacement: 4, reorderLoss: 1 });
    const seen = fromCapture(g);
    for (const m of g.messages) {
      const { displacement: _d, firstOvertaken: _f, ...figures } = seen.get(m)!;
      expect(figures, `${m.src}>${m.dst} psn ${m.first_psn}`).toEqual(truthFields(m));
    }
    const reordered = g.messages.filter((m) => m.reordered);
    expect(reordered.length).toBeGreaterThan(10);
    // Every reordered message lost one packet: its resend (and go-back-N after it) shows as retransmissions, in the message or late.
    expect(reordered.every((m) => m.retransmitted + m.late_retransmitted >= 1)).toBe(true);
    expect(g.messages.filter((m) => !m.reordered).every((m) => m.retransmitted + m.late_retransmitted === 0)).toBe(true);
    // Each flow's packets in the capture are its messages' packets and their late ones, nothing else.
    const perFlow = new Map<string, number>();
    for (const p of g.switches[0]!.packets) {
      const f = parseRoce(p.data);
      if (f && f.opcode >= 0x06 && f.opcode <= 0x0b && f.destQp >= 0x2000 && f.destQp < 0x3000) perFlow.set(`${f.destQp}`, (perFlow.get(`${f.destQp}`) ?? 0) + 1);
    }
    for (const [qp, n] of perFlow) expect(g.messages.filter((m) => `${m.dest_qp}` === qp).reduce((a, m) => a + m.packets + m.late_packets, 0)).toBe(n);
  });

  test("without --reorder nothing changes: no message reordered, the same traffic as before", () => {
    const short = { ...base, durationNs: 100_000_000 };
    const a = generateTraffic(short);
    const b = generateTraffic({ ...short, reorderShare: 0, reorderLoss: 0.5 });
    expect(a.messages.some((m) => m.reordered)).toBe(false);
    expect(b.messages).toEqual(a.messages);
    expect(b.switches[0]!.packets.map((p) => p.timestampNs)).toEqual(a.switches[0]!.packets.map((p) => p.timestampNs));
  });

  test("generate --reorder writes the reordering truth into ground-truth.jsonl", () => {
    const out = mkdtempSync(join(tmpdir(), "reorder-"));
    try {
      const root = new URL("../..", import.meta.url).pathname;
      const r = spawnSync(process.execPath, [...CLI, "generate", "--out-dir", out, "--force", "--duration-ms", "80", "--layout", "single", "--hosts", "2", "--targets", "1", "--reorder", "0.5:3", "--reorder-loss", "1"], { encoding: "utf8", cwd: root, env: { ...process.env, KAFKA_BROKERS: "" } });
      expect(r.status, r.stderr).toBe(0);
      const messages = [...readTruth(join(out, "ground-truth.jsonl"))].flatMap((l) => (l.type === "message" ? [l.truth] : []));
      const reordered = messages.filter((m) => m.reordered);
      expect(reordered.length).toBeGreaterThan(0);
      expect(reordered.every((m) => m.retransmitted + m.late_retransmitted >= 1)).toBe(true);
      expect(messages.every((m) => typeof m.late_packets === "number" && typeof m.firstNs === "bigint")).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 60_000);
});
