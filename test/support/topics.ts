// Topics for a test on the real broker, made with Kafka's admin API.
import { Kafka, logLevel } from "kafkajs";

/** Makes `topics` with `partitions` each (waiting for their leaders unless told not to). */
export async function createTopics(brokers: string, topics: readonly string[], partitions = 1, waitForLeaders = true): Promise<void> {
  const admin = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING, clientId: "test-topics" }).admin();
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders, topics: topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })) });
  } finally {
    await admin.disconnect();
  }
}
