// The direct IoRecord writer gives the bytes of the generated encoder, for
// every shape of record the exporter emits and the edges of each field.
import { describe, expect, test } from "vitest";
import { IoOp, IoRecord, Mode } from "../../exporter/src/generated/rdma/telemetry/v1/records.js";
import { writeIoRecord } from "../../exporter/src/kafka/io-record-writer.js";
import type { IoRecordJson } from "../../contract/src/records.js";

/** The generic path encodeRecord took before: IoRecord.fromPartial, then IoRecord.encode. */
function reference(r: IoRecordJson, intervalNs: bigint): Buffer {
  const big = (v: number | null) => (v === null ? undefined : BigInt(Math.round(v)));
  const m = IoRecord.fromPartial({
    switchId: r.switch_id, interval: { startUnixNs: BigInt(r.interval_start_unix_ns), endUnixNs: BigInt(r.interval_start_unix_ns) + intervalNs }, host: r.host, target: r.target, cid: r.cid,
    op: r.op === "read" ? IoOp.IO_OP_READ : IoOp.IO_OP_WRITE, bytes: BigInt(r.bytes), nvmeStatus: r.nvme_status, e2eCNs: big(r.e2e_c_ns), e2eSNs: big(r.e2e_s_ns), rttNs: big(r.rtt_ns), dalNs: big(r.dal_ns), dplNs: big(r.dpl_ns),
    incomplete: r.incomplete, mode: r.mode === "full" ? Mode.MODE_FULL : r.mode === "polling" ? Mode.MODE_POLLING : Mode.MODE_UNSPECIFIED, cSwitchId: r.c_switch_id ?? "", sSwitchId: r.s_switch_id ?? "", cmdUnixNs: BigInt(r.cmd_unix_ns),
    hostQp: r.host_qp, targetQp: r.target_qp, cmdPsn: r.cmd_psn, inCapsule: r.in_capsule,
  });
  return Buffer.from(IoRecord.encode(m).finish());
}

const base = (i: number): IoRecordJson => ({
  type: "io", switch_id: "tor-c", interval_start_unix_ns: String(1_800_000_000_000_000_000n + BigInt(i >> 10) * 1_000_000_000n), host: `10.0.1.${i & 255}`, target: `10.0.2.${(i >> 8) & 7}`,
  host_qp: 0x100 + (i & 7), target_qp: 0x800 + (i & 7), cid: i & 0xffff, cmd_psn: (i * 7919) & 0xffffff, op: i & 1 ? "read" : "write", bytes: 4096 * (i % 33), in_capsule: i % 5 === 0, nvme_status: i % 11 === 0 ? 0x4004 : 0,
  e2e_c_ns: i % 13 === 0 ? null : 70_000 + (i % 997), e2e_s_ns: i % 17 === 0 ? null : 64_000.4, rtt_ns: i % 3 === 0 ? null : 6_000 + (i % 97), dal_ns: 63_000, dpl_ns: i & 1 ? null : 3_500.5,
  incomplete: i % 7 === 0, mode: i % 9 === 0 ? "polling" : "full", c_switch_id: i % 4 === 0 ? null : "tor-c", s_switch_id: i % 6 === 0 ? null : "tor-s", cmd_unix_ns: String(1_800_000_000_000_000_000n + BigInt(i) * 1000n),
});

describe("IoRecord writer", () => {
  test("the generated encoder's bytes for 20,000 records of every shape", () => {
    for (let i = 0; i < 20_000; i++) {
      const r = base(i);
      expect(writeIoRecord(r, 1_000_000_000n).equals(reference(r, 1_000_000_000n)), JSON.stringify(r)).toBe(true);
    }
  });

  test("edges: zeros, negative and huge durations, non-ASCII and long names, 64-bit times, other interval lengths", () => {
    const edges: Array<Partial<IoRecordJson>> = [
      { switch_id: "", host: "", target: "", cid: 0, bytes: 0, host_qp: 0, target_qp: 0, cmd_psn: 0, cmd_unix_ns: "0", interval_start_unix_ns: "0" },
      { e2e_c_ns: -1, rtt_ns: -123_456_789, dal_ns: 0, dpl_ns: 0 },
      { e2e_c_ns: 2 ** 53 + 2, e2e_s_ns: 9.2e18, bytes: 2 ** 40 },
      { host: "hôte-ü", target: "目标", switch_id: "s".repeat(300), c_switch_id: "c".repeat(127), s_switch_id: "é".repeat(128) },
      { cmd_unix_ns: "18446744073709551615", interval_start_unix_ns: "4294967296" },
      { cmd_unix_ns: "007", cid: 0xffffffff, cmd_psn: 0xffffff, nvme_status: 0xffff },
    ];
    for (const [k, e] of edges.entries()) {
      for (const len of [1_000_000_000n, 1n, 0n]) {
        const r = { ...base(k), ...e } as IoRecordJson;
        expect(writeIoRecord(r, len).toString("hex"), JSON.stringify(r)).toBe(reference(r, len).toString("hex"));
      }
    }
  });

  test("what the generated encoder refuses, it refuses", () => {
    expect(() => writeIoRecord({ ...base(1), cmd_unix_ns: "18446744073709551616" }, 1n)).toThrow();
    expect(() => writeIoRecord({ ...base(1), bytes: -1 }, 1n)).toThrow();
    expect(() => writeIoRecord({ ...base(1), cid: -1 }, 1n)).toThrow();
    expect(() => writeIoRecord({ ...base(1), rtt_ns: Number.NaN }, 1n)).toThrow();
  });
});
