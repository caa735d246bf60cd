// Tails a topic and prints each record decoded, one JSON object a line.
import { Kafka, logLevel } from "kafkajs";
import { recordFromMessage } from "@rdma-telemetry/exporter";
import { describeKafkaError, KafkaConnectError, type KafkaSecurity } from "@rdma-telemetry/exporter";

export interface ConsumeOptions extends KafkaSecurity {
  brokers: string[];
  topic: string;
  fromBeginning: boolean;
  print: (t: string) => void;
  signal: AbortSignal;
}

/** A topic the broker does not have: refused with its name and the topics it does have. */
export class NoSuchTopicError extends Error {
  override readonly name = "NoSuchTopicError";
}

export async function consume(o: ConsumeOptions): Promise<number> {
  const kafka = new Kafka({ clientId: "rdma-telemetry-consume", brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, logLevel: logLevel.NOTHING, retry: { retries: 2 } });
  const admin = kafka.admin();
  let topics: string[];
  try {
    await admin.connect();
    topics = await admin.listTopics();
  } catch (err) {
    throw new KafkaConnectError(describeKafkaError(err, o));
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  if (!topics.includes(o.topic)) {
    const ours = topics.filter((t) => t.startsWith("rdma.")).sort();
    throw new NoSuchTopicError(`no topic '${o.topic}' on ${o.brokers.join(",")}${ours.length ? ` (it has ${ours.join(", ")})` : ""}`);
  }
  // Short fetch waits: Ctrl-C ends a pending fetch, and so the command, within half a second.
  const consumer = kafka.consumer({ groupId: `rdma-telemetry-consume-${process.pid}-${Date.now()}`, maxWaitTimeInMs: 500 });
  try {
    await consumer.connect();
  } catch (err) {
    throw new KafkaConnectError(describeKafkaError(err, o));
  }
  await consumer.subscribe({ topic: o.topic, fromBeginning: o.fromBeginning });
  // A consumer that stopped for good (kafkajs restarts it after a retriable failure) ends the command with its error.
  let crashed: ((err: Error) => void) | undefined;
  const crash = new Promise<never>((_, reject) => (crashed = reject));
  crash.catch(() => undefined);
  consumer.on(consumer.events.CRASH, (e) => {
    if (!e.payload.restart) {
      const failure = describeKafkaError(e.payload.error, o);
      crashed?.(new KafkaConnectError({ ...failure, message: `the consumer stopped: ${failure.message}` }));
    }
  });
  let n = 0;
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      const type = message.headers?.type?.toString();
      const encoding = message.headers?.encoding?.toString();
      let value: unknown;
      try {
        value = !message.value ? null : encoding === "json" ? JSON.parse(message.value.toString("utf8")) : recordFromMessage(type, message.value);
      } catch (err) {
        value = { error: (err as Error).message };
      }
      n++;
      o.print(JSON.stringify({ partition, offset: message.offset, key: message.key?.toString(), type, value }));
    },
  });
  try {
    await Promise.race([crash, new Promise<void>((resolve) => (o.signal.aborted ? resolve() : o.signal.addEventListener("abort", () => resolve(), { once: true })))]);
  } finally {
    await consumer.disconnect();
  }
  return n;
}
