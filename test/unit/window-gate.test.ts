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
import { WindowJoinGate, type GatedPair } from "../../p4runtime-controller/src/window-gate.js";

const T0 = 1_800_000_000_000_000_000n;
const MS = 1_000_000n;
const host = 0x0a000101;
const target = 0x0a000201;
const pair = { host, target };
/** this host's clock reads the switch's plus 1 s */
const OFFSET = 1_000 * Number(MS);

function io(over: Partial<IoDigest>): IoDigest {
  return { kind: "io", seq: 0, event: 1, vantage: 3, mode: 2, op: 2, flags: 3, host, target, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000, cid: 9, status: 0, bytes: 4096, ts: 0, e2e_ns: 0, to_data_ns: 0, from_data_ns: 0, host_prep_ns: 0, ...over };
}

type Step = { rotate: { left: GatedPair[]; joined: GatedPair[]; atMs: number } } | { list: { digests: IoDigest[]; arrivesMs: number } };

/**
 * Runs a controller's events through the engine as app/run-controller.ts
 * hands them on: with the gate, or (`gated` false) each join at its rotation.
 */
function run(steps: Step[], gated: boolean): { ios: Array<[number, boolean, number | null]>; leftWindow: number; gate: WindowJoinGate } {
  const out: RecordJson[] = [];
  const m = new MetricsEngine((r) => out.push(r), { ioTimeoutNs: 50n * MS, correlationWindowNs: MS, intervalNs: 10n * MS });
  const gate = new WindowJoinGate();
  const host = (ms: number) => BigInt(OFFSET) + BigInt(ms) * MS;
  for (const s of steps) {
    if ("rotate" in s) {
      if (gated) {
        const j = gate.leave(s.rotate.left);
        if (j.length) m.windowJoined("tor", j);
      }
      m.windowLeft("tor", s.rotate.left);
      if (gated) gate.join(s.rotate.joined, host(s.rotate.atMs));
      else m.windowJoined("tor", s.rotate.joined);
    } else {
      if (gated) {
        const j = gate.before(s.list.digests, host(s.list.arrivesMs));
        if (j.length) m.windowJoined("tor", j);
      }
      const newest = s.list.digests.reduce((a, d) => Math.max(a, d.ts), 0);
      m.onDigestList("tor", T0 + BigInt(newest), s.list.digests);
    }
  }
  m.finish();
  const ios = out.filter((r): r is IoRecordJson => r.type === "io" && r.target === "10.0.2.1").map((r) => [r.cid, r.incomplete, r.e2e_c_ns] as [number, boolean, number | null]);
  const leftWindow = out.reduce((a, r) => a + (r.type === "switch_stats" ? r.ios_left_window : 0), 0);
  return { ios, leftWindow, gate };
}

const ms = (n: number) => n * Number(MS);

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

  test("a pair that leaves again before any digest of it came: join, then leave, in that order", () => {
    const gate = new WindowJoinGate();
    gate.join([pair], 200n * MS);
    expect(gate.before([io({ target: target + 1, ts: ms(250) })], 251n * MS)).toEqual([]);
    expect(gate.leave([pair])).toEqual([pair]);
    expect(gate.pending).toBe(0);
    expect(gate.stats).toEqual({ held: 1, released: 0, releasedUnseen: 1 });
  });

  test("one list with the pair's commands from before and after the write: the join goes out after it", () => {
    const gate = new WindowJoinGate();
    expect(gate.before([io({ target: target + 1, ts: ms(0) })], 0n)).toEqual([]);
    gate.join([pair], 200n * MS);
    expect(gate.before([io({ cid: 10, ts: ms(50) }), io({ cid: 11, ts: ms(201) })], 260n * MS)).toEqual([]);
    expect(gate.before([io({ target: target + 1, ts: ms(300) })], 300n * MS)).toEqual([pair]);
  });

  test("the bound follows a switch clock slower than this host's, and starts again with a restarted switch", () => {
    const gate = new WindowJoinGate({ driftPpm: 100 });
    gate.before([io({ target: target + 1, ts: 0 })], 0n);
    // 1,000 s later the switch's clock reads 50 ms less (50 ppm slow): a command just after the write is still after it.
    gate.join([pair], 1_000_000n * MS);
    expect(gate.before([io({ ts: ms(999_951) })], 1_000_002n * MS)).toEqual([pair]);
    // A restarted switch counts from 0 again.
    gate.resetClock();
    gate.before([io({ target: target + 1, ts: ms(1) })], 1_100_000n * MS);
    gate.join([pair], 1_100_010n * MS);
    expect(gate.before([io({ ts: ms(12) })], 1_100_012n * MS)).toEqual([pair]);
  });

  test("48-bit switch timestamps that wrap between the write and the pair's next command", () => {
    const WRAP = 2 ** 48;
    const gate = new WindowJoinGate();
    gate.before([io({ target: target + 1, ts: WRAP - ms(10) })], 0n);
    gate.join([pair], 5n * MS);
    expect(gate.before([io({ ts: WRAP - ms(8) })], 6n * MS)).toEqual([]); // before the write (a late one)
    expect(gate.before([io({ ts: ms(1) })], 12n * MS)).toEqual([pair]);
  });
});
