// A member of an exporter group: consumes raw digests (rdma.digest.v1) in a
// Kafka consumer group, joins the vantages of each I/O, and publishes the
// records (rdma.io.v1, rdma.flow.v1, rdma.alert.v1) exactly once, as the
// in-process exporter makes them. Partitions are the unit of parallelism: each
// one has an engine of its own (digests are keyed so that both halves of an
// I/O and every flow of a pair share a partition).
//
// Exactly once (docs/operations.md states the guarantee):
// - read-process-write in Kafka transactions: a partition's records and its
//   consumed offset are committed together by a transactional producer of
//   that partition (transactional id GROUP.TOPIC.PARTITION), so a member that
//   took the partition over fences any earlier owner still running;
//   consumers of the records read read_committed.
// - the open state (halves waiting for their other vantage, commands waiting
//   for their response, intervals not yet closed) is not lost when a
//   partition moves: each commit carries, as offset metadata, where the
//   digests still open begin. The member that takes the partition over
//   re-reads from there, and publishes only the records that the earlier
//   owners did not commit (it reads back the records committed since those
//   digests were published, by their keys).
// - the alerts raised are state too: each commit carries them (hashes of the
//   alert keys), the alerts are evaluated before each commit, and a member
//   taking a partition over feeds its alerts only the interval aggregates
//   that the earlier owners did not commit, so it raises and clears as the
//   earlier owner would have.
//
// This member uses kafkajs: its transactional producer commits consumer
// offsets inside a transaction (sendOffsets), with metadata.
import "../kafka/kafkajs-codecs.js"; // the digests may come compressed with any codec (zstd by default)
import { Kafka, logLevel, type Admin, type Consumer, type EachBatchPayload, type Producer } from "kafkajs";
import type { RecordJson } from "@rdma-telemetry/contract";
import type { Logger } from "@rdma-telemetry/p4runtime";
import { ALERT_HASH_CHARS } from "../alerts.js";
import type { ExporterOptions } from "../exporter.js";
import { recordFromMessage } from "../kafka/decode.js";
import { DEFAULT_TOPICS, type TopicNames } from "../kafka/encode.js";
import { KeyedPartitioner } from "../kafka/partitioner.js";
import { describeKafkaError, KafkaConnectError, type KafkaSecurity } from "../kafka/security.js";
import { readTopicTails } from "../kafka/tail.js";
import { waitForLeaders } from "../kafka/topics-ready.js";
import { LocalEngines, ThreadedEngines, type EngineHost } from "./engine-threads.js";
import type { CommitSnapshot, CommitState, DigestsIn, DropNote, PendingCounts } from "./partition-engine.js";
import { recordKey } from "./record-key.js";

export interface ExporterGroupOptions extends KafkaSecurity {
  brokers: string[];
  /** the consumer group (default rdma-telemetry-exporter) */
  groupId?: string;
  topics?: TopicNames;
  clientId?: string;
  /** digests from other switches are counted (unknown_switch) and dropped; default: every switch */
  switchIds?: readonly string[];
  /** partitions of the record topics when this member creates them (default: as many as the digest topic has) */
  partitions?: number;
  /** the engine's options (interval, windows), as the in-process exporter's */
  engine?: ExporterOptions;
  /** every record published (after its transaction committed) */
  onRecord?: (r: RecordJson) => void;
  logger?: Logger;
  /** how long a caught-up partition with no new digest waits before its engine is moved on by the wall clock (default 500 ms) */
  idleMs?: number;
  /** engine threads: the partitions' engines (decoding, joining, encoding) run on these beside the member's thread, which does Kafka only; 0 (the default) runs them in the member's thread */
  threads?: number;
}

/** What the member did since it started; all counters. */
export interface ExporterGroupStats {
  digests: number;
  records: number;
  transactions: number;
  aborted: number;
  /** offsets sent again because the coordinator was still finishing the partition's previous transaction (CONCURRENT_TRANSACTIONS) */
  concurrentRetries: number;
  /** digests that could not be decoded */
  badDigests: number;
  /** digests from a switch not in switchIds */
  unknownSwitch: number;
  /** digests taken already (the same switch, digest, list and sequence number) */
  duplicateDigests: number;
  /** digests whose list time was before what the engine had settled: their records are made, their interval aggregates were out already */
  lateDigests: number;
  /** records not published again after a takeover: the earlier owner had committed them */
  suppressedRecords: number;
  /** digests re-read after taking a partition over */
  replayedDigests: number;
  /** partitions taken over with open digests to re-read */
  takeovers: number;
  /** commands given up because the switch that saw them went silent (--silent-switch-ms), their records committed */
  givenUpSilentSwitch: number;
  /** digests of RDMA WRITE packets outside any message (added to their flow's interval figures, no message record), not counting those re-read after a takeover */
  flowOnlyDigests: number;
  /** SWITCH_CLOCK notes taken: a switch's time moving on in a partition it may send nothing to */
  clockNotes: number;
  /** raised alerts of partitions taken on whose state the offset metadata had no room for (their partition's new owner may raise them again, or never clear them) */
  alertsNotCarried: number;
}

export { commitMetadata, PartitionEngine, type CommitState } from "./partition-engine.js";

/** One partition's transactional producer and where it stands in Kafka; its engine is the EngineHost's. */
class PartitionTask {
  /** the next offset to read */
  next = -1n;
  /** the offset committed last */
  committedOffset = -1n;
  /** partition end as last fetched */
  highWatermark = -1n;
  lastDigestAt = Date.now();
  /** transactions of this partition, one at a time */
  chain: Promise<void> = Promise.resolve();
  /** batches taken whose transaction has not ended yet */
  inFlight = 0;
  closed = false;

  constructor(readonly partition: number, readonly producer: Producer) {}

  /** Serialises work on this partition. */
  run(f: () => Promise<void>): Promise<void> {
    const p = this.chain.then(f);
    this.chain = p.catch(() => undefined);
    return p;
  }
}

type OutRecord = { key: string; value: Buffer; headers: Record<string, string> };

/** The most of a transaction's records one produce request carries, in bytes (keys, values, headers): well within a broker's `message.max.bytes` (1 MiB by default) for the record batch of each partition. */
export const SEND_PART_BYTES = 512 * 1024;
/**
 * A fetch waits (up to its 100 ms) until this many bytes of digests are there
 * (about 3,000 digests): digests that trickle in are taken a batch per
 * partition and 100 ms, not one at a time, so each partition commits at most
 * about ten transactions a second. Each transaction costs the broker its
 * requests and a marker in every partition it wrote, whatever it carries.
 */
export const FETCH_MIN_BYTES = 1 << 20;
/** And in records: kafkajs groups a request's records by partition in time quadratic in their number. */
export const SEND_PART_RECORDS = 1000;

/**
 * A transaction's records in parts of at most SEND_PART_BYTES and SEND_PART_RECORDS, by topic, each part one
 * produce request of the transaction. A batch of digests taken whole (a backlog fetched at once: a gzip'd
 * partition gives megabytes in one fetch) makes megabytes of records; in one request they would be one record
 * batch per partition, over the broker's limit, and the transaction would fail every time it is tried again.
 */
export function sendParts(messages: readonly (OutRecord & { topic: string })[]): Array<Array<{ topic: string; messages: OutRecord[] }>> {
  const parts: Array<Array<{ topic: string; messages: OutRecord[] }>> = [];
  let part = new Map<string, OutRecord[]>();
  let bytes = 0;
  let count = 0;
  const close = () => {
    if (count) parts.push([...part].map(([topic, msgs]) => ({ topic, messages: msgs })));
    part = new Map();
    bytes = 0;
    count = 0;
  };
  for (const x of messages) {
    let size = x.key.length + x.value.length;
    for (const k in x.headers) size += k.length + x.headers[k]!.length;
    if (count && (bytes + size > SEND_PART_BYTES || count >= SEND_PART_RECORDS)) close();
    let l = part.get(x.topic);
    if (!l) part.set(x.topic, (l = []));
    l.push({ key: x.key, value: x.value, headers: x.headers });
    bytes += size;
    count++;
  }
  close();
  return parts;
}

export class ExporterGroupMember {
  private readonly kafka: Kafka;
  private readonly consumer: Consumer;
  private readonly admin: Admin;
  private readonly topics: TopicNames;
  private readonly groupId: string;
  private readonly tasks = new Map<number, PartitionTask>();
  private readonly taking = new Map<number, Promise<{ task: PartitionTask; from: bigint }>>();
  private readonly engines: EngineHost;
  /** digests dropped so far (taken, whether committed yet or not), for the log's first and every 10,000th */
  private readonly dropped = { badDigests: 0, unknownSwitch: 0 };
  /** the switches any of this member's partitions has had digests from, and those named by switchIds, in the order learnt: every partition's engine awaits them */
  private readonly known: Set<string>;
  private idleTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  readonly stats: ExporterGroupStats = { digests: 0, records: 0, transactions: 0, aborted: 0, concurrentRetries: 0, badDigests: 0, unknownSwitch: 0, duplicateDigests: 0, lateDigests: 0, suppressedRecords: 0, replayedDigests: 0, takeovers: 0, givenUpSilentSwitch: 0, flowOnlyDigests: 0, clockNotes: 0, alertsNotCarried: 0 };
  /** partitions this member holds now */
  readonly assigned = new Set<number>();

  /** The partitions taken on: their earlier owners fenced, their engines running from the committed state. */
  get taken(): number[] {
    return [...this.tasks.keys()].sort((a, b) => a - b);
  }

  /** The switches this member awaits in every partition: named by switchIds, or seen in one of its partitions. */
  get knownSwitches(): ReadonlySet<string> {
    return this.known;
  }

  constructor(private readonly o: ExporterGroupOptions) {
    this.known = new Set(o.switchIds ?? []);
    if (o.brokers.length === 0) throw new Error("Kafka: no brokers given");
    this.topics = o.topics ?? DEFAULT_TOPICS;
    this.groupId = o.groupId ?? "rdma-telemetry-exporter";
    this.engines = (o.threads ?? 0) > 0 ? new ThreadedEngines(o.threads!, (partitions, err) => this.onEnginesLost(partitions, err)) : new LocalEngines();
    this.kafka = new Kafka({ clientId: o.clientId ?? "rdma-telemetry-exporter", brokers: o.brokers, ssl: o.ssl, sasl: o.sasl, logLevel: logLevel.NOTHING, retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2000 } });
    this.admin = this.kafka.admin();
    // read_committed (kafkajs's default): digests of a producer's aborted transaction are never seen.
    this.consumer = this.kafka.consumer({ groupId: this.groupId, sessionTimeout: 10_000, heartbeatInterval: 1000, rebalanceTimeout: 10_000, maxWaitTimeInMs: 100, minBytes: FETCH_MIN_BYTES, readUncommitted: false });
    this.consumer.on(this.consumer.events.GROUP_JOIN, (e) => {
      const now = new Set(e.payload.memberAssignment[this.topics.digest] ?? []);
      this.assigned.clear();
      for (const p of now) this.assigned.add(p);
      for (const [p, t] of this.tasks) if (!now.has(p)) void this.release(t);
      // Taken on now, not at their first batch: a partition may have nothing new, and still open digests to re-read.
      for (const p of now) {
        if (this.tasks.has(p) || this.stopping) continue;
        this.ensureTaken(p).catch((err: unknown) => this.o.logger?.warn("exporter group: taking a partition on failed; tried again at its next batch", { partition: p, error: (err as Error).message }));
      }
      this.o.logger?.info("exporter group: partitions assigned", { group: this.groupId, partitions: [...now].sort((a, b) => a - b).join(",") });
    });
  }

  /** Connects, creates the topics that are missing, joins the group and starts consuming. */
  async start(): Promise<void> {
    try {
      await this.admin.connect();
      await this.ensureTopics();
      await this.consumer.connect();
      await this.consumer.subscribe({ topic: this.topics.digest, fromBeginning: true });
    } catch (err) {
      throw new KafkaConnectError(describeKafkaError(err, this.o));
    }
    await this.consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 4, eachBatch: (p) => this.onBatch(p) });
    this.idleTimer = setInterval(() => this.onIdle(), Math.max(50, (this.o.idleMs ?? 500) / 2));
  }

  private async ensureTopics(): Promise<void> {
    const existing = new Set(await this.admin.listTopics());
    let partitions = this.o.partitions ?? 8;
    if (existing.has(this.topics.digest) && this.o.partitions === undefined) {
      const md = await this.admin.fetchTopicMetadata({ topics: [this.topics.digest] });
      partitions = md.topics[0]?.partitions.length ?? partitions;
    }
    const wanted = [...new Set([this.topics.digest, this.topics.io, this.topics.flow, this.topics.alert])].filter((t) => !existing.has(t));
    if (wanted.length) {
      await this.admin.createTopics({ waitForLeaders: false, topics: wanted.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })) }).catch((err: unknown) => {
        // Another member created them meanwhile.
        if ((err as { type?: string }).type !== "TOPIC_ALREADY_EXISTS") throw err;
      });
      // Created (by this member or another): a broker may not know a topic just created yet and answer
      // UNKNOWN_TOPIC_OR_PARTITION, which kafkajs's own wait for leaders takes for a failure. Looked at again until
      // every partition has its leader.
      await waitForLeaders(async (t) => {
        const md = await this.admin.fetchTopicMetadata({ topics: t });
        return { topics: new Map(md.topics.map((x) => [x.name, { partitions: x.partitions.map((p) => ({ leader: p.leader })) }])) };
      }, wanted);
    }
  }

  private transactionalId(partition: number): string {
    return `${this.groupId}.${this.topics.digest}.${partition}`;
  }

  /**
   * Takes a partition on: fences any earlier owner (its transactional id),
   * then reads where the partition's committed state stands. Returns the
   * offset to read from.
   */
  private async take(partition: number): Promise<{ task: PartitionTask; from: bigint }> {
    const producer = this.kafka.producer({ transactionalId: this.transactionalId(partition), idempotent: true, maxInFlightRequests: 1, createPartitioner: KeyedPartitioner, transactionTimeout: 30_000, allowAutoTopicCreation: false });
    await producer.connect();
    try {
      // InitProducerId with the transactional id: the earlier owner's producer is fenced, its open transaction
      // aborted (or finished: the coordinator answers once it is). kafkajs sends it at a producer's first
      // transaction, not at connect; an empty transaction ends without a request.
      await (await producer.transaction()).abort();
      const fencedAt = Date.now();
      const task = new PartitionTask(partition, producer);
      const told = [...this.known];
      await this.engines.open({ partition, topics: this.topics, engine: this.o.engine ?? {}, switchIds: this.o.switchIds, expect: told, withRecords: this.o.onRecord !== undefined });
      const taken = await this.restore(task, fencedAt);
      // A rebalance while it was being taken on may have moved the partition on: its new owner takes it from Kafka.
      if (!this.assigned.has(partition) || this.stopping) throw new Error("the partition was moved on while being taken on");
      this.tasks.set(partition, task);
      // Switches learnt while it was being taken on (`known` only grows, in order).
      if (this.known.size > told.length) void this.engines.expect(partition, [...this.known].slice(told.length)).catch(() => undefined);
      return taken;
    } catch (err) {
      // Not taken: the next batch of the partition tries again from the start (with an engine of its own).
      if (!this.tasks.has(partition)) this.engines.close(partition);
      await producer.disconnect().catch(() => undefined);
      throw err;
    }
  }

  /** Where the partition's committed state stands: the offset to read from, and the records committed since its open digests. */
  private async restore(task: PartitionTask, fencedAt: number): Promise<{ task: PartitionTask; from: bigint }> {
    const partition = task.partition;
    const offsets = await this.admin.fetchOffsets({ groupId: this.groupId, topics: [this.topics.digest] });
    const mine = offsets[0]?.partitions.find((p) => p.partition === partition);
    const committed = mine && Number(mine.offset) >= 0 ? BigInt(mine.offset) : undefined;
    if (committed === undefined) return { task, from: -1n };
    task.committedOffset = committed;
    let state: CommitState | undefined;
    try {
      state = mine?.metadata ? (JSON.parse(mine.metadata) as CommitState) : undefined;
    } catch {
      state = undefined;
    }
    const raised = typeof state?.a === "string" ? state.a : "";
    const hashes: string[] = [];
    for (let i = 0; i + ALERT_HASH_CHARS <= raised.length; i += ALERT_HASH_CHARS) hashes.push(raised.slice(i, i + ALERT_HASH_CHARS));
    await this.engines.restore(partition, { raised: hashes, clocks: state?.c ?? {}, sinceMs: typeof state?.t === "number" ? state.t : undefined });
    const notCarried = typeof state?.n === "number" ? Math.max(0, state.n - hashes.length) : 0;
    if (notCarried > 0) {
      this.stats.alertsNotCarried += notCarried;
      this.o.logger?.warn("exporter group: raised alerts of a partition taken on were not in its offset metadata (no room): they may be raised again, or not cleared", { partition, carried: hashes.length, not_carried: notCarried });
    }
    const r = state ? BigInt(state.r) : committed;
    if (r < committed) {
      // Open digests to re-read: what earlier owners committed from them on is not published again.
      this.stats.takeovers++;
      const seen = await this.committedSince(state!.t - 5_000, fencedAt);
      await this.engines.setCommitted(partition, seen);
      this.o.logger?.info("exporter group: took a partition over", { partition, reread_from: String(r), committed: String(committed), records_committed_since: seen.size });
    }
    return { task, from: r };
  }

  /**
   * Takes a partition on once, however many batches of it come meanwhile (or
   * none: a partition with nothing new still has open digests to re-read),
   * and seeks to where its engine starts.
   */
  private ensureTaken(partition: number): Promise<{ task: PartitionTask; from: bigint }> {
    let taking = this.taking.get(partition);
    if (!taking) {
      taking = this.take(partition)
        .then((taken) => {
          if (taken.from >= 0n) {
            taken.task.next = taken.from;
            this.consumer.seek({ topic: this.topics.digest, partition, offset: String(taken.from) });
          }
          return taken;
        })
        .finally(() => this.taking.delete(partition));
      this.taking.set(partition, taking);
    }
    return taking;
  }

  /** A read-back of the records committed since a time, shared by the partitions taken over together. */
  private readBack: { sinceMs: number; startedAt: number; keys: Promise<Set<string>> } | undefined;

  /**
   * The keys of the records committed since `sinceMs`, read read_committed
   * after `fencedAt` (so that nothing an earlier owner commits can come later).
   */
  private committedSince(sinceMs: number, fencedAt: number): Promise<Set<string>> {
    const r = this.readBack;
    if (r && r.startedAt >= fencedAt && r.sinceMs <= sinceMs) return r.keys;
    const keys = new Set<string>();
    const topics = [...new Set([this.topics.io, this.topics.flow, this.topics.alert])];
    const read = readTopicTails({ brokers: this.o.brokers, ssl: this.o.ssl, sasl: this.o.sasl, topics, sinceMs, onMessage: (m) => {
      try {
        keys.add(recordKey(recordFromMessage(m.headers.type, m.value)));
      } catch {
        // not a record of ours
      }
    } }).then(() => keys);
    this.readBack = { sinceMs, startedAt: Date.now(), keys: read };
    read.catch(() => {
      if (this.readBack?.keys === read) this.readBack = undefined;
    });
    return read;
  }

  private async onBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const partition = batch.partition;
    if (!this.assigned.has(partition) || isStale()) return;
    let task = this.tasks.get(partition);
    if (!task || task.closed) task = (await this.ensureTaken(partition)).task;
    const t = task;
    // Where the client reads from must be where this partition's engine stands: after a take (the open digests
    // begin there), and after a rebalance that left the partition here but dropped a seek not yet done.
    const fetched = BigInt((batch as unknown as { fetchedOffset?: string }).fetchedOffset ?? batch.firstOffset() ?? "-1");
    if (t.next >= 0n && fetched > t.next) {
      this.consumer.seek({ topic: batch.topic, partition, offset: String(t.next) });
      return;
    }
    if (t.closed || !isRunning() || isStale()) return;
    t.highWatermark = BigInt(batch.highWatermark);
    const d: DigestsIn = { offsets: [], timestamps: [], values: [] };
    for (const m of batch.messages) {
      const offset = BigInt(m.offset);
      if (offset < t.next) continue;
      d.offsets.push(offset);
      d.timestamps.push(Number(m.timestamp));
      d.values.push(m.value);
    }
    const last = d.offsets.at(-1);
    if (last === undefined) return;
    t.lastDigestAt = Date.now();
    t.next = last + 1n;
    // The engine takes the batch now, while the partition's earlier transaction may still be in flight; the batch's
    // own transaction follows that one. A snapshot taken is committed, or its partition let go (engine and all).
    const taken = this.engines.take(partition, d, t.committedOffset, last + 1n);
    taken.catch(() => undefined);
    t.inFlight++;
    const committed = t.run(async () => {
      try {
        const snapshot = await taken;
        if (!t.closed) await this.commit(t, last + 1n, snapshot);
      } finally {
        t.inFlight--;
      }
    });
    resolveOffset(String(last));
    await heartbeat();
    // At most one batch of a partition waits behind the transaction in flight.
    if (t.inFlight > 1) await committed.catch(() => undefined);
  }

  /** Logs the first digest dropped of each kind, and every 10,000th. */
  private noteDropped(t: PartitionTask, counts: PendingCounts, firstBad: DropNote | undefined, firstUnknown: DropNote | undefined): void {
    const crossed = (before: number, after: number) => (before === 0 && after > 0) || Math.floor(before / 10_000) < Math.floor(after / 10_000);
    const d = this.dropped;
    if (counts.unknownSwitch && crossed(d.unknownSwitch, d.unknownSwitch + counts.unknownSwitch))
      this.o.logger?.warn("digests from a switch not in --switch-id dropped", { switch: firstUnknown?.switchId ?? "", count: d.unknownSwitch + counts.unknownSwitch });
    if (counts.badDigests && crossed(d.badDigests, d.badDigests + counts.badDigests))
      this.o.logger?.warn("undecodable digest dropped", { partition: t.partition, offset: firstBad?.offset ?? "", error: firstBad?.error ?? "", count: d.badDigests + counts.badDigests });
    d.unknownSwitch += counts.unknownSwitch;
    d.badDigests += counts.badDigests;
  }

  /**
   * A switch first seen in one partition is awaited in the member's others:
   * its first digests of those may reach Kafka later than the correlation
   * window behind the other switches' (a controller retrying after a broker
   * outage, or started later), and the halves waiting for them would
   * otherwise go out alone and the late half make a second record.
   */
  private learn(partition: number, ids: readonly string[]): void {
    for (const id of ids) {
      if (this.known.has(id)) continue;
      this.known.add(id);
      this.o.logger?.info("exporter group: a switch first seen; every partition awaits it", { switch: id, partition });
      for (const p of this.tasks.keys()) if (p !== partition) void this.engines.expect(p, [id]).catch(() => undefined);
    }
  }

  /** Publishes what the engine made and commits `offset` with it, in one transaction. */
  private async commit(t: PartitionTask, offset: bigint, s: CommitSnapshot): Promise<boolean> {
    if (s.newSwitches.length) this.learn(t.partition, s.newSwitches);
    const counts = s.counts;
    this.noteDropped(t, counts, s.firstBad, s.firstUnknown);
    const tx = await t.producer.transaction();
    try {
      for (const part of sendParts(s.messages)) await tx.sendBatch({ topicMessages: part });
      const offsets = { consumerGroupId: this.groupId, topics: [{ topic: this.topics.digest, partitions: [{ partition: t.partition, offset: String(offset), metadata: s.metadata } as { partition: number; offset: string }] }] };
      await retryConcurrent(() => tx.sendOffsets(offsets), () => this.stats.concurrentRetries++);
      await tx.commit();
    } catch (err) {
      this.stats.aborted++;
      await tx.abort().catch(() => undefined);
      // The engine has moved on past what is not committed: start this partition over from its committed state.
      this.o.logger?.warn("exporter group: a transaction failed; the partition is taken on again from its last commit", { partition: t.partition, error: (err as Error).message });
      void this.release(t, true);
      if (!this.stopping && this.assigned.has(t.partition)) this.consumer.seek({ topic: this.topics.digest, partition: t.partition, offset: String(t.committedOffset >= 0n ? t.committedOffset : 0n) });
      return false;
    }
    t.committedOffset = offset;
    this.stats.transactions++;
    for (const k of Object.keys(counts) as Array<keyof PendingCounts>) this.stats[k] += counts[k];
    // Counted with their records as committed: a record an earlier owner committed (re-made after a takeover) is not counted again.
    this.stats.givenUpSilentSwitch += s.givenUpSilentSwitch;
    this.stats.records += s.published;
    for (const r of s.records) this.o.onRecord?.(r);
    return true;
  }

  /** Moves caught-up, idle partitions on by the wall clock: halves whose other vantage never comes, intervals that are over. */
  private onIdle(): void {
    if (this.stopping) return;
    const idleMs = this.o.idleMs ?? 500;
    for (const t of this.tasks.values()) {
      if (t.closed || t.inFlight > 0 || t.next < 0n || t.next < t.highWatermark || Date.now() - t.lastDigestAt < idleMs) continue;
      void t.run(async () => {
        if (t.closed || this.stopping) return;
        const offset = t.committedOffset >= 0n ? t.committedOffset : t.next;
        const snapshot = await this.engines.idle(t.partition, Date.now(), offset);
        if (snapshot && !t.closed) await this.commit(t, offset, snapshot);
      }).catch(() => undefined);
    }
  }

  /** An engine thread was lost: its partitions are taken on again from their committed state. */
  private onEnginesLost(partitions: number[], err: Error): void {
    this.o.logger?.warn("exporter group: an engine thread failed; its partitions are taken on again from their last commit", { partitions: partitions.join(","), error: err.message });
    for (const p of partitions) {
      const t = this.tasks.get(p);
      if (!t) continue;
      void this.release(t, true);
      if (!this.stopping && this.assigned.has(p)) this.consumer.seek({ topic: this.topics.digest, partition: p, offset: String(t.committedOffset >= 0n ? t.committedOffset : 0n) });
    }
  }

  /** Lets a partition go: its producer disconnects (its state is in Kafka: offsets and where the open digests begin). */
  private async release(t: PartitionTask, fromItsChain = false): Promise<void> {
    if (t.closed) return;
    t.closed = true;
    if (this.tasks.get(t.partition) === t) {
      this.tasks.delete(t.partition);
      this.engines.close(t.partition);
    }
    if (!fromItsChain) await t.chain;
    await t.producer.disconnect().catch(() => undefined);
  }

  /** Leaves the group cleanly: the transaction under way finishes, the partitions go to the other members. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.idleTimer) clearInterval(this.idleTimer);
    await this.consumer.stop().catch(() => undefined);
    for (const t of [...this.tasks.values()]) await this.release(t);
    await this.engines.stop();
    await this.consumer.disconnect().catch(() => undefined);
    await this.admin.disconnect().catch(() => undefined);
  }
}

/**
 * A transaction that begins with its offsets (its batch made no record) sends
 * AddOffsetsToTxn right after the partition's previous commit; the
 * coordinator, still writing that one's markers, answers
 * CONCURRENT_TRANSACTIONS, which Kafka's clients retry (kafkajs does for
 * AddPartitionsToTxn, not for offsets). Sent again after a pause, 10 ms
 * doubling up to 200 ms, for up to 20 s (the transaction times out at 30 s).
 */
export async function retryConcurrent<T>(send: () => Promise<T>, onRetry: () => void, deadlineMs = 20_000): Promise<T> {
  const until = Date.now() + deadlineMs;
  for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
    try {
      return await send();
    } catch (err) {
      if ((err as { type?: string }).type !== "CONCURRENT_TRANSACTIONS" || Date.now() + pause > until) throw err;
      onRetry();
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}
