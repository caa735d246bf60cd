// The controller's Tofino digest path on a real data plane: the v1model
// program built with the Tofino build's compact digests (p4/build/compact/)
// runs on the software switch, over P4Runtime, into the exporter. Its records
// must equal a run of the full layout on the same packets, except what the
// compact layout cannot carry: an I/O's or message's own time (the
// controller takes the digest list's), and the command PSN's high 8 bits.
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import type { FlowAggregateJson, IoAggregateJson, IoRecordJson, MessageRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { generateTraffic, type GeneratedTraffic } from "../../traffic/src/generator.js";
import { ioMismatches, ioTruthKey, messageMismatches, messageRecordKey, messageTruthKey } from "../../app/self-check.js";

const root = new URL("../..", import.meta.url).pathname;
const COMPACT = { p4info: join(root, "p4/build/compact/telemetry.p4info.json"), deviceConfig: join(root, "p4/build/compact/telemetry.json") };
/** Records, and the timestamps of the digest lists the switches sent (capture time). */
async function run(traffic: GeneratedTraffic, compact: readonly string[]) {
  const records: RecordJson[] = [];
  const listTimes = new Set<string>();
  const result = await replaySwitches(
    traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets, pipeline: compact.includes(s.name) ? COMPACT : undefined })),
    { onRecord: (r) => records.push(r), beforeFeed: (rigs) => rigs.forEach((rig) => rig.sw.on("digest", (l) => listTimes.add(l.timestampNs.toString()))) },
  );
  for (const rig of result.rigs) expect(rig.controller.digestLayout, rig.options.name).toBe(compact.includes(rig.options.name) ? "compact" : "full");
  return { records, listTimes };
}

const ofType = <T extends RecordJson["type"]>(rs: RecordJson[], type: T) => rs.filter((r): r is Extract<RecordJson, { type: T }> => r.type === type);
/** An I/O by the PSN bits both layouts carry. */
const ioKey16 = (r: IoRecordJson) => `${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn & 0xffff}`;
const sum = <T>(rs: T[], f: (r: T) => number) => rs.reduce((a, r) => a + f(r), 0);

const traffic = generateTraffic({
  seed: 23, durationNs: 200_000_000, hosts: 3, targets: 2, ioRate: 1500,
  faults: [
    { kind: "loss", host: 0, fromNs: 0, toNs: 200_000_000, probability: 0.01 },
    { kind: "congestion", fromNs: 50_000_000, toNs: 110_000_000, extraNs: 20_000, ecnFraction: 0.1 },
  ],
});

describe("compact (Tofino) digests through the software switch", () => {
  test("both ToRs compact: every measurement equals the full-layout run's; times are the digest lists'", async () => {
    const { records: full } = await run(traffic, []);
    const { records: compact, listTimes } = await run(traffic, ["tor-c", "tor-s"]);
    /** A time the controller took from a digest list: that list's timestamp (less the durations the record subtracted). */
    const fromList = (t: string, ...less: Array<number | null>) => [0, ...less].some((d) => d !== null && listTimes.has((BigInt(t) + BigInt(d)).toString()));

    const fullIos = new Map(ofType(full, "io").map((r) => [ioKey16(r), r]));
    const compactIos = ofType(compact, "io");
    expect(compactIos.length).toBe(fullIos.size);
    expect(compactIos.some((r) => r.rtt_ns !== null)).toBe(true);
    // The narrowing is exercised: the full run has command PSNs past 16 bits.
    expect([...fullIos.values()].some((r) => r.cmd_psn > 0xffff)).toBe(true);
    const strip = ({ cmd_unix_ns, interval_start_unix_ns, cmd_psn, ...rest }: IoRecordJson) => (void cmd_unix_ns, void interval_start_unix_ns, void cmd_psn, rest);
    for (const r of compactIos) {
      const f = fullIos.get(ioKey16(r));
      expect(f, ioKey16(r)).toBeDefined();
      expect(strip(r)).toEqual(strip(f!));
      expect(r.cmd_psn).toBe(f!.cmd_psn & 0xffff);
      // The I/O's time is its digest list's, never before the packet's.
      expect(fromList(r.cmd_unix_ns, r.e2e_c_ns, r.e2e_s_ns), `${ioKey16(r)}: cmd_unix_ns from a list`).toBe(true);
      expect(BigInt(r.cmd_unix_ns) >= BigInt(f!.cmd_unix_ns), ioKey16(r)).toBe(true);
    }
    // Against the ground truth: all but the command's time.
    const byTruth = new Map(compactIos.map((r) => [ioKey16(r), r]));
    const problems = traffic.ios.filter((t) => t.record).flatMap((t) => {
      const r = byTruth.get(`${t.host}|${t.target}|${t.target_qp}|${t.cid}|${t.cmd_psn & 0xffff}`);
      if (!r) return [`${ioTruthKey(t)}: no record`];
      const m = ioMismatches(t, r).filter((x) => !x.startsWith("cmd_unix_ns") && !/^(dal_ns|dpl_ns): got null/.test(x));
      return m.length ? [`${ioTruthKey(t)}: ${m.join("; ")}`] : [];
    });
    expect(problems.slice(0, 10)).toEqual([]);

    const fullMsgs = new Map(ofType(full, "message").map((r) => [messageRecordKey(r), r]));
    const compactMsgs = ofType(compact, "message");
    expect(compactMsgs.length).toBe(traffic.messages.length);
    expect(compactMsgs.length).toBe(fullMsgs.size);
    const stripMsg = ({ first_unix_ns, interval_start_unix_ns, ...rest }: MessageRecordJson) => (void first_unix_ns, void interval_start_unix_ns, rest);
    for (const r of compactMsgs) {
      const f = fullMsgs.get(messageRecordKey(r))!;
      expect(stripMsg(r)).toEqual(stripMsg(f));
      // first_ts is the list's time less the FCT.
      expect(fromList(r.first_unix_ns, r.fct_ns), `${messageRecordKey(r)}: first_unix_ns from a list`).toBe(true);
      expect(BigInt(r.first_unix_ns) >= BigInt(f.first_unix_ns), messageRecordKey(r)).toBe(true);
    }
    const truthMsgs = new Map(traffic.messages.map((t) => [messageTruthKey(t), t]));
    expect(compactMsgs.flatMap((r) => messageMismatches(truthMsgs.get(messageRecordKey(r))!, r))).toEqual([]);
    expect(compactMsgs.some((r) => r.retransmitted > 0) && compactMsgs.some((r) => r.ecn_ce_packets > 0)).toBe(true);

    // Interval aggregates: the same totals (an event near an interval's end
    // may land in the next one, its time being the list's). ECN CE marks on
    // packets outside any message (extra_ecn_ce) are not in the compact layout.
    const flows = (rs: RecordJson[]) => ofType(rs, "flow_interval") as FlowAggregateJson[];
    for (const k of ["messages", "bytes", "packets", "retransmitted", "cnp_packets", "straddled_messages"] as const) {
      expect(sum(flows(compact), (f) => f[k]), k).toBe(sum(flows(full), (f) => f[k]));
    }
    expect(sum(flows(compact), (f) => f.ecn_ce_packets)).toBe(sum(ofType(full, "message"), (m) => m.ecn_ce_packets));
    expect(sum(flows(compact), (f) => f.ecn_ce_packets)).toBeLessThanOrEqual(sum(flows(full), (f) => f.ecn_ce_packets));
    const ioAgg = (rs: RecordJson[]) => ofType(rs, "io_interval") as IoAggregateJson[];
    for (const k of ["count", "incomplete", "bytes", "errors"] as const) expect(sum(ioAgg(compact), (a) => a[k]), k).toBe(sum(ioAgg(full), (a) => a[k]));
    expect(ioAgg(compact).every((a) => a.mode === "full")).toBe(true);

    // Nothing lost, duplicated or undecodable; the switches' own counters as in the full run.
    const stats = (rs: RecordJson[], sw: string) => (ofType(rs, "switch_stats") as SwitchStatsJson[]).filter((s) => s.switch_id === sw);
    for (const sw of ["tor-c", "tor-s"]) {
      const c = stats(compact, sw);
      expect(sum(c, (s) => s.digests_lost + s.digests_duplicated + s.bad_digests)).toBe(0);
      expect(sum(c, (s) => s.digests_received)).toBe(sum(stats(full, sw), (s) => s.digests_received));
      expect(c.at(-1)?.untracked_ios).toBe(stats(full, sw).at(-1)?.untracked_ios);
    }
  }, 180_000);

  test("a compact ToR and a full one: their halves of an I/O meet, RTT exact, the record keeps the full command PSN", async () => {
    const { records } = await run(traffic, ["tor-c"]);
    const ios = ofType(records, "io");
    const byKey = new Map(ios.map((r) => [`${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn}`, r]));
    const problems: string[] = [];
    let rtt = 0;
    for (const t of traffic.ios.filter((x) => x.record)) {
      const r = byKey.get(ioTruthKey(t));
      if (!r) {
        problems.push(`${ioTruthKey(t)}: no record with the full command PSN`);
        continue;
      }
      const m = ioMismatches(t, r).filter((x) => !x.startsWith("cmd_unix_ns") && !/^(dal_ns|dpl_ns): got null/.test(x));
      if (m.length) problems.push(`${ioTruthKey(t)}: ${m.join("; ")}`);
      if (t.rtt_ns !== null) rtt++;
    }
    expect(problems.slice(0, 10)).toEqual([]);
    expect(rtt).toBeGreaterThan(100);
    expect(ios.length).toBe(traffic.ios.filter((x) => x.record).length);
  }, 180_000);
});
