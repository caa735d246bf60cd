// Exporter group members starting together on a broker just started, as the
// fabric test's members do: each creates the topics that are missing, and a
// broker may answer a metadata request for a topic just created with
// UNKNOWN_TOPIC_OR_PARTITION (its metadata behind its controller's), which
// kafkajs's own wait for leaders takes for a failure: the member failed to
// start, and `rdma-telemetry exporter` exited 1. A broker of its own, fresh
// (scripts/kafka/broker.mjs), where that lag is longest.
import { afterAll, beforeAll, expect, test } from "vitest";
import { ExporterGroupMember } from "../../exporter/src/group/exporter-group.js";
import type { TopicNames } from "../../exporter/src/kafka/encode.js";

let broker: { brokers: string; stop(): Promise<void> } | undefined;
beforeAll(async () => {
  // @ts-expect-error -- plain ESM script without types
  const { startBroker } = (await import("../../scripts/kafka/broker.mjs")) as { startBroker: () => Promise<NonNullable<typeof broker>> };
  broker = await startBroker();
}, 120_000);
afterAll(async () => {
  await broker?.stop();
});

test("members started together on fresh topics of a fresh broker all start: the topics they create are waited for, not taken for an error", async () => {
  const failures: string[] = [];
  for (let round = 0; round < 10; round++) {
    const id = `start-${round}-${Date.now()}`;
    const topics: TopicNames = { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
    const members = [0, 1, 2].map((i) => new ExporterGroupMember({ brokers: [broker!.brokers], groupId: id, topics, clientId: `m${i}` }));
    const started = await Promise.allSettled(members.map((m) => m.start()));
    for (const s of started) if (s.status === "rejected") failures.push(`round ${round}: ${(s.reason as Error).message}`);
    await Promise.all(members.map((m) => m.stop()));
  }
  expect(failures).toEqual([]);
}, 180_000);
