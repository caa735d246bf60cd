// A command's end with Kafka away: the wait for acknowledgements stops once
// Kafka has failed for longer than a passing error (as close() judges it), so
// what is left goes to the spill; without a spill the wait is the full one.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { DEFAULT_TOPICS } from "../../exporter/src/kafka/encode.js";
import { KafkaSink } from "../../exporter/src/kafka/kafka-sink.js";

const dir = mkdtempSync(join(tmpdir(), "kafka-sink-away-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// Nothing listens on port 1.
const UNREACHABLE = "127.0.0.1:1";

test("Kafka unreachable: waiting for delivery until Kafka is away ends with the sink saying so, and close spills every record", async () => {
  const spillDir = join(dir, "spill");
  const sink = new KafkaSink({ brokers: [UNREACHABLE], topics: DEFAULT_TOPICS, partitions: 1, spillDir });
  await sink.start();
  for (let i = 0; i < 5; i++) sink.push({ topic: DEFAULT_TOPICS.io, key: "k", value: Buffer.from(String(i)), headers: { type: "test" } });
  // Long enough that only Kafka being away ends the wait.
  expect(await sink.waitDelivered(40_000, { untilAway: true })).toBe(false);
  expect(sink.away).toBe(true);
  expect(sink.pending).toBe(5);
  expect(await sink.close()).toBe(5);
  const lines = readdirSync(spillDir).filter((f) => f.endsWith(".spill")).flatMap((f) => readFileSync(join(spillDir, f), "utf8").split("\n").filter(Boolean));
  expect(lines).toHaveLength(5);
}, 60_000);

test("Kafka unreachable and no spill: the sink is never taken as away (what it holds would be lost), and the wait ends only at its time limit", async () => {
  const sink = new KafkaSink({ brokers: [UNREACHABLE], topics: DEFAULT_TOPICS, partitions: 1 });
  await sink.start();
  sink.push({ topic: DEFAULT_TOPICS.io, key: "k", value: Buffer.from("x"), headers: { type: "test" } });
  expect(await sink.waitDelivered(4_500, { untilAway: true })).toBe(false);
  expect(sink.away).toBe(false);
  // A flush that times out says how many are held and why Kafka did not take them.
  await expect(sink.flush(500)).rejects.toThrow(/^Kafka: 1 records not yet delivered after 500 ms \(\d+ failed sends, the last: .*(ECONNREFUSED|unreachable)/);
  expect(await sink.close(100)).toBe(1);
}, 30_000);
