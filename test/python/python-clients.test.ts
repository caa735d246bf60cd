// Independent P4Runtime clients against `rdma-telemetry switch`, as real
// processes: p4runtime-shell 0.0.6 and finsy 0.30 (from PyPI, installed by
// scripts/python-clients.sh into .cache/python). Each pushes the telemetry
// pipeline, routes 10.1/16 to `drop` and 10.2/16 to port 3 and sends a packet
// to each by PacketOut; reads, modifies and resets default entries; finsy
// empties the switch with delete_all(); then each pushes the digest fixture
// and configures its digest with max_timeout_ns = 0. The switch's captures
// show what was forwarded.
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { openCapture } from "../../traffic/src/pcap.js";
import { exited, outputMatching } from "../support/wait.js";
import { CLI } from "../support/cli.js";
import { scratch } from "../support/scratch.js";

const root = new URL("../..", import.meta.url).pathname;
const { dir, children } = scratch("python-clients-");

const python = (client: string) => join(root, ".cache/python", client, "bin/python");
const missing = ["p4runtime-shell", "finsy"].filter((c) => !existsSync(python(c)));
const args = [
  join(root, "p4/build/telemetry.p4info.txtpb"),
  join(root, "p4/build/telemetry.json"),
  join(root, "test/fixtures/digest/digest.p4info.txtpb"),
  join(root, "test/fixtures/digest/digest.json"),
];

/** One line a client script printed: a check's name and what it saw. */
interface Check {
  check: string;
  [k: string]: any; // JSON from the script
}

/** Starts the switch, runs the client script against it, stops the switch; the checks the script printed and the switch's captures by port. */
async function run(client: string, script: string) {
  const out = join(dir, client);
  const sw = spawn(process.execPath, [...CLI, "switch", "--listen", "127.0.0.1:0", "--pcap-out", out], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  children.push(sw);
  const port = /P4Runtime on 127\.0\.0\.1:(\d+)/.exec(await outputMatching(sw.stdout!, /P4Runtime on 127\.0\.0\.1:\d+/, 30_000, sw))![1];
  const py = spawn(python(client), [join(root, "test/python", script), `127.0.0.1:${port}`, ...args], { cwd: join(root, "test/python"), stdio: ["ignore", "pipe", "pipe"] });
  children.push(py);
  let stdout = "";
  let stderr = "";
  py.stdout!.on("data", (d) => (stdout += d));
  py.stderr!.on("data", (d) => (stderr += d));
  const code = await exited(py);
  sw.kill("SIGTERM");
  await exited(sw);
  const checks = new Map<string, Check>();
  for (const line of stdout.split("\n").filter(Boolean)) {
    const c = JSON.parse(line) as Check;
    checks.set(c.check, c);
  }
  const captures = new Map<number, string[]>();
  for (const f of existsSync(out) ? readdirSync(out) : []) {
    const p = /^port-(\d+)\.pcap$/.exec(f);
    if (p) captures.set(Number(p[1]), [...openCapture(join(out, f))].map((x) => x.data.toString("hex")));
  }
  return { code, stderr, checks, captures };
}

/** What both clients must see: the route to drop drops, defaults read and reset, digests one at a time. */
function expectCommon(r: Awaited<ReturnType<typeof run>>) {
  expect(r.checks.get("routes")?.routes).toEqual([["10.1.0.0/16", "TelemetryIngress.forwarding.drop"], ["10.2.0.0/16", "TelemetryIngress.forwarding.route"]]);
  const [toDrop, toPort3] = r.checks.get("sent")!.frames as string[];
  expect(r.captures.get(3)).toEqual([toPort3]);
  for (const [port, frames] of r.captures) expect(frames, `port ${port}`).not.toContain(toDrop);
  expect(r.checks.get("defaults")?.actions).toEqual({ ipv4_routes: "TelemetryIngress.forwarding.drop", io_watchlist: "NoAction", telemetry_config: "TelemetryIngress.config.set_config" });
  const m = r.checks.get("default_modify")!;
  expect(m.modified).toEqual({ mode: 1, epoch: 7, io_timeout_ns: 5000 });
  expect(m.reset).toEqual(m.initial);
  expect(m.initial).not.toEqual(m.modified);
  // Each sample of the digest fixture in a list of its own, without waiting for 100.
  expect(r.checks.get("digests")?.lists).toEqual([1, 1, 1]);
  expect(r.captures.get(1)).toHaveLength(3);
}

describe.skipIf(missing.length > 0)(`Python P4Runtime clients against rdma-telemetry switch${missing.length ? ` (SKIPPED: ${missing.join(", ")} not installed; run scripts/python-clients.sh)` : ""}`, () => {
  test("p4runtime-shell 0.0.6", async () => {
    const r = await run("p4runtime-shell", "shell_client.py");
    expect(r.code, r.stderr).toBe(0);
    expectCommon(r);
    expect(r.checks.get("default_delete")?.codes).toEqual(["INVALID_ARGUMENT"]);
  }, 120_000);

  test("finsy 0.30: also delete_all()", { timeout: 120_000 }, async () => {
    const r = await run("finsy", "finsy_client.py");
    expect(r.code, r.stderr).toBe(0);
    expectCommon(r);
    const d = r.checks.get("delete_all")!;
    expect(d.error).toBeUndefined();
    expect(d.entries_left).toBe(0);
    expect(d.config_after).toEqual(r.checks.get("default_modify")!.initial);
  });
});
