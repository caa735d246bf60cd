// `rdma-telemetry replay` of two ToRs where the compute side goes silent
// mid-run (its capture stops) while the storage side carries on past the
// silent-switch time (60 s of capture time): the commands the compute side
// saw unanswered go out once, joined with the storage side's half, with no
// compute-side figure and not incomplete, and are counted in the summary;
// with --silent-switch-ms, after that time instead.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { PcapWriter } from "../../traffic/src/pcap.js";
import { startCli } from "../support/cli.js";
import { scratch } from "../support/scratch.js";

const { dir, children } = scratch("silent-switch-");

function write(path: string, packets: ReadonlyArray<{ timestampNs: bigint; data: Buffer; originalLength: number }>): void {
  const w = new PcapWriter(path, { snaplen: 128, blockBytes: 64 << 10 });
  for (const p of packets) w.write(p);
  w.close();
}

/**
 * The compute side's capture cut mid-I/O, the storage side's going on `gapNs`
 * of capture time later; `args` added to the replay. The I/Os held by the
 * compute side when it went silent, and what replay made of them.
 */
async function replayCut(name: string, gapNs: bigint, args: string[]) {
  const at = join(dir, name);
  mkdirSync(at);
  const opts = { layout: "two-tor" as const, hosts: 2, targets: 2, snaplen: 128 };
  const run = generateTraffic({ ...opts, seed: 11, durationNs: 200_000_000 });
  // Later traffic at the storage side only (the compute side's ToR is gone): other queues, gapNs on.
  const later = generateTraffic({ ...opts, seed: 12, durationNs: 20_000_000 });
  const c = run.switches.find((s) => s.name === "tor-c")!;
  const s = run.switches.find((x) => x.name === "tor-s")!;
  expect(later.switches.find((x) => x.name === "tor-s")!.topology).toEqual(s.topology);
  // It stops while an I/O of the middle of the run is waiting for its response.
  const both = run.ios.filter((t) => t.record && t.c_seen && t.s_seen && t.cmdCNs !== null && t.e2e_c_ns !== null && t.e2e_s_ns !== null);
  const mid = both[Math.floor(both.length / 2)]!;
  const cut = mid.cmdCNs! + BigInt(Math.floor(mid.e2e_c_ns! / 2));
  const end = s.packets.at(-1)!.timestampNs;
  const laterS = later.switches.find((x) => x.name === "tor-s")!.packets;
  const shift = end + gapNs - laterS[0]!.timestampNs;
  write(join(at, "tor-c.pcap"), c.packets.filter((p) => p.timestampNs < cut));
  write(join(at, "tor-s.pcap"), [...s.packets, ...laterS.map((p) => ({ ...p, timestampNs: p.timestampNs + shift }))]);
  writeFileSync(join(at, "tor-c.topology.json"), JSON.stringify(c.topology));
  writeFileSync(join(at, "tor-s.topology.json"), JSON.stringify(s.topology));

  const cli = startCli(["replay", "tor-c.pcap", "tor-s.pcap", "--topology", "tor-c.topology.json", "--topology", "tor-s.topology.json", "--out", "records.jsonl", ...args], at, children);
  expect(await cli.exited, cli.out()).toBe(0);
  const records = readFileSync(join(at, "records.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson);
  const ios = records.filter((r): r is IoRecordJson => r.type === "io");
  // The I/Os whose command crossed the compute side before it went silent and whose response did not.
  const held = run.ios.filter((t) => t.record && t.c_seen && t.s_seen && t.cmdCNs !== null && t.cmdCNs < cut && t.e2e_c_ns !== null && t.cmdCNs + BigInt(t.e2e_c_ns) >= cut && t.e2e_s_ns !== null);
  expect(held.length).toBeGreaterThan(0);
  const byKey = new Map<string, IoRecordJson[]>();
  for (const r of ios) byKey.set(key(r), [...(byKey.get(key(r)) ?? []), r]);
  return { held, byKey, out: cli.out() };
}

const key = (r: { host: string; target: string; target_qp: number; cid: number; cmd_psn: number }) => `${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn & 0xffff}`;

/** Each held I/O once, both switches named, the storage side's figures, nothing the compute side did not see; none twice. */
function expectGivenUp(held: Awaited<ReturnType<typeof replayCut>>["held"], byKey: Map<string, IoRecordJson[]>): void {
  for (const t of held) {
    const got = byKey.get(key(t)) ?? [];
    expect(got.map((r) => [r.c_switch_id, r.s_switch_id, r.incomplete, r.e2e_c_ns, r.rtt_ns, r.dpl_ns, r.e2e_s_ns, r.nvme_status]), key(t)).toEqual([["tor-c", "tor-s", false, null, null, null, t.e2e_s_ns, t.status]]);
  }
  // No I/O recorded twice, none said incomplete that the storage side saw answered.
  expect([...byKey.values()].filter((l) => l.length > 1).map((l) => key(l[0]!))).toEqual([]);
}

test("a compute-side ToR gone silent mid-run: its unanswered commands go out once after 60 s of the other switch's time, saying only what was seen, counted", async () => {
  const { held, byKey, out } = await replayCut("default", 61_000_000_000n, []);
  expectGivenUp(held, byKey);
  const given = /(\d+) I\/O commands given up on a switch silent for 60 s/.exec(out);
  expect(given, out).not.toBeNull();
  expect(Number(given![1])).toBe(held.length);
}, 120_000);

test("--silent-switch-ms 5000: the compute side taken for silent after 5 s of the other's time, not 60", async () => {
  // The storage side goes on 6 s later: silent past 5 s, far short of the default minute.
  const { held, byKey, out } = await replayCut("five-seconds", 6_000_000_000n, ["--silent-switch-ms", "5000"]);
  expectGivenUp(held, byKey);
  const given = /(\d+) I\/O commands given up on a switch silent for 5 s/.exec(out);
  expect(given, out).not.toBeNull();
  expect(Number(given![1])).toBe(held.length);
}, 120_000);

// The demo's generated traffic never silences a switch: what shows is the time its exporter waits, on the summary line.
test.each([
  ["--silent-switch-ms 1500", ["--silent-switch-ms", "1500"], "1500 ms"],
  ["timeouts.silent_switch_ms 2000 in --config", ["--config", "deployed.json"], "2 s"],
])("demo %s: the exporter waits that long for a silent switch", async (name, args, said) => {
  const at = join(dir, `demo-${name.replace(/\W+/g, "-")}`);
  mkdirSync(at);
  writeFileSync(join(at, "deployed.json"), JSON.stringify({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }], timeouts: { silent_switch_ms: 2000 } }));
  const cli = startCli(["demo", "--duration-ms", "200", "--load", "0.1", "--out-dir", "out", ...args], at, children);
  expect(await cli.exited, cli.out()).toBe(0);
  const line = cli.out().split("\n").find((l) => l.startsWith("counted by the exporter:"));
  expect(line?.match(/commands given up when the switch went silent \(([^)]+)\)/g), cli.out()).toEqual([1, 2].map(() => `commands given up when the switch went silent (${said})`));
}, 120_000);
