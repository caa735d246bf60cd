// The controller SIGKILLed mid-traffic and restarted on its journal while
// publishing to a real broker: every I/O whose digests the switch delivered
// before the kill is on Kafka after the recovery, and none is there twice
// (the restarted controller reads back what its predecessor published).
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js"; // kafkajs reads gzip only without these plugins
import { inject, test } from "vitest";
import { recordFromMessage } from "../../exporter/src/kafka/decode.js";
import type { RecordJson } from "../../contract/src/records.js";
import { checkRestartRecords, killAndRestartController } from "../support/controller-restart.js";
import { scratch } from "../support/scratch.js";

const brokers = inject("kafkaBrokers");
const { dir, children } = scratch("controller-restart-kafka-");

/** Every record on the topics, read until none has come for `idleMs`. */
async function readAll(topics: string[], idleMs = 4000): Promise<RecordJson[]> {
  const kafka = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING, clientId: "test-reader" });
  const consumer = kafka.consumer({ groupId: `reader-${Date.now()}` });
  await consumer.connect();
  for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true });
  const out: RecordJson[] = [];
  let last = Date.now();
  await consumer.run({
    eachMessage: async ({ message }) => {
      last = Date.now();
      const r = recordFromMessage(message.headers?.type?.toString(), message.value!);
      if (r.type !== "raw_digest") out.push(r);
    },
  });
  const deadline = Date.now() + 60_000;
  while ((Date.now() - last < idleMs || out.length === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  await consumer.disconnect();
  return out;
}

test("SIGKILL of the controller mid-traffic: after a restart on its journal, every delivered I/O is on Kafka once, the gap counted", async () => {
  const switchId = `tor-restart-${Date.now()}`;
  await killAndRestartController({ dir, switchId, children, env: { KAFKA_BROKERS: brokers }, args: () => [] });
  const records = (await readAll(["rdma.io.v1", "rdma.alert.v1"])).filter((r) =>
    r.type === "io" ? r.c_switch_id === switchId || r.s_switch_id === switchId : "switch_id" in r && r.switch_id === switchId);
  checkRestartRecords(records);
}, 90_000);
