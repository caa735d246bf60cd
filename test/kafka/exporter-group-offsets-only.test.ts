// An exporter group member whose batches make no record (commands waiting for
// their responses, a polling controller's window notes) commits transactions
// of offsets alone, one right after another. The coordinator, still writing
// the previous commit's markers, may answer the next one's AddOffsetsToTxn
// with CONCURRENT_TRANSACTIONS: the member sends it again, as Kafka's clients
// do, rather than aborting and taking the partition on again from its last
// commit (test/setup/kafka.ts starts the broker).
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";
import { expect, inject, test } from "vitest";
import { EXPECTED, type IoDigest } from "../../contract/src/digests.js";
import { ExporterGroupMember } from "../../exporter/src/group/exporter-group.js";
import { rawDigestMessages } from "../../exporter/src/kafka/digest-bus.js";
import type { KafkaMessageOut, TopicNames } from "../../exporter/src/kafka/encode.js";
import { until } from "../support/wait.js";

const brokers = [inject("kafkaBrokers")];
const T0 = 1_800_000_000_000_000_000n;
const engine = { perEventRecords: false, intervalNs: 100_000_000n, correlationWindowNs: 100_000_000n, ioTimeoutNs: 10_000_000_000n, silentSwitchNs: 60_000_000_000n };

function command(i: number): KafkaMessageOut {
  const d: IoDigest = { kind: "io", seq: i, event: 1, vantage: 3, mode: 1, op: 2, flags: 3, host: 0x0a000101, target: 0x0a000201, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000 + i, cid: i, status: 0, bytes: 4096, ts: i * 1000, e2e_ns: 0, to_data_ns: 0, from_data_ns: 0, host_prep_ns: 0, gen: 0 };
  const values = Object.keys(EXPECTED.io_digest_t!.fields).map((n) => (d as unknown as Record<string, number>)[n]!);
  return rawDigestMessages({ switchId: "tor", listTimestampNs: T0 + BigInt(i * 1000), digests: [d], badDigests: 0, session: 0, raw: { digest: "io_digest_t", samples: [values] } }, topics)[0]!;
}

const id = `offsets-only-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
const topics: TopicNames = { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };

test("back-to-back transactions of offsets alone are sent again while the coordinator finishes the previous one, none aborted", async () => {
  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING, clientId: `${id}-test` });
  const producer = kafka.producer();
  await producer.connect();
  const member = new ExporterGroupMember({ brokers, groupId: id, topics, partitions: 1, clientId: "m", engine, idleMs: 60_000 });
  const commands = 60;
  try {
    await member.start();
    await until(() => member.assigned.size === 1, 60_000, () => "the member to get the partition", 50);
    // One command per batch, the next sent as soon as the member has taken the last: each batch its own
    // transaction, of offsets alone (a command waits for its response), right after the previous commit.
    for (let i = 1; i <= commands; i++) {
      await producer.send({ topic: topics.digest, messages: [command(i)].map((m) => ({ key: m.key, value: m.value, headers: m.headers })) });
      await until(() => member.stats.digests >= i, 30_000, () => `the member to take command ${i} (${member.stats.digests})`, 2);
    }
    await until(() => member.stats.transactions + member.stats.aborted >= commands, 30_000, () => `${commands} transactions (${member.stats.transactions} committed, ${member.stats.aborted} aborted)`, 20);
  } finally {
    await member.stop();
    await producer.disconnect();
  }
  console.log(`offsets-only transactions: ${member.stats.transactions} committed, ${member.stats.aborted} aborted, ${member.stats.concurrentRetries} offsets sent again`);
  expect(member.stats.aborted).toBe(0);
  expect(member.stats.takeovers).toBe(0);
  expect(member.stats.digests).toBe(commands);
}, 180_000);
