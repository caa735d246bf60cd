// Broker lists (--kafka-brokers, KAFKA_BROKERS) that cannot work are refused
// before any work, by every command that takes one: exit 2 and one line
// naming the entry at fault.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { kafkaBrokers } from "../../app/kafka-options.js";
import { CLI } from "../support/cli.js";

const dir = mkdtempSync(join(tmpdir(), "kafka-brokers-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [...CLI, ...args], {
    cwd: dir, encoding: "utf8", timeout: 30_000, env: { ...process.env, KAFKA_BROKERS: "", ...env },
  });

describe("Kafka broker lists", () => {
  test("HOST:PORT entries, IPv6 in brackets, are taken as given", () => {
    expect(kafkaBrokers("127.0.0.1:9092")).toEqual(["127.0.0.1:9092"]);
    expect(kafkaBrokers("kafka-1:9093, kafka_2.example.com:19093")).toEqual(["kafka-1:9093", "kafka_2.example.com:19093"]);
    expect(kafkaBrokers("[::1]:9092,[fe80::1]:1")).toEqual(["[::1]:9092", "[fe80::1]:1"]);
  });

  test("a list that cannot work is refused, naming the entry and where it came from", () => {
    const bad: Array<[string, RegExp]> = [
      ["::::", /^--kafka-brokers: broker '::::' is not HOST:PORT \(an IPv6 address goes in brackets: \[::1\]:9092\)$/],
      ["host-without-port", /^--kafka-brokers: broker 'host-without-port' has no port$/],
      ["127.0.0.1:notaport", /^--kafka-brokers: broker '127\.0\.0\.1:notaport': 'notaport' is not a TCP port \(1-65535\)$/],
      [",", /^--kafka-brokers: no broker given \(got ','\)/],
      ["", /^--kafka-brokers: no broker given/],
      ["a:1,,b:2", /^--kafka-brokers: an empty entry in 'a:1,,b:2'/],
      ["a:1,b:0", /^--kafka-brokers: broker 'b:0': '0' is not a TCP port/],
      ["h:65536", /'65536' is not a TCP port/],
      ["[::1]", /^--kafka-brokers: broker '\[::1\]' has no port$/],
      ["[not-v6]:9092", /'not-v6' is not a host name or IP address/],
      ["::1:9092", /an IPv6 address goes in brackets/],
      [":9092", /^--kafka-brokers: broker ':9092': '' is not a host name/],
      ["bad host:9092", /'bad host' is not a host name/],
    ];
    for (const [list, message] of bad) expect(() => kafkaBrokers(list), list).toThrow(message);
    expect(() => kafkaBrokers("x", "KAFKA_BROKERS")).toThrow(/^KAFKA_BROKERS: broker 'x' has no port$/);
  });

  test.each([
    ["demo", ["demo", "--duration-ms", "100", "--kafka-brokers", "::::"], {}, /--kafka-brokers: broker '::::' is not HOST:PORT/],
    ["demo (KAFKA_BROKERS)", ["demo", "--duration-ms", "100"], { KAFKA_BROKERS: "host-without-port" }, /KAFKA_BROKERS: broker 'host-without-port' has no port/],
    ["replay", ["replay", "x.pcap", "--topology", "t.json", "--out", "r.jsonl", "--kafka-brokers", "127.0.0.1:notaport"], {}, /'notaport' is not a TCP port/],
    ["controller", ["controller", "--config", "c.json", "--kafka-brokers", ","], {}, /--kafka-brokers: no broker given/],
    ["consume", ["consume", "--topic", "rdma.io.v1", "--kafka-brokers", "host-without-port"], {}, /broker 'host-without-port' has no port/],
    ["dashboard", ["dashboard", "--kafka-brokers", "::::"], {}, /broker '::::' is not HOST:PORT/],
  ])("%s refuses it before any work: exit 2, one line", (_name, args, env, message) => {
    const r = run(args, env);
    expect(r.status, r.stdout + r.stderr).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe("");
    expect(existsSync(join(dir, "demo-out")), "the demo generated nothing").toBe(false);
    expect(existsSync(join(dir, ".cache")), "no Kafka spill was set up").toBe(false);
  });
});
