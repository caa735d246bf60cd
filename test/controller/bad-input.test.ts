// Operator input the command refuses up front: exit code 2 and one line naming what was wrong.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { generateTraffic, writeTraffic } from "../../traffic/src/generator.js";
import { CLI } from "../support/cli.js";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "bad-input-"));
const busy = createServer();
let busyPort = 0;
beforeAll(async () => {
  writeTraffic(join(dir, "cap"), generateTraffic({ seed: 2, layout: "single", durationNs: 10_000_000, hosts: 1, targets: 1, ioRate: 1000 }));
  mkdirSync(join(dir, "a-directory"));
  writeFileSync(join(dir, "full.jsonl"), '{"type":"io"}\n');
  writeFileSync(join(dir, "control-token"), "0123456789abcdef0123\n", { mode: 0o600 });
  await new Promise<void>((r) => busy.listen(0, "127.0.0.1", () => r()));
  busyPort = (busy.address() as { port: number }).port;
});
afterAll(() => {
  busy.close();
  rmSync(dir, { recursive: true, force: true });
});

const ports = [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }];
const config = (name: string, o: Record<string, unknown>) => {
  const f = join(dir, `${name}.json`);
  writeFileSync(f, JSON.stringify({ ports, ...o }));
  return f;
};
const run = (...args: string[]) => spawnSync(process.execPath, [...CLI, ...args], { encoding: "utf8", cwd: root, env: { ...process.env, KAFKA_BROKERS: "" }, timeout: 60_000 });
const cap = () => [join(dir, "cap/tor.pcap"), "--topology", join(dir, "cap/tor.topology.json")];

describe("bad operator input", () => {
  test.each([
    ["replay --out into a missing directory", () => ["replay", ...cap(), "--out", join(dir, "no/such/dir/r.jsonl")], /cannot write .*no\/such\/dir/],
    ["replay --out onto a directory", () => ["replay", ...cap(), "--out", join(dir, "a-directory")], /a-directory/],
    ["replay --out onto a file that holds records", () => ["replay", ...cap(), "--out", join(dir, "full.jsonl")], /already holds records/],
    ["replay --forwarded into a missing directory", () => ["replay", ...cap(), "--out", join(dir, "ok.jsonl"), "--forwarded", join(dir, "no/dir/f.pcap")], /cannot write .*no\/dir\/f\.pcap/],
    ["replay with more topologies than captures", () => ["replay", join(dir, "cap/tor.pcap"), "--topology", join(dir, "cap/tor.topology.json"), "--topology", join(dir, "cap/tor.topology.json"), "--out", join(dir, "x.jsonl")], /1 captures and 2 topologies/],
    ["controller with a missing P4Info", () => ["controller", "--config", config("no-p4info", { pipeline: { p4info: "nope.json" } })], /pipeline\.p4info: cannot read .*nope\.json/],
    ["controller with a missing TLS CA", () => ["controller", "--config", config("no-ca", { switch: { tls: { ca: "ca.pem" } } })], /switch\.tls\.ca: cannot read/],
    ["controller with a TCP port out of range", () => ["controller", "--config", config("port", { switch: { address: "127.0.0.1:99999" } })], /port 99999 is not a TCP port/],
    ["controller with a 20-digit device id", () => ["controller", "--config", config("devid", { switch: { device_id: "99999999999999999999" } })], /switch\.device_id: at most/],
    ["controller whose control port is in use", () => ["controller", "--config", config("busy", { control_port: busyPort, switch: { address: "127.0.0.1:1" } })], /control_port \d+: already in use/],
    ["a topology with host bits set", () => { writeFileSync(join(dir, "topo.json"), JSON.stringify({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.1/24"] }] })); return ["replay", join(dir, "cap/tor.pcap"), "--topology", join(dir, "topo.json"), "--out", join(dir, "y.jsonl")]; }, /has host bits set/],
    ["a topology with a bad IPv6 prefix", () => { writeFileSync(join(dir, "topo6.json"), JSON.stringify({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24", "2001:db8:0:1::1/64"] }] })); return ["replay", join(dir, "cap/tor.pcap"), "--topology", join(dir, "topo6.json"), "--out", join(dir, "y6.jsonl")]; }, /ports\[0\]\.prefixes\[1\]: 2001:db8:0:1::1\/64 has host bits set \(did you mean 2001:db8:0:1::\/64\?\)/],
    ["controller with an IPv4 address among its IPv6 endpoints", () => ["controller", "--config", config("endpoints", { endpoints: ["2001:db8::1", "10.0.1.1"] })], /endpoints\[1\]: not an IPv6 address \(got "10\.0\.1\.1"\)/],
    ["mode with no controller listening", () => ["mode", "polling", "--control", "127.0.0.1:1", "--control-token-file", join(dir, "control-token")], /no controller answers at 127\.0\.0\.1:1/],
    ["mode without a control token", () => ["mode", "polling", "--control", "127.0.0.1:1", "--control-token-file", join(dir, "no-token")], /no control token in .*no-token/],
  ])("%s", (_name, args, message) => {
    const r = run(...args());
    expect(r.status, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
  });
});
