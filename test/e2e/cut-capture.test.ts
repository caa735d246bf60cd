// Every real capture is cut while I/Os are in flight: tcpdump stopped, a ring
// buffer rotated, a file copied while written. Replayed, the commands whose
// responses came after the cut must not be reported incomplete (the switch
// saw no I/O timeout pass); they say "answer unknown" and are counted.
import { expect, test } from "vitest";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import { ioRecordKey, ioTruthKey } from "../../app/self-check.js";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { generateTraffic } from "../../traffic/src/generator.js";

test("captures cut while I/Os are in flight: an I/O answered after the cut is never incomplete; its answer is unknown, counted; every figure given is the uncut truth's", async () => {
  const traffic = generateTraffic({ seed: 11, durationNs: 200_000_000, hosts: 8, targets: 2, ioRate: 4000 });
  const truth = new Map(traffic.ios.map((t) => [ioTruthKey(t), t]));
  const start = traffic.switches[0]!.packets[0]!.timestampNs;
  let inFlight = 0;
  let unknown = 0;
  // Cut a few µs after the commands of I/Os a third, half and four fifths into the run: each is in flight then, with
  // those of its burst. Both captures are cut at the same instant (the generator's switches share one clock).
  const answered = traffic.ios.filter((t) => t.cmdCNs !== null && t.e2e_c_ns !== null && t.e2e_c_ns > 20_000).sort((a, b) => (a.cmdCNs! < b.cmdCNs! ? -1 : 1));
  for (const share of [0.33, 0.5, 0.8]) {
    const cut = answered[Math.floor(answered.length * share)]!.cmdCNs! + 5_000n;
    const cutMs = (cut - start) / 1_000_000n;
    const records: RecordJson[] = [];
    const { exporter } = await replaySwitches(
      traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets.filter((p) => p.timestampNs < cut) })),
      { onRecord: (r) => records.push(r) },
    );
    const ios = records.filter((r): r is IoRecordJson => r.type === "io");
    const wrong: string[] = [];
    for (const r of ios) {
      const t = truth.get(ioRecordKey(r));
      if (!t) {
        wrong.push(`${ioRecordKey(r)}: no such I/O`);
        continue;
      }
      // Answered in the uncut captures, after the cut: in flight when it came.
      const answeredAfter = (cmd: bigint | null, e2e: number | null) => cmd !== null && e2e !== null && cmd < cut && cmd + BigInt(e2e) >= cut;
      const flying = answeredAfter(t.cmdCNs, t.e2e_c_ns) || answeredAfter(t.cmdSNs, t.e2e_s_ns);
      if (flying) inFlight++;
      if (r.incomplete && !t.incomplete) wrong.push(`${ioRecordKey(r)}: incomplete, answered${flying ? " after the cut" : ""}`);
      for (const k of ["e2e_c_ns", "e2e_s_ns", "rtt_ns", "dal_ns", "dpl_ns"] as const) if (r[k] !== null && r[k] !== t[k]) wrong.push(`${ioRecordKey(r)}: ${k} ${r[k]}, truth ${t[k]}`);
      if (flying && !r.incomplete && (r.c_switch_id === null || r.e2e_c_ns === null) && (r.s_switch_id === null || r.e2e_s_ns === null)) unknown++;
    }
    expect(wrong.slice(0, 5), `cut at ${cutMs} ms`).toEqual([]);
    expect(exporter.metrics.givenUpSilentSwitch, `cut at ${cutMs} ms: the commands open at the cut are counted`).toBeGreaterThan(0);
  }
  console.log(`${inFlight} I/Os in flight at the cuts, ${unknown} of them "answer unknown" at every vantage that saw the command`);
  expect(inFlight).toBeGreaterThan(3);
  expect(unknown).toBeGreaterThan(0);
}, 120_000);
