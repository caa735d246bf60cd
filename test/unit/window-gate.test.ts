// Polling: a pair put back into the window is handed on to the exporter once
// the digest stream has passed the rotation on the switch's clock
// (p4runtime-controller/src/window-gate.ts). A stream lagging the switch by
// more than a rotation period (lists waiting for the agent's timeout, a
// loaded host) must not make a command from before the pair left count as
// watched, nor its unwatched response make it "incomplete".
import { describe, expect, test } from "vitest";
import type { IoDigest } from "../../contract/src/digests.js";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { MetricsEngine } from "../../exporter/src/metrics.js";
import { WindowJoinGate, type GatedPair, type WindowEvent } from "../../p4runtime-controller/src/window-gate.js";

const T0 = 1_800_000_000_000_000_000n;
const MS = 1_000_000n;
const host = 0x0a000101;
const target = 0x0a000201;
const pair = { host, target };
/** this host's clock reads the switch's plus 1 s */
const OFFSET = 1_000 * Number(MS);

function io(over: Partial<IoDigest>): IoDigest {
  return { kind: "io", seq: 0, event: 1, vantage: 3, mode: 2, op: 2, flags: 3, host, target, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000, cid: 9, status: 0, bytes: 4096, ts: 0, e2e_ns: 0, to_data_ns: 0, from_data_ns: 0, host_prep_ns: 0, gen: 0, ...over };
}

type Step = { rotate: { left: GatedPair[]; joined: GatedPair[]; atMs: number } } | { list: { digests: IoDigest[]; arrivesMs: number } };

/**
 * Runs a controller's events through the engine as app/run-controller.ts
 * hands them on: with the gate, or (`gated` false) each note at its rotation.
 */
function run(steps: Step[], gated: boolean): { ios: Array<[number, boolean, number | null]>; leftWindow: number; gate: WindowJoinGate } {
  const out: RecordJson[] = [];
  const m = new MetricsEngine((r) => out.push(r), { ioTimeoutNs: 50n * MS, correlationWindowNs: MS, intervalNs: 10n * MS });
  const gate = new WindowJoinGate();
  const host = (ms: number) => BigInt(OFFSET) + BigInt(ms) * MS;
  for (const s of steps) {
    if ("rotate" in s) {
      if (gated) {
        for (const e of gate.rotated(s.rotate.left, s.rotate.joined, host(s.rotate.atMs))) apply(m, e);
      } else {
        m.windowLeft("tor", s.rotate.left);
        m.windowJoined("tor", s.rotate.joined);
      }
    } else {
      const newest = s.list.digests.reduce((a, d) => Math.max(a, d.ts), 0);
      const b = { switchId: "tor", listTimestampNs: T0 + BigInt(newest), digests: s.list.digests, badDigests: 0, session: 1, raw: { digest: "io_digest_t", samples: s.list.digests.map(() => []) } };
      for (const { before, part } of gated ? gate.pass(b, host(s.list.arrivesMs)) : [{ before: [], part: b }]) {
        for (const e of before) apply(m, e);
        m.onDigestList("tor", part.listTimestampNs, part.digests);
      }
    }
  }
  m.finish();
  const ios = out.filter((r): r is IoRecordJson => r.type === "io" && r.target === "10.0.2.1").map((r) => [r.cid, r.incomplete, r.e2e_c_ns] as [number, boolean, number | null]);
  const leftWindow = out.reduce((a, r) => a + (r.type === "switch_stats" ? r.ios_left_window : 0), 0);
  return { ios, leftWindow, gate };
}

const ms = (n: number) => n * Number(MS);

/** A note handed on to the engine as app/run-controller.ts does. */
function apply(m: MetricsEngine, e: WindowEvent): void {
  if (e.bound) m.windowBound("tor", [e.pair], e.seenTs ?? 0);
  else if (e.joined) m.windowJoined("tor", [e.pair]);
  else m.windowLeft("tor", [e.pair], undefined, e.seenTs);
}

/**
 * The pair is watched until the rotation at 100 ms, out until the one at
 * 200 ms. Its command at 50 ms (cid 10) is in a list that waits for the
 * agent's timeout and reaches the controller at 250 ms, after both rotations;
 * its response (at 120 ms) went unwatched. Its command at 255 ms (cid 11),
 * after the pair came back, is never answered.
 */
const lagging: Step[] = [
  { list: { digests: [io({ seq: 0, cid: 9, ts: ms(0) }), io({ seq: 1, event: 2, cid: 9, ts: ms(10), e2e_ns: ms(10) })], arrivesMs: 10 } },
  { rotate: { left: [pair], joined: [], atMs: 100 } },
  { rotate: { left: [], joined: [pair], atMs: 200 } },
  { list: { digests: [io({ seq: 2, cid: 10, cmd_psn: 1001, ts: ms(50) })], arrivesMs: 250 } },
  { list: { digests: [io({ seq: 3, cid: 11, cmd_psn: 1002, ts: ms(255) })], arrivesMs: 256 } },
  { list: { digests: [io({ seq: 4, target: target + 1, cid: 12, ts: ms(400) })], arrivesMs: 400 } },
];

describe("a pair put back into the polling window", () => {
  test("a command from before the pair left, whose list comes after the rotation that put it back, is not reported incomplete", () => {
    const r = run(lagging, true);
    expect(r.ios).toEqual(expect.arrayContaining([[9, false, ms(10)], [10, false, null], [11, true, null]]));
    expect(r.ios).toHaveLength(3);
    expect(r.leftWindow).toBe(1);
    expect(r.gate.stats).toEqual({ held: 1, released: 1, releasedUnseen: 0 });
  });

  test("(each join handed on at its rotation, the same lists make that command a record that says more than the switch saw)", () => {
    expect(run(lagging, false).ios).toContainEqual([10, true, null]);
  });

  test("a command after the switch applied the write is watched: the join goes out before its list", () => {
    const r = run([
      { list: { digests: [io({ seq: 0, cid: 9, ts: ms(0) })], arrivesMs: 1 } },
      { rotate: { left: [pair], joined: [], atMs: 100 } },
      { rotate: { left: [], joined: [pair], atMs: 200 } },
      { list: { digests: [io({ seq: 1, cid: 11, cmd_psn: 1002, ts: ms(201) })], arrivesMs: 205 } },
      { list: { digests: [io({ seq: 2, target: target + 1, cid: 12, ts: ms(400) })], arrivesMs: 400 } },
    ], true);
    expect(r.ios).toEqual(expect.arrayContaining([[9, false, null], [11, true, null]]));
    expect(r.gate.stats.released).toBe(1);
  });

  test("a pair that leaves again before its list came: its commands from before are marked with the first leave, and a response the switch matched to one of them after it came back has no figures", () => {
    const steps: Step[] = [
      { list: { digests: [io({ seq: 0, cid: 9, ts: ms(0) })], arrivesMs: 1 } },
      { rotate: { left: [pair], joined: [], atMs: 20 } },
      { rotate: { left: [], joined: [pair], atMs: 40 } },
      { rotate: { left: [pair], joined: [], atMs: 60 } },
      // One list, 80 ms late: its command at 10 ms (before the pair left; its own response unwatched), then at 50 ms
      // (the pair back, CID 10 sent meanwhile unseen) a response the switch matched to that command.
      { list: { digests: [io({ seq: 1, cid: 10, cmd_psn: 1001, ts: ms(10) }), io({ seq: 2, event: 2, cid: 10, cmd_psn: 1001, ts: ms(50), e2e_ns: ms(40) })], arrivesMs: 90 } },
      { list: { digests: [io({ seq: 3, target: target + 1, cid: 12, ts: ms(400) })], arrivesMs: 400 } },
    ];
    const r = run(steps, true);
    expect(r.ios).toEqual(expect.arrayContaining([[9, false, null], [10, false, null]]));
    expect(r.ios).toHaveLength(2);
    expect(r.gate.pending).toBe(0);
    // Each note at its rotation, the command is marked with the second leave, after the join: the response is taken for its own.
    expect(run(steps, false).ios).toContainEqual([10, false, ms(40)]);
  });

  test("a switch clock that falls behind this host's (a replayed capture's, on a loaded host): a response the switch matched to a command from before the pair left is not taken for its own", () => {
    const steps: Step[] = [
      { list: { digests: [io({ seq: 0, cid: 9, ts: ms(0) })], arrivesMs: 1 } },
      { list: { digests: [io({ seq: 1, cid: 10, cmd_psn: 1001, ts: ms(10) })], arrivesMs: 11 } },
      { rotate: { left: [pair], joined: [], atMs: 20 } },
      { rotate: { left: [], joined: [pair], atMs: 40 } },
      // The switch's clock reads 30 ms at 200 ms on this host's: the pair back in its window, it matches a response
      // to CID 10 (a newer command of it, sent while the pair was out, unseen) to the command it holds. On the host's
      // clock mapped from the switch's, the response looks older than the write that put the pair back.
      { list: { digests: [io({ seq: 2, event: 2, cid: 10, cmd_psn: 1001, ts: ms(30), e2e_ns: ms(20) })], arrivesMs: 210 } },
      { list: { digests: [io({ seq: 3, target: target + 1, cid: 12, ts: ms(400) })], arrivesMs: 600 } },
    ];
    const r = run(steps, true);
    expect(r.ios).toEqual(expect.arrayContaining([[9, false, null], [10, false, null]]));
    expect(r.ios).toHaveLength(2);
  });

  test("notes of a pair held at the end go out in order", () => {
    const gate = new WindowJoinGate();
    gate.releases([io({ target: target + 1, ts: ms(3) })], 5n * MS);
    gate.releases([io({ target: target + 1, ts: ms(7) })], 15n * MS);
    // A leave goes out at once; the join after it is held, and its bound goes out at once: the newest switch time
    // of the lists that arrived before its write was sent.
    expect(gate.rotated([pair], [], 10n * MS)).toEqual([{ pair, joined: false }]);
    expect(gate.rotated([], [pair], 20n * MS)).toEqual([{ pair, joined: false, seenTs: ms(7), bound: true }]);
    expect(gate.rotated([pair], [], 30n * MS)).toEqual([]);
    expect(gate.rotated([], [pair], 40n * MS)).toEqual([]);
    expect(gate.pending).toBe(3);
    // The second leave, with a join still held behind it, carries that join's bound.
    expect(gate.flush()).toEqual([{ pair, joined: true }, { pair, joined: false, seenTs: ms(7) }, { pair, joined: true }]);
    expect(gate.stats).toEqual({ held: 3, released: 0, releasedUnseen: 3 });
  });

  test("one list with the pair's commands from before it left and after it came back (lists longer than its time out): the join goes between them", () => {
    const r = run([
      { list: { digests: [io({ seq: 0, cid: 9, ts: ms(0) })], arrivesMs: 1 } },
      { rotate: { left: [pair], joined: [], atMs: 100 } },
      { rotate: { left: [], joined: [pair], atMs: 150 } },
      // Its command at 90 ms (response unwatched), and after the write a response to a command the switch did not
      // see (CID 9 again, sent while the pair was out), answered by the switch with the command it still holds.
      { list: { digests: [io({ seq: 1, cid: 10, cmd_psn: 1001, ts: ms(90) }), io({ seq: 2, event: 2, cid: 9, ts: ms(160), e2e_ns: ms(160) })], arrivesMs: 170 } },
      { list: { digests: [io({ seq: 3, target: target + 1, cid: 12, ts: ms(400) })], arrivesMs: 400 } },
    ], true);
    // Neither says more than the switch saw: CID 9's response came after its pair left and came back, CID 10's went unwatched.
    expect(r.ios).toEqual(expect.arrayContaining([[9, false, null], [10, false, null]]));
    expect(r.ios).toHaveLength(2);
    const gate = new WindowJoinGate();
    gate.releases([io({ target: target + 1, ts: ms(0) })], 0n);
    gate.rotated([], [pair], 200n * MS);
    expect(gate.releases([io({ cid: 10, ts: ms(50) }), io({ target: target + 1, ts: ms(150) }), io({ cid: 11, ts: ms(201) })], 260n * MS)).toEqual([{ at: 2, events: [{ pair, joined: true }] }]);
  });

  test("a list cut where the joins go keeps every digest once, its undecodable count in the first part and its acknowledgement in the last", () => {
    const gate = new WindowJoinGate();
    gate.releases([io({ target: target + 1, ts: ms(0) })], 0n);
    gate.rotated([], [pair], 200n * MS);
    let acked = 0;
    const digests = [io({ cid: 10, ts: ms(50) }), io({ cid: 11, ts: ms(201) }), io({ cid: 12, ts: ms(202) })];
    const parts = gate.pass({ switchId: "tor", listTimestampNs: T0, digests, badDigests: 2, session: 1, raw: { digest: "io_digest_t", samples: [[Buffer.from([10])], [Buffer.from([11])], [Buffer.from([12])]] }, ack: () => acked++ }, 260n * MS);
    expect(parts.map((p) => [p.before, p.part.digests.map((d) => (d as IoDigest).cid), p.part.raw.samples.length, p.part.badDigests, p.part.ack !== undefined])).toEqual([[[], [10], 1, 2, false], [[{ pair, joined: true }], [11, 12], 2, 0, true]]);
    parts.at(-1)!.part.ack!();
    expect(acked).toBe(1);
  });

  test("the bound follows a switch clock slower than this host's, and starts again with a restarted switch", () => {
    const gate = new WindowJoinGate({ driftPpm: 100 });
    gate.releases([io({ target: target + 1, ts: 0 })], 0n);
    // 1,000 s later the switch's clock reads 50 ms less (50 ppm slow): a command just after the write is still after it.
    gate.rotated([], [pair], 1_000_000n * MS);
    expect(gate.releases([io({ ts: ms(999_951) })], 1_000_002n * MS)).toEqual([{ at: 0, events: [{ pair, joined: true }] }]);
    // A restarted switch counts from 0 again.
    gate.resetClock();
    gate.releases([io({ target: target + 1, ts: ms(1) })], 1_100_000n * MS);
    gate.rotated([], [pair], 1_100_010n * MS);
    expect(gate.releases([io({ ts: ms(12) })], 1_100_012n * MS)).toEqual([{ at: 0, events: [{ pair, joined: true }] }]);
  });

  test("48-bit switch timestamps that wrap between the write and the pair's next command", () => {
    const WRAP = 2 ** 48;
    const gate = new WindowJoinGate();
    gate.releases([io({ target: target + 1, ts: WRAP - ms(10) })], 0n);
    gate.rotated([], [pair], 5n * MS);
    expect(gate.releases([io({ ts: WRAP - ms(8) })], 6n * MS)).toEqual([]); // before the write (a late one)
    expect(gate.releases([io({ ts: ms(1) })], 12n * MS)).toEqual([{ at: 0, events: [{ pair, joined: true }] }]);
  });
});
