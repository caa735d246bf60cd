// Tails a topic and prints each record decoded, one JSON object a line,
// committed records only, in a consumer group of its own. Whatever
// --kafka-client says, the reading is the committed-record reader's (neither
// client's read_committed filters overlapping aborted transactions right).
import { Kafka, logLevel } from "kafkajs";
import { sleep } from "@rdma-telemetry/p4runtime";
import { CommittedReader, GroupOffsets, recordFromMessage, type KafkaClientName } from "@rdma-telemetry/exporter";
import { describeKafkaError, KafkaConnectError, type KafkaSecurity } from "@rdma-telemetry/exporter";

export interface ConsumeOptions extends KafkaSecurity {
  brokers: string[];
  topic: string;
  fromBeginning: boolean;
  /** the Kafka client asked for (the reading is the committed-record reader's either way) */
  client?: KafkaClientName;
  print: (t: string) => void;
  /** one line when the broker is lost and when it is back (stderr) */
  warn?: (t: string) => void;
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
  return consumeCommitted(groupId, o);
}

/**
 * Reads with the committed-record reader (exporter/src/kafka/committed-reader.ts):
 * fetched read_uncommitted, transactions sorted by their markers, so that a
 * record of an aborted transaction is never printed, however aborted
 * transactions overlap (both clients' read_committed let some through). The
 * group's offsets are committed as it reads (its lag shows in the group's
 * listing).
 */
async function consumeCommitted(groupId: string, o: ConsumeOptions): Promise<number> {
  let n = 0;
  /** fetches failed in a row (the broker lost) */
  let failures = 0;
  // Short fetch waits: Ctrl-C ends a pending fetch, and so the command, within half a second.
  const reader = new CommittedReader({
    brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, clientId: "rdma-telemetry-consume", maxWaitMs: 500, retries: 3,
    onFetch: () => {
      if (failures === 0) return;
      failures = 0;
      o.warn?.("consume: the broker is back");
    },
    onMessage: (m) => {
      n++;
      o.print(line(m.partition, m.offset.toString(), m.key?.length ? m.key.toString() : undefined, { type: m.headers.type, encoding: m.headers.encoding }, m.value));
    },
  });
  const group = new GroupOffsets({ brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, clientId: "rdma-telemetry-consume", groupId });
  const commit = () => group.commit(reader.positions()).catch(() => undefined);
  const timer = setInterval(() => void (group.busy || commit()), 1000);
  try {
    try {
      await reader.follow(o.topic, o.fromBeginning ? "earliest" : "latest");
    } catch (err) {
      throw new KafkaConnectError(describeKafkaError(err, o));
    }
    // A broker that goes away (a restart, a rolling upgrade) is waited for, as Kafka's own console consumer does;
    // the reader keeps its place. Refused credentials or TLS stop it: waiting will not mend them.
    while (!o.signal.aborted) {
      try {
        await reader.run(o.signal);
      } catch (err) {
        const failure = describeKafkaError(err, o);
        if (failure.cause === "authentication" || failure.cause === "tls") throw new KafkaConnectError({ ...failure, message: `the consumer stopped: ${failure.message}` });
        failures++;
        const pause = Math.min(10_000, 500 * 2 ** Math.min(failures - 1, 5));
        if (failures === 1) o.warn?.(`consume: lost the broker (${failure.message}); reading on from where it was once it is back`);
        await sleep(pause, o.signal);
      }
    }
  } finally {
    clearInterval(timer);
    await commit();
    await reader.close();
    await group.close();
  }
  return n;
}
