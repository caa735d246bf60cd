// `rdma-telemetry exporter`: one member of an exporter group, until SIGINT/SIGTERM.
import { ConfigError } from "@rdma-telemetry/controller";
import { ExporterGroupMember, type KafkaSecurity, type TopicNames } from "@rdma-telemetry/exporter";
import type { Logger } from "@rdma-telemetry/p4runtime";
import { TelemetryMetrics } from "./prometheus.js";

export interface ExporterCommandOptions extends KafkaSecurity {
  brokers: string[];
  groupId?: string;
  topics: TopicNames;
  switchIds?: string[];
  metricsListen?: string;
  /** how long a silent switch holds the halves waiting for it (default 60 s) */
  silentSwitchMs?: number;
  /** engine threads (ExporterGroupOptions.threads) */
  threads?: number;
  logger: Logger;
  print: (t: string) => void;
  signal: AbortSignal;
}

export async function runExporterGroup(o: ExporterCommandOptions): Promise<void> {
  const metrics = o.metricsListen ? new TelemetryMetrics({ topics: o.topics }) : undefined;
  const member = new ExporterGroupMember({ brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, groupId: o.groupId, topics: o.topics, switchIds: o.switchIds, engine: o.silentSwitchMs !== undefined ? { silentSwitchNs: BigInt(o.silentSwitchMs) * 1_000_000n } : undefined, threads: o.threads, logger: o.logger, onRecord: metrics ? (r) => metrics.onRecord(r) : undefined });
  const served = metrics
    ? await metrics.listen(o.metricsListen!).catch((err: unknown) => {
        throw new ConfigError(`--metrics-listen ${o.metricsListen}: ${(err as NodeJS.ErrnoException).code === "EADDRINUSE" ? "already in use" : (err as Error).message}`);
      })
    : undefined;
  if (served) o.print(`metrics: ${served.url}`);
  metrics?.watchExporterGroup(member);
  await member.start();
  o.print(`exporter: member of group ${o.groupId ?? "rdma-telemetry-exporter"} on ${o.topics.digest}`);
  if (!o.signal.aborted) await new Promise<void>((r) => o.signal.addEventListener("abort", () => r(), { once: true }));
  await member.stop();
  await served?.close();
  const s = member.stats;
  o.print(`exporter: ${s.digests} digests, ${s.records} records in ${s.transactions} transactions (${s.aborted} aborted, ${s.concurrentRetries} offsets sent again); dropped: ${s.badDigests} undecodable, ${s.unknownSwitch} of unknown switches, ${s.duplicateDigests} duplicated; ${s.lateDigests} late; ${s.takeovers} partitions taken over (${s.replayedDigests} digests re-read, ${s.suppressedRecords} records already committed); ${s.givenUpSilentSwitch} commands given up on a silent switch; ${s.flowOnlyDigests} digests of flow packets outside any message; ${s.alertsNotCarried} raised alerts not carried over; ${s.clockNotes} switch clock notes`);
}
