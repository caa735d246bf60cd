// The demo's own capture, replayed through the command line, gives the same
// records for that switch as the live demo run did.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { runDemo } from "../../app/demo.js";
import type { IoRecordJson, MessageRecordJson, RecordJson } from "../../exporter/src/records.js";
import { readCapture } from "../../traffic/src/pcap.js";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "demo-replay-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const read = (f: string): RecordJson[] => readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson);

test("a live demo run and a replay of its own capture agree", async () => {
  const printed: string[] = [];
  const demo = await runDemo({ seed: 4, durationMs: 300, outDir: dir, mode: "full", print: (t) => printed.push(t) });
  expect(demo.records).toBeGreaterThan(0);
  expect(printed.some((l) => l.includes("storage I/O"))).toBe(true);
  const cli = spawnSync(process.execPath, ["--import", "tsx", join(root, "bin/rdma-telemetry.ts"), "replay", join(dir, "tor-c.pcap"), "--topology", join(dir, "tor-c.topology.json"), "--out", join(dir, "replay.jsonl"), "--forwarded", join(dir, "forwarded.pcap")], { encoding: "utf8", cwd: root, env: { ...process.env, KAFKA_BROKERS: "" } });
  expect(cli.status, cli.stderr).toBe(0);
  const live = read(join(dir, "records.jsonl"));
  const replay = read(join(dir, "replay.jsonl"));
  // Messages are measured at tor-c only: identical.
  const msgs = (rs: RecordJson[]) => rs.filter((r): r is MessageRecordJson => r.type === "message").map((r) => ({ ...r, switch_id: "" })).sort((a, b) => a.first_unix_ns.localeCompare(b.first_unix_ns) || a.src.localeCompare(b.src));
  expect(msgs(replay)).toEqual(msgs(live).map((m) => ({ ...m })));
  // I/Os: the compute-side figures (e2e at C, DPL) match the live run's; RTT needs tor-s too.
  const ios = (rs: RecordJson[]) => new Map(rs.filter((r): r is IoRecordJson => r.type === "io").map((r) => [`${r.host}|${r.target}|${r.cid}`, r]));
  const [l, r] = [ios(live), ios(replay)];
  expect(r.size).toBe(l.size);
  for (const [k, a] of l) expect({ e2e: r.get(k)?.e2e_c_ns, dpl: r.get(k)?.dpl_ns }).toEqual({ e2e: a.e2e_c_ns, dpl: a.dpl_ns });
  // Every packet with a route was forwarded, unchanged.
  const input = readCapture(join(dir, "tor-c.pcap"));
  const out = readCapture(join(dir, "forwarded.pcap"));
  expect(out.length).toBe(input.length);
  expect(Buffer.compare(out[10]!.data, input[10]!.data)).toBe(0);
}, 120_000);
