// Choosing the exporter's Kafka client, and the one partitioning both clients share.
import { describe, expect, test } from "vitest";
import { partitionOf, positiveKeyHash } from "../../exporter/src/kafka/partitioner.js";
import { DEFAULT_KAFKA_CLIENT, kafkaClientName } from "../../exporter/src/kafka/transport.js";

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

  test("the hash @platformatic/kafka takes modulo the partition count gives kafkajs's (and Java's) partition", () => {
    for (let i = 0; i < 5000; i++) {
      const key = `10.0.${i & 255}.${i >> 8}|10.1.0.${i % 7}|${i}`;
      for (const n of [1, 4, 6, 8, 13]) expect(positiveKeyHash(key) % n).toBe(partitionOf(key, n));
      expect(positiveKeyHash(Buffer.from(key))).toBe(positiveKeyHash(key));
    }
  });
});
