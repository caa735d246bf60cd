// The dashboard's feed: the committed records of the metric topics (the
// committed-record reader, exporter/src/kafka/committed-reader.ts: no record
// of an aborted transaction, however aborted transactions overlap), each
// decoded into its record for the store, with its offsets committed to a
// consumer group of its own. It waits for topics not there yet, and outlives
// a broker that goes away: the connections are made anew, with a growing
// pause, until the broker answers again, and reading goes on where it was.
import { hostname } from "node:os";
import { CommittedReader, describeKafkaError, GroupOffsets, KafkaConnectError, recordFromMessage, type KafkaSecurity } from "@rdma-telemetry/exporter";
import type { RecordJson } from "@rdma-telemetry/contract";
import { sleep } from "@rdma-telemetry/p4runtime";
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
  const status = o.store.setStatus.bind(o.store);
  const where = o.brokers.join(",");
  const reader = new CommittedReader({
    brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, clientId: "rdma-telemetry-dashboard", maxWaitMs: 500, retries: 3,
    onMessage: (m) => {
      let r: RecordJson | null;
      try {
        r = decodeMessage(m.headers, m.value ?? null);
      } catch (err) {
        o.store.undecodable(`${m.topic}[${m.partition}]@${m.offset}: ${(err as Error).message}`);
        return;
      }
      if (r) o.store.add(r);
    },
    onFetch: () => {
      if (o.store.status.state !== "consuming") status({ state: "consuming", detail: `${reader.followed().join(", ")} on ${where} (group ${groupId})` });
    },
    onError: (err) => {
      const message = describeKafkaError(err, o).message;
      status({ state: "reconnecting", detail: `fetching: ${message}`, lastError: message });
    },
  });
  // The group's offsets: where a dashboard of the same group goes on from, and its lag for the operator.
  const group = new GroupOffsets({ brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, clientId: "rdma-telemetry-dashboard", groupId });
  const commit = () => group.commit(reader.positions()).catch(() => undefined);
  const committer = setInterval(() => void (group.busy || commit()), 1_000);
  /** topics present when the dashboard first reached the broker: read from now (or the beginning, if asked) */
  let atStart: Set<string> | undefined;
  let failures = 0;
  /** the window before the start, read again once (the topics there at start only: later the dashboard carries on from where it is) */
  let reread = !o.fromBeginning && (o.rereadMs ?? 0) > 0 ? Date.now() - o.rereadMs! : undefined;
  status({ state: "starting", detail: `connecting to ${where}` });

  try {
    while (!o.signal.aborted) {
      try {
        const present = await reader.listTopics();
        const topics = wanted.filter((t) => present.has(t));
        atStart ??= new Set(topics);
        if (topics.length === 0) {
          status({ state: "waiting", detail: `no topic ${wanted.join(", ")} on ${where} yet` });
          failures = 0;
          await sleep(2_000, o.signal);
          continue;
        }
        for (const topic of topics) {
          if (reader.followed().includes(topic)) continue;
          if (!atStart.has(topic)) {
            // Made since the dashboard started: it holds nothing older than the dashboard, so all of it is read (from the group's offsets, where it has them).
            await reader.follow(topic, "earliest", await group.committed(topic));
          } else if (reread !== undefined) {
            await reader.follow(topic, { timestampMs: reread });
          } else {
            await reader.follow(topic, o.fromBeginning ? "earliest" : "latest", await group.committed(topic));
          }
        }
        reread = undefined;
        failures = 0;
        // Consuming from its first fetch on (onFetch above).
        status({ state: "starting", detail: `reading ${topics.join(", ")} on ${where} (group ${groupId})` });
        // Topics still missing: look for them now and then, and take them in when they come.
        const turn = new AbortController();
        const endTurn = () => turn.abort();
        o.signal.addEventListener("abort", endTurn, { once: true });
        const missing = wanted.filter((t) => !present.has(t));
        const watch = missing.length
          ? (async () => {
              while (!turn.signal.aborted) {
                await sleep(2_000, turn.signal);
                const now = await reader.listTopics().catch(() => new Set<string>());
                if (missing.some((t) => now.has(t))) return endTurn();
              }
            })()
          : undefined;
        try {
          await reader.run(turn.signal);
        } finally {
          endTurn();
          o.signal.removeEventListener("abort", endTurn);
          await watch;
        }
      } catch (err) {
        const failure = describeKafkaError(err, o);
        if (atStart === undefined && (failure.cause === "authentication" || failure.cause === "tls")) throw new KafkaConnectError(failure);
        failures++;
        const pause = Math.min(30_000, 1_000 * 2 ** Math.min(failures - 1, 5));
        status({ state: "reconnecting", detail: `${failure.message}; trying again in ${Math.round(pause / 1000)} s`, lastError: failure.message });
        // Connections made anew after the pause (the broker may have gone away); the reader keeps its place.
        await reader.close();
        await sleep(pause, o.signal);
      }
    }
  } finally {
    clearInterval(committer);
    await commit();
    await reader.close();
    await group.close();
  }
  status({ state: "finished", detail: "stopped" });
}
