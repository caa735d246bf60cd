// The fabric's options refused up front (exit 2, one line naming what was
// wrong): the exporter group member, the controller's --digests-only, and
// the switch's captures by source address.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { CLI } from "../support/cli.js";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "fabric-options-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const run = (...args: string[]) => spawnSync(process.execPath, [...CLI, ...args], { encoding: "utf8", cwd: root, env: { ...process.env, KAFKA_BROKERS: "" }, timeout: 60_000 });

test.each([
  ["exporter without brokers", () => ["exporter"], /exporter needs --kafka-brokers/],
  ["exporter with a group id Kafka would refuse", () => ["exporter", "--kafka-brokers", "127.0.0.1:1", "--group", "a group"], /--group: a group id is letters/],
  ["exporter with an argument", () => ["exporter", "extra", "--kafka-brokers", "127.0.0.1:1"], /exporter takes no arguments \(got 'extra'\)/],
  ["exporter with a silence shorter than a second", () => ["exporter", "--kafka-brokers", "127.0.0.1:1", "--silent-switch-ms", "500"], /--silent-switch-ms must be a whole number from 1000 to 3600000 \(1 h\) \(got '500'\)/],
  ["exporter with more engine threads than it takes", () => ["exporter", "--kafka-brokers", "127.0.0.1:1", "--threads", "65"], /^rdma-telemetry: --threads must be a whole number from 0 to 64 \(got '65'\)$/],
  ["exporter with engine threads not in decimal digits", () => ["exporter", "--kafka-brokers", "127.0.0.1:1", "--threads", "two"], /^rdma-telemetry: --threads must be a whole number from 0 to 64 \(got 'two'\)$/],
  ["replay with a silence shorter than a second", () => ["replay", "a.pcap", "--topology", "t.json", "--out", join(dir, "r.jsonl"), "--silent-switch-ms", "999"], /^rdma-telemetry: --silent-switch-ms must be a whole number from 1000 to 3600000 \(1 h\) \(got '999'\)$/],
  ["replay with a silence over an hour", () => ["replay", "a.pcap", "--topology", "t.json", "--out", join(dir, "r.jsonl"), "--silent-switch-ms", "3600001"], /--silent-switch-ms must be a whole number from 1000 to 3600000 \(1 h\) \(got '3600001'\)/],
  ["demo with a silence not in decimal digits", () => ["demo", "--out-dir", join(dir, "demo"), "--silent-switch-ms", "1e4"], /^rdma-telemetry: --silent-switch-ms must be a whole number from 1000 to 3600000 \(1 h\) \(got '1e4'\)$/],
  ["demo with a negative silence", () => ["demo", "--out-dir", join(dir, "demo"), "--silent-switch-ms", "-5000"], /--silent-switch-ms must be a whole number from 1000 to 3600000 \(1 h\) \(got '-5000'\)/],
  ["controller with a silence shorter than a second", () => {
    const f = join(dir, "c.json");
    writeFileSync(f, JSON.stringify({ switch: { address: "127.0.0.1:1", switch_id: "s" }, ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }] }));
    return ["controller", "--config", f, "--silent-switch-ms", "0"];
  }, /^rdma-telemetry: --silent-switch-ms must be a whole number from 1000 to 3600000 \(1 h\) \(got '0'\)$/],
  ["controller with a config's silence shorter than a second", () => {
    const f = join(dir, "c-silent.json");
    writeFileSync(f, JSON.stringify({ switch: { address: "127.0.0.1:1", switch_id: "s" }, ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }], timeouts: { silent_switch_ms: 500 } }));
    return ["controller", "--config", f];
  }, /timeouts\.silent_switch_ms: must be between 1000 and 3600000 \(got 500\)/],
  ["controller --digests-only without brokers", () => {
    const f = join(dir, "c.json");
    writeFileSync(f, JSON.stringify({ switch: { address: "127.0.0.1:1", switch_id: "s" }, ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }] }));
    return ["controller", "--config", f, "--digests-only"];
  }, /--digests-only publishes on Kafka: it needs --kafka-brokers/],
  ["controller --digests-only with --out", () => ["controller", "--config", join(dir, "c.json"), "--digests-only", "--kafka-brokers", "127.0.0.1:1", "--out", join(dir, "r.jsonl")], /--digests-only writes no records: drop --out/],
  ["switch --pcap-in FILE without --topology", () => ["switch", "--listen", "127.0.0.1:0", "--pcap-in", join(dir, "x.pcap")], /--pcap-in must be PORT=FILE, or FILE with --topology FILE/],
])("%s", (_name, args, message) => {
  const r = run(...args());
  expect(r.status, r.stderr).toBe(2);
  expect(r.stderr.trim().split("\n"), r.stderr).toHaveLength(1);
  expect(r.stderr.trim()).toMatch(message);
  // Refused before any work: no demo output directory made.
  expect(existsSync(join(dir, "demo"))).toBe(false);
});
