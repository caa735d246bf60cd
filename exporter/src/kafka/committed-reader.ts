// Reads what is committed on Kafka topics, as a read_committed consumer
// should: records outside any transaction, and records of committed
// transactions, in offset order per partition. It fetches read_uncommitted
// and sorts transactions by their control markers itself: a transactional
// record is held, per producer, until that producer's marker says commit
// (delivered) or abort (dropped). Neither JS client's read_committed can be
// trusted with the exporter group's record topics, where a member killed -9
// leaves several aborted transactions interleaved with committed ones:
// kafkajs activates one aborted transaction per message (records of a second
// one that began before the fetch leak), and @platformatic/kafka keeps one
// aborted range per producer and drops none whose abort marker is not in the
// same fetch response. The sorting is transaction-sorter.ts's; a consumer group's
// offsets are kept with group-offsets.ts.
import type { Admin, ClusterMetadata, Consumer, KafkaRecord, RecordsBatch } from "@platformatic/kafka";
import { sleep } from "@rdma-telemetry/p4runtime";
import { platformaticKafka, saslOptions, tlsOptions } from "./platformatic-options.js";
import type { KafkaSecurity } from "./security.js";
import { TransactionSorter } from "./transaction-sorter.js";

type FetchResponse = Awaited<ReturnType<Consumer["fetch"]>>;

export interface CommittedMessage {
  topic: string;
  partition: number;
  offset: bigint;
  /** the record's timestamp (ms since the epoch) */
  timestamp: bigint;
  key: Buffer | undefined;
  value: Buffer | undefined;
  headers: Record<string, string>;
}

/** Where a topic's partitions are read from: their beginning, their end (the last stable offset), or their first message at or after a time (ms since the epoch; the end if none). */
export type StartAt = "earliest" | "latest" | { timestampMs: number };

export interface CommittedReaderOptions extends KafkaSecurity {
  brokers: string[];
  clientId: string;
  onMessage: (m: CommittedMessage) => void;
  /** called after each fetch answered */
  onFetch?: () => void;
  /** called with each failed fetch (before it is tried again) */
  onError?: (err: unknown) => void;
  /** how long the broker holds a fetch that has nothing yet (default 500 ms: a stop ends a pending fetch within that) */
  maxWaitMs?: number;
  /** failed fetches in a row before `run` gives up (default 3) */
  retries?: number;
  /** how often followed topics are looked up again, for new partitions and moved leaders (default 10 s) */
  metadataMaxAgeMs?: number;
  /** a partition holding more than this behind a transaction still open is not fetched until it ends (default 64 MiB) */
  maxHeldBytes?: number;
}

interface Part {
  topic: string;
  partition: number;
  /** where the next fetch starts */
  next: bigint;
  sorter: TransactionSorter<CommittedMessage>;
}

/** Fetch error codes that mean the metadata is out of date (a leader moved, a topic recreated). */
const STALE_METADATA = new Set([3, 5, 6, 74, 75, 78, 100, 103]);
const OFFSET_OUT_OF_RANGE = 1;

/**
 * Follows topics' partitions and delivers what is committed on them (see
 * the file's head). `follow` adds a topic, `run` fetches until its signal
 * aborts, `positions` says where a reader that stopped would start again to
 * miss nothing (for a consumer group's offsets).
 */
export class CommittedReader {
  private consumer: Consumer | undefined;
  private admin: Admin | undefined;
  private meta: ClusterMetadata | undefined;
  private metaAt = 0;
  private readonly parts = new Map<string, Part>();
  private readonly topics = new Set<string>();
  private readonly maxWaitMs: number;

  constructor(private readonly o: CommittedReaderOptions) {
    this.maxWaitMs = o.maxWaitMs ?? 500;
  }

  private async client(): Promise<Consumer> {
    const { Consumer } = await platformaticKafka();
    this.consumer ??= new Consumer({
      clientId: this.o.clientId, groupId: `${this.o.clientId}-${process.pid}`, bootstrapBrokers: this.o.brokers,
      tls: tlsOptions(this.o.ssl), sasl: saslOptions(this.o.sasl), connectTimeout: 5000, requestTimeout: 30_000, retries: 1, retryDelay: 200,
    });
    return this.consumer;
  }

  /** The topics the cluster has (those the principal may describe). */
  async listTopics(): Promise<Set<string>> {
    const { Admin } = await platformaticKafka();
    this.admin ??= new Admin({
      clientId: this.o.clientId, bootstrapBrokers: this.o.brokers, tls: tlsOptions(this.o.ssl), sasl: saslOptions(this.o.sasl), connectTimeout: 5000, retries: 1, retryDelay: 200,
    });
    return new Set(await this.admin.listTopics());
  }

  /** The topics followed. */
  followed(): string[] {
    return [...this.topics];
  }

  /**
   * Follows `topic`: each partition from `offsets` (a consumer group's, say)
   * where it has one, else from `start`. Partitions the topic gains later are
   * read from their beginning.
   */
  async follow(topic: string, start: StartAt, offsets: ReadonlyMap<number, bigint> = new Map()): Promise<void> {
    const meta = await this.refresh([...this.topics, topic]);
    const t = meta.topics.get(topic);
    if (!t) throw new Error(`no topic '${topic}'`);
    const need = [...Array(t.partitionsCount).keys()].filter((p) => !offsets.has(p));
    const starts = need.length ? await this.startOffsets(topic, need, start) : new Map<number, bigint>();
    for (let partition = 0; partition < t.partitionsCount; partition++) {
      const next = offsets.get(partition) ?? starts.get(partition) ?? 0n;
      this.parts.set(`${topic}|${partition}`, { topic, partition, next, sorter: new TransactionSorter(true) });
    }
    this.topics.add(topic);
  }

  private async startOffsets(topic: string, partitions: number[], start: StartAt): Promise<Map<number, bigint>> {
    const c = await this.client();
    const list = async (timestamp: bigint | undefined, isolationLevel: number) =>
      (await c.listOffsets({ topics: [topic], partitions: { [topic]: partitions }, isolationLevel, ...(timestamp === undefined ? {} : { timestamp }) })).get(topic) ?? [];
    const out = new Map<number, bigint>();
    // The end a read_committed consumer starts at: the last stable offset (a transaction open there is read whole once it commits).
    const latest = start === "earliest" ? [] : await list(undefined, 1);
    const found = start === "earliest" ? await list(-2n, 0) : start === "latest" ? latest : await list(BigInt(start.timestampMs), 0);
    for (const p of partitions) {
      const at = found[p];
      out.set(p, at !== undefined && at >= 0n ? at : (latest[p] ?? 0n));
    }
    return out;
  }

  /** Where each partition would be read again from to miss nothing delivered after now: its first record held, else where the next fetch starts. */
  positions(): { topic: string; partition: number; offset: bigint }[] {
    return [...this.parts.values()].map((p) => ({ topic: p.topic, partition: p.partition, offset: p.sorter.firstHeld() ?? p.next }));
  }

  /** Looks the followed topics up again (leaders, new partitions); returns the metadata. */
  private async refresh(topics = [...this.topics]): Promise<ClusterMetadata> {
    const meta = await (await this.client()).metadata({ topics, forceUpdate: true });
    this.meta = meta;
    this.metaAt = Date.now();
    for (const topic of this.topics) {
      const t = meta.topics.get(topic);
      for (let partition = 0; t && partition < t.partitionsCount; partition++) {
        // A partition added since: nothing in it is older than its being added, so all of it is read.
        if (!this.parts.has(`${topic}|${partition}`)) this.parts.set(`${topic}|${partition}`, { topic, partition, next: 0n, sorter: new TransactionSorter(true) });
      }
    }
    return meta;
  }

  /**
   * Fetches and delivers until `signal` aborts. Rejects with the client's
   * error (describeKafkaError names its cause) when `retries` fetches in a
   * row failed; the reader keeps its place: `run` again goes on from there.
   */
  async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    const retries = this.o.retries ?? 3;
    while (!signal.aborted) {
      try {
        if (!this.meta || Date.now() - this.metaAt > (this.o.metadataMaxAgeMs ?? 10_000)) await this.refresh();
        await this.fetchOnce(signal);
        failures = 0;
      } catch (err) {
        failures++;
        this.o.onError?.(err);
        if (failures > retries) {
          // A client made anew for the next run (its connections may be to a broker that went away).
          await this.close();
          throw err;
        }
        this.meta = undefined;
        await sleep(200 * failures, signal);
      }
    }
  }

  /** One fetch from each leader of the partitions followed (at once); partitions holding too much behind an open transaction wait. */
  private async fetchOnce(signal: AbortSignal): Promise<void> {
    const meta = this.meta!;
    const maxHeld = this.o.maxHeldBytes ?? 64 << 20;
    const byNode = new Map<number, Part[]>();
    for (const p of this.parts.values()) {
      if (p.sorter.heldBytes > maxHeld) continue;
      const leader = meta.topics.get(p.topic)?.partitions[p.partition]?.leader ?? -1;
      if (leader < 0 || !meta.brokers.has(leader)) throw new Error(`no leader for ${p.topic}[${p.partition}]`);
      const list = byNode.get(leader);
      if (list) list.push(p);
      else byNode.set(leader, [p]);
    }
    if (byNode.size === 0) return sleep(this.maxWaitMs, signal);
    const results = await Promise.allSettled([...byNode].map(([node, parts]) => this.fetchFrom(node, parts, meta)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    this.o.onFetch?.();
  }

  private async fetchFrom(node: number, parts: Part[], meta: ClusterMetadata): Promise<void> {
    const { topics, byId } = fetchRequest(parts, meta, 1 << 20);
    let response: FetchResponse;
    let stale = false;
    try {
      response = await (await this.client()).fetch({ node, topics, isolationLevel: 0, maxWaitTime: this.maxWaitMs, minBytes: 1, maxBytes: 16 << 20 });
    } catch (err) {
      // Some partitions answered with an error: the others' records are taken all the same.
      const partial = answered(err);
      if (!partial) throw err;
      response = partial;
      stale = true;
    }
    let failure: Error | undefined;
    for (const t of response.responses) {
      const topic = byId.get(t.topicId);
      for (const r of t.partitions) {
        const p = topic === undefined ? undefined : this.parts.get(`${topic}|${r.partitionIndex}`);
        if (!p) continue;
        if (r.errorCode === OFFSET_OUT_OF_RANGE) {
          // Deleted by retention meanwhile (read on from the oldest left), or past the end (a topic made anew: from its last stable offset).
          const [first] = await this.startOffsets(p.topic, [p.partition], "earliest").then((m) => [...m.values()]);
          p.next = first !== undefined && p.next < first ? first : ((await this.startOffsets(p.topic, [p.partition], "latest")).get(p.partition) ?? 0n);
          p.sorter.clear();
          continue;
        }
        if (r.errorCode !== 0) {
          failure ??= new Error(`fetching ${p.topic}[${p.partition}]: Kafka error ${r.errorCode}${STALE_METADATA.has(r.errorCode) ? " (metadata out of date)" : ""}`);
          continue;
        }
        for (const batch of r.records ?? []) {
          const last = batch.firstOffset + BigInt(batch.lastOffsetDelta);
          if (last < p.next) continue; // fetched again (a batch starts before the offset asked for)
          p.sorter.take(batch, p.next, (record, offset) => message(p, batch, record, offset), this.o.onMessage);
          p.next = last + 1n;
        }
        if (r.logStartOffset > p.next) p.next = r.logStartOffset;
      }
    }
    if (failure) throw failure;
    if (stale) this.meta = undefined;
  }

  async close(): Promise<void> {
    const [c, a] = [this.consumer, this.admin];
    this.consumer = undefined;
    this.admin = undefined;
    this.meta = undefined;
    await c?.close(true).catch(() => undefined);
    await a?.close().catch(() => undefined);
  }
}

type FetchRequestTopic = Parameters<Consumer["fetch"]>[0]["topics"][number];

/**
 * A read_uncommitted fetch's topics for `parts`, each partition from its
 * `next` offset, and the topic name of each topic id the answer names.
 */
export function fetchRequest(parts: readonly { topic: string; partition: number; next: bigint }[], meta: ClusterMetadata, partitionMaxBytes: number): { topics: FetchRequestTopic[]; byId: Map<string, string> } {
  const byId = new Map<string, string>();
  const request = new Map<string, FetchRequestTopic>();
  for (const p of parts) {
    const id = meta.topics.get(p.topic)!.id;
    byId.set(id, p.topic);
    const t = request.get(id) ?? { topicId: id, partitions: [] };
    t.partitions.push({ partition: p.partition, currentLeaderEpoch: -1, fetchOffset: p.next, lastFetchedEpoch: -1, partitionMaxBytes });
    request.set(id, t);
  }
  return { topics: [...request.values()], byId };
}

/** The fetch response an error carries (partitions that answered with an error), however the client wrapped it. */
function answered(err: unknown): FetchResponse | undefined {
  const seen = new Set<unknown>();
  const walk = (e: unknown): FetchResponse | undefined => {
    if (!e || typeof e !== "object" || seen.has(e)) return undefined;
    seen.add(e);
    const x = e as { response?: FetchResponse; errors?: unknown[]; cause?: unknown };
    if (Array.isArray(x.response?.responses)) return x.response;
    for (const inner of [...(x.errors ?? [])].reverse()) {
      const r = walk(inner);
      if (r) return r;
    }
    return walk(x.cause);
  };
  return walk(err);
}

function message(p: Part, batch: RecordsBatch, record: KafkaRecord, offset: bigint): CommittedMessage {
  const headers: Record<string, string> = {};
  for (const [k, v] of record.headers) if (k) headers[k.toString()] = v?.toString() ?? "";
  return {
    topic: p.topic, partition: p.partition, offset, timestamp: batch.firstTimestamp + record.timestampDelta,
    key: record.key ?? undefined, value: record.value ?? undefined, headers,
  };
}
