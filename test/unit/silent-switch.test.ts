// A switch gone silent (its controller gone, the switch dead, traffic moved)
// holds nothing: the commands it saw go out once it has sent nothing for
// silentSwitchNs, saying only what was seen, and are counted.
import { describe, expect, test } from "vitest";
import { IO_EVENT_CMD, IO_EVENT_RSP, VANTAGE_C, VANTAGE_S, type IoDigest, type MsgDigest } from "../../contract/src/digests.js";
import { MetricsEngine } from "../../exporter/src/metrics.js";
import type { IoRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { TelemetryMetrics } from "../../app/prometheus.js";

const T0 = 1_800_000_000_000_000_000n;
const S = 1_000_000_000n;
const host = 0x0a000101;
const target = 0x0a000201;

function io(over: Partial<IoDigest>): IoDigest {
  return { kind: "io", seq: 0, event: IO_EVENT_RSP, vantage: VANTAGE_C, mode: 1, op: 1, flags: 1, host, target, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000, cid: 9, status: 0, bytes: 4096, ts: 1000, e2e_ns: 0, to_data_ns: 0, from_data_ns: 0, host_prep_ns: 0, gen: 0, ...over };
}

function msg(over: Partial<MsgDigest>): MsgDigest {
  return { kind: "msg", seq: 0, mode: 1, flags: 0, src: host, dst: 0x0a000102, dest_qp: 7, first_psn: 100, last_psn: 163, bytes: 262144, packets: 64, retransmitted: 0, ecn_ce: 0, first_ts: 0, fct_ns: 21000, gap_ns: 0, extra_packets: 0, extra_retransmitted: 0, extra_ecn_ce: 0, straddled: 0, cnp: 0, ...over };
}

const ios = (out: RecordJson[]) => out.filter((r): r is IoRecordJson => r.type === "io");

describe("a switch gone silent", () => {
  test("its open commands go out once it has been silent for silentSwitchNs, joined with the other vantage's half, neither incomplete nor with figures it did not see; counted; a response that still comes makes no second record", () => {
    const out: RecordJson[] = [];
    const m = new MetricsEngine((r) => out.push(r)); // silentSwitchNs: 60 s by default
    // Both ToRs see the command of cid 9; the storage side sees its response too. The compute side sees the command
    // of cid 10 (the storage side never reports it), then sends nothing more.
    m.onDigestList("tor-c", T0 + 1_000n, [io({ seq: 0, event: IO_EVENT_CMD, vantage: VANTAGE_C, ts: 1_000 })]);
    m.onDigestList("tor-c", T0 + 3_000n, [io({ seq: 1, event: IO_EVENT_CMD, vantage: VANTAGE_C, cid: 10, cmd_psn: 1001, ts: 3_000 })]);
    m.onDigestList("tor-s", T0 + 2_000n, [io({ seq: 0, event: IO_EVENT_CMD, vantage: VANTAGE_S, ts: 2_000 })]);
    m.onDigestList("tor-s", T0 + 50_000n, [io({ seq: 1, event: IO_EVENT_RSP, vantage: VANTAGE_S, ts: 50_000, e2e_ns: 48_000, status: 4 })]);
    // The storage side keeps sending: 30 s on, tor-c does not count as silent yet, and what waits on it waits.
    let seq = 2;
    const sendS = (fromS: number, toS: number) => {
      for (let t = fromS * 10; t < toS * 10; t++) m.onDigestList("tor-s", T0 + BigInt(t) * 100_000_000n + 30_000n, [msg({ seq: seq++, first_ts: t * 100_000_000, fct_ns: 30_000 })]);
    };
    sendS(1, 30);
    expect(ios(out)).toEqual([]);
    sendS(30, 62);
    const early = ios(out);
    expect(early.map((r) => [r.cid, r.c_switch_id, r.s_switch_id, r.incomplete, r.e2e_c_ns, r.e2e_s_ns, r.rtt_ns, r.dpl_ns, r.nvme_status])).toEqual([
      [9, "tor-c", "tor-s", false, null, 48_000, null, null, 4],
      [10, "tor-c", null, false, null, null, null, null, 0],
    ]);
    expect(m.givenUpSilentSwitch).toBe(2);
    // Each record says how many given-up commands it carries (an exporter group member counts them as it commits them).
    expect(early.map((r) => m.givenUpSilentIn(r))).toEqual([1, 1]);
    expect(m.givenUpSilent.get("tor-c")).toBe(2);
    expect(m.givenUpSilent.get("tor-s")).toBeUndefined();
    // Not timed out: no switch said no response came.
    const stats = () => out.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
    expect(stats().reduce((a, s) => a + s.incomplete_ios, 0)).toBe(0);
    // tor-c comes back with the response of cid 9: counted as late, not a second record of the I/O.
    m.onDigestList("tor-c", T0 + 62n * S, [io({ seq: 2, event: IO_EVENT_RSP, vantage: VANTAGE_C, ts: 62_000_000_000, e2e_ns: 61_999_999_000 })]);
    m.finish();
    expect(ios(out).map((r) => r.cid)).toEqual([9, 10]);
    expect(stats().filter((s) => s.switch_id === "tor-c").reduce((a, s) => a + s.late_responses, 0)).toBe(1);
    // Each given up in an interval still open: counted in the io_interval aggregates, none late.
    expect(stats().reduce((a, s) => a + s.late_records, 0)).toBe(0);
    expect(out.filter((r) => r.type === "io_interval").reduce((a, r) => a + (r.type === "io_interval" ? r.count : 0), 0)).toBe(2);
  });

  test("a switch alone whose digests stop (its engine moved on by the wall clock, as an exporter group's idle partition or a controller is): its open command goes out after silentSwitchNs, not before; counted on Prometheus", async () => {
    const out: RecordJson[] = [];
    const m = new MetricsEngine((r) => out.push(r), { silentSwitchNs: 5n * S });
    m.onDigestList("tor-c", T0 + 1_000n, [io({ seq: 0, event: IO_EVENT_CMD, vantage: VANTAGE_C, ts: 1_000 })]);
    m.advance(T0 + 4n * S);
    expect(ios(out)).toEqual([]);
    m.advance(T0 + 5n * S + 1_000n);
    expect(ios(out).map((r) => [r.cid, r.c_switch_id, r.s_switch_id, r.incomplete, r.e2e_c_ns])).toEqual([[9, "tor-c", null, false, null]]);
    expect(m.givenUpSilentSwitch).toBe(1);
    // Where an operator looks: the controller's Prometheus counter.
    const prom = new TelemetryMetrics();
    prom.watchEngine(m);
    expect(await prom.text()).toMatch(/^rdma_telemetry_given_up_silent_switch_total\{switch="tor-c"\} 1$/m);
    // Everything before the switch's last list is settled: a member taking the partition over need not re-read it.
    m.advance(T0 + 10n * S);
    expect(m.settledBefore).toBeGreaterThan(T0);
    m.finish();
    expect(ios(out)).toHaveLength(1);
  });

  test("a command past the I/O timeout on its own switch's clock is still incomplete, not given up on silence", () => {
    const out: RecordJson[] = [];
    const m = new MetricsEngine((r) => out.push(r), { silentSwitchNs: 5n * S });
    m.onDigestList("tor-c", T0 + 1_000n, [io({ seq: 0, event: IO_EVENT_CMD, vantage: VANTAGE_C, ts: 1_000 })]);
    m.onDigestList("tor-c", T0 + 2n * S, [msg({ seq: 1, first_ts: 2_000_000_000 - 30_000, fct_ns: 30_000 })]);
    m.advance(T0 + 10n * S);
    expect(ios(out).map((r) => [r.cid, r.incomplete])).toEqual([[9, true]]);
    expect(m.givenUpSilentSwitch).toBe(0);
  });
});

describe("the two vantages of one I/O, open at both switches", () => {
  // An exporter group's idle partition moves time on by the wall clock, in steps; the two switches' last lists are
  // 150 ms apart, more than the correlation window, and each still holds the command of cid 9 (within the I/O timeout
  // on its own clock). The one that fell silent first gives its command up first: its half must wait for the other
  // switch's command to end (given up in turn), not go out alone and make the I/O two records.
  const opts = { silentSwitchNs: S, correlationWindowNs: 100_000_000n, ioTimeoutNs: 200_000_000n };

  test("both switches fall silent, one 150 ms after the other: one record of the I/O, from both halves", () => {
    const out: RecordJson[] = [];
    const m = new MetricsEngine((r) => out.push(r), opts);
    m.onDigestList("tor-c", T0 + 1_000n, [io({ seq: 0, event: IO_EVENT_CMD, vantage: VANTAGE_C, ts: 1_000 })]);
    m.onDigestList("tor-s", T0 + 2_000n, [io({ seq: 0, event: IO_EVENT_CMD, vantage: VANTAGE_S, ts: 2_000 })]);
    m.onDigestList("tor-c", T0 + 150_000_000n, [msg({ seq: 1, first_ts: 150_000_000 - 30_000, fct_ns: 30_000 })]);
    for (let now = T0 + 350_000_000n; now <= T0 + 3n * S; now += 100_000_000n) m.advance(now);
    expect(ios(out).map((r) => [r.cid, r.c_switch_id, r.s_switch_id, r.incomplete])).toEqual([[9, "tor-c", "tor-s", false]]);
    expect(m.givenUpSilentSwitch).toBe(2);
    m.finish();
    expect(ios(out)).toHaveLength(1);
  });

  test("the storage side saw the response, the compute side's digest of it was lost: its command times out later than the window, and the I/O is still one record", () => {
    const out: RecordJson[] = [];
    const m = new MetricsEngine((r) => out.push(r), opts);
    m.onDigestList("tor-c", T0 + 1_000n, [io({ seq: 0, event: IO_EVENT_CMD, vantage: VANTAGE_C, ts: 1_000 })]);
    m.onDigestList("tor-s", T0 + 2_000n, [io({ seq: 0, event: IO_EVENT_CMD, vantage: VANTAGE_S, ts: 2_000 })]);
    m.onDigestList("tor-s", T0 + 50_000n, [io({ seq: 1, event: IO_EVENT_RSP, vantage: VANTAGE_S, ts: 50_000, e2e_ns: 48_000 })]);
    // Both keep sending: the storage side's half is past the window long before the compute side's command times out.
    for (let t = 1; t <= 10; t++) {
      m.onDigestList("tor-c", T0 + BigInt(t) * 50_000_000n, [msg({ seq: t, first_ts: t * 50_000_000 - 30_000, fct_ns: 30_000 })]);
      m.onDigestList("tor-s", T0 + BigInt(t) * 50_000_000n + 1_000n, [msg({ seq: t + 1, dst: 0x0a000103, first_ts: t * 50_000_000 - 29_000, fct_ns: 30_000 })]);
    }
    m.finish();
    expect(ios(out).map((r) => [r.cid, r.c_switch_id, r.s_switch_id, r.e2e_s_ns])).toEqual([[9, "tor-c", "tor-s", 48_000]]);
  });
});
