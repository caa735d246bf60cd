// An exporter group member counts the flow-only digests it takes (RDMA WRITE
// packets outside any message: after their message's last PSN over a
// reordering path, or resent after it), as the in-process engine does, and
// puts their packets in their flow's interval figures (test/setup/kafka.ts
// starts the broker).
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";
import { expect, inject, test } from "vitest";
import { replaySwitches } from "../../app/replay.js";
import { Topology } from "../../app/topology.js";
import { isFlowOnly } from "../../contract/src/digests.js";
import type { FlowAggregateJson, RecordJson } from "../../contract/src/records.js";
import { ExporterGroupMember } from "../../exporter/src/group/exporter-group.js";
import { rawDigestMessages } from "../../exporter/src/kafka/digest-bus.js";
import type { KafkaMessageOut, TopicNames } from "../../exporter/src/kafka/encode.js";
import { generateTraffic } from "../../traffic/src/generator.js";
import { until } from "../support/wait.js";

const brokers = [inject("kafkaBrokers")];

test("a group member counts the flow-only digests it takes", async () => {
  const id = `flow-only-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics: TopicNames = { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
  const traffic = generateTraffic({ seed: 11, durationNs: 400_000_000, hosts: 2, targets: 1, ioRate: 200, reorderShare: 0.5, reorderMaxDisplacement: 6, reorderLoss: 0.5 });
  // Short windows, an idle partition moved on by the wall clock after 200 ms, and a switch silent for 1 s let go: every interval closes soon after the last digest.
  const engine = { perEventRecords: false, intervalNs: 100_000_000n, correlationWindowNs: 100_000_000n, ioTimeoutNs: 200_000_000n, silentSwitchNs: 1_000_000_000n };
  const digests: KafkaMessageOut[] = [];
  let flowOnly = 0;
  const inProcess: RecordJson[] = [];
  await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
    exporter: engine,
    onRecord: (r: RecordJson) => inProcess.push(r),
    beforeFeed: (rigs) => {
      for (const r of rigs) {
        r.controller.on("digests", (b) => {
          for (const d of b.digests) if (d.kind === "msg" && isFlowOnly(d)) flowOnly++;
          digests.push(...rawDigestMessages(b, topics));
        });
      }
    },
  });
  expect(flowOnly, "the workload has packets outside any message").toBeGreaterThan(0);

  // Every packet of every flow, in and outside messages, is in the flows' interval figures, as the in-process exporter has it.
  const packets = (rs: RecordJson[]) => rs.filter((r): r is FlowAggregateJson => r.type === "flow_interval").reduce((a, r) => a + r.packets, 0);
  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING, clientId: "flow-only-test" });
  const producer = kafka.producer();
  await producer.connect();
  const records: RecordJson[] = [];
  const member = new ExporterGroupMember({ brokers, groupId: id, topics, partitions: 1, clientId: "m", engine, idleMs: 200, onRecord: (r) => records.push(r) });
  try {
    await member.start();
    await until(() => member.assigned.size === 1, 60_000, () => "the member to get the partition", 50);
    for (let i = 0; i < digests.length; i += 500) await producer.send({ topic: topics.digest, messages: digests.slice(i, i + 500).map((m) => ({ key: m.key, value: m.value, headers: m.headers })) });
    await until(() => member.stats.digests >= digests.length, 60_000, () => `the member to take ${digests.length} digests (${member.stats.digests})`, 50);
    await member.stop();
  } finally {
    await member.stop();
    await producer.disconnect();
  }
  expect(member.stats.flowOnlyDigests).toBe(flowOnly);
  // The member's committed flow intervals never hold more packets than the in-process exporter's. (Its last
  // intervals are not always closed within a minute of the last digest here, so equality is not awaited.)
  expect(packets(inProcess)).toBeGreaterThan(0);
  expect(packets(records)).toBeLessThanOrEqual(packets(inProcess));
}, 180_000);
