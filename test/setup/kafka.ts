// Vitest global setup: a real Kafka broker for the integration tests. When
// KAFKA_BROKERS is set, that broker is used; otherwise one is started from
// Kafka's jars (scripts/kafka/broker.mjs) and stopped after the run.
import type { TestProject } from "vitest/node";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.KAFKA_BROKERS) {
    project.provide("kafkaBrokers", process.env.KAFKA_BROKERS);
    project.provide("kafkaManaged", false);
    return async () => {};
  }
  // @ts-expect-error -- plain ESM script without types
  const { startBroker } = (await import("../../scripts/kafka/broker.mjs")) as { startBroker: (o?: { port?: number }) => Promise<{ brokers: string; stop(): Promise<void> }> };
  const broker = await startBroker();
  project.provide("kafkaBrokers", broker.brokers);
  project.provide("kafkaManaged", true);
  return () => broker.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    kafkaBrokers: string;
    kafkaManaged: boolean;
  }
}
