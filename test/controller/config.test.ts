import { describe, expect, test } from "vitest";
import { ConfigError, parseConfig } from "../../p4runtime-controller/src/telemetry/config.js";

const ports = [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }, { port: 64, role: "fabric", prefixes: ["0.0.0.0/0"] }];

describe("controller config", () => {
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
    [{ ports: [{ port: 1, role: "compute" }, { port: 1, role: "storage" }] }, /ports\[1\]\.port: port 1 is listed twice/],
    [{ ports: [{ port: 1, role: "compute", prefixes: ["10.0.0.0/8"] }, { port: 2, role: "storage", prefixes: ["10.0.0.0/8"] }] }, /also routed to port 1/],
    [{ ports, mode: "sometimes" }, /mode: must be full or polling/],
    [{ ports, polling: { flow_capacity: 5000 } }, /polling\.flow_capacity: must be between 1 and 1024/],
    [{ ports, switch: { adress: "x" } }, /switch\.adress: unknown setting/],
    [{ ports, switch: { address: "no-port" } }, /switch\.address: expected host:port/],
    [{ ports, switch: { tls: { cert: "c.pem" } } }, /cert and key go together/],
    [{}, /ports: must be a non-empty list/],
  ])("rejects %j", (raw, message) => {
    expect(() => parseConfig(raw)).toThrow(ConfigError);
    expect(() => parseConfig(raw)).toThrow(message);
  });
});
