// `rdma-telemetry dashboard`: the Kafka feed, the store and the web server together.
import type { KafkaSecurity } from "@rdma-telemetry/exporter";
import { runKafkaSource } from "./kafka-source.js";
import { parseListen, startDashboardServer } from "./server.js";
import { DashboardStore, type DashboardBounds } from "./store.js";

export interface DashboardOptions extends KafkaSecurity {
  brokers: string[];
  /** the topics to read (default rdma.io.v1, rdma.flow.v1, rdma.alert.v1) */
  topics?: string[];
  listen: string;
  fromBeginning?: boolean;
  groupId?: string;
  bounds?: Partial<DashboardBounds>;
  /** how far back, in ms, the topics are read again at start (kafka-source.ts) */
  rereadMs?: number;
  print: (t: string) => void;
  signal: AbortSignal;
}

export async function runDashboard(o: DashboardOptions): Promise<void> {
  const store = new DashboardStore(`Kafka ${o.brokers.join(",")}`, o.bounds);
  const server = await startDashboardServer({ store, listen: parseListen(o.listen) });
  o.print(`dashboard: ${server.url} (records from Kafka ${o.brokers.join(",")}; Ctrl-C to stop)`);
  try {
    await runKafkaSource({ brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, store, topics: o.topics, fromBeginning: o.fromBeginning, rereadMs: o.rereadMs, groupId: o.groupId, signal: o.signal });
  } finally {
    await server.close();
  }
}
