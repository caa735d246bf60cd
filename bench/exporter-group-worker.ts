// One exporter group member for bench/exporter-group.ts: argv brokers,
// topics (JSON), group, engine threads; reports every 50 ms over IPC its digests consumed,
// transactions committed, partitions held, its event loop's active and
// idle time so far (ms): how much of the time measured it was busy, and the
// CPU time it used so far (µs, user and system).
import { performance } from "node:perf_hooks";
import { ExporterGroupMember, type TopicNames } from "@rdma-telemetry/exporter";

const [brokers, topicsJson, group, threads] = process.argv.slice(2) as [string, string, string, string];
const member = new ExporterGroupMember({ brokers: [brokers], topics: JSON.parse(topicsJson) as TopicNames, groupId: group, threads: Number(threads) });
await member.start();
const report = setInterval(() => {
  const elu = performance.eventLoopUtilization();
  const cpu = process.cpuUsage();
  process.send!({ digests: member.stats.digests, transactions: member.stats.transactions, assigned: member.assigned.size, at: Date.now(), active: elu.active, idle: elu.idle, cpuUs: cpu.user + cpu.system });
}, 50);
process.once("SIGTERM", () => {
  clearInterval(report);
  void member.stop().then(() => process.exit(0));
});
