// Polling mode replayed as deployed: `replay --config` takes a controller's
// config file, so the watchlist capacities and rotation period are the
// deployment's. With more flows and host-target pairs than the watchlists
// hold, every record polling gives is full mode's record of the same I/O or
// message or says less (never more: a rotation mid-I/O leaves that vantage's
// figures absent and counted), every known pair and flow is measured within
// ceil(known / N) periods, and the interval records carry the window's coverage.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { MIN_SNAPLEN } from "../../traffic/src/generator.js";
import type { FlowAggregateJson, IoAggregateJson, IoRecordJson, MessageRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { ioRecordKey, messageRecordKey } from "../../app/self-check.js";
import { CLI } from "../support/cli.js";

const root = new URL("../..", import.meta.url).pathname;
const top = mkdtempSync(join(tmpdir(), "polling-replay-"));
afterAll(() => rmSync(top, { recursive: true, force: true }));

const cli = (args: string[]) => {
  const r = spawnSync(process.execPath, [...CLI, ...args], { encoding: "utf8", cwd: root, env: { ...process.env, KAFKA_BROKERS: "" } });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
};
const read = (f: string): RecordJson[] => readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson);

/**
 * A generated two-ToR capture (`generate` with `args`) replayed in full mode,
 * and in polling mode with a deployment's config whose `polling` section is
 * `polling`: both runs' records.
 */
function replayBoth(name: string, args: string[], polling: Record<string, number>): { full: RecordJson[]; polling: RecordJson[] } {
  const dir = mkdtempSync(join(top, `${name}-`));
  cli(["generate", "--out-dir", dir, "--snaplen", String(MIN_SNAPLEN), ...args]);
  const topo = (sw: string) => join(dir, `${sw}.topology.json`);
  const config = join(dir, "controller.json");
  writeFileSync(config, JSON.stringify({
    switch: { address: "tor:9559", switch_id: "tor", timestamp_unit_ns: 1000 },
    pipeline: { p4info: "/nowhere/telemetry.p4info.json", device_config: "/nowhere/telemetry.json" }, // a deployment's paths: replay does not need them
    ports: JSON.parse(readFileSync(topo("tor-c"), "utf8")).ports,
    mode: "polling",
    polling,
  }));
  const captures = [join(dir, "tor-c.pcap"), join(dir, "tor-s.pcap"), "--topology", topo("tor-c"), "--topology", topo("tor-s")];
  cli(["replay", ...captures, "--out", join(dir, "full.jsonl")]);
  cli(["replay", ...captures, "--config", config, "--out", join(dir, "polling.jsonl")]);
  return { full: read(join(dir, "full.jsonl")), polling: read(join(dir, "polling.jsonl")) };
}

const PERIOD_MS = 100;
const FLOWS_N = 1;
const PAIRS_N = 3;

// Mixed families: IPv6 pairs and flows are learned and rotated beside IPv4 ones (they reach the controller with endpoint keys).
test.each(["mixed"])("--ip %s, replay --config: polling with the deployed watchlists and rotation: every record full mode's or less, never more; every pair and flow within ceil(known/N) periods", (ip) => {
  const { full, polling } = replayBoth(`ip${ip}`, ["--duration-ms", "1500", "--seed", "5", "--ip", ip], { rotation_period_ms: PERIOD_MS, flow_capacity: FLOWS_N, io_pair_capacity: PAIRS_N });

  // Every record polling gives is full mode's record of that I/O or message,
  // or says less, never more: a vantage whose window did not hold the pair
  // when the command passed has no half; one whose window lost the pair
  // before the response has no figures there (counted, ios_left_window), and
  // is never reported incomplete; a message whose flow was out of the window
  // for the message before it has no gap.
  const fullIos = new Map(full.filter((r): r is IoRecordJson => r.type === "io").map((r) => [ioRecordKey(r), r]));
  const fullMsgs = new Map(full.filter((r): r is MessageRecordJson => r.type === "message").map((r) => [`${r.switch_id}|${messageRecordKey(r)}`, r]));
  const pollIos = polling.filter((r): r is IoRecordJson => r.type === "io");
  const pollMsgs = polling.filter((r): r is MessageRecordJson => r.type === "message");
  const differ: string[] = [];
  let equal = 0;
  let halfAbsent = 0;
  let leftWindow = 0;
  for (const r of pollIos) {
    const f = fullIos.get(ioRecordKey(r));
    if (!f) {
      differ.push(`${ioRecordKey(r)}: no full-mode record`);
      continue;
    }
    if (JSON.stringify({ ...r, mode: "full" }) === JSON.stringify(f)) {
      equal++;
      continue;
    }
    if (r.incomplete && !f.incomplete) differ.push(`${ioRecordKey(r)}: reported incomplete, its response was seen`);
    for (const k of ["e2e_c_ns", "e2e_s_ns", "rtt_ns", "dal_ns", "dpl_ns", "c_switch_id", "s_switch_id"] as const) {
      if (r[k] !== null && r[k] !== f[k]) differ.push(`${ioRecordKey(r)}: ${k} ${String(r[k])}, full mode ${String(f[k])}`);
    }
    for (const k of ["host_qp", "op", "bytes", "in_capsule"] as const) if (r[k] !== f[k]) differ.push(`${ioRecordKey(r)}: ${k} ${String(r[k])}, full mode ${String(f[k])}`);
    if ((r.c_switch_id === null) !== (f.c_switch_id === null) || (r.s_switch_id === null) !== (f.s_switch_id === null)) halfAbsent++;
    // Each vantage whose window lost the pair is counted there: its figure
    // absent where full mode has it, or where full mode found the response
    // missing from that capture (incomplete) and polling cannot tell.
    else leftWindow += (["e2e_c_ns", "e2e_s_ns"] as const).filter((k) => r[k] === null && (f[k] !== null || (f.incomplete && !r.incomplete))).length;
  }
  for (const r of pollMsgs) {
    const f = fullMsgs.get(`${r.switch_id}|${messageRecordKey(r)}`);
    if (!f) differ.push(`${messageRecordKey(r)}: no full-mode message`);
    else if (JSON.stringify({ ...r, mode: "full", gap_ns: r.gap_ns ?? f.gap_ns }) !== JSON.stringify(f)) differ.push(`${messageRecordKey(r)}: ${JSON.stringify(r)} vs ${JSON.stringify(f)}`);
  }
  expect(differ.slice(0, 5)).toEqual([]);
  // Most records are whole; those whose pair left a window mid-I/O are the ones counted.
  const counted = polling.filter((r): r is SwitchStatsJson => r.type === "switch_stats").reduce((a, r) => a + r.ios_left_window, 0);
  console.log(`polling: ${pollIos.length} I/O records (${fullIos.size} in full mode), ${equal} equal to full mode's, ${halfAbsent} without the half of a switch whose window did not hold the pair at the command, ${leftWindow} vantages without the figures of a switch whose window lost the pair before the response (ios_left_window: ${counted})`);
  expect(equal).toBeGreaterThan(pollIos.length * 0.95);
  expect(leftWindow).toBe(counted);
  expect(pollIos.every((r) => r.mode === "polling")).toBe(true);
  // Both families measured: IPv6 pairs are learned and rotated as IPv4 ones.
  expect(pollIos.some((r) => r.host.includes(":")) && pollIos.some((r) => !r.host.includes(":"))).toBe(true);
  // The windows are smaller than what is known: polling measures a share of it.
  expect(pollIos.length).toBeGreaterThan(fullIos.size * 0.1);
  expect(pollIos.length).toBeLessThan(fullIos.size * 0.8);
  expect(pollMsgs.length).toBeGreaterThan(0);
  expect(pollMsgs.length).toBeLessThan(fullMsgs.size * 0.8);

  // Every pair and flow is measured within ceil(known/N) periods: no gap between
  // its measured commands (messages) longer than that many periods, and one more
  // for the period it may have just missed, once the rotation has gone round.
  const pairs = new Set([...fullIos.values()].map((r) => `${r.host}|${r.target}`));
  const flows = new Set([...fullMsgs.values()].map((r) => `${r.src}|${r.dst}|${r.dest_qp}`));
  expect(pairs.size).toBeGreaterThan(PAIRS_N);
  expect(flows.size).toBeGreaterThan(FLOWS_N);
  const period = BigInt(PERIOD_MS) * 1_000_000n;
  const maxGap = (times: bigint[]) => times.sort((a, b) => (a < b ? -1 : 1)).slice(1).reduce((m, t, i) => (t - times[i]! > m ? t - times[i]! : m), 0n);
  const byPair = new Map<string, bigint[]>();
  for (const r of pollIos) if (r.c_switch_id === "tor-c") (byPair.get(`${r.host}|${r.target}`) ?? byPair.set(`${r.host}|${r.target}`, []).get(`${r.host}|${r.target}`)!).push(BigInt(r.cmd_unix_ns));
  expect(byPair.size).toBe(pairs.size);
  for (const [k, ts] of byPair) expect(maxGap(ts), k).toBeLessThanOrEqual(BigInt(Math.ceil(pairs.size / PAIRS_N) + 1) * period);
  const byFlow = new Map<string, bigint[]>();
  for (const r of pollMsgs) if (r.switch_id === "tor-c") (byFlow.get(`${r.src}|${r.dst}|${r.dest_qp}`) ?? byFlow.set(`${r.src}|${r.dst}|${r.dest_qp}`, []).get(`${r.src}|${r.dst}|${r.dest_qp}`)!).push(BigInt(r.first_unix_ns));
  expect(byFlow.size).toBe(flows.size);
  for (const [k, ts] of byFlow) expect(maxGap(ts), k).toBeLessThanOrEqual(BigInt(Math.ceil(flows.size / FLOWS_N) + 1) * period);

  // The interval records say what share of the known pairs and flows the window held.
  const ioIntervals = polling.filter((r): r is IoAggregateJson => r.type === "io_interval" && r.switch_id === "tor-c");
  const flowIntervals = polling.filter((r): r is FlowAggregateJson => r.type === "flow_interval" && r.switch_id === "tor-c");
  expect(ioIntervals.at(-1)!.coverage).toEqual({ measured_pairs: PAIRS_N, known_pairs: pairs.size, ratio: PAIRS_N / pairs.size });
  expect(flowIntervals.at(-1)!.coverage).toEqual({ measured_flows: FLOWS_N, known_flows: flows.size, ratio: FLOWS_N / flows.size });
  // Full mode measures every known pair.
  const fullInterval = full.find((r): r is IoAggregateJson => r.type === "io_interval" && r.switch_id === "tor-c")!;
  expect(fullInterval.coverage?.ratio).toBe(1);
}, 240_000);

test("polling with room in the watchlists: a pair or flow is watched from when it is learned, not from the next rotation", () => {
  // A capture shorter than one rotation period, with fewer pairs and flows than the watchlists hold; IPv6 pairs
  // and flows join the window once their endpoints have keys, as IPv4 ones do.
  const { full, polling } = replayBoth("room", ["--duration-ms", "300", "--seed", "6", "--ip", "mixed"], { rotation_period_ms: 10_000, flow_capacity: 1024, io_pair_capacity: 1024 });
  const fullIos = new Map(full.filter((r): r is IoRecordJson => r.type === "io").map((r) => [ioRecordKey(r), r]));
  const pollIos = polling.filter((r): r is IoRecordJson => r.type === "io");
  const pollMsgs = polling.filter((r): r is MessageRecordJson => r.type === "message");
  // Only the I/Os and messages before their pair's or flow's learn digest reached the controller go unmeasured.
  const equal = pollIos.filter((r) => JSON.stringify({ ...r, mode: "full" }) === JSON.stringify(fullIos.get(ioRecordKey(r)))).length;
  console.log(`polling with room: ${pollIos.length} of ${fullIos.size} I/Os and ${pollMsgs.length} of ${full.filter((r) => r.type === "message").length} messages measured in a capture shorter than one rotation period, ${equal} I/O records equal to full mode's`);
  expect(pollIos.length).toBeGreaterThan(fullIos.size * 0.9);
  expect(equal).toBeGreaterThan(pollIos.length * 0.95);
  expect(pollMsgs.length).toBeGreaterThan(0);
  expect(pollIos.some((r) => r.host.includes(":")) && pollIos.some((r) => !r.host.includes(":"))).toBe(true);
  // Every pair measured, and the coverage is what the switch watched: all that was known.
  const pairs = new Set([...fullIos.values()].map((r) => `${r.host}|${r.target}`));
  expect(new Set(pollIos.map((r) => `${r.host}|${r.target}`))).toEqual(pairs);
  const last = polling.filter((r): r is IoAggregateJson => r.type === "io_interval" && r.switch_id === "tor-c").at(-1)!;
  expect(last.coverage).toEqual({ measured_pairs: pairs.size, known_pairs: pairs.size, ratio: 1 });
}, 240_000);

test("a polling rotation in replay takes every pair the switch reported before it, however late the controller reads its lists", async () => {
  const { Rig } = await import("../../app/rig.js");
  const { Topology } = await import("../../app/topology.js");
  const { buildFrame, nvmeSqe, Opcode } = await import("../../traffic/src/roce.js");
  const { ipv4 } = await import("../../contract/src/ipv4.js");
  const topology = Topology.parse({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }, { port: 2, role: "storage", prefixes: ["10.0.2.0/24"] }] });
  const rig = new Rig({ name: "tor", topology, mode: "polling", polling: { rotationPeriodMs: 1, ioPairCapacity: 1, flowCapacity: 1 } });
  await rig.start(() => {});
  const rotations: Array<{ knownPairs: number; leftPairs: ReadonlyArray<{ host: number; target: number }> }> = [];
  rig.controller.on("rotated", (e) => rotations.push(e));
  const command = (host: string, t: bigint) => {
    const f = buildFrame({ src: ipv4(host), dst: ipv4("10.0.2.1"), opcode: Opcode.SEND_ONLY, destQp: 0x801, psn: 1, payload: nvmeSqe("read", 1, 1, 0n, 512, 0x1234) });
    rig.feed({ timestampNs: t, data: f.data, originalLength: f.wireLength });
  };
  try {
    // Pair A is learned and joins the window, which has room for one.
    command("10.0.1.1", 100_000n);
    rig.sw.flushDigests();
    await rig.runDue(1_000_000n);
    // Pair B is learned; its list leaves the switch just before the rotation is due.
    command("10.0.1.2", 1_500_000n);
    rig.sw.flushDigests();
    await rig.rotateIfDue(2_000_000n);
    expect(rotations).toHaveLength(1);
    // The rotation knew both pairs and moved the window from A to B.
    expect(rotations[0]!.knownPairs).toBe(2);
    expect(rotations[0]!.leftPairs.map(({ host, target }) => ({ host, target }))).toEqual([{ host: ipv4("10.0.1.1"), target: ipv4("10.0.2.1") }]);
  } finally {
    await rig.stop();
  }
}, 60_000);
