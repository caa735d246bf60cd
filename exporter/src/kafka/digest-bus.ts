// Raw digests on Kafka (topic rdma.digest.v1), so that the digests of a
// compute-side and a storage-side switch meet in one exporter: I/O digests
// are keyed by host|target, message and CNP digests by src|dst (every flow of
// a pair with the pair's CNPs). Exporters consume the topic as one consumer
// group (exporter/src/group/) and scale out by partitions.
import "./kafkajs-codecs.js";
import { Kafka, logLevel, type Consumer } from "kafkajs";
import { RawDigest } from "../generated/rdma/telemetry/v1/records.js";
import { memberBytes } from "@rdma-telemetry/p4runtime";
import { endpointText, isEndpointKey, type DigestBatch } from "@rdma-telemetry/contract";
import { EXPECTED, type IoDigest, type TelemetryDigest } from "@rdma-telemetry/contract";
import { encodeRawDigest, type KafkaMessageOut, type TopicNames } from "./encode.js";
import { batchFromRaw, IO_GIVEN_UP, rawDigestBatch, SWITCH_CLOCK, WINDOW_BOUND, WINDOW_JOINED, WINDOW_LEFT } from "./raw-digest.js";
import { partitionOf } from "./partitioner.js";
import type { KafkaSecurity } from "./security.js";

/**
 * The partition key of a digest: both vantages of an I/O share host|target,
 * as text (an endpoint key as the address it stands for on its switch, from
 * `names`; one without an entry as `key:N`: its digest is counted and
 * dropped by the exporter that reads it).
 */
export function digestKey(d: TelemetryDigest, names?: ReadonlyMap<number, string>): string {
  const t = (v: number) => endpointText(v, names) ?? `key:${v >>> 0}`;
  if (d.kind === "io") return `${t(d.host)}|${t(d.target)}`;
  // A pair's CNPs are counted on each of its flows (flow_interval cnp_packets): all of them in one partition.
  return `${t(d.src)}|${t(d.dst)}`;
}

/** The endpoint keys of a digest's address fields. */
function endpointKeysOf(d: TelemetryDigest): number[] {
  const [a, b] = d.kind === "io" ? [d.host, d.target] : [d.src, d.dst];
  return [a, b].filter(isEndpointKey);
}

/** One Kafka message per digest of a batch. */
export function rawDigestMessages(b: DigestBatch, topics: TopicNames): KafkaMessageOut[] {
  const names = Object.keys(EXPECTED[b.raw.digest]?.fields ?? {});
  const endpoints = b.endpoints?.length ? new Map(b.endpoints.map((e) => [e.key >>> 0, e.address])) : undefined;
  return b.digests.map((d, i) => encodeRawDigest(
    RawDigest.fromPartial({
      switchId: b.switchId,
      digest: b.raw.digest,
      seq: BigInt(d.seq),
      listTimestampNs: b.listTimestampNs,
      fields: (b.raw.samples[i] ?? []).map((v, j) => ({ name: names[j] ?? String(j), value: memberBytes(v) })),
      // Each digest with the entries of the endpoint keys it uses: understood on its own, in whichever partition and after whichever takeover.
      endpoints: endpoints ? endpointKeysOf(d).flatMap((key) => (endpoints.has(key) ? [{ key, address: endpoints.get(key)! }] : [])) : [],
    }),
    digestKey(d, endpoints),
    topics,
  ));
}

/** The IPv6 addresses of a pair's endpoint keys (a note's endpoint entries, and its key's text). */
function pairNames(host: number, target: number, addressOf: (key: number) => string | undefined): Map<number, string> {
  const names = new Map<number, string>();
  for (const k of [host, target]) {
    const a = isEndpointKey(k) ? addressOf(k) : undefined;
    if (a !== undefined) names.set(k >>> 0, a);
  }
  return names;
}

/**
 * The WINDOW_LEFT notes of one polling rotation (its time on the switch's
 * clock, `atUnixNs`, about): one per pair it took out of the window, keyed as
 * the pair's I/O digests; with `joined`, its WINDOW_JOINED notes, one per pair
 * it put back. `seq` numbers the controller's notes (with the time,
 * what tells a note published twice); `addressOf` gives an endpoint key's
 * IPv6 address. `kind` true: WINDOW_JOINED notes; "bound": WINDOW_BOUND
 * notes, a rotation that puts the pairs back written, with `seenTs` the
 * newest switch time (48-bit ns) the controller had from the switch before
 * its write (member `seen_ts`: a response while the pair is out and no later
 * than it is the command's own); a departure with a join written behind it
 * carries that bound too.
 */
export function windowNoteMessages(switchId: string, pairs: ReadonlyArray<{ host: number; target: number; gen?: number }>, atUnixNs: bigint, seq: bigint, addressOf: (key: number) => string | undefined, topics: TopicNames, kind: boolean | "bound" = false, seenTs?: number): KafkaMessageOut[] {
  return pairs.map((p, i) => {
    const names = pairNames(p.host, p.target, addressOf);
    return encodeRawDigest(
      RawDigest.fromPartial({
        switchId,
        digest: kind === "bound" ? WINDOW_BOUND : kind ? WINDOW_JOINED : WINDOW_LEFT,
        seq: seq + BigInt(i),
        listTimestampNs: atUnixNs,
        fields: [{ name: "host", value: memberBytes(p.host >>> 0) }, { name: "target", value: memberBytes(p.target >>> 0) }, ...(seenTs === undefined ? [] : [{ name: "seen_ts", value: memberBytes(seenTs) }]), ...(p.gen === undefined ? [] : [{ name: "gen", value: memberBytes(p.gen) }])],
        endpoints: [...names].map(([key, address]) => ({ key, address })),
      }),
      digestKey({ kind: "io", host: p.host, target: p.target } as TelemetryDigest, names),
      topics,
    );
  });
}

/**
 * The IO_GIVEN_UP note of a command the controller gave up with no response
 * seen (`lost`: digests after it were lost, its answer unknown), keyed as
 * its I/O's digests; the command's time and digest number tell a note
 * published twice.
 */
export function givenUpMessage(switchId: string, d: IoDigest, cmdUnixNs: bigint, lost: boolean, addressOf: (key: number) => string | undefined, topics: TopicNames): KafkaMessageOut {
  const names = pairNames(d.host, d.target, addressOf);
  const member = (name: string, v: number) => ({ name, value: memberBytes(v) });
  return encodeRawDigest(
    RawDigest.fromPartial({
      switchId,
      digest: IO_GIVEN_UP,
      seq: BigInt(d.seq),
      listTimestampNs: cmdUnixNs,
      fields: [member("host", d.host >>> 0), member("target", d.target >>> 0), member("target_qp", d.target_qp), member("cid", d.cid), member("cmd_psn", d.cmd_psn), member("lost", lost ? 1 : 0)],
      endpoints: [...names].map(([key, address]) => ({ key, address })),
    }),
    digestKey({ kind: "io", host: d.host, target: d.target } as TelemetryDigest, names),
    topics,
  );
}

/** Per switch and partition count: a key of each partition (Kafka's default partitioner puts it there). */
const clockKeys = new Map<string, string[]>();

/** Keys `clock|SWITCH|N`, one for each of `partitions` partitions: the first N that lands in each. */
export function clockKeysOf(switchId: string, partitions: number): string[] {
  const id = `${partitions}|${switchId}`;
  let keys = clockKeys.get(id);
  if (keys) return keys;
  const found = new Array<string | undefined>(partitions);
  let left = partitions;
  for (let n = 0; left > 0; n++) {
    const key = `clock|${switchId}|${n}`;
    const p = partitionOf(key, partitions);
    if (found[p] === undefined) {
      found[p] = key;
      left--;
    }
  }
  keys = found as string[];
  if (clockKeys.size < 4096) clockKeys.set(id, keys);
  return keys;
}

/** How long a switch sends no digest list before its clock notes move on from its newest list's time. */
export const CLOCK_NOTE_GRACE_MS = 2000;

/**
 * The time a switch's clock note tells, `sinceListMs` (this host's clock)
 * after its newest digest list came: that list's time, which every digest of
 * the switch up to it has reached the controller by (lists leave in order);
 * and on from there by this host's clock, less CLOCK_NOTE_GRACE_MS, only for
 * as long as the switch has been seen idle since that list (`quietMs`: its
 * RoCEv2 packet counter read unchanged that long), as an idle switch's clock
 * runs. A switch that stalls (its digest path held back, a software switch
 * fed from captures whose clock waits while its host is too busy, or one
 * stopped) answers no counter read, or counts packets whose digests are yet
 * to come: its notes wait. Before counters gated it, a stall of more than
 * the grace and a member's correlation window (4 s) let a member send I/Os
 * out as two halves (a controller restarted beside a stalled switch: 73 of
 * 5,881 I/Os in one run).
 */
export function switchClockTime(newestListNs: bigint, sinceListMs: number, quietMs: number): bigint {
  return newestListNs + BigInt(Math.max(0, Math.floor(Math.min(sinceListMs, quietMs)) - CLOCK_NOTE_GRACE_MS)) * 1_000_000n;
}

/**
 * The SWITCH_CLOCK notes of one switch at `atUnixNs` (switchClockTime): one
 * to each of the digest topic's `partitions` partitions (or to those of them
 * `only` names).
 */
export function switchClockMessages(switchId: string, atUnixNs: bigint, partitions: number, topics: TopicNames, only?: readonly number[]): KafkaMessageOut[] {
  const keys = clockKeysOf(switchId, partitions);
  return (only ? only.map((p) => keys[p]!) : keys).map((key) => encodeRawDigest(RawDigest.fromPartial({ switchId, digest: SWITCH_CLOCK, seq: 0n, listTimestampNs: atUnixNs, fields: [], endpoints: [] }), key, topics));
}

export { batchFromRaw, rawDigestBatch, IO_GIVEN_UP, SWITCH_CLOCK, WINDOW_BOUND, WINDOW_JOINED, WINDOW_LEFT };

export interface DigestConsumerOptions extends KafkaSecurity {
  brokers: string[];
  groupId: string;
  topic: string;
  clientId?: string;
  onBatch: (b: DigestBatch, partition: number) => void;
  onBad?: (message: string) => void;
}

/** Consumes raw digests as a member of a consumer group. */
export class DigestConsumer {
  private readonly consumer: Consumer;
  readonly assigned = new Set<number>();
  received = 0;
  bad = 0;

  constructor(private readonly o: DigestConsumerOptions) {
    const kafka = new Kafka({ clientId: o.clientId ?? "rdma-telemetry-exporter", brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, logLevel: logLevel.NOTHING });
    this.consumer = kafka.consumer({ groupId: o.groupId, sessionTimeout: 10_000, heartbeatInterval: 1000, rebalanceTimeout: 10_000 });
    this.consumer.on(this.consumer.events.GROUP_JOIN, (e) => {
      this.assigned.clear();
      for (const p of e.payload.memberAssignment[o.topic] ?? []) this.assigned.add(p);
    });
  }

  async start(): Promise<void> {
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.o.topic, fromBeginning: true });
    await this.consumer.run({
      eachMessage: async ({ partition, message }) => {
        if (!message.value) return;
        try {
          const r = rawDigestBatch(message.value);
          // A controller's window note is no digest: the exporter group's (partition-engine.ts).
          if (r.windowNote || r.givenUp) return;
          this.o.onBatch(r.batch, partition);
          this.received++;
        } catch (err) {
          this.bad++;
          this.o.onBad?.((err as Error).message);
        }
      },
    });
  }

  async stop(): Promise<void> {
    await this.consumer.disconnect();
  }
}
