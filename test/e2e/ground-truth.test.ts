// Generated traffic replayed through the compiled P4 program on the software
// switch, over P4Runtime, into the exporter: the records must equal the
// generator's ground truth exactly, in ns.
import { describe, expect, test } from "vitest";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import type { IoRecordJson, MessageRecordJson, RecordJson, FlowAggregateJson, SwitchStatsJson } from "../../contract/src/records.js";
import { generateTraffic, type GeneratedTraffic } from "../../traffic/src/generator.js";
import { flowIntervalMismatches, flowIntervalTruth, ioMismatches, ioRecordKey, ioTruthKey, onlyReferenceLost } from "../../app/self-check.js";

const INTERVAL_NS = 1_000_000_000n;

async function run(traffic: GeneratedTraffic) {
  const records: RecordJson[] = [];
  const result = await replaySwitches(
    traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })),
    { onRecord: (r) => records.push(r) },
  );
  return { records, result };
}

/** Every I/O a vantage could attribute gives one record equal to the truth; the others give none and are counted. */
function checkIos(traffic: GeneratedTraffic, records: RecordJson[]) {
  const ios = records.filter((r): r is IoRecordJson => r.type === "io");
  const byKey = new Map(ios.map((r) => [ioRecordKey(r), r]));
  expect(byKey.size, "one record per I/O").toBe(ios.length);
  const expected = traffic.ios.filter((t) => t.record);
  expect(ios.length).toBe(expected.length);
  const problems: string[] = [];
  let referenceLost = 0;
  for (const t of traffic.ios) {
    const r = byKey.get(ioTruthKey(t));
    if (!t.record) {
      if (r) problems.push(`${ioTruthKey(t)}: a record for an I/O no switch could attribute`);
      continue;
    }
    if (!r) problems.push(`${ioTruthKey(t)}: no record`);
    else {
      const m = ioMismatches(t, r);
      if (onlyReferenceLost(m)) referenceLost++;
      else if (m.length) problems.push(`${ioTruthKey(t)}: ${m.join("; ")}`);
    }
  }
  expect(problems.slice(0, 10)).toEqual([]);
  const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
  // A DAL or DPL missing only where a switch counted a data reference taken by a colliding key.
  const counted = traffic.switches.reduce((a, sw) => a + (stats.filter((s) => s.switch_id === sw.name).at(-1)?.io_references_lost ?? 0), 0);
  expect(referenceLost).toBeLessThanOrEqual(counted);
  // Commands no switch could attribute to a queue are counted by that switch (the ToRs of a side together).
  for (const side of ["c_seen", "s_seen"] as const) {
    const tors = traffic.switches.filter((sw) => (side === "s_seen") === sw.name.startsWith("tor-s"));
    if (tors.length === 0 || (side === "s_seen" && traffic.options.layout === "single")) continue;
    const counted = tors.reduce((a, sw) => a + (stats.filter((s) => s.switch_id === sw.name).at(-1)?.untracked_ios ?? 0), 0);
    expect(counted, `${tors.map((t) => t.name).join(", ")}: untracked I/Os`).toBe(traffic.ios.filter((t) => !t[side]).length);
  }
}

function checkMessages(traffic: GeneratedTraffic, records: RecordJson[]) {
  const msgs = records.filter((r): r is MessageRecordJson => r.type === "message");
  const byKey = new Map(msgs.map((r) => [`${r.src}|${r.dst}|${r.dest_qp}|${r.first_psn}`, r]));
  // The first message of each flow starts the flow on the switch; all are measured.
  expect(msgs.length).toBe(traffic.messages.length);
  for (const t of traffic.messages) {
    const r = byKey.get(`${t.src}|${t.dst}|${t.dest_qp}|${t.first_psn}`);
    expect(r, `message ${t.src}>${t.dst} qp ${t.dest_qp} psn ${t.first_psn}`).toBeDefined();
    expect({ last_psn: r!.last_psn, bytes: r!.bytes, packets: r!.packets, retransmitted: r!.retransmitted, fct_ns: r!.fct_ns, ecn: r!.ecn_ce_packets, gap_ns: r!.gap_ns })
      .toEqual({ last_psn: t.last_psn, bytes: t.bytes, packets: t.packets, retransmitted: t.retransmitted, fct_ns: t.fct_ns, ecn: t.ecn_ce_packets, gap_ns: t.gap_ns });
    expect(r!.fnr).toBeCloseTo(t.fnr, 12);
    if (t.fet_bps === null) expect(r!.fet_bps).toBeNull();
    else expect(r!.fet_bps!).toBeCloseTo(t.fet_bps, 3);
  }
  // Every packet in its flow's figures: a message's in the interval its last
  // PSN is first seen in, each later one (late, or retransmitted after the
  // last PSN, also after the flow's last message) in the interval it arrives in.
  const flows = records.filter((r): r is FlowAggregateJson => r.type === "flow_interval");
  expect(flows.every((f) => BigInt(f.interval_end_unix_ns) - BigInt(f.interval_start_unix_ns) === INTERVAL_NS)).toBe(true);
  expect(flowIntervalMismatches(flowIntervalTruth(traffic.messages, INTERVAL_NS), flows).slice(0, 10)).toEqual([]);
  expect(flows.reduce((a, f) => a + f.messages, 0)).toBe(traffic.messages.length);
}

describe("ground truth through the compiled program", () => {
  test("two ToRs (compute side and storage side): per-I/O e2e, RTT, DAL, DPL and per-message FCT, FNR, gap", async () => {
    const traffic = generateTraffic({
      seed: 21, durationNs: 250_000_000, hosts: 3, targets: 2, ioRate: 1500,
      faults: [
        { kind: "loss", host: 0, fromNs: 0, toNs: 250_000_000, probability: 0.01 },
        { kind: "congestion", fromNs: 60_000_000, toNs: 120_000_000, extraNs: 20_000, ecnFraction: 0.1 },
        { kind: "slow-host", host: 1, fromNs: 0, toNs: 200_000_000, extraNs: 30_000 },
      ],
    });
    expect(traffic.messages.some((m) => m.retransmitted > 0)).toBe(true);
    expect(traffic.messages.some((m) => m.ecn_ce_packets > 0)).toBe(true);
    const { records, result } = await run(traffic);
    checkIos(traffic, records);
    checkMessages(traffic, records);
    for (const rig of result.rigs) {
      expect(rig.sw.stats().packetErrors).toBe(0);
      expect(rig.noIngressPort).toBe(0);
    }
    const stats = records.filter((r) => r.type === "switch_stats");
    expect(stats.every((s) => s.type === "switch_stats" && s.digests_lost === 0 && s.digests_duplicated === 0)).toBe(true);
  }, 120_000);

  test("a fabric of 3 compute ToRs and 2 storage ToRs, a capture each, mixed families: every I/O's record, RTT included, joins the host's ToR and the target's; every message its ToR's", async () => {
    const traffic = generateTraffic({
      seed: 24, ip: "mixed", durationNs: 200_000_000, hosts: 6, targets: 4, computeTors: 3, storageTors: 2, ioRate: 1000,
      faults: [{ kind: "congestion", fromNs: 60_000_000, toNs: 120_000_000, extraNs: 20_000, ecnFraction: 0.1 }],
    });
    expect(traffic.switches.map((s) => s.name)).toEqual(["tor-c1", "tor-c2", "tor-c3", "tor-s1", "tor-s2"]);
    const { records } = await run(traffic);
    checkIos(traffic, records);
    checkMessages(traffic, records);
    // Each record names the ToRs its I/O crossed: host i under tor-c(i mod 3 + 1), target j under tor-s(j mod 2 + 1).
    const hosts = [...new Set(traffic.ios.map((t) => t.host))];
    const ios = records.filter((r): r is IoRecordJson => r.type === "io" && r.c_switch_id !== null && r.s_switch_id !== null);
    expect(ios.length).toBeGreaterThan(500);
    const pairs = new Set(ios.map((r) => `${r.c_switch_id}>${r.s_switch_id}`));
    expect([...pairs].sort()).toEqual(["tor-c1>tor-s1", "tor-c1>tor-s2", "tor-c2>tor-s1", "tor-c2>tor-s2", "tor-c3>tor-s1", "tor-c3>tor-s2"]);
    expect(hosts.length).toBe(6);
    // (checkIos held every RTT to the truth's: null only where a response is missing from a capture.)
    expect(ios.filter((r) => r.rtt_ns !== null).length).toBeGreaterThan(ios.length * 0.95);
    const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
    expect(stats.every((s) => s.digests_lost === 0 && s.digests_duplicated === 0 && s.unknown_endpoint_digests === 0)).toBe(true);
  }, 120_000);

  test("one switch with hosts and targets: RTT is 0, DAL and DPL exact", async () => {
    const traffic = generateTraffic({ seed: 5, layout: "single", durationNs: 150_000_000, hosts: 2, targets: 2, ioRate: 2000 });
    const { records } = await run(traffic);
    checkIos(traffic, records);
    checkMessages(traffic, records);
    expect(records.filter((r): r is IoRecordJson => r.type === "io" && r.e2e_c_ns !== null).every((r) => r.rtt_ns === 0 && r.c_switch_id === r.s_switch_id)).toBe(true);
  }, 120_000);

  test("a capture whose clock starts near the epoch keeps its clock in the records", async () => {
    // Some tools write captures with relative timestamps: replay stays on the capture's clock.
    const epochNs = 5_000_000_000n;
    const traffic = generateTraffic({ seed: 6, layout: "single", durationNs: 150_000_000, hosts: 2, targets: 2, ioRate: 2000, epochNs });
    const first = traffic.switches[0]!.packets[0]!.timestampNs;
    const { records } = await run(traffic);
    checkIos(traffic, records);
    const ios = records.filter((r): r is IoRecordJson => r.type === "io");
    expect(ios.length).toBeGreaterThan(10);
    for (const r of ios) {
      expect(BigInt(r.cmd_unix_ns)).toBeGreaterThanOrEqual(first);
      expect(BigInt(r.cmd_unix_ns)).toBeLessThan(epochNs + 1_000_000_000n);
    }
  }, 120_000);
});

describe("ground truth over reordering paths (SPEC §4)", () => {
  test("generate --reorder 0.3:6 --reorder-loss 0.3: every message record equals the truth to the ns (FIRST overtaken, go-back-N among reordered packets), and the flow interval figures too", async () => {
    const traffic = generateTraffic({ seed: 25, durationNs: 250_000_000, hosts: 4, targets: 2, ioRate: 500, reorderShare: 0.3, reorderMaxDisplacement: 6, reorderLoss: 0.3 });
    const reordered = traffic.messages.filter((m) => m.reordered);
    // The run has what it is about: messages whose FIRST is overtaken, losses among reordered packets, packets after LAST.
    expect(reordered.length).toBeGreaterThan(20);
    expect(reordered.filter((m) => m.retransmitted + m.late_retransmitted > 0).length).toBeGreaterThan(3);
    expect(traffic.messages.filter((m) => m.late_packets > 0).length).toBeGreaterThan(3);
    const { records } = await run(traffic);
    checkMessages(traffic, records);
    checkIos(traffic, records);
    const stats = records.filter((r) => r.type === "switch_stats");
    expect(stats.every((s) => s.type === "switch_stats" && s.digests_lost === 0 && s.digests_duplicated === 0)).toBe(true);
  }, 180_000);
});

describe("ground truth over IPv6 and mixed families", () => {
  for (const ip of [6, "mixed"] as const) {
    test(`--ip ${ip}, two ToRs: every I/O and message record equals the truth, addresses in RFC 5952 text`, async () => {
      const traffic = generateTraffic({
        seed: 22, ip, durationNs: 200_000_000, hosts: 3, targets: 2, ioRate: 1500,
        faults: [
          { kind: "loss", host: 0, fromNs: 0, toNs: 200_000_000, probability: 0.01 },
          { kind: "congestion", fromNs: 60_000_000, toNs: 120_000_000, extraNs: 20_000, ecnFraction: 0.1 },
        ],
      });
      const { records, result } = await run(traffic);
      checkIos(traffic, records);
      checkMessages(traffic, records);
      const ios = records.filter((r): r is IoRecordJson => r.type === "io");
      const v6 = ios.filter((r) => r.host.includes(":"));
      // Both families measured alike: --ip 6 all IPv6, mixed some of each.
      if (ip === 6) expect(v6.length).toBe(ios.length);
      else expect(v6.length > 0 && v6.length < ios.length).toBe(true);
      for (const r of v6) expect(r.host).toMatch(/^2001:db8:0:1::[0-9a-f]+$/);
      for (const rig of result.rigs) {
        expect(rig.sw.stats().packetErrors).toBe(0);
        expect(rig.noIngressPort).toBe(0);
      }
      const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
      expect(stats.every((s) => s.digests_lost === 0 && s.digests_duplicated === 0 && s.unknown_endpoint_digests === 0)).toBe(true);
      // Every endpoint had its key before its first packet: nothing went unmeasured.
      for (const sw of traffic.switches) expect(stats.filter((s) => s.switch_id === sw.name).at(-1)?.unknown_endpoint_packets, sw.name).toBe(0);
    }, 120_000);
  }

  test("endpoints not given to the controller are learned from the switch: no record is wrong, the packets before the key are counted", async () => {
    const traffic = generateTraffic({ seed: 23, ip: 6, layout: "single", durationNs: 150_000_000, hosts: 2, targets: 2, ioRate: 2000 });
    const records: RecordJson[] = [];
    const result = await replaySwitches(
      traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })),
      { onRecord: (r) => records.push(r), endpoints: [] },
    );
    const controller = result.rigs[0]!.controller;
    expect(controller.stats.learnedEndpoints).toBe(4);
    expect(controller.stats.endpoints).toBe(4);
    const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats").at(-1)!;
    expect(stats.unknown_endpoint_packets).toBeGreaterThan(0);
    expect(stats.unknown_endpoint_digests).toBe(0);
    // Whatever was measured is the truth: an I/O either has its exact record or none.
    const ios = records.filter((r): r is IoRecordJson => r.type === "io");
    expect(ios.length).toBeGreaterThan(100);
    const truth = new Map(traffic.ios.map((t) => [ioTruthKey(t), t]));
    const wrong = ios.flatMap((r) => {
      const t = truth.get(ioRecordKey(r));
      if (!t) return [`${ioRecordKey(r)}: not in the truth`];
      // (host_qp 0: the queue's pairing was not learned, its keyed transfer having crossed before the key: unknown, not wrong.)
      const m = ioMismatches(t, r).filter((x) => !x.startsWith("host_qp: got 0,"));
      return onlyReferenceLost(m) ? [] : m.map((x) => `${ioRecordKey(r)}: ${x}`);
    });
    expect(wrong.slice(0, 10)).toEqual([]);
  }, 120_000);
});
