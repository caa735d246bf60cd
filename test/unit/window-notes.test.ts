// Polling in a fabric: a digests-only controller tells the exporter group
// when a rotation took a host–target pair out of its switch's window
// (WINDOW_LEFT notes on the digest topic, keyed as the pair's I/O digests).
// A command of that pair whose response then went unwatched is not reported
// incomplete by the group, as it is not by the in-process exporter, also when
// the note comes before the command's own digest (the controller rotated as
// the switch went on).
import { describe, expect, test } from "vitest";
import type { IoDigest } from "../../contract/src/digests.js";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { PartitionEngine } from "../../exporter/src/group/partition-engine.js";
import { batchFromRaw, digestKey, givenUpMessage, rawDigestBatch, windowNoteMessages, WINDOW_BOUND, WINDOW_JOINED, WINDOW_LEFT } from "../../exporter/src/kafka/digest-bus.js";
import { DEFAULT_TOPICS } from "../../exporter/src/kafka/encode.js";
import { RawDigest } from "../../exporter/src/generated/rdma/telemetry/v1/records.js";
import { ioMessage } from "../support/digest-messages.js";

const T0 = 1_800_000_000_000_000_000n;
const host = 0x0a000101;
const target = 0x0a000201;
const v6Host = 0xf0000001; // an endpoint key (240.0.0.0/4)

function io(over: Partial<IoDigest>): IoDigest {
  return { kind: "io", seq: 0, event: 1, vantage: 3, mode: 2, op: 2, flags: 3, host, target, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000, cid: 9, status: 0, bytes: 4096, ts: 0, e2e_ns: 0, to_data_ns: 0, from_data_ns: 0, host_prep_ns: 0, gen: 0, ...over };
}

describe("WINDOW_LEFT notes", () => {
  test("travel as raw digests keyed as the pair's I/O digests, and read back the same by both decoders, IPv6 endpoint entries included", () => {
    const addresses = new Map([[v6Host, "2001:db8:0:1::1"]]);
    const msgs = windowNoteMessages("tor", [{ host, target }, { host: v6Host, target }], T0, 7n, (k) => addresses.get(k), DEFAULT_TOPICS);
    expect(msgs.map((m) => m.key)).toEqual([digestKey(io({})), `2001:db8:0:1::1|10.0.2.1`]);
    for (const [i, m] of msgs.entries()) {
      const fast = rawDigestBatch(m.value);
      const raw = RawDigest.decode(m.value);
      expect(raw.digest).toBe(WINDOW_LEFT);
      expect(fast.seq).toBe(7n + BigInt(i));
      expect(fast.batch.digests).toEqual([]);
      expect(fast.batch.listTimestampNs).toBe(T0);
      expect(fast.windowNote).toEqual(i === 0 ? { host, target, joined: false } : { host: v6Host, target, joined: false });
      expect(fast.batch.endpoints ?? []).toEqual(i === 0 ? [] : [{ key: v6Host, address: "2001:db8:0:1::1" }]);
      expect(batchFromRaw(raw)).toEqual(fast.batch);
    }
    // Its counterpart, a pair put back into the window.
    const back = rawDigestBatch(windowNoteMessages("tor", [{ host, target }], T0, 9n, () => undefined, DEFAULT_TOPICS, true)[0]!.value);
    expect(back.windowNote).toEqual({ host, target, joined: true });
    expect(back.batch.raw.digest).toBe(WINDOW_JOINED);
    // A note whose member does not fit is a bad digest, named.
    const bad = RawDigest.encode(RawDigest.fromPartial({ switchId: "tor", digest: WINDOW_LEFT, seq: 1n, listTimestampNs: T0, fields: [{ name: "host", value: Buffer.from([1, 0, 0, 0, 0]) }, { name: "target", value: Buffer.from([1]) }] })).finish();
    expect(() => rawDigestBatch(bad)).toThrow(/window_left from tor: member 'host' does not fit in 32 bits/);
  });

  test("IPv6: the note names the pair by its controller's endpoint keys, which the member maps as it maps the digests (another switch gave other keys first)", () => {
    const engine = new PartitionEngine({ partition: 0, topics: DEFAULT_TOPICS, engine: { ioTimeoutNs: 1_000_000n, correlationWindowNs: 1_000_000n, intervalNs: 10_000_000n }, withRecords: true });
    const a = "2001:db8:0:1::7";
    const b = "2001:db8:0:2::1";
    // tor-s names other addresses first: the member's own keys are not tor-c's.
    const other = ioMessage(io({ seq: 0, ts: 0, host: 0xf0000001, target: 0xf0000002, cid: 3 }), T0, "tor-s", [{ key: 0xf0000001, address: "2001:db8:0:1::9" }, { key: 0xf0000002, address: "2001:db8:0:2::9" }]);
    const tc = [{ key: 0xf0000003, address: a }, { key: 0xf0000004, address: b }];
    const note = windowNoteMessages("tor-c", [{ host: 0xf0000003, target: 0xf0000004 }], T0 + 500_000n, 0n, (k) => tc.find((e) => e.key === k)?.address, DEFAULT_TOPICS)[0]!;
    const command = ioMessage(io({ seq: 0, ts: 0, host: 0xf0000003, target: 0xf0000004 }), T0, "tor-c", tc);
    const later = ioMessage(io({ seq: 1, ts: 50_000_000, cid: 12 }), T0 + 50_000_000n, "tor-c");
    const msgs = [other, note, command, later];
    expect(note.key).toBe(command.key);
    engine.take({ offsets: msgs.map((_, i) => BigInt(i)), timestamps: msgs.map(() => 0), values: msgs.map((m) => m.value) }, 0n);
    engine.exporter.finish();
    const records = engine.snapshot(BigInt(msgs.length)).records as RecordJson[];
    expect(records.filter((r): r is IoRecordJson => r.type === "io" && r.host === a).map((r) => [r.target, r.cid, r.incomplete])).toEqual([[b, 9, false]]);
  });

  test("a note handed on again by a controller restarted on its journal (the same time and number) is a duplicate, taken once", () => {
    const engine = new PartitionEngine({ partition: 0, topics: DEFAULT_TOPICS, engine: { ioTimeoutNs: 1_000_000n, correlationWindowNs: 1_000_000n, intervalNs: 10_000_000n }, withRecords: true });
    const left = windowNoteMessages("tor", [{ host, target }], T0 + 500_000n, 0n, () => undefined, DEFAULT_TOPICS)[0]!;
    const joined = windowNoteMessages("tor", [{ host, target }], T0 + 600_000n, 1n, () => undefined, DEFAULT_TOPICS, true)[0]!;
    // Back in the window, a command of the pair is watched: unanswered, it is incomplete, whatever copies of the older note come after it.
    const watched = io({ seq: 1, ts: 700_000, cid: 11, cmd_psn: 1001 });
    // (Its controller's verdict: given up with every digest after it in.)
    const verdict = givenUpMessage("tor", watched, T0 + 700_000n, false, () => undefined, DEFAULT_TOPICS);
    const msgs = [ioMessage(io({ seq: 0, ts: 0 }), T0), left, joined, ioMessage(watched, T0 + 700_000n), left, verdict, ioMessage(io({ seq: 2, ts: 50_000_000, target: target + 1, cid: 12 }), T0 + 50_000_000n)];
    engine.take({ offsets: msgs.map((_, i) => BigInt(i)), timestamps: msgs.map(() => 0), values: msgs.map((m) => m.value) }, 0n);
    engine.exporter.finish();
    const snapshot = engine.snapshot(BigInt(msgs.length));
    const records = snapshot.records as RecordJson[];
    expect(records.filter((r): r is IoRecordJson => r.type === "io" && r.target === "10.0.2.1").map((r) => [r.cid, r.incomplete])).toEqual(expect.arrayContaining([[9, false], [11, true]]));
    expect(snapshot.counts.duplicateDigests).toBe(1);
  });

  test("seen_ts (the newest switch time before a join's write) reads back the same by both decoders, on a departure and a bound; a note without it (an older controller's) still reads", () => {
    const [withSeen] = windowNoteMessages("tor", [{ host, target }], T0, 3n, () => undefined, DEFAULT_TOPICS, false, 2 ** 48 - 5);
    const [without] = windowNoteMessages("tor", [{ host, target }], T0, 4n, () => undefined, DEFAULT_TOPICS);
    expect(rawDigestBatch(withSeen!.value).windowNote).toEqual({ host, target, joined: false, seenTs: 2 ** 48 - 5 });
    expect(batchFromRaw(RawDigest.decode(withSeen!.value)).raw.digest).toBe(WINDOW_LEFT);
    expect(rawDigestBatch(without!.value).windowNote).toEqual({ host, target, joined: false });
    // The generated decoder's path (a member order the fast path does not take) reads both too.
    const raw = RawDigest.decode(withSeen!.value);
    const reordered = RawDigest.encode({ ...raw, fields: [...raw.fields].reverse() }).finish();
    expect(rawDigestBatch(reordered).windowNote).toEqual({ host, target, joined: false, seenTs: 2 ** 48 - 5 });
    const [bound] = windowNoteMessages("tor", [{ host, target }], T0, 5n, () => undefined, DEFAULT_TOPICS, "bound", 77);
    expect(rawDigestBatch(bound!.value).windowNote).toEqual({ host, target, joined: false, bound: true, seenTs: 77 });
    expect(RawDigest.decode(bound!.value).digest).toBe(WINDOW_BOUND);
    const rawWithout = RawDigest.decode(without!.value);
    expect(rawDigestBatch(RawDigest.encode({ ...rawWithout, fields: [...rawWithout.fields].reverse() }).finish()).windowNote).toEqual({ host, target, joined: false });
  });

  for (const order of ["after", "before"] as const) {
    test(`an exporter group partition: a command whose pair left the window before its response is not incomplete (note ${order} the command's digest)`, () => {
      const run = (withNote: boolean) => {
        const engine = new PartitionEngine({ partition: 0, topics: DEFAULT_TOPICS, engine: { ioTimeoutNs: 1_000_000n, correlationWindowNs: 1_000_000n, intervalNs: 10_000_000n }, withRecords: true });
        const command = ioMessage(io({ seq: 0, ts: 0 }), T0);
        // The rotation at 0.5 ms on the switch's clock.
        const note = windowNoteMessages("tor", [{ host, target }], T0 + 500_000n, 0n, () => undefined, DEFAULT_TOPICS)[0]!;
        const later = ioMessage(io({ seq: 1, ts: 50_000_000, target: target + 1, cid: 12 }), T0 + 50_000_000n);
        // Without it, the controller's verdict: it gave the command up with every digest after it in (test/unit/given-up-notes.test.ts).
        const verdict = givenUpMessage("tor", io({ seq: 0, ts: 0 }), T0, false, () => undefined, DEFAULT_TOPICS);
        const msgs = [...(withNote ? (order === "before" ? [note, command] : [command, note]) : [command, verdict]), later];
        engine.take({ offsets: msgs.map((_, i) => BigInt(i)), timestamps: msgs.map(() => 0), values: msgs.map((m) => m.value) }, 0n);
        engine.exporter.finish();
        const records = engine.snapshot(BigInt(msgs.length)).records as RecordJson[];
        return records.filter((r): r is IoRecordJson => r.type === "io" && r.target === "10.0.2.1").map((r) => [r.cid, r.incomplete, r.e2e_c_ns]);
      };
      expect(run(true)).toEqual([[9, false, null]]);
      // Without the note the group cannot tell: the same command is incomplete.
      expect(run(false)).toEqual([[9, true, null]]);
    });
  }
});
