// Choosing the exporter's Kafka client, and the one partitioning both clients share.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { partitionOf, positiveKeyHash } from "../../exporter/src/kafka/partitioner.js";
import { DEFAULT_KAFKA_CLIENT, kafkaClientName, kafkaMaxInFlight } from "../../exporter/src/kafka/transport.js";
import { CLI } from "../support/cli.js";

describe("Kafka client", () => {
  test("named by flag or KAFKA_CLIENT; unset is the default; anything else is refused naming where it came from", () => {
    expect(DEFAULT_KAFKA_CLIENT).toBe("platformatic");
    expect(kafkaClientName(undefined)).toBe("platformatic");
    expect(kafkaClientName("")).toBe("platformatic");
    expect(kafkaClientName("kafkajs")).toBe("kafkajs");
    expect(kafkaClientName("KafkaJS")).toBe("kafkajs");
    expect(kafkaClientName("@platformatic/kafka")).toBe("platformatic");
    expect(() => kafkaClientName("rdkafka", "--kafka-client")).toThrow(/^--kafka-client: must be kafkajs or platformatic \(got 'rdkafka'\)/);
  });

  test("requests in flight: 1 to 5 from the option or KAFKA_MAX_IN_FLIGHT, 5 when unset; anything else refused naming where it came from", () => {
    expect(kafkaMaxInFlight(undefined)).toBe(5);
    expect(kafkaMaxInFlight("")).toBe(5);
    expect(kafkaMaxInFlight("1")).toBe(1);
    expect(kafkaMaxInFlight(" 3 ")).toBe(3);
    expect(kafkaMaxInFlight(5, "maxInFlight")).toBe(5);
    for (const bad of ["0", "6", "2.5", "-1", "five", "1e1"]) expect(() => kafkaMaxInFlight(bad)).toThrow(new RegExp(`^KAFKA_MAX_IN_FLIGHT: must be an integer from 1 to 5 \\(got '${bad.replace(".", "\\.")}'\\)`));
    expect(() => kafkaMaxInFlight(0, "maxInFlight")).toThrow(/^maxInFlight: must be an integer from 1 to 5 \(got '0'\)/);
  });

  test("the command line refuses a bad KAFKA_MAX_IN_FLIGHT before it starts, exit 2", () => {
    const root = join(import.meta.dirname, "../..");
    const r = spawnSync(process.execPath, [...CLI, "demo", "--kafka-brokers", "127.0.0.1:1", "--duration-ms", "100"], {
      cwd: root, encoding: "utf8", env: { ...process.env, KAFKA_MAX_IN_FLIGHT: "8" },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^rdma-telemetry: KAFKA_MAX_IN_FLIGHT: must be an integer from 1 to 5 \(got '8'\)/);
  }, 30_000);

  test("the hash @platformatic/kafka takes modulo the partition count gives kafkajs's (and Java's) partition", () => {
    for (let i = 0; i < 5000; i++) {
      const key = `10.0.${i & 255}.${i >> 8}|10.1.0.${i % 7}|${i}`;
      for (const n of [1, 4, 6, 8, 13]) expect(positiveKeyHash(key) % n).toBe(partitionOf(key, n));
      expect(positiveKeyHash(Buffer.from(key))).toBe(positiveKeyHash(key));
    }
  });
});
