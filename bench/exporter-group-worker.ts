// One exporter group member for bench/exporter-group.ts: argv brokers,
// topics (JSON), group; reports its digests consumed and partitions held every 50 ms over IPC.
import { ExporterGroupMember, type TopicNames } from "@rdma-telemetry/exporter";

const [brokers, topicsJson, group] = process.argv.slice(2) as [string, string, string];
const member = new ExporterGroupMember({ brokers: [brokers], topics: JSON.parse(topicsJson) as TopicNames, groupId: group });
await member.start();
const report = setInterval(() => process.send!({ digests: member.stats.digests, assigned: member.assigned.size, at: Date.now() }), 50);
process.once("SIGTERM", () => {
  clearInterval(report);
  void member.stop().then(() => process.exit(0));
});
