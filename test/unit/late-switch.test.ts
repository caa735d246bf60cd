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
import { DEFAULT_TOPICS, type KafkaMessageOut } from "../../exporter/src/kafka/encode.js";
import { ioMessage } from "../support/digest-messages.js";

const T0 = 1_800_000_000_000_000_000n;

function io(over: Partial<IoDigest>): IoDigest {
  return { kind: "io", seq: 0, event: 2, vantage: 1, mode: 1, op: 2, flags: 3, host: 0x0a000101, target: 0x0a000201, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000, cid: 9, status: 0, bytes: 4096, ts: 60_000, e2e_ns: 46_000, to_data_ns: 11_000, from_data_ns: 26_000, host_prep_ns: 3_100, gen: 0, ...over };
}

/**
 * The compute side's half of I/O 9, then `seconds` of its lists (an I/O of another pair every 100 ms), then, if
 * `late`, the storage side's half of I/O 9: the records of I/O 9 made by then (at the end of the run if `finish`).
 */
function run(switchIds: string[] | undefined, seconds: number, late: boolean, finish = true, prepare?: (e: PartitionEngine) => void): IoRecordJson[] {
  const engine = new PartitionEngine({ partition: 0, topics: DEFAULT_TOPICS, engine: {}, switchIds, withRecords: true });
  prepare?.(engine);
  const msgs: KafkaMessageOut[] = [ioMessage(io({}), T0 + 60_000n, "tor-c")];
  for (let i = 1; i <= seconds * 10; i++) msgs.push(ioMessage(io({ seq: i, vantage: 3, host: 0x0a000102, cid: 100 + i, ts: i * 100_000_000 }), T0 + BigInt(i) * 100_000_000n, "tor-c"));
  if (late) msgs.push(ioMessage(io({ vantage: 2, ts: 50_000, e2e_ns: 40_000, to_data_ns: 5_000, from_data_ns: 20_000, host_prep_ns: 3_000 }), T0 + 50_000n, "tor-s"));
  engine.take({ offsets: msgs.map((_, i) => BigInt(i)), timestamps: msgs.map(() => 0), values: msgs.map((m) => m.value) }, 0n);
  if (finish) engine.exporter.finish();
  return (engine.snapshot(BigInt(msgs.length)).records as RecordJson[]).filter((r): r is IoRecordJson => r.type === "io" && r.cid === 9);
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
