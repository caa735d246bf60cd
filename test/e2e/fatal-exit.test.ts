// A fatal error after a command has started listening ends the command: its
// listeners close, the error is said, and the process exits non-zero by
// itself (no signal needed). Real processes: `switch`, `demo`, `replay` and
// `controller`, each failing after its P4Runtime, dashboard or metrics port is up.
import { readFileSync, truncateSync, statSync, writeFileSync } from "node:fs";
import { createServer, connect, type Server } from "node:net";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ipv4 } from "../../contract/src/ipv4.js";
import { writePcap } from "../../traffic/src/pcap.js";
import { buildFrame, Opcode } from "../../traffic/src/roce.js";
import { startCli, type CliProcess } from "../support/cli.js";
import { freePort } from "../support/net.js";
import { until } from "../support/wait.js";
import { scratch } from "../support/scratch.js";

const { dir, children } = scratch("fatal-exit-");

const T0 = 1_800_000_000_000_000_000n;
const frame = (psn: number) => buildFrame({ src: ipv4("10.0.1.1"), dst: ipv4("10.0.2.1"), opcode: Opcode.SEND_ONLY, destQp: 17, psn, payloadLength: 64 }).data;

/** A capture of `n` packets `gapNs` apart; cut mid-way through its last packet when `truncated`. */
function capture(name: string, n: number, gapNs: bigint, truncated = false): string {
  const path = join(dir, name);
  writePcap(path, Array.from({ length: n }, (_, i) => ({ timestampNs: T0 + BigInt(i) * gapNs, data: frame(i) })));
  if (truncated) truncateSync(path, statSync(path).size - 20);
  return path;
}

/** Connecting to 127.0.0.1:`port` is refused (nothing listens there any more). */
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(false)));
    s.once("error", () => resolve(true));
  });

/** Waits for the command to exit by itself; its exit code, and the lines it wrote to stderr/stdout. */
async function ends(p: CliProcess): Promise<{ code: number | null; out: string }> {
  const code = await Promise.race([p.exited, new Promise<"running">((r) => setTimeout(() => r("running"), 60_000))]);
  if (code === "running") throw new Error(`the command kept running after its error; it printed:\n${p.out()}`);
  return { code, out: p.out() };
}

const port = (out: string, pattern: RegExp) => Number(pattern.exec(out)?.[1]);

describe("a fatal error after a listener is up ends the process, non-zero, with its listeners closed", () => {
  test("demo --dashboard: the dashboard's port is taken, the metrics port already up", async () => {
    const holder: Server = createServer();
    const taken = await freePort();
    await new Promise<void>((r) => holder.listen(taken, "127.0.0.1", r));
    try {
      const p = startCli(["demo", "--duration-ms", "200", "--out-dir", join(dir, "demo"), "--metrics-listen", "127.0.0.1:0", "--dashboard", "--listen", `127.0.0.1:${taken}`], dir, children);
      const { code, out } = await ends(p);
      expect(code, out).not.toBe(0);
      expect(out).toMatch(/^rdma-telemetry: dashboard: cannot listen on 127\.0\.0\.1:\d+: EADDRINUSE/m);
      expect(await refused(port(out, /metrics: http:\/\/127\.0\.0\.1:(\d+)\//))).toBe(true);
    } finally {
      await new Promise((r) => holder.close(r));
    }
  }, 90_000);

  test("replay: a capture that turns out truncated, the metrics port up", async () => {
    const bad = capture("truncated-replay.pcap", 10, 1_000_000n, true);
    const topology = join(dir, "topology.json");
    writeFileSync(topology, JSON.stringify({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }, { port: 2, role: "storage", prefixes: ["0.0.0.0/0"] }] }));
    const p = startCli(["replay", bad, "--topology", topology, "--out", join(dir, "replay.jsonl"), "--metrics-listen", "127.0.0.1:0"], dir, children);
    const { code, out } = await ends(p);
    expect(code, out).toBe(2);
    // Replayed up to the cut (9 whole packets), then the cut said, exit 2, every listener closed.
    expect(out).toMatch(/^rdma-telemetry: .*truncated-replay\.pcap: .*only \d+ remain: the capture ends there; its 9 packets before it were replayed$/m);
    expect(await refused(port(out, /metrics: http:\/\/127\.0\.0\.1:(\d+)\//))).toBe(true);
  }, 90_000);

  test("controller: its journal cannot be made, the control and metrics ports up", async () => {
    const control = await freePort();
    const config = join(dir, "controller.json");
    writeFileSync(config, JSON.stringify({ switch: { address: `127.0.0.1:${await freePort()}`, timestamp_unit_ns: 1 }, ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }], control_port: control }));
    writeFileSync(join(dir, "not-a-dir"), "");
    const p = startCli(["controller", "--config", config, "--metrics-listen", "127.0.0.1:0", "--journal", join(dir, "not-a-dir", "journal")], dir, children);
    await until(() => /metrics: http/.test(p.out()) || p.child.exitCode !== null, 30_000, () => `the metrics URL; printed: ${p.out()}`);
    const { code, out } = await ends(p);
    expect(code, out).not.toBe(0);
    expect(out).toMatch(/not-a-dir/);
    expect(await refused(port(out, /metrics: http:\/\/127\.0\.0\.1:(\d+)\//))).toBe(true);
    expect(await refused(control)).toBe(true);
    expect(readFileSync(join(dir, "not-a-dir"), "utf8")).toBe("");
  }, 90_000);
});
