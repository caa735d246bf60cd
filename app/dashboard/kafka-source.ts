// The dashboard's feed: a consumer of its own group on the metric topics,
// which decodes each message into its record for the store. It waits for
// topics not there yet, and outlives a broker that goes away: the consumer is
// made anew, with a growing pause, until the broker answers again; the
// group's committed offsets carry it on where it was.
import { hostname } from "node:os";
import { Kafka, logLevel, type Consumer } from "kafkajs";
import { describeKafkaError, KafkaConnectError, recordFromMessage, type KafkaSecurity } from "@rdma-telemetry/exporter";
import type { RecordJson } from "@rdma-telemetry/contract";
import type { DashboardStore } from "./store.js";

export const DASHBOARD_TOPICS = ["rdma.io.v1", "rdma.flow.v1", "rdma.alert.v1"] as const;

export interface KafkaSourceOptions extends KafkaSecurity {
  brokers: string[];
  store: DashboardStore;
  topics?: readonly string[];
  /** consumer group (default rdma-telemetry-dashboard-HOST-PID: each dashboard reads everything) */
  groupId?: string;
  /** topics there at start are read from their beginning, not from now (topics made later always are) */
  fromBeginning?: boolean;
  /**
   * How far back, in ms, the topics there at start are read again when the
   * dashboard starts (each partition sought to the offset of the first
   * message at or after now − rereadMs), so that a restarted dashboard shows
   * the window it kept before; 0 or absent: from the group's offsets, or now.
   */
  rereadMs?: number;
  signal: AbortSignal;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

/** Decodes a message as `consume` does: protobuf by its `type` header, or JSON when `encoding: json`. */
export function decodeMessage(headers: Record<string, unknown> | undefined, value: Buffer | null): RecordJson | null {
  if (!value) return null;
  const h = (k: string) => (headers?.[k] === undefined ? undefined : String(headers[k]));
  if (h("encoding") === "json") return JSON.parse(value.toString("utf8")) as RecordJson;
  const r = recordFromMessage(h("type"), value);
  return r.type === "raw_digest" ? null : r;
}

/**
 * Runs until `signal` aborts. Rejects only when the first connection fails
 * for a reason that waiting will not mend (refused credentials, TLS).
 */
export async function runKafkaSource(o: KafkaSourceOptions): Promise<void> {
  const wanted = [...(o.topics ?? DASHBOARD_TOPICS)];
  const groupId = o.groupId ?? `rdma-telemetry-dashboard-${hostname()}-${process.pid}`;
  const kafka = new Kafka({ clientId: "rdma-telemetry-dashboard", brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, logLevel: logLevel.NOTHING, retry: { retries: 3, maxRetryTime: 5_000 } });
  const status = o.store.setStatus.bind(o.store);
  const where = o.brokers.join(",");
  /** topics present when the dashboard first reached the broker: read from now (or the beginning, if asked) */
  let atStart: Set<string> | undefined;
  let failures = 0;
  /** the window before the start, read again once (the first consumer only: later ones carry on from the group's offsets) */
  let reread = !o.fromBeginning && (o.rereadMs ?? 0) > 0 ? Date.now() - o.rereadMs! : undefined;
  status({ state: "starting", detail: `connecting to ${where}` });

  while (!o.signal.aborted) {
    let consumer: Consumer | undefined;
    try {
      const present = await listTopics(kafka);
      const topics = wanted.filter((t) => present.has(t));
      atStart ??= new Set(topics);
      if (topics.length === 0) {
        status({ state: "waiting", detail: `no topic ${wanted.join(", ")} on ${where} yet` });
        failures = 0;
        await sleep(2_000, o.signal);
        continue;
      }
      consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 500, allowAutoTopicCreation: false, retry: { retries: 5, maxRetryTime: 5_000 } });
      // Ends this consumer's turn: a crash it does not restart from, or topics to add.
      let ended = false;
      let endTurn!: (why: string) => void;
      const turn = new Promise<string>((r) => (endTurn = (why) => ((ended = true), r(why))));
      consumer.on(consumer.events.CRASH, (e) => {
        status({ state: "reconnecting", detail: `consumer stopped: ${describeKafkaError(e.payload.error, o).message}`, lastError: e.payload.error.message });
        if (!e.payload.restart) endTurn("crash");
      });
      consumer.on(consumer.events.FETCH, () => {
        if (o.store.status.state !== "consuming") status({ state: "consuming", detail: `${topics.join(", ")} on ${where} (group ${groupId})` });
      });
      await consumer.connect();
      // Where the group has no offset yet: a topic made since the dashboard started holds nothing older than the dashboard, so all of it is read.
      const older = topics.filter((t) => atStart!.has(t));
      const newer = topics.filter((t) => !atStart!.has(t));
      if (older.length) await consumer.subscribe({ topics: older, fromBeginning: o.fromBeginning ?? false });
      if (newer.length) await consumer.subscribe({ topics: newer, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ topic, partition, message }) => {
          let r: RecordJson | null;
          try {
            r = decodeMessage(message.headers as Record<string, unknown> | undefined, message.value);
          } catch (err) {
            o.store.undecodable(`${topic}[${partition}]@${message.offset}: ${(err as Error).message}`);
            return;
          }
          if (r) o.store.add(r);
        },
      });
      if (reread !== undefined && older.length) {
        await seekToTime(kafka, consumer, older, reread);
        reread = undefined;
      }
      failures = 0;
      // Consuming from its first fetch on (the FETCH handler above).
      status({ state: "starting", detail: `joining group ${groupId} on ${where}` });
      // Topics still missing: look for them now and then, and take them in when they come.
      const missing = wanted.filter((t) => !present.has(t));
      const watch = missing.length
        ? (async () => {
            while (!ended && !o.signal.aborted) {
              await sleep(2_000, o.signal);
              const now = await listTopics(kafka).catch(() => new Set<string>());
              if (missing.some((t) => now.has(t))) return endTurn("new topics");
            }
          })()
        : undefined;
      const onAbort = () => endTurn("abort");
      o.signal.addEventListener("abort", onAbort, { once: true });
      await turn;
      o.signal.removeEventListener("abort", onAbort);
      await watch;
    } catch (err) {
      const failure = describeKafkaError(err, o);
      if (atStart === undefined && (failure.cause === "authentication" || failure.cause === "tls")) throw new KafkaConnectError(failure);
      failures++;
      const pause = Math.min(30_000, 1_000 * 2 ** Math.min(failures - 1, 5));
      status({ state: "reconnecting", detail: `${failure.message}; trying again in ${Math.round(pause / 1000)} s`, lastError: failure.message });
      await consumer?.disconnect().catch(() => undefined);
      consumer = undefined;
      await sleep(pause, o.signal);
    } finally {
      await consumer?.disconnect().catch(() => undefined);
    }
  }
  status({ state: "finished", detail: "stopped" });
}

/** Seeks each partition of `topics` to its first message at or after `timestampMs` (the end, if none). */
async function seekToTime(kafka: Kafka, consumer: Consumer, topics: readonly string[], timestampMs: number): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    for (const topic of topics) {
      for (const { partition, offset } of await admin.fetchTopicOffsetsByTimestamp(topic, timestampMs)) consumer.seek({ topic, partition, offset });
    }
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function listTopics(kafka: Kafka): Promise<Set<string>> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    return new Set(await admin.listTopics());
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
