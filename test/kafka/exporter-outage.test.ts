// The exporter's records through a long broker outage (a broker down for
// 30 s mid-replay): the client's retries, then the spill, and every record on
// Kafka once it is back. A file of its own: its half minute runs beside the
// rest of exporter.test.ts rather than after it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import type { TopicNames } from "../../exporter/src/kafka/encode.js";
import { KafkaSink } from "../../exporter/src/kafka/kafka-sink.js";
import type { RecordJson } from "../../contract/src/records.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { ownBroker } from "../support/kafka-tools.js";
import { readToEnd } from "../support/topics.js";

const tmp = mkdtempSync(join(tmpdir(), "kafka-outage-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// A long outage tries the client's retries and the spill, the same whatever the broker's version: it runs on the
// default broker (4.4) with each client; reconnecting to a broker of the older version is exporter.test.ts's.
test.skipIf(Boolean(process.env.KAFKA_VERSION) && !process.env.KAFKA_VERSION!.startsWith("4."))("the broker is down for 30 s during a replay: every record arrives once it is back, through the spill, which is emptied", async () => {
  const broker = await ownBroker();
  try {
    const id = `down30-${Date.now()}`;
    const t: TopicNames = { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
    const sink = new KafkaSink({ brokers: [broker.brokers], topics: t, partitions: 2, spillDir: join(tmp, "down30-spill"), maxBuffered: 300 });
    await sink.start();
    const traffic = generateTraffic({ seed: 12, layout: "single", durationNs: 250_000_000, hosts: 2, targets: 2, ioRate: 2000 });
    let onIoTopic = 0;
    const down = broker.restart({ downMs: 30_000 });
    await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
      kafka: sink,
      kafkaWaitMs: 90_000,
      onRecord: (r: RecordJson) => {
        if (r.type === "io" || r.type === "io_interval" || r.type === "io_histogram") onIoTopic++;
      },
    });
    await down;
    await sink.flush(90_000);
    const stats = { ...sink.stats };
    await sink.close();
    expect(stats.dropped).toBe(0);
    expect(stats.spilledTotal).toBeGreaterThan(0);
    expect(stats.spilledNow).toBe(0);
    expect(sink.spillFiles()).toEqual([]);
    // Every record once: none missing, none twice.
    const got = await readToEnd(broker.brokers, [t.io]);
    expect(got.length).toBe(onIoTopic);
    expect(new Set(got.map((m) => m.value!.toString("base64"))).size).toBe(onIoTopic);
  } finally {
    await broker.stop();
  }
}, 240_000);
