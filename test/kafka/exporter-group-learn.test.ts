// An exporter group member started without --switch-id learns the fabric's
// switches from its partitions: a switch first seen in one is awaited in the
// others, so that its first digests of a partition reaching Kafka later than
// the correlation window behind the other switch's (a controller retrying
// after a broker outage) still meet their halves, and an I/O is one record,
// with its RTT (test/setup/kafka.ts starts the broker).
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js";
import { expect, inject, test } from "vitest";
import type { IoDigest } from "../../contract/src/digests.js";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { ExporterGroupMember } from "../../exporter/src/group/exporter-group.js";
import type { KafkaMessageOut, TopicNames } from "../../exporter/src/kafka/encode.js";
import { ioMessage } from "../support/digest-messages.js";
import { createTopics } from "../support/topics.js";
import { until } from "../support/wait.js";

const brokers = [inject("kafkaBrokers")];
const T0 = 1_800_000_000_000_000_000n;
// A switch silent for 6 s of the others' time is let go; an idle partition is moved on by the wall clock after 200 ms.
const engine = { silentSwitchNs: 6_000_000_000n };

function io(over: Partial<IoDigest>): IoDigest {
  return { kind: "io", seq: 0, event: 2, vantage: 1, mode: 1, op: 2, flags: 3, host: 0x0a000101, target: 0x0a000201, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000, cid: 9, status: 0, bytes: 4096, ts: 60_000, e2e_ns: 46_000, to_data_ns: 11_000, from_data_ns: 26_000, host_prep_ns: 3_100, gen: 0, ...over };
}

test.concurrent.each([0, 1])("tor-s seen in partition 1 first, its half of an I/O in partition 0 3 s of tor-c's lists late: one record (engine threads: %i)", async (threads) => {
  const id = `learn-${threads}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics: TopicNames = { io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` };
  await createTopics(brokers[0]!, [topics.digest], 2);
  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING, clientId: `${id}-test` });
  const producer = kafka.producer();
  await producer.connect();
  const records: RecordJson[] = [];
  const member = new ExporterGroupMember({ brokers, groupId: id, topics, clientId: "m", engine, idleMs: 200, threads, onRecord: (r) => records.push(r) });
  const send = (partition: number, ms: KafkaMessageOut[]) => producer.send({ topic: topics.digest, messages: ms.map((m) => ({ partition, key: m.key, value: m.value, headers: m.headers })) });
  const ios = () => records.filter((r): r is IoRecordJson => r.type === "io" && r.cid === 9);
  try {
    await member.start();
    await until(() => member.assigned.size === 2, 60_000, () => "the member to get both partitions", 50);
    // tor-s's command of another pair, in partition 1.
    await send(1, [ioMessage(io({ vantage: 2, host: 0x0a000103, cid: 50, ts: 40_000 }), T0 + 40_000n, "tor-s")]);
    await until(() => member.stats.digests >= 1 && member.stats.transactions >= 1, 30_000, () => "the member to take tor-s's first digest", 20);
    // In partition 0: tor-c's half of I/O 9, 3 s of tor-c's lists (more than the 2 s correlation window) (a command of another pair every 100 ms), then tor-s's half.
    const p0: KafkaMessageOut[] = [ioMessage(io({}), T0 + 60_000n, "tor-c")];
    for (let i = 1; i <= 30; i++) p0.push(ioMessage(io({ seq: i, vantage: 3, host: 0x0a000102, cid: 100 + i, ts: i * 100_000_000 }), T0 + BigInt(i) * 100_000_000n, "tor-c"));
    p0.push(ioMessage(io({ vantage: 2, ts: 50_000, e2e_ns: 40_000, to_data_ns: 5_000, from_data_ns: 20_000, host_prep_ns: 3_000 }), T0 + 50_000n, "tor-s"));
    await send(0, p0);
    await until(() => ios().length > 0, 60_000, () => "a record of I/O 9", 50);
    // Whatever else of I/O 9 would come: the partitions idle, moved on by the wall clock past the silence.
    await new Promise((r) => setTimeout(r, 8_000));
  } finally {
    await member.stop();
    await producer.disconnect();
  }
  expect(ios().map((r) => [r.c_switch_id, r.s_switch_id, r.rtt_ns])).toEqual([["tor-c", "tor-s", 6_000]]);
}, 180_000);
