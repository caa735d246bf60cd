import { describe, expect, test } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, loadConfig, parseConfig } from "../../p4runtime-controller/src/config.js";

const ports = [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }, { port: 64, role: "fabric", prefixes: ["0.0.0.0/0"] }];

describe("controller config", () => {
  test("the control endpoint: loopback by default; another address needs TLS, or plaintext said outright", () => {
    expect(parseConfig({ ports, control_port: 9660 }).control).toEqual({ host: "127.0.0.1", insecurePlaintext: false });
    for (const host of ["127.0.0.2", "::1", "[::1]", "localhost"]) expect(parseConfig({ ports, control_host: host }).control.host).toBe(host);
    for (const host of ["0.0.0.0", "::", "10.1.2.3", "controller.example"]) {
      expect(() => parseConfig({ ports, control_host: host })).toThrow(new RegExp(`control_host: ${host.replace(/\./g, "\\.")} is not a loopback address: set control_tls`));
    }
    expect(parseConfig({ ports, control_host: "0.0.0.0", control_insecure_plaintext: true }).control.insecurePlaintext).toBe(true);
    expect(parseConfig({ ports, control_host: "0.0.0.0", control_tls: { cert: "c.pem", key: "k.pem" } }, "/etc/rdma").control.tls).toEqual({ cert: "/etc/rdma/c.pem", key: "/etc/rdma/k.pem" });
    expect(() => parseConfig({ ports, control_tls: { cert: "c.pem" } })).toThrow(/control_tls\.key: must be a non-empty string/);
    expect(() => parseConfig({ ports, control_insecure_plaintext: "yes" })).toThrow(/control_insecure_plaintext: must be true or false/);
  });

  test("IPv6 prefixes beside IPv4 ones on a port, and IPv6 endpoints in RFC 5952 text", () => {
    const c = parseConfig({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24", "2001:db8:0:1::/64"] }, { port: 4, role: "fabric", prefixes: ["0.0.0.0/0", "::/0"] }], endpoints: ["2001:0DB8:0:1:0:0:0:1", "2001:db8:0:1::1", "2001:db8:0:2::1"] });
    expect(c.ports[0]!.prefixes).toEqual(["10.0.1.0/24", "2001:db8:0:1::/64"]);
    expect(c.endpoints).toEqual(["2001:db8:0:1::1", "2001:db8:0:2::1"]);
  });

  test("defaults are filled in and the result is immutable", () => {
    const c = parseConfig({ ports });
    expect(c.mode).toBe("full");
    expect(c.switch.address).toBe("127.0.0.1:9559");
    expect(c.switch.timestampUnitNs).toBe(1000);
    expect(c.polling.flowCapacity).toBe(1024);
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.ports)).toBe(true);
  });

  test.each([
    [{ ports: [{ port: 1, role: "computer", prefixes: [] }] }, /ports\[0\]\.role: must be compute, storage or fabric \(got "computer"\)/],
    [{ ports: [{ port: 1, role: "compute", prefixes: ["10.0.0.300/24"] }] }, /ports\[0\]\.prefixes\[0\]: not an IPv4 prefix/],
    [{ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }, { port: 1, role: "storage", prefixes: ["10.0.2.0/24"] }] }, /ports\[1\]\.port: port 1 is listed twice/],
    [{ ports: [{ port: 1, role: "compute" }] }, /ports\[0\]\.prefixes: port 1 has no prefixes/],
    [{ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }, { port: 2, role: "storage", prefixes: ["10.0.1.1/24"] }] }, /10\.0\.1\.1\/24 has host bits set \(did you mean 10\.0\.1\.0\/24\?\)/],
    [{ ports: [{ port: 510, role: "fabric", prefixes: ["0.0.0.0/0"] }] }, /510 is the CPU port/],
    [{ ports, switch: { address: "127.0.0.1:99999" } }, /port 99999 is not a TCP port/],
    [{ ports, switch: { device_id: "123456789012345678901" } }, /switch\.device_id: at most 18446744073709551615/],
    [{ ports: [{ port: 1, role: "compute", prefixes: ["10.0.0.0/8"] }, { port: 2, role: "storage", prefixes: ["10.0.0.0/8"] }] }, /also routed to port 1/],
    [{ ports, mode: "sometimes" }, /mode: must be full, polling or summary/],
    [{ ports, polling: { flow_capacity: 5000 } }, /polling\.flow_capacity: must be between 1 and 1024/],
    [{ ports, timeouts: { silent_switch_ms: 999 } }, /timeouts\.silent_switch_ms: must be between 1000 and 3600000 \(got 999\)/],
    [{ ports, timeouts: { silent_switch_ms: 3_600_001 } }, /timeouts\.silent_switch_ms: must be between 1000 and 3600000/],
    [{ ports, timeouts: { silent_switch_ms: "30s" } }, /timeouts\.silent_switch_ms: must be an integer \(got "30s"\)/],
    [{ ports, switch: { adress: "x" } }, /switch\.adress: unknown setting/],
    [{ ports, switch: { address: "no-port" } }, /switch\.address: expected host:port/],
    [{ ports, switch: { tls: { cert: "c.pem" } } }, /cert and key go together/],
    [{}, /ports: must be a non-empty list/],
    [{ ports: [{ port: 1, role: "compute", prefixes: ["2001:db8::1/64"] }] }, /ports\[0\]\.prefixes\[0\]: 2001:db8::1\/64 has host bits set \(did you mean 2001:db8::\/64\?\)/],
    [{ ports: [{ port: 1, role: "compute", prefixes: ["2001:db8::/129"] }] }, /ports\[0\]\.prefixes\[0\]: 2001:db8::\/129: an IPv6 prefix is at most \/128/],
    [{ ports: [{ port: 1, role: "compute", prefixes: ["2001:db8:::/64"] }] }, /ports\[0\]\.prefixes\[0\]: not an IPv6 prefix like 2001:db8::\/64 \(got "2001:db8:::\/64"\)/],
    [{ ports: [{ port: 1, role: "compute", prefixes: ["2001:db8::/64"] }, { port: 2, role: "storage", prefixes: ["2001:0db8:0::/64"] }] }, /ports\[1\]\.prefixes\[0\]: 2001:0db8:0::\/64 is also routed to port 1/],
    [{ ports, endpoints: ["10.0.0.1"] }, /endpoints\[0\]: not an IPv6 address \(got "10\.0\.0\.1"\): an IPv4 address is its own endpoint key/],
    [{ ports, endpoints: ["2001:db8::g"] }, /endpoints\[0\]: not an IPv6 address/],
  ])("rejects %j", (raw, message) => {
    expect(() => parseConfig(raw)).toThrow(ConfigError);
    expect(() => parseConfig(raw)).toThrow(message);
  });

  test("timeouts.silent_switch_ms: 60 s unless set", () => {
    expect(parseConfig({ ports }).timeouts.silentSwitchMs).toBe(60_000);
    expect(parseConfig({ ports, timeouts: { silent_switch_ms: 5000 } }).timeouts.silentSwitchMs).toBe(5000);
  });

  test("pipeline.push: pushed by default; false attaches, takes no device_config, and only true or false", () => {
    expect(parseConfig({ ports }).pipeline.push).toBe(true);
    expect(parseConfig({ ports, pipeline: { push: false } }).pipeline.push).toBe(false);
    expect(() => parseConfig({ ports, pipeline: { push: "no" } })).toThrow(/^pipeline\.push: must be true or false \(got "no"\)$/);
    expect(() => parseConfig({ ports, pipeline: { push: false, device_config: "x.json" } })).toThrow(/^pipeline\.device_config: not used with pipeline\.push false/);
    // Attached, the device config is not read: one that is not there is no error.
    const dir = mkdtempSync(join(tmpdir(), "config-"));
    const f = join(dir, "attach.json");
    writeFileSync(f, JSON.stringify({ ports, pipeline: { p4info: new URL("../../p4/build/telemetry.p4info.json", import.meta.url).pathname, push: false } }));
    expect(loadConfig(f).pipeline.push).toBe(false);
  });

  test("files the config names are checked when it is loaded", () => {
    const dir = mkdtempSync(join(tmpdir(), "config-"));
    const write = (o: unknown) => {
      const f = join(dir, `c${Math.random()}.json`);
      writeFileSync(f, JSON.stringify(o));
      return f;
    };
    expect(() => loadConfig(write({ ports, pipeline: { p4info: "missing.json" } }))).toThrow(/pipeline\.p4info: cannot read .*missing\.json/);
    expect(() => loadConfig(write({ ports, switch: { tls: { ca: "no-ca.pem" } } }))).toThrow(/switch\.tls\.ca: cannot read .*no-ca\.pem/);
    writeFileSync(join(dir, "not-json.bin"), "\u0000\u0001");
    expect(() => loadConfig(write({ ports, pipeline: { device_config: "not-json.bin" } }))).toThrow(/pipeline\.device_config: .*not-json\.bin is not JSON/);
    expect(loadConfig(write({ ports })).ports).toHaveLength(2);
  });
});
