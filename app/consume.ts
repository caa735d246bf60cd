// Tails a topic and prints each record decoded, one JSON object a line,
// read_committed, in a consumer group of its own: with @platformatic/kafka
// (the default) or kafkajs (--kafka-client kafkajs), as the exporter publishes.
import { Consumer, MessagesStreamModes, type Message } from "@platformatic/kafka";
import { Kafka, logLevel } from "kafkajs";
import { platformaticSasl, platformaticTls, recordFromMessage, type KafkaClientName } from "@rdma-telemetry/exporter";
import { describeKafkaError, KafkaConnectError, type KafkaSecurity } from "@rdma-telemetry/exporter";

export interface ConsumeOptions extends KafkaSecurity {
  brokers: string[];
  topic: string;
  fromBeginning: boolean;
  /** the Kafka client that reads (default platformatic) */
  client?: KafkaClientName;
  print: (t: string) => void;
  signal: AbortSignal;
}

/** One message as `consume` prints it: its place, key, type header and the record decoded. */
function line(partition: number, offset: string, key: string | undefined, headers: { type?: string; encoding?: string }, value: Buffer | null | undefined): string {
  let decoded: unknown;
  try {
    decoded = !value || value.length === 0 ? null : headers.encoding === "json" ? JSON.parse(value.toString("utf8")) : recordFromMessage(headers.type, value);
  } catch (err) {
    decoded = { error: (err as Error).message };
  }
  return JSON.stringify({ partition, offset, key, type: headers.type, value: decoded });
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
  const groupId = `rdma-telemetry-consume-${process.pid}-${Date.now()}`;
  return o.client === "kafkajs" ? consumeKafkajs(kafka, groupId, o) : consumePlatformatic(groupId, o);
}

async function consumePlatformatic(groupId: string, o: ConsumeOptions): Promise<number> {
  // Short fetch waits: Ctrl-C ends a pending fetch, and so the command, within half a second.
  const consumer = new Consumer({
    clientId: "rdma-telemetry-consume", groupId, bootstrapBrokers: o.brokers,
    tls: platformaticTls(o.ssl), sasl: platformaticSasl(o.sasl), connectTimeout: 5000, retries: 2, maxWaitTime: 500, autocommit: false, isolationLevel: 1,
  });
  let n = 0;
  try {
    let stream;
    try {
      stream = await consumer.consume({ topics: [o.topic], mode: o.fromBeginning ? MessagesStreamModes.EARLIEST : MessagesStreamModes.LATEST, autocommit: false, isolationLevel: 1 });
    } catch (err) {
      throw new KafkaConnectError(describeKafkaError(err, o));
    }
    const failed = new Promise<never>((_, reject) => stream.once("error", (err: Error) => {
      const failure = describeKafkaError(err, o);
      reject(new KafkaConnectError({ ...failure, message: `the consumer stopped: ${failure.message}` }));
    }));
    failed.catch(() => undefined);
    stream.on("data", (m: Message<Buffer, Buffer, Buffer, Buffer>) => {
      const headers: { type?: string; encoding?: string } = {};
      for (const [k, v] of m.headers) {
        const name = k.toString();
        if (name === "type" || name === "encoding") headers[name] = v.toString();
      }
      n++;
      o.print(line(m.partition, m.offset.toString(), m.key?.length ? m.key.toString() : undefined, headers, m.value));
    });
    try {
      await Promise.race([failed, aborted(o.signal)]);
    } finally {
      await stream.close().catch(() => undefined);
    }
  } finally {
    await consumer.close(true).catch(() => undefined);
  }
  return n;
}

/** Resolves when the command is asked to stop. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true })));
}

async function consumeKafkajs(kafka: Kafka, groupId: string, o: ConsumeOptions): Promise<number> {
  // Short fetch waits: Ctrl-C ends a pending fetch, and so the command, within half a second.
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 500 });
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
      n++;
      o.print(line(partition, message.offset, message.key?.toString(), { type: message.headers?.type?.toString(), encoding: message.headers?.encoding?.toString() }, message.value));
    },
  });
  try {
    await Promise.race([crash, aborted(o.signal)]);
  } finally {
    await consumer.disconnect();
  }
  return n;
}
