// An exporter group member's partition engine, a switch's first digests of
// the partition coming late (its controller behind a broker outage, or
// started later): the halves of the other vantage wait for it, so that an I/O
// is one record. (They went out alone once the other switch's time had moved
// the correlation window on, and the late switch's half made a second record
// of the I/O: a broker SIGKILLed mid-run gave 1 I/O twice of 1,976.)
import { describe, expect, test } from "vitest";
import type { IoDigest } from "../../contract/src/digests.js";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { PartitionEngine } from "../../exporter/src/group/partition-engine.js";
import { RawDigest } from "../../exporter/src/generated/rdma/telemetry/v1/records.js";
import { DEFAULT_TOPICS, type KafkaMessageOut } from "../../exporter/src/kafka/encode.js";
import { CLOCK_NOTE_GRACE_MS, clockKeysOf, rawDigestBatch, switchClockMessages, switchClockTime } from "../../exporter/src/kafka/digest-bus.js";
import { partitionOf } from "../../exporter/src/kafka/partitioner.js";
import { ioMessage } from "../support/digest-messages.js";

const T0 = 1_800_000_000_000_000_000n;

function io(over: Partial<IoDigest>): IoDigest {
  return { kind: "io", seq: 0, event: 2, vantage: 1, mode: 1, op: 2, flags: 3, host: 0x0a000101, target: 0x0a000201, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000, cid: 9, status: 0, bytes: 4096, ts: 60_000, e2e_ns: 46_000, to_data_ns: 11_000, from_data_ns: 26_000, host_prep_ns: 3_100, gen: 0, ...over };
}

/**
 * The compute side's half of I/O 9, then `seconds` of its lists (an I/O of another pair every 100 ms), then, if
 * `late`, the storage side's half of I/O 9: the records of I/O 9 made by then (at the end of the run if `finish`).
 */
function run(switchIds: string[] | undefined, seconds: number, late: boolean, finish = true, prepare?: (e: PartitionEngine) => void, clockOf?: string): IoRecordJson[] {
  return runEngine(switchIds, seconds, late, finish, prepare, clockOf).ios;
}

/** As run(), and `clockOf`'s controller tells its switch's clock every second (SWITCH_CLOCK, partition 0 of 4). */
function runEngine(switchIds: string[] | undefined, seconds: number, late: boolean, finish = true, prepare?: (e: PartitionEngine) => void, clockOf?: string) {
  const engine = new PartitionEngine({ partition: 0, topics: DEFAULT_TOPICS, engine: {}, switchIds, withRecords: true });
  prepare?.(engine);
  const msgs: KafkaMessageOut[] = [ioMessage(io({}), T0 + 60_000n, "tor-c")];
  for (let i = 1; i <= seconds * 10; i++) {
    msgs.push(ioMessage(io({ seq: i, vantage: 3, host: 0x0a000102, cid: 100 + i, ts: i * 100_000_000 }), T0 + BigInt(i) * 100_000_000n, "tor-c"));
    if (clockOf && i % 10 === 0) msgs.push(switchClockMessages(clockOf, T0 + BigInt(i) * 100_000_000n, 4, DEFAULT_TOPICS)[0]!);
  }
  if (late) msgs.push(ioMessage(io({ vantage: 2, ts: 50_000, e2e_ns: 40_000, to_data_ns: 5_000, from_data_ns: 20_000, host_prep_ns: 3_000 }), T0 + 50_000n, "tor-s"));
  engine.take({ offsets: msgs.map((_, i) => BigInt(i)), timestamps: msgs.map(() => 0), values: msgs.map((m) => m.value) }, 0n);
  if (finish) engine.exporter.finish();
  const snapshot = engine.snapshot(BigInt(msgs.length));
  return { ios: (snapshot.records as RecordJson[]).filter((r): r is IoRecordJson => r.type === "io" && r.cid === 9), snapshot };
}

describe("a switch named by --switch-id whose first digests of a partition come late", () => {
  test("30 s behind the other: the I/O is one record, with its RTT", () => {
    const ios = run(["tor-c", "tor-s"], 30, true);
    expect(ios.map((r) => [r.c_switch_id, r.s_switch_id, r.rtt_ns])).toEqual([["tor-c", "tor-s", 6_000]]);
    // A switch not named is not waited for: its late half is a second record (docs/operations.md).
    expect(run(undefined, 30, true).map((r) => [r.c_switch_id, r.s_switch_id])).toEqual([["tor-c", null], [null, "tor-s"]]);
  });

  test("never: the other's half goes out alone once the other has moved the silence (60 s) on", () => {
    expect(run(["tor-c", "tor-s"], 50, false, false)).toEqual([]);
    const out = run(["tor-c", "tor-s"], 65, false, false);
    expect(out.map((r) => [r.c_switch_id, r.s_switch_id, r.rtt_ns])).toEqual([["tor-c", null, null]]);
  });
});

describe("a switch not named, known to the member: seen in another of its partitions, or by this partition's earlier owners", () => {
  test("told by the member (expect): the I/O is one record, with its RTT", () => {
    expect(run(undefined, 30, true, true, (e) => e.expect(["tor-s"])).map((r) => [r.c_switch_id, r.s_switch_id, r.rtt_ns])).toEqual([["tor-c", "tor-s", 6_000]]);
  });

  test("in the committed state's clocks (restore): the same", () => {
    const restore = (e: PartitionEngine) => e.restore({ raised: [], clocks: { "tor-s": "0" } });
    expect(run(undefined, 30, true, true, restore).map((r) => [r.c_switch_id, r.s_switch_id, r.rtt_ns])).toEqual([["tor-c", "tor-s", 6_000]]);
  });

  test("a snapshot names the switches new to the partition, once", () => {
    const engine = new PartitionEngine({ partition: 0, topics: DEFAULT_TOPICS, engine: {}, withRecords: false });
    const take = (ms: KafkaMessageOut[], from: number) => {
      engine.take({ offsets: ms.map((_, i) => BigInt(from + i)), timestamps: ms.map(() => 0), values: ms.map((m) => m.value) }, 0n);
      return engine.snapshot(BigInt(from + ms.length)).newSwitches;
    };
    expect(take([ioMessage(io({}), T0, "tor-c"), ioMessage(io({ seq: 1, cid: 10 }), T0 + 1n, "tor-c")], 0)).toEqual(["tor-c"]);
    expect(take([ioMessage(io({ seq: 2, cid: 11 }), T0 + 2n, "tor-c"), ioMessage(io({ vantage: 2 }), T0 + 3n, "tor-s")], 2)).toEqual(["tor-s"]);
    expect(take([ioMessage(io({ seq: 3, cid: 12 }), T0 + 4n, "tor-s")], 4)).toEqual([]);
  });

  test("told, but never sending to this partition (a pair under one ToR): held until the others have moved the silence (60 s) on, then out alone", () => {
    const told = (e: PartitionEngine) => e.expect(["tor-s"]);
    expect(run(undefined, 50, false, false, told)).toEqual([]);
    expect(run(undefined, 65, false, false, told).map((r) => [r.c_switch_id, r.s_switch_id, r.rtt_ns])).toEqual([["tor-c", null, null]]);
  });

  test("a switch told but left out by --switch-id is not awaited", () => {
    const ios = run(["tor-c"], 30, false, false, (e) => e.expect(["tor-x"]));
    expect(ios.map((r) => [r.c_switch_id, r.s_switch_id])).toEqual([["tor-c", null]]);
  });
});

describe("a switch whose controller tells its clock to every partition (SWITCH_CLOCK)", () => {
  test("sending nothing else to this partition: the other's half goes out once both have moved the correlation window (2 s) on, not after the silence", () => {
    // Without the notes: held at 5 s (and until the silence, 60 s, above).
    expect(run(["tor-c", "tor-s"], 5, false, false)).toEqual([]);
    const { ios, snapshot } = runEngine(["tor-c", "tor-s"], 5, false, false, undefined, "tor-s");
    expect(ios.map((r) => [r.c_switch_id, r.s_switch_id, r.rtt_ns])).toEqual([["tor-c", null, null]]);
    expect(snapshot.counts.clockNotes).toBe(5);
    expect(snapshot.counts.digests).toBe(51);
  });

  test("a switch not named but heard from by its notes is named to the member's other partitions, and awaited there", () => {
    expect(runEngine(undefined, 2, false, false, undefined, "tor-s").snapshot.newSwitches).toEqual(["tor-c", "tor-s"]);
  });

  test("its half coming after its notes, within the window: one record, with the RTT", () => {
    const late = (e: PartitionEngine) => e.expect(["tor-s"]);
    const ios = run(undefined, 1, true, true, late, "tor-s");
    expect(ios.map((r) => [r.c_switch_id, r.s_switch_id, r.rtt_ns])).toEqual([["tor-c", "tor-s", 6_000]]);
  });

  test("a response whose list comes after notes that carried the switch past its command's I/O timeout: never incomplete, never two records", () => {
    // One switch sees both vantages (single ToR). Its command of I/O 9, then 3 s of clock notes and nothing else in
    // this partition, then the response's list (a list held long by the switch, or a slow path to the controller).
    const engine = new PartitionEngine({ partition: 0, topics: DEFAULT_TOPICS, engine: {}, switchIds: ["tor"], withRecords: true });
    const msgs: KafkaMessageOut[] = [ioMessage(io({ event: 1, vantage: 3, e2e_ns: 0, to_data_ns: 0, from_data_ns: 0, host_prep_ns: 0 }), T0 + 60_000n, "tor")];
    for (let i = 1; i <= 30; i++) msgs.push(switchClockMessages("tor", T0 + BigInt(i) * 100_000_000n, 4, DEFAULT_TOPICS)[0]!);
    msgs.push(ioMessage(io({ seq: 1, vantage: 3 }), T0 + 3_100_000_000n, "tor"));
    engine.take({ offsets: msgs.map((_, i) => BigInt(i)), timestamps: msgs.map(() => 0), values: msgs.map((m) => m.value) }, 0n);
    engine.exporter.finish();
    const ios = (engine.snapshot(BigInt(msgs.length)).records as RecordJson[]).filter((r): r is IoRecordJson => r.type === "io" && r.cid === 9);
    // No verdict from its controller (none published one): its answer is unknown, and the late response adds nothing.
    expect(ios.map((r) => [r.incomplete, r.e2e_c_ns, r.e2e_s_ns])).toEqual([[false, null, null]]);
  });

  test("the notes of a switch not in --switch-id are dropped, counted as its digests are", () => {
    const { snapshot } = runEngine(["tor-c"], 2, false, false, undefined, "tor-x");
    expect(snapshot.counts.unknownSwitch).toBe(2);
    expect(snapshot.counts.clockNotes).toBe(0);
  });

  test("one note to each partition, keyed to land there; a note decodes to its switch and time, and one with members is refused", () => {
    for (const n of [1, 3, 8, 64]) {
      const keys = clockKeysOf("tor-s", n);
      expect(keys.map((k) => partitionOf(k, n))).toEqual([...Array(n).keys()]);
      const ms = switchClockMessages("tor-s", T0, n, DEFAULT_TOPICS);
      expect(ms.map((m) => m.key)).toEqual(keys);
      const back = rawDigestBatch(ms[0]!.value);
      expect([back.clock, back.batch.switchId, back.batch.listTimestampNs, back.batch.digests.length]).toEqual([true, "tor-s", T0, 0]);
    }
    const bad = RawDigest.encode(RawDigest.fromPartial({ switchId: "tor-s", digest: "switch_clock", seq: 0n, listTimestampNs: T0, fields: [{ name: "x", value: Buffer.from([1]) }] })).finish();
    expect(() => rawDigestBatch(bad)).toThrow(/switch_clock from tor-s: has members \(x\); it has none/);
  });
});

// A note tells the newest list's time while the switch keeps sending lists (every digest up to it has reached the
// controller), and moves on by the host's clock only for as long as the switch was seen idle (its RoCEv2 packet count
// read unchanged), less the grace: a switch that stalls (a software switch fed from captures on a starved or stopped
// host, a digest path held back) answers no counter read or counts packets whose digests are yet to come, and its
// notes wait for them. test/kafka/fabric-clock.test.ts stops such a switch for 6 s.
test("a switch clock note tells the newest list's time, and runs on behind the host's clock only while the switch is seen idle", () => {
  const T = 1_800_000_000_000_000_000n;
  expect(CLOCK_NOTE_GRACE_MS).toBeLessThanOrEqual(2000);
  // Idle all along.
  expect(switchClockTime(T, 0, 0)).toBe(T);
  expect(switchClockTime(T, 1999, 1999)).toBe(T);
  expect(switchClockTime(T, CLOCK_NOTE_GRACE_MS, CLOCK_NOTE_GRACE_MS)).toBe(T);
  expect(switchClockTime(T, CLOCK_NOTE_GRACE_MS + 1500, CLOCK_NOTE_GRACE_MS + 1500)).toBe(T + 1_500_000_000n);
  expect(switchClockTime(T, 60_000, 60_000)).toBe(T + BigInt(60_000 - CLOCK_NOTE_GRACE_MS) * 1_000_000n);
  // No list for a minute, but packets counted all along (or no counter read answered): the note waits.
  expect(switchClockTime(T, 60_000, 0)).toBe(T);
  // Idle for the last 3 s of it: 1 s past the grace.
  expect(switchClockTime(T, 60_000, 3000)).toBe(T + 1_000_000_000n);
});
