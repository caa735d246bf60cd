// Topics created just now: the broker may answer a metadata request for a
// topic it created a moment ago with UNKNOWN_TOPIC_OR_PARTITION. connect()
// waits that out rather than failing (a spill written under another topic
// prefix was set aside for it: three such failures in a row read as "Kafka
// will not create these topics").
import { describe, expect, inject, test } from "vitest";
import { KafkajsTransport } from "../../exporter/src/kafka/kafkajs-transport.js";
import { isUnknownTopic, PlatformaticTransport } from "../../exporter/src/kafka/platformatic-transport.js";
import type { TransportOptions } from "../../exporter/src/kafka/transport.js";

const brokers = [inject("kafkaBrokers")];
const options = (clientId: string): TransportOptions => ({ brokers, clientId, compression: "none", partitions: 3, replicationFactor: 1 });

describe("topics created just now", () => {
  test("the client's unknown-topic error is told from any other", () => {
    expect(isUnknownTopic(new Error("Unknown topic a.io.v1."))).toBe(true);
    expect(isUnknownTopic(new Error("Connection closed"))).toBe(false);
    expect(isUnknownTopic(undefined)).toBe(false);
  });

  for (const [name, make] of [
    ["platformatic", (o: TransportOptions) => new PlatformaticTransport(o)],
    ["kafkajs", (o: TransportOptions) => new KafkajsTransport(o)],
  ] as const) {
    test(`${name}: 20 fresh sets of four topics in a row, each ready to take a record when connect() returns`, async () => {
      const t = make(options(`topics-test-${name}`));
      try {
        for (let i = 0; i < 20; i++) {
          const id = `fresh-${name}-${Date.now()}-${i}`;
          const topics = ["io", "flow", "alert", "digest"].map((k) => `${id}.${k}.v1`);
          await t.connect(topics);
          const queue = topics.map((topic) => ({ topic, key: "k", value: Buffer.from("v"), headers: {} }));
          await t.send(queue, 0, queue.length);
        }
      } finally {
        await t.disconnect();
      }
    }, 120_000);
  }
});
