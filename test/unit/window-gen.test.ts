// Polling: the switch stamps each I/O digest with the window occurrence of
// its pair (io_watchlist's `gen`, a new value each time a rotation puts the
// pair back) the packet was seen in. The exporter decides by those (a
// response against its command's), not by where the
// rotation's notes fall in the digest stream: a stream that lags its switch
// (or a note placed by a clock that ran behind) no longer makes a record say
// more than the switch saw, nor less than it saw.
import { describe, expect, test } from "vitest";
import type { IoDigest } from "../../contract/src/digests.js";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { PartitionEngine } from "../../exporter/src/group/partition-engine.js";
import { givenUpMessage, rawDigestBatch, windowNoteMessages } from "../../exporter/src/kafka/digest-bus.js";
import { DEFAULT_TOPICS } from "../../exporter/src/kafka/encode.js";
import { ioMessage } from "../support/digest-messages.js";

const T0 = 1_800_000_000_000_000_000n;
const host = 0x0a000101;
const target = 0x0a000201;
const CMD = 1;
const RSP = 2;

function io(over: Partial<IoDigest>): IoDigest {
  return { kind: "io", seq: 0, event: CMD, vantage: 3, mode: 2, op: 2, flags: 3, host, target, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000, cid: 9, status: 0, bytes: 4096, ts: 0, e2e_ns: 0, to_data_ns: 0, from_data_ns: 0, host_prep_ns: 0, gen: 0, ...over };
}

const left = (gen: number, at: bigint, seq: bigint) => windowNoteMessages("tor", [{ host, target, gen }], at, seq, () => undefined, DEFAULT_TOPICS)[0]!;
const joined = (gen: number, at: bigint, seq: bigint) => windowNoteMessages("tor", [{ host, target, gen }], at, seq, () => undefined, DEFAULT_TOPICS, true)[0]!;

/** The records of cid 9 the engine makes from these messages, in order, once time has passed the I/O timeout. */
function run(msgs: Array<{ value: Buffer }>): IoRecordJson[] {
  const engine = new PartitionEngine({ partition: 0, topics: DEFAULT_TOPICS, engine: { ioTimeoutNs: 1_000_000n, correlationWindowNs: 1_000_000n, intervalNs: 10_000_000n }, withRecords: true });
  // Another pair's digest, 50 ms on: the switch's time moves past every timeout.
  const all = [...msgs, ioMessage(io({ seq: 99, ts: 50_000_000, target: target + 1, cid: 12 }), T0 + 50_000_000n)];
  engine.take({ offsets: all.map((_, i) => BigInt(i)), timestamps: all.map(() => 0), values: all.map((m) => m.value) }, 0n);
  engine.exporter.finish();
  return (engine.snapshot(BigInt(all.length)).records as RecordJson[]).filter((r): r is IoRecordJson => r.type === "io" && r.target === "10.0.2.1" && r.cid === 9);
}

describe("window occurrences (gen)", () => {
  test("a note names the occurrence that left or joined; read back by the member", () => {
    const note = rawDigestBatch(left(7, T0, 3n).value);
    expect(note.windowNote).toEqual({ host, target, joined: false, gen: 7 });
    expect(rawDigestBatch(joined(8, T0, 4n).value).windowNote).toEqual({ host, target, joined: true, gen: 8 });
    // A note from a controller that names none reads as before.
    expect(rawDigestBatch(windowNoteMessages("tor", [{ host, target }], T0, 5n, () => undefined, DEFAULT_TOPICS)[0]!.value).windowNote).toEqual({ host, target, joined: false });
  });

  test("a command whose digest comes after the notes that took its pair out and put it back is not reported incomplete: its occurrence ended", () => {
    // The digest stream lagged: the rotation's leave of occurrence 5 and the next one's join of 6 came first.
    const r = run([left(5, T0 + 100_000n, 0n), joined(6, T0 + 200_000n, 1n), ioMessage(io({ seq: 0, ts: 50_000, gen: 5 }), T0 + 300_000n)]);
    expect(r.map((x) => [x.incomplete, x.e2e_c_ns, x.e2e_s_ns])).toEqual([[false, null, null]]);
  });

  test("a command seen in the occurrence that is on, with no response, is incomplete", () => {
    // (With its controller's verdict: given up with every digest after it in; test/unit/given-up-notes.test.ts.)
    const cmd = io({ seq: 0, ts: 300_000, gen: 6 });
    const r = run([left(5, T0 + 100_000n, 0n), joined(6, T0 + 200_000n, 1n), ioMessage(cmd, T0 + 300_000n), givenUpMessage("tor", cmd, T0 + 300_000n, false, () => undefined, DEFAULT_TOPICS)]);
    expect(r.map((x) => x.incomplete)).toEqual([true]);
  });

  test("a response seen in a later occurrence than its command gives no figure, whether or not the notes came", () => {
    const rsp = (seq: number) => ioMessage(io({ seq, event: RSP, ts: 400_000, e2e_ns: 400_000, gen: 6 }), T0 + 400_000n);
    for (const msgs of [
      [ioMessage(io({ seq: 0, ts: 0, gen: 5 }), T0), rsp(1)],
      [ioMessage(io({ seq: 0, ts: 0, gen: 5 }), T0), left(5, T0 + 100_000n, 0n), joined(6, T0 + 200_000n, 1n), rsp(1)],
    ]) {
      const r = run(msgs);
      expect(r.map((x) => [x.incomplete, x.e2e_c_ns, x.e2e_s_ns])).toEqual([[false, null, null]]);
    }
    // Without its command's digest (so without the occurrence it came in): no record is made from the response alone (counted as left the window).
    expect(run([rsp(0)])).toEqual([]);
  });

  test("a response seen in its command's occurrence is the command's own, though the notes of a later rotation came before it", () => {
    const r = run([ioMessage(io({ seq: 0, ts: 0, gen: 5 }), T0), left(5, T0 + 100_000n, 0n), joined(6, T0 + 200_000n, 1n), ioMessage(io({ seq: 1, event: RSP, ts: 40_000, e2e_ns: 40_000, gen: 5 }), T0 + 300_000n)]);
    expect(r.map((x) => [x.incomplete, x.e2e_c_ns, x.e2e_s_ns])).toEqual([[false, 40_000, 40_000]]);
  });
});
