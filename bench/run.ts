// Benchmarks: print figures, assert nothing. Run with `npm run bench [-- NAME...]`.
//   pipeline   packets/s through the telemetry program on the software switch (one core)
//   digests    digests/s from the switch through P4Runtime to the exporter
//   writes     table writes/s (batched) and the time to rotate a 1024-entry watchlist
//   kafka      records/s from the exporter into Kafka with each client, each codec (none, gzip, snappy, lz4, zstd), Kafka 4.4 and 3.9, beside the Java producer (bench/kafka.ts)
//   exporter-group  digests/s through Kafka with 1 and 2 exporter group members, beside in process (bench/exporter-group.ts)
//   summary    digests/s and records/s in summary mode beside full mode at 1×, 4× and 16× the load (bench/summary.ts)
//   memory     the exporter's peak RSS with 1,000,000 flows in one interval
//   replay-memory  packets/s and peak RSS replaying a capture of BENCH_CAPTURE_MB (streamed)
//   soak       the demo for BENCH_SOAK_S seconds of traffic (default 3600) at BENCH_SOAK_LOAD (default 0.3), its RSS every 10 s
// Environment: KAFKA_BROKERS (use that broker), BENCH_KAFKA_* (see bench/kafka.ts),
// BENCH_CPU_PROF (a directory: CPU profiles of the switch process),
// BENCH_CAPTURE_MB (the replayed capture's size, default 1024), BENCH_SOAK_S.
import { fork } from "node:child_process";
import { join } from "node:path";
import { compiled, here, print } from "./common.js";

// Each benchmark's module is loaded only when it runs: a benchmark's heap
// holds nothing of the others (the Kafka clients weigh on the pipeline's GC).
const all: Record<string, () => Promise<void>> = {
  pipeline: async () => (await import("./pipeline.js")).benchPipeline(),
  digests: async () => (await import("./p4runtime.js")).benchDigests(),
  writes: async () => (await import("./p4runtime.js")).benchWrites(),
  counters: async () => (await import("./p4runtime.js")).benchCounters(),
  kafka: async () => (await import("./kafka.js")).benchKafkaMatrix(print),
  "exporter-group": async () => (await import("./exporter-group.js")).benchExporterGroup(),
  summary: async () => (await import("./summary.js")).benchSummary(),
  memory: async () => (await import("./memory.js")).benchMemory(),
  "replay-memory": async () => (await import("./memory.js")).benchReplayMemory(),
  soak: async () => (await import("./memory.js")).benchSoak(),
};
const chosen = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const names = chosen.length ? chosen : Object.keys(all);
const unknown = names.filter((n) => !all[n]);
if (unknown.length) {
  print(`unknown benchmark '${unknown[0]}' (have: ${Object.keys(all).join(", ")})`);
  process.exitCode = 2;
} else if (names.length === 1) {
  await all[names[0]!]!();
} else {
  // Each benchmark in a fresh process: no heap left over from the one before
  // (a trace of 800,000 packets) slows the next one's garbage collection, and
  // peak RSS is the exporter's own.
  for (const name of names) {
    const child = fork(join(here, `run.${compiled ? "js" : "ts"}`), [name], { execArgv: compiled ? [] : ["--conditions=source", "--import", "tsx"] });
    await new Promise((r) => child.on("exit", r));
  }
}
