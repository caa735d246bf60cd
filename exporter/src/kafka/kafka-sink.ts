// Publishes records on Kafka through a pluggable client ("transport":
// kafkajs or @platformatic/kafka, see transport.ts): idempotent producer,
// acks=all, batching and compression, topics created with a partition count,
// SASL and TLS. While Kafka is unreachable, messages wait in a bounded memory
// queue that spills to disk; they go out in order when Kafka returns. If even
// the disk bound is reached, what is dropped is counted and logged. Refused
// credentials and untrusted certificates are logged as errors naming the
// cause; records wait for them too. A spill goes out to the topics its
// records name, whichever topics the sink itself publishes on.
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, truncateSync } from "node:fs";
import { basename, join } from "node:path";
import { Backoff, type Logger } from "@rdma-telemetry/p4runtime";
import { OutputError } from "../jsonl-sink.js";
import { DEFAULT_TOPICS, type KafkaMessageOut, type TopicNames } from "./encode.js";
import { KafkajsTransport } from "./kafkajs-transport.js";
import { LazyPlatformaticTransport } from "./platformatic-lazy.js";
import type { KafkaSecurity } from "./security.js";
import { DEFAULT_KAFKA_COMPRESSION, kafkaClientName, kafkaMaxInFlight, type KafkaClientName, type KafkaCompression, type KafkaSinkStats, type KafkaTransport, type RecordSink } from "./transport.js";

export type { KafkaSinkStats, RecordSink } from "./transport.js";

export interface KafkaSinkOptions extends KafkaSecurity {
  brokers: string[];
  /** the Kafka client; default: KAFKA_CLIENT, else @platformatic/kafka (transport.ts) */
  client?: KafkaClientName;
  clientId?: string;
  topics?: TopicNames;
  partitions?: number;
  replicationFactor?: number;
  /** the record batches' codec (default: DEFAULT_KAFKA_COMPRESSION) */
  compression?: KafkaCompression;
  /** messages per produce request, at most */
  batchSize?: number;
  /**
   * key and value bytes per produce request, at most (a single message may
   * exceed it): keeps a request's batch for one partition under the broker's
   * message.max.bytes (1 MiB by default), whatever the encoding
   */
  batchBytes?: number;
  /**
   * Produce requests in flight at once, 1 to 5 (default: KAFKA_MAX_IN_FLIGHT,
   * else 5, as Java's idempotent producer): the client sends the next batches
   * while Kafka handles the first. Records of a partition keep their order;
   * the broker drops a batch sent again that it already has. kafkajs takes one
   * at a time whatever this says.
   */
  maxInFlight?: number;
  /** messages held in memory before spilling to disk */
  maxBuffered?: number;
  /** where spilled messages go; omitted: no spill (overflow is dropped and counted) */
  spillDir?: string;
  maxSpillBytes?: number;
  logger?: Logger;
}

/** Messages in a spill segment: one a line. */
function countLines(file: string): number {
  const fd = openSync(file, "r");
  const buf = Buffer.alloc(1 << 20);
  let n = 0;
  try {
    for (let got = readSync(fd, buf); got > 0; got = readSync(fd, buf)) {
      for (let i = buf.indexOf(10, 0); i >= 0 && i < got; i = buf.indexOf(10, i + 1)) n++;
    }
  } finally {
    closeSync(fd);
  }
  return n;
}

/** A wait that does not keep the process alive by itself. */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());

/** A wait that keeps the process alive: for close(), which must finish before the process may end. */
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `p`, or undefined once `ms` have passed; the process stays alive meanwhile. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A topic name Kafka accepts. */
const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;

/** Where a spill segment goes when its records cannot be delivered (see setAside). */
export const SET_ASIDE_DIR = "set-aside";
/** Kafka failing this long (ms) counts as away at close: what is left is spilled at once. */
const FAILING_MS = 3000;

type SpillLine = { t: string; k: string; v: string; h: Record<string, string> };

function parseSpill(text: string): KafkaMessageOut[] {
  const out: KafkaMessageOut[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    const o = JSON.parse(line) as SpillLine;
    if (typeof o.t !== "string" || typeof o.k !== "string" || typeof o.v !== "string") throw new Error("a line is not a spilled message");
    out.push({ topic: o.t, key: o.k, value: Buffer.from(o.v, "base64"), headers: o.h ?? {} });
  }
  return out;
}

export class KafkaSink implements RecordSink {
  private readonly transport: KafkaTransport;
  private readonly topics: TopicNames;
  private readonly queue: KafkaMessageOut[] = [];
  private head = 0;
  private segments: string[] = [];
  private segmentSeq = 0;
  /**
   * The segments this sink may append to: those it began itself. A segment
   * an earlier run left, or one being read back (unspill), is never appended
   * to: what is appended while it is read would be deleted with it, and its
   * records could be set aside with another run's.
   */
  private readonly appendable = new Set<string>();
  private spillBytes = 0;
  private pumping: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private closing = false;
  /** when the current run of failures began (undefined: the last attempt went through) */
  private failingSince: number | undefined;
  /** set by close() once its deadline passed: the pump stops at its next step */
  private stopped = false;
  private readonly opts: Required<Pick<KafkaSinkOptions, "batchSize" | "batchBytes" | "maxBuffered" | "maxSpillBytes" | "partitions" | "replicationFactor">> & KafkaSinkOptions;
  readonly stats: KafkaSinkStats = { sent: 0, buffered: 0, spilledNow: 0, spilledTotal: 0, dropped: 0, setAside: 0, sendFailures: 0 };
  /** topics known to exist on Kafka (created or found by connect) */
  private readonly topicsThere = new Set<string>();
  /** failed attempts to create the topics the oldest spill segment names */
  private topicFailures = 0;
  /**
   * Messages taken so far (those of an earlier run's spill first). Messages
   * leave in the order they came, so message n is settled (in Kafka, or
   * dropped and counted) once `settled` exceeds n.
   */
  accepted = 0;

  constructor(options: KafkaSinkOptions) {
    if (options.brokers.length === 0) throw new Error("Kafka: no brokers given");
    this.opts = { batchSize: 2000, batchBytes: 512 << 10, maxBuffered: 100_000, maxSpillBytes: 1 << 30, partitions: 8, replicationFactor: 1, ...options };
    this.topics = options.topics ?? DEFAULT_TOPICS;
    const client = options.client ?? kafkaClientName(process.env.KAFKA_CLIENT);
    const Transport = client === "platformatic" ? LazyPlatformaticTransport : KafkajsTransport;
    this.transport = new Transport({
      brokers: options.brokers,
      clientId: options.clientId ?? "rdma-telemetry-exporter",
      ssl: options.ssl,
      sasl: options.sasl,
      compression: this.opts.compression ?? DEFAULT_KAFKA_COMPRESSION,
      partitions: this.opts.partitions,
      replicationFactor: this.opts.replicationFactor,
      maxInFlight: options.maxInFlight !== undefined ? kafkaMaxInFlight(options.maxInFlight, "maxInFlight") : kafkaMaxInFlight(process.env.KAFKA_MAX_IN_FLIGHT),
      // A retry the client makes by itself counts as a failure when Kafka could
      // not be reached or refused this client; a broker's passing state (a
      // leader moving, a coordinator loading) is only logged at debug level.
      onRetry: (err) => {
        this.lastRetry = String((err as Error)?.message ?? err);
        if (this.transport.describe(err).cause === "other") {
          this.opts.logger?.debug("Kafka client retries", { error: this.lastRetry });
          return;
        }
        this.stats.sendFailures++;
        this.failed(err, "Kafka send failed; the client retries, records stay buffered");
      },
    });
    if (options.spillDir) {
      try {
        mkdirSync(options.spillDir, { recursive: true });
        // Messages spilled by an earlier run go out first.
        this.segments = readdirSync(options.spillDir).filter((f) => f.endsWith(".spill")).sort().map((f) => join(options.spillDir!, f));
        for (const s of this.segments) {
          this.spillBytes += statSync(s).size;
          this.stats.spilledNow += countLines(s);
        }
      } catch (err) {
        throw new OutputError(`Kafka spill ${options.spillDir}: cannot use it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      }
      this.segmentSeq = this.segments.length;
      this.accepted = this.stats.spilledNow;
    }
  }

  /**
   * Messages that have left the sink in the order they came: every message
   * before this position is acknowledged by Kafka, or dropped (and counted)
   * because even the spill was full. (A batch acknowledged while an earlier
   * one is still to be sent again counts once that one is through.) Spilled
   * messages set aside (see setAside) count as settled too: they are on disk,
   * counted, and no longer on their way.
   */
  get settled(): number {
    return this.stats.sent - this.aheadOfFailure + this.stats.dropped + this.stats.setAside;
  }

  /** the most produce requests this sink had in flight at once */
  inFlightPeak = 0;

  /** messages acknowledged after a batch before them failed, while it has not gone through yet */
  private aheadOfFailure = 0;

  /** The messages an earlier run spilled, which this sink sends first: so that a restarted exporter knows what is on its way. */
  *spilledMessages(): Generator<KafkaMessageOut> {
    for (const seg of this.segments) {
      if (!existsSync(seg)) continue;
      let msgs: KafkaMessageOut[];
      try {
        msgs = parseSpill(readFileSync(seg, "utf8"));
      } catch {
        continue; // set aside when its turn comes
      }
      yield* msgs;
    }
  }

  private connected = false;

  /**
   * Starts publishing. When Kafka cannot be reached now, records wait in the
   * buffer (and spill) while connecting is retried in the background.
   */
  async start(): Promise<void> {
    try {
      await this.connect();
    } catch (err) {
      this.failed(err, "Kafka connection failed at start; records are buffered until it succeeds");
    }
    this.pumping = this.pump();
  }

  /** Logs a failure by its cause: refused credentials and TLS failures need an operator, so they are errors. */
  private failed(err: unknown, what: string): void {
    const f = this.transport.describe(err);
    this.stats.lastError = f.message;
    this.failingSince ??= Date.now();
    const fields = { cause: f.cause, error: f.message, buffered: this.memoryLength, spilled: this.stats.spilledNow };
    if (f.cause === "authentication" || f.cause === "tls") this.opts.logger?.error(what, fields);
    else this.opts.logger?.warn(what, fields);
  }

  /** An attempt went through: Kafka is not failing now (close() waits for what is in flight again). */
  private wentThrough(): void {
    this.stats.lastError = undefined;
    this.failingSince = undefined;
  }

  /** Creates the topics (if missing) and connects the producer. */
  private async connect(): Promise<void> {
    const own = [...new Set(Object.values(this.topics))];
    await this.transport.connect(own);
    for (const t of own) this.topicsThere.add(t);
    this.connected = true;
  }

  /** The partition count of one of the sink's topics, once connected (undefined before, or for another topic). */
  partitionsOf(topic: string): number | undefined {
    return this.transport.partitionCounts.get(topic);
  }

  /** The Kafka client in use. */
  get client(): KafkaClientName {
    return this.transport.name;
  }

  get topicNames(): TopicNames {
    return this.topics;
  }

  private get memoryLength(): number {
    return this.queue.length - this.head;
  }

  push(m: KafkaMessageOut): void {
    if (this.closing) throw new Error("Kafka sink is closed");
    this.accepted++;
    if (this.segments.length === 0 && this.memoryLength < this.opts.maxBuffered) {
      this.queue.push(m);
    } else {
      this.spill([m]);
    }
    this.stats.buffered = this.memoryLength;
    this.wake?.();
  }

  /**
   * Writes messages to the spill: after what is spilled already, or (`front`)
   * before it, for the messages in memory at close, which are older than any
   * spilled one. What cannot be written (spill full, or the disk refuses) is
   * dropped, counted and logged.
   */
  private spill(msgs: KafkaMessageOut[], front = false): void {
    const dir = this.opts.spillDir;
    const text = msgs.map((m) => JSON.stringify({ t: m.topic, k: m.key, v: m.value.toString("base64"), h: m.headers })).join("\n") + "\n";
    if (!dir || this.spillBytes + text.length > this.opts.maxSpillBytes) {
      this.drop(msgs.length, dir ? "Kafka unreachable and the spill is full: records dropped" : "Kafka unreachable and the buffer is full: records dropped");
      return;
    }
    let seg = front ? this.segments[0] : this.segments[this.segments.length - 1];
    let fresh = false;
    let before = 0;
    try {
      if (front && seg) {
        // Segments go out in the order of their names: this one sorts first.
        const first = /^(\d{15})-/.exec(basename(seg));
        seg = join(dir, `${String(Math.max(0, Number(first?.[1] ?? 0) - 1)).padStart(15, "0")}-${String(this.segmentSeq++).padStart(8, "0")}.spill`);
        fresh = true;
      } else {
        const size = seg === undefined || !this.appendable.has(seg) ? undefined : statSync(seg, { throwIfNoEntry: false })?.size;
        if (size === undefined || size > 16 << 20) {
          seg = join(dir, `${String(Date.now()).padStart(15, "0")}-${String(this.segmentSeq++).padStart(8, "0")}.spill`);
          fresh = true;
        } else {
          before = size;
        }
      }
      appendFileSync(seg!, text);
    } catch (err) {
      // Nothing half-written stays behind: the segment is as it was.
      try {
        if (fresh) rmSync(seg!, { force: true });
        else if (seg) truncateSync(seg, before);
      } catch {
        // the disk refuses this too; the next run reads what parses
      }
      this.stats.spillError = `${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
      this.drop(msgs.length, "cannot write the Kafka spill: records dropped", { spill: dir, error: (err as Error).message });
      return;
    }
    if (fresh) {
      if (front) this.segments.unshift(seg!);
      else {
        this.segments.push(seg!);
        this.appendable.add(seg!);
      }
    }
    this.spillBytes += text.length;
    this.stats.spilledNow += msgs.length;
    this.stats.spilledTotal += msgs.length;
  }

  /** the error of the last spill write that failed, once logged */
  private loggedSpillError: unknown;

  /** Counts messages lost; logged at the first, every 10,000th, and at each new reason the spill gives. */
  private drop(n: number, what: string, fields: { spill?: string; error?: string } = {}): void {
    this.stats.dropped += n;
    if (this.stats.dropped === n || this.stats.dropped % 10_000 < n || (fields.error !== undefined && fields.error !== this.loggedSpillError)) {
      this.loggedSpillError = fields.error;
      this.opts.logger?.error(what, { dropped: this.stats.dropped, ...fields });
    }
  }

  /**
   * Moves the oldest spilled segment back into memory, once Kafka has the
   * topics its records name (a spill written under another topic prefix
   * names others than this sink's): they are created as the sink creates its
   * own. A segment that does not parse, or names topics Kafka will not
   * create, is set aside. Throws when Kafka cannot be reached.
   */
  private async unspill(): Promise<void> {
    const seg = this.segments[0];
    if (!seg) return;
    this.appendable.delete(seg); // read now: what comes next goes to a fresh segment
    let text: string;
    let msgs: KafkaMessageOut[];
    try {
      text = readFileSync(seg, "utf8");
      msgs = parseSpill(text);
    } catch (err) {
      this.setAside(seg, `it does not parse (${(err as Error).message})`);
      return;
    }
    const missing = [...new Set(msgs.map((m) => m.topic))].filter((t) => !this.topicsThere.has(t));
    const invalid = missing.filter((t) => !TOPIC_NAME.test(t));
    if (invalid.length) {
      this.setAside(seg, `Kafka takes no topic named ${invalid.map((t) => `'${t}'`).join(", ")}`);
      return;
    }
    if (missing.length) {
      if (!this.connected) await this.connect();
      try {
        await this.transport.connect(missing);
        if (this.stopped) return; // close() has the segment where it is
      } catch (err) {
        if (this.stopped) return;
        const f = this.transport.describe(err);
        // Unreachable, or refusing this client: the sink's own records wait too. Anything else, three times: Kafka will not have these topics.
        if (f.cause !== "other" || ++this.topicFailures < 3) throw err;
        this.setAside(seg, `Kafka did not create its topics ${missing.join(", ")} (${f.message})`);
        return;
      }
      for (const t of missing) this.topicsThere.add(t);
      this.opts.logger?.info("records spilled for other topics go out to them", { topics: missing, segment: seg });
    }
    this.topicFailures = 0;
    this.segments.shift();
    this.spillBytes -= text.length;
    for (const m of msgs) this.queue.push(m);
    this.stats.spilledNow -= msgs.length;
    rmSync(seg, { force: true });
  }

  /**
   * Takes a spill segment out of the way of the records after it: moved to
   * the set-aside directory beside the spill, counted and logged, so that
   * an operator can look at it (and move it back once Kafka can take it).
   */
  private setAside(seg: string, why: string): void {
    this.segments.shift();
    this.topicFailures = 0;
    let n = 0;
    let bytes = 0;
    try {
      n = countLines(seg);
      bytes = statSync(seg).size;
    } catch {
      // unreadable: counted as nothing
    }
    const dir = join(this.opts.spillDir!, SET_ASIDE_DIR);
    const to = join(dir, basename(seg));
    try {
      mkdirSync(dir, { recursive: true });
      renameSync(seg, to);
    } catch (err) {
      this.opts.logger?.error("cannot set the spill segment aside; it stays where it is and is not sent", { segment: seg, error: (err as Error).message });
    }
    this.spillBytes -= bytes;
    this.stats.spilledNow -= n;
    this.stats.setAside += n;
    this.opts.logger?.warn("spilled records set aside: they are not sent", { segment: to, records: n, why });
  }

  /**
   * Sends the queue in batches, up to the transport's maxInFlight at a time
   * (the next batch is built while Kafka handles the one before), and moves
   * the head past a batch once Kafka acknowledged it and every one before it.
   */
  private async pump(): Promise<void> {
    // A failure the client says retrying will not mend (refused credentials, say) waits 10 s between attempts.
    const backoff = new Backoff({ initialMs: 100, maxMs: 5000, notRetriableMs: 10_000 });
    /** batches handed to the transport, oldest first: queue positions [start, end) */
    const inflight: Array<{ start: number; end: number; done: Promise<unknown> }> = [];
    const settle = (p: Promise<void>) => p.then(() => undefined, (err: unknown) => ({ err }));
    for (;;) {
      if (this.stopped) return;
      if (inflight.length === 0) {
        if (this.memoryLength === 0 && this.segments.length > 0) {
          try {
            await this.unspill();
            this.wentThrough();
          } catch (err) {
            if (await this.sendFailed(err, backoff)) return;
          }
          continue;
        }
        if (this.memoryLength === 0) {
          if (this.closing) return;
          await new Promise<void>((r) => (this.wake = r));
          this.wake = undefined;
          continue;
        }
        if (!this.connected) {
          try {
            await this.connect();
            this.wentThrough();
          } catch (err) {
            if (await this.sendFailed(err, backoff)) return;
            continue;
          }
        }
      }
      let next = inflight.length ? inflight[inflight.length - 1]!.end : this.head;
      while (inflight.length < this.transport.maxInFlight && next < this.queue.length) {
        const end = this.batchEnd(next);
        inflight.push({ start: next, end, done: settle(this.transport.send(this.queue, next, end)) });
        next = end;
      }
      if (inflight.length > this.inFlightPeak) this.inFlightPeak = inflight.length;
      const first = inflight.shift()!;
      const r = (await first.done) as { err: unknown } | undefined;
      if (this.stopped) return; // close() has spilled what was in flight already: it goes out again next run (at least once)
      if (r === undefined) {
        this.stats.sent += first.end - this.head;
        if (inflight.length === 0) this.aheadOfFailure = 0;
        this.head = first.end;
        if (this.head > 65536 && this.head * 2 > this.queue.length) {
          // The transport holds no reference into the queue once send() returned: only positions move.
          this.queue.splice(0, this.head);
          for (const b of inflight) {
            b.start -= this.head;
            b.end -= this.head;
          }
          this.head = 0;
        }
        this.stats.buffered = this.memoryLength;
        this.wentThrough();
        backoff.reset();
        continue;
      }
      // A batch failed: the ones after it settle first. Those Kafka acknowledged
      // leave the queue (sending them again would duplicate them); the failed
      // one and the rest are sent again, after a pause.
      const later = await Promise.all(inflight.map(async (b) => ({ b, ok: (await b.done) === undefined })));
      inflight.length = 0;
      if (this.stopped) return;
      for (const { b } of later.filter((x) => x.ok).reverse()) {
        this.queue.splice(b.start, b.end - b.start);
        this.stats.sent += b.end - b.start;
        this.aheadOfFailure += b.end - b.start;
      }
      this.stats.buffered = this.memoryLength;
      if (await this.sendFailed(r.err, backoff)) return;
    }
  }

  /** Where the batch that starts at queue position `start` ends: batchSize messages or batchBytes, whichever comes first. */
  private batchEnd(start: number): number {
    const last = Math.min(this.queue.length, start + this.opts.batchSize);
    let bytes = 0;
    for (let i = start; i < last; i++) {
      const m = this.queue[i]!;
      bytes += m.value.length + m.key.length;
      if (bytes > this.opts.batchBytes && i > start) return i;
    }
    return last;
  }

  /**
   * Counts and logs a failed connect or send, then waits as `backoff` says
   * (jittered, longer for a failure the client says retrying will not mend);
   * true when close()'s deadline has passed.
   */
  private async sendFailed(err: unknown, backoff: Backoff): Promise<boolean> {
    if (this.stopped) return true;
    this.stats.sendFailures++;
    this.failed(err, "Kafka send failed; records stay buffered");
    if (this.closing && this.closeDeadline !== undefined && Date.now() > this.closeDeadline) return true;
    await sleep(Math.min(backoff.next(err), this.closing ? 1000 : Infinity));
    return false;
  }

  private closeDeadline: number | undefined;

  /** The last failure the client retried by itself (of any cause), for what flush() says when it times out. */
  private lastRetry: string | undefined;

  /** Messages not yet acknowledged by Kafka (in memory or spilled). */
  get pending(): number {
    return this.memoryLength + this.stats.spilledNow;
  }

  /**
   * Kafka has failed for longer than a passing error and a spill takes what
   * is left: close() spills at once rather than wait for it.
   */
  get away(): boolean {
    return this.opts.spillDir !== undefined && this.failingSince !== undefined && Date.now() - this.failingSince > FAILING_MS;
  }

  /**
   * Waits up to `timeoutMs` for everything pushed so far to be acknowledged;
   * true when it was. With `untilAway`, the wait also ends (false) once Kafka
   * is `away`: a command ending then keeps its records in the spill at once.
   */
  async waitDelivered(timeoutMs: number, o: { untilAway?: boolean } = {}): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.memoryLength > 0 || this.segments.length > 0) {
      if (Date.now() > deadline || (o.untilAway && this.away)) return false;
      await sleep(10);
    }
    return true;
  }

  /** Resolves when everything pushed so far has been acknowledged by Kafka. */
  async flush(timeoutMs = 60_000): Promise<void> {
    if (!(await this.waitDelivered(timeoutMs))) throw new Error(`Kafka: ${this.pending} records not yet delivered after ${timeoutMs} ms (${this.stats.sendFailures} failed sends${this.stats.lastError ? `, the last: ${this.stats.lastError}` : ""}${this.lastRetry ? `; the client's last retry: ${this.lastRetry}` : ""})`);
  }

  /**
   * Delivers what is buffered (up to `timeoutMs`), then disconnects. What
   * Kafka has not acknowledged by then is spilled (when a spill dir is set)
   * and goes out first the next time a sink starts on that directory; while
   * Kafka fails, it is spilled at once rather than waited for. The process
   * stays alive until this is done. Returns the number of messages not
   * delivered: spilled, or dropped (stats.dropped) when even the spill could
   * not take them.
   */
  async close(timeoutMs = 30_000): Promise<number> {
    this.closing = true;
    this.closeDeadline = Date.now() + timeoutMs;
    this.wake?.();
    let done = this.pumping === undefined;
    void this.pumping?.then(() => (done = true), () => (done = true));
    // The pump's waits do not keep the process alive; this one does.
    // Kafka failing for a while (away, refusing): what is left goes to the spill at once; a passing error is waited out.
    while (!done && Date.now() < this.closeDeadline && !this.away) await wait(20);
    this.stopped = true;
    this.wake?.();
    if (this.memoryLength > 0) {
      this.spill(this.queue.slice(this.head), true);
      this.head = this.queue.length;
    }
    this.stats.buffered = 0;
    await within(this.transport.disconnect().catch(() => undefined), 2000);
    return this.stats.spilledNow + this.stats.dropped;
  }

  /** Where spilled messages are kept (undefined: no spill). */
  get spillDir(): string | undefined {
    return this.opts.spillDir;
  }

  /** Bytes in the spill files now. */
  get spilledBytes(): number {
    return this.spillBytes;
  }

  /** Spill files left on disk. */
  spillFiles(): string[] {
    return this.opts.spillDir && existsSync(this.opts.spillDir) ? readdirSync(this.opts.spillDir).filter((f) => f.endsWith(".spill")) : [];
  }
}
