// An exporter group member holds a share of each switch's digests, so a gap
// in the numbers it sees is no loss. Whether digests lost after a command may
// have held its response is the controller's to say: it sees its switch's
// whole sequence and publishes, for each command it gave up with no response
// seen, an IO_GIVEN_UP note keyed as the I/O's digests. The member gives that
// verdict: incomplete, or "answer unknown" (ios_answer_lost); with none, the
// answer is unknown too.
import { describe, expect, test } from "vitest";
import type { IoDigest } from "../../contract/src/digests.js";
import type { IoRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { PartitionEngine } from "../../exporter/src/group/partition-engine.js";
import { batchFromRaw, givenUpMessage, IO_GIVEN_UP, rawDigestBatch } from "../../exporter/src/kafka/digest-bus.js";
import { DEFAULT_TOPICS, type KafkaMessageOut } from "../../exporter/src/kafka/encode.js";
import { RawDigest } from "../../exporter/src/generated/rdma/telemetry/v1/records.js";
import { MetricsEngine } from "../../exporter/src/metrics.js";
import { ioMessage } from "../support/digest-messages.js";

const T0 = 1_800_000_000_000_000_000n;
const v6Host = 0xf0000003; // the switch's endpoint key for the host
const target = 0x0a000201;
const endpoints = [{ key: v6Host, address: "2001:db8:0:1::7" }];

function io(over: Partial<IoDigest>): IoDigest {
  return { kind: "io", seq: 0, event: 1, vantage: 3, mode: 1, op: 2, flags: 3, host: v6Host, target, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000, cid: 9, status: 0, bytes: 4096, ts: 0, e2e_ns: 0, to_data_ns: 0, from_data_ns: 0, host_prep_ns: 0, gen: 0, ...over };
}

/** The controller: its engine over the whole sequence, its IO_GIVEN_UP notes as it publishes them. */
function controller(lists: Array<[bigint, IoDigest[]]>): { notes: KafkaMessageOut[]; stats: SwitchStatsJson[] } {
  const out: RecordJson[] = [];
  const m = new MetricsEngine((r) => out.push(r), { perEventRecords: false });
  const notes: KafkaMessageOut[] = [];
  m.onGivenUp = (sw, d, cmdUnixNs, lost) => notes.push(givenUpMessage(sw, d, cmdUnixNs, lost, (k) => m.endpointAddress(k), DEFAULT_TOPICS));
  for (const [at, ds] of lists) m.onDigestList("tor", at, ds, 0, undefined, endpoints);
  m.finish();
  return { notes, stats: out.filter((r): r is SwitchStatsJson => r.type === "switch_stats") };
}

/** A member holding the command's partition: the command, then `after` (other digests and notes), in that order. */
function member(msgs: KafkaMessageOut[]): { ios: Array<[number, boolean]>; settledHeld: boolean } {
  const engine = new PartitionEngine({ partition: 0, topics: DEFAULT_TOPICS, engine: { correlationWindowNs: 1_000_000n, intervalNs: 10_000_000n }, withRecords: true });
  engine.take({ offsets: msgs.map((_, i) => BigInt(i)), timestamps: msgs.map(() => 0), values: msgs.map((m) => m.value) }, 0n);
  // Until the verdict, the command's digest is not settled (its offset is not committed past).
  const settledHeld = engine.exporter.metrics.settledBefore <= T0;
  engine.exporter.finish();
  const records = engine.snapshot(BigInt(msgs.length)).records as RecordJson[];
  const ios = records.filter((r): r is IoRecordJson => r.type === "io" && r.cid === 9).map((r): [number, boolean] => [r.cid, r.incomplete]);
  return { ios, settledHeld };
}

describe("IO_GIVEN_UP notes", () => {
  const cmd = io({ seq: 0 });
  // The switch's clock 1.5 s on: past the command's I/O timeout (1 s).
  const past = (seq: number) => io({ seq, cid: 77, cmd_psn: 2000, target: target + 1, ts: 1_500_000_000 });

  test("a controller tells a command given up with digests lost after it as lost, one with every digest in as not; both decoders read the note back", () => {
    const lost = controller([[T0, [cmd]], [T0 + 1_500_000_000n, [past(3)]]]);
    const kept = controller([[T0, [cmd, io({ seq: 1, cid: 10, cmd_psn: 1001, ts: 5_000 })]], [T0 + 1_500_000_000n, [past(2)]]]);
    expect(lost.stats.reduce((a, s) => a + s.ios_answer_lost, 0)).toBe(1);
    const read = (m: KafkaMessageOut) => rawDigestBatch(m.value);
    const note = lost.notes.map(read).find((n) => n.givenUp?.cid === 9)!;
    expect(note.givenUp).toEqual({ host: note.givenUp!.host, target, targetQp: 0x801, cid: 9, cmdPsn: 1000, lost: true });
    expect(note.batch.raw.digest).toBe(IO_GIVEN_UP);
    expect(note.batch.listTimestampNs).toBe(T0);
    expect(note.seq).toBe(0n);
    // The host named by the controller engine's key, with its address: the member maps it to its own.
    expect(note.batch.endpoints).toEqual([{ key: note.givenUp!.host, address: "2001:db8:0:1::7" }]);
    const nine = lost.notes.find((n) => read(n).givenUp?.cid === 9)!;
    expect(batchFromRaw(RawDigest.decode(nine.value))).toEqual(read(nine).batch);
    expect(kept.notes.map(read).find((n) => n.givenUp?.cid === 9)!.givenUp!.lost).toBe(false);
    // Keyed as the I/O's digests: the same partition as its command.
    expect(nine.key).toBe(ioMessage(cmd, T0, "tor", endpoints).key);
    // A note whose member does not fit is a bad digest, named.
    const bad = RawDigest.encode(RawDigest.fromPartial({ switchId: "tor", digest: IO_GIVEN_UP, seq: 1n, listTimestampNs: T0, fields: [{ name: "host", value: Buffer.from([1]) }, { name: "target", value: Buffer.from([1]) }, { name: "target_qp", value: Buffer.from([1]) }, { name: "cid", value: Buffer.from([1]) }, { name: "cmd_psn", value: Buffer.from([1]) }, { name: "lost", value: Buffer.from([2]) }] })).finish();
    expect(() => rawDigestBatch(bad)).toThrow(/io_given_up from tor: member 'lost' does not fit in 1 bits/);
  });

  test("a member gives the controller's verdict, the note before or after its own timeout; without one, the answer is unknown", () => {
    const lost = controller([[T0, [cmd]], [T0 + 1_500_000_000n, [past(3)]]]).notes.find((n) => rawDigestBatch(n.value).givenUp?.cid === 9)!;
    const kept = controller([[T0, [cmd, io({ seq: 1, cid: 10, cmd_psn: 1001, ts: 5_000 })]], [T0 + 1_500_000_000n, [past(2)]]]).notes.find((n) => rawDigestBatch(n.value).givenUp?.cid === 9)!;
    const command = ioMessage(cmd, T0, "tor", endpoints);
    // The member's share holds the command and, past its timeout, another I/O's command of the switch.
    const later = ioMessage(past(3), T0 + 1_500_000_000n, "tor");
    expect(member([command, later, kept]).ios).toEqual([[9, true]]);
    expect(member([command, kept, later]).ios).toEqual([[9, true]]);
    expect(member([command, later, lost]).ios).toEqual([[9, false]]);
    expect(member([command, lost, later]).ios).toEqual([[9, false]]);
    const none = member([command, later]);
    expect(none.ios).toEqual([[9, false]]);
    // Waiting for it, the command's digest stays open (not committed past).
    expect(none.settledHeld).toBe(true);
  });
});
