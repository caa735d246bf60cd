// Topics for a test on the real broker, made with Kafka's admin API.
import { Kafka, logLevel } from "kafkajs";
import { waitForLeaders as leadersOf } from "../../exporter/src/kafka/topics-ready.js";

/**
 * Makes `topics` with `partitions` each, waiting for their leaders unless told
 * not to. (Not with kafkajs's own wait: a KRaft broker may answer its metadata
 * request for a topic it has just created with UNKNOWN_TOPIC_OR_PARTITION,
 * which kafkajs takes for a failure; topics-ready.ts looks again.)
 */
export async function createTopics(brokers: string, topics: readonly string[], partitions = 1, waitForLeaders = true): Promise<void> {
  const admin = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING, clientId: "test-topics" }).admin();
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders: false, topics: topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })) });
    if (waitForLeaders) {
      await leadersOf(async (wanted) => {
        const md = await admin.fetchTopicMetadata({ topics: wanted });
        return { topics: new Map(md.topics.map((t) => [t.name, { partitions: t.partitions.map((p) => ({ leader: p.leader })) }])) };
      }, [...topics]);
    }
  } finally {
    await admin.disconnect();
  }
}
