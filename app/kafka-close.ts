// The end of a command's Kafka sink: what Kafka has not acknowledged is
// spilled, and the command says where every record went.
import { join, resolve } from "node:path";
import { SET_ASIDE_DIR, type KafkaSink } from "@rdma-telemetry/exporter";

/**
 * Closes `kafka` (waiting up to `timeoutMs` for Kafka) and prints one line:
 * records published, kept in the spill for the next run (how many, where),
 * set aside, lost. False when some records could be neither delivered nor
 * spilled: the command then exits non-zero.
 */
export async function closeKafka(kafka: KafkaSink, print: (t: string) => void, timeoutMs?: number): Promise<boolean> {
  await kafka.close(timeoutMs);
  const s = kafka.stats;
  const dir = kafka.spillDir ? resolve(kafka.spillDir) : undefined;
  let line = `Kafka: ${s.sent} records and digests published`;
  if (s.spilledNow) line += `; ${s.spilledNow} not acknowledged${s.lastError ? ` (${s.lastError})` : ""} are kept in ${dir} and go out first the next time a command reaches Kafka`;
  if (s.setAside && dir) line += `; ${s.setAside} spilled earlier are set aside in ${join(dir, SET_ASIDE_DIR)}, not sent (the log says why)`;
  if (s.dropped) line += `; ${s.dropped} lost: ${s.spillError ? `the spill could not be written (${s.spillError})` : dir ? "the spill was full" : "no spill to keep them"}`;
  print(line);
  return s.dropped === 0;
}
