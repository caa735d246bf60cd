// An exporter group member as a process of its own, as `rdma-telemetry
// exporter` runs one, with an engine a test chooses (intervals, alert rules):
// a test can kill it -9 mid-run.
//   argv[2]: JSON { brokers, groupId, topics, clientId, partitions?, idleMs?, engine }, the
//   engine's bigint fields as decimal strings.
// Messages out: { stats, assigned } every 50 ms; { alert } for each alert published (committed).
import { ExporterGroupMember } from "../../exporter/src/group/exporter-group.js";
import type { ExporterOptions } from "../../exporter/src/exporter.js";

const o = JSON.parse(process.argv[2]!) as { brokers: string[]; groupId: string; topics: never; clientId: string; partitions?: number; idleMs?: number; engine: Record<string, unknown> };
const engine = Object.fromEntries(Object.entries(o.engine).map(([k, v]) => [k, typeof v === "string" && /^\d+$/.test(v) ? BigInt(v) : v])) as ExporterOptions;
// Its warnings (a transaction that failed, say) on stderr, which the test's output shows.
const warn = (msg: string, fields?: Record<string, unknown>) => console.error(`${o.clientId}: ${msg} ${JSON.stringify(fields ?? {})}`);
const logger = { debug() {}, info() {}, warn, error: warn };
const member = new ExporterGroupMember({ brokers: o.brokers, groupId: o.groupId, topics: o.topics, clientId: o.clientId, partitions: o.partitions, idleMs: o.idleMs, engine, logger, onRecord: (r) => { if (r.type === "alert") process.send!({ alert: r }); } });
await member.start();
setInterval(() => process.send!({ stats: member.stats, assigned: [...member.assigned] }), 50);
process.on("disconnect", () => void member.stop().finally(() => process.exit(0)));
