// Topics created just now: the broker may answer a metadata request for a
// topic it created a moment ago with UNKNOWN_TOPIC_OR_PARTITION. connect()
// waits that out rather than failing (a spill written under another topic
// prefix was set aside for it: three such failures in a row read as "Kafka
// will not create these topics").
import { describe, expect, inject, test } from "vitest";
import { KafkajsTransport } from "../../exporter/src/kafka/kafkajs-transport.js";
import { PlatformaticTransport } from "../../exporter/src/kafka/platformatic-transport.js";
import type { TransportOptions } from "../../exporter/src/kafka/transport.js";

const brokers = [inject("kafkaBrokers")];
const options = (clientId: string): TransportOptions => ({ brokers, clientId, compression: "none", partitions: 3, replicationFactor: 1 });

describe("topics created just now", () => {
  for (const [name, make] of [
    ["platformatic", (o: TransportOptions) => new PlatformaticTransport(o)],
    ["kafkajs", (o: TransportOptions) => new KafkajsTransport(o)],
  ] as const) {
    // Each client on the matrix runs that use it (KAFKA_CLIENT).
    if (name !== (process.env.KAFKA_CLIENT === "kafkajs" ? "kafkajs" : "platformatic")) continue;
    test(`${name}: 20 fresh sets of four topics in a row, each ready to take a record when connect() returns`, async () => {
      const t = make(options(`topics-test-${name}`));
      let sent = 0;
      try {
        for (let i = 0; i < 20; i++) {
          const id = `fresh-${name}-${Date.now()}-${i}`;
          const topics = ["io", "flow", "alert", "digest"].map((k) => `${id}.${k}.v1`);
          await t.connect(topics);
          const queue = topics.map((topic) => ({ topic, key: "k", value: Buffer.from("v"), headers: {} }));
          await t.send(queue, 0, queue.length);
          sent++;
        }
      } finally {
        await t.disconnect();
      }
      expect(sent).toBe(20);
    }, 120_000);
  }
});
