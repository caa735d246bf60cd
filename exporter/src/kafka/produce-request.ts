// The Produce request (v11, what both Kafka 3.9 and 4.x take from
// @platformatic/kafka) written straight from the producer's messages: each
// partition's records go into one buffer (no writer and buffer list per
// record, no second copy to checksum), gzip runs for all partitions of a
// request at once. Bytes identical to the client's own encoder
// (test/unit/produce-request.test.ts); the client keeps everything else:
// metadata, connections, idempotent sequence numbers, retries. Profiled in
// `npm run bench -- kafka`, the client's per-record encoding was the largest
// part of the exporter's CPU time after the records themselves.
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { compressionsAlgorithms, crc32c, findErrorBy, GenericError, produceV11, Writer } from "@platformatic/kafka";

/** A message as the producer hands it to the Produce API. */
export interface ProduceMessage {
  topic: string;
  partition: number;
  /** bytes, or a string written as UTF-8 */
  key?: Buffer | string | null;
  value?: Buffer | null;
  headers?: Map<Buffer | string, Buffer | string>;
  timestamp?: bigint | number;
}

export interface ProduceRequestOptions {
  compression?: string;
  producerId?: bigint;
  producerEpoch?: number;
  sequences?: { getWithDefault(key: string, fallback: number): number };
  transactionalId?: string | null;
  partitionLeaderEpoch?: number;
}

const IS_TRANSACTIONAL = 1 << 4;
/** The record batch's codec bits (attributes 0-2), as Kafka numbers them. */
const CODEC_BITS: Record<string, number> = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 };
/** baseOffset to the record count, inclusive */
const BATCH_HEADER = 61;

let scratch = Buffer.allocUnsafe(1 << 20);
let pos = 0;

function room(n: number): void {
  if (pos + n <= scratch.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(scratch.length * 2, pos + n));
  scratch.copy(bigger, 0, 0, pos);
  scratch = bigger;
}

/** An unsigned varint of a non-negative integer up to 2^53. */
function uvarint(v: number): void {
  while (v > 0x7f) {
    scratch[pos++] = (v % 128) | 0x80;
    v = Math.floor(v / 128);
  }
  scratch[pos++] = v;
}

/** A zigzag varint (Kafka's varint and varlong) of an integer within ±2^52. */
const varint = (v: number): void => uvarint(v >= 0 ? v * 2 : -v * 2 - 1);

/** A string as length-prefixed UTF-8; an ASCII string of fewer than 64 characters (every key the exporter writes) byte by byte. */
function stringField(s: string): void {
  const n = s.length;
  if (n < 64) {
    room(n + 1);
    const at = pos;
    scratch[pos++] = n * 2;
    let i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) break;
      scratch[pos++] = c;
    }
    if (i === n) return;
    pos = at; // not ASCII
  }
  const length = Buffer.byteLength(s);
  room(length + 10);
  varint(length);
  pos += scratch.write(s, pos, "utf8");
}

function bytesField(b: Buffer | string | null | undefined): void {
  if (b === null || b === undefined) {
    scratch[pos++] = 1; // -1
    return;
  }
  if (typeof b === "string") {
    stringField(b);
    return;
  }
  const buf = b;
  room(buf.length + 10);
  varint(buf.length);
  pos += buf.copy(scratch, pos);
}

interface PartitionBatch {
  partition: number;
  messages: ProduceMessage[];
  batch?: Buffer;
}

/** The record batch of one partition: its records (gzipped when asked), then the header and checksum before them. */
function recordBatch(topic: string, part: PartitionBatch, options: ProduceRequestOptions): Buffer | Promise<Buffer> {
  const messages = part.messages;
  const now = BigInt(Date.now());
  const first = messages[0]!.timestamp === undefined ? now : BigInt(messages[0]!.timestamp);
  let max = first;
  pos = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const ts = m.timestamp === undefined ? now : typeof m.timestamp === "bigint" ? m.timestamp : BigInt(m.timestamp);
    m.timestamp = ts;
    if (ts > max) max = ts;
    room(64);
    const start = pos;
    pos += 5; // the record's length, written below once known (moved back if shorter)
    scratch[pos++] = 0; // attributes
    varint(ts === first ? 0 : Number(ts - first));
    varint(i);
    bytesField(m.key);
    bytesField(m.value);
    const headers = m.headers;
    room(10);
    varint(headers ? headers.size : 0);
    if (headers) for (const [k, v] of headers) {
      bytesField(k);
      bytesField(v);
    }
    // The length, as a varint, in the five bytes kept for it.
    const length = pos - start - 5;
    const z = length * 2;
    const lengthBytes = z < 0x80 ? 1 : z < 0x4000 ? 2 : z < 0x200000 ? 3 : z < 0x10000000 ? 4 : 5;
    const bodyAt = start + lengthBytes;
    if (lengthBytes < 5) scratch.copy(scratch, bodyAt, start + 5, pos);
    pos = start;
    uvarint(z);
    pos = bodyAt + length;
  }
  const records = Buffer.allocUnsafe(pos);
  scratch.copy(records, 0, 0, pos);
  let attributes = options.transactionalId ? IS_TRANSACTIONAL : 0;
  const sequence = options.sequences ? options.sequences.getWithDefault(`${topic}:${part.partition}`, 0) : 0;
  const finish = (payload: Buffer): Buffer => {
    const b = Buffer.allocUnsafe(BATCH_HEADER + payload.length);
    b.writeBigInt64BE(0n, 0);
    b.writeInt32BE(b.length - 12, 8);
    b.writeInt32BE(options.partitionLeaderEpoch ?? 0, 12);
    b.writeInt8(2, 16); // magic
    b.writeInt16BE(attributes, 21);
    b.writeInt32BE(messages.length - 1, 23);
    b.writeBigInt64BE(first, 27);
    b.writeBigInt64BE(max, 35);
    b.writeBigInt64BE(options.producerId ?? -1n, 43);
    b.writeInt16BE(options.producerEpoch ?? 0, 51);
    b.writeInt32BE(sequence, 53);
    b.writeInt32BE(messages.length, 57);
    payload.copy(b, BATCH_HEADER);
    b.writeUInt32BE(crc32c(b.subarray(21)), 17);
    return b;
  };
  const codec = options.compression ?? "none";
  if (codec === "none") return finish(records);
  attributes |= CODEC_BITS[codec]!;
  if (codec === "gzip") return new Promise((resolve, reject) => gzip(records, (err, out) => (err ? reject(err) : resolve(finish(out)))));
  // snappy and lz4 (the client's WebAssembly codecs, as Kafka frames them) and zstd (Node's zlib) are quick enough to run inline.
  return finish(compressionsAlgorithms[codec as "snappy" | "lz4" | "zstd"].compressSync(records) as Buffer);
}

/**
 * Messages grouped by topic, then partition, as the client groups them (its
 * keys in an object's order: integer-like names ascending, then the others as
 * they first come).
 */
function group(messages: ProduceMessage[]): Array<[string, PartitionBatch[]]> {
  const topics: Record<string, Map<number, PartitionBatch>> = Object.create(null) as Record<string, Map<number, PartitionBatch>>;
  let lastTopic: string | undefined;
  let parts: Map<number, PartitionBatch> | undefined;
  for (const m of messages) {
    if (m.topic !== lastTopic) {
      lastTopic = m.topic;
      parts = topics[m.topic] ??= new Map();
    }
    const p = m.partition ?? 0;
    let part = parts!.get(p);
    if (!part) parts!.set(p, (part = { partition: p, messages: [] }));
    part.messages.push(m);
  }
  return Object.entries(topics).map(([topic, byPartition]) => [topic, [...byPartition.values()].sort((a, b) => a.partition - b.partition)]);
}

function request(acks: number, timeout: number, topics: Array<[string, PartitionBatch[]]>, options: ProduceRequestOptions): Writer {
  const writer = Writer.create()
    .appendString(options.transactionalId ?? null)
    .appendInt16(acks)
    .appendInt32(timeout)
    .appendArray(topics, (w, [topic, parts]) => {
      w.appendString(topic).appendArray(parts, (w, part) => {
        w.appendInt32(part.partition).appendUnsignedVarInt(part.batch!.length + 1).append(part.batch!);
      });
    })
    .appendTaggedFields();
  if (acks === 0) writer.context.noResponse = true;
  return writer;
}

/** The Produce v11 request of `messages`: a Writer, or a promise of one when the batches are gzipped. */
export function produceRequest(acks: number, timeout: number, messages: ProduceMessage[], options: ProduceRequestOptions = {}): Writer | Promise<Writer> {
  const topics = group(messages);
  const pending: Array<Promise<unknown>> = [];
  for (const [topic, parts] of topics) {
    for (const part of parts) {
      const b = recordBatch(topic, part, options);
      if (b instanceof Promise) pending.push(b.then((batch) => (part.batch = batch)));
      else part.batch = b;
    }
  }
  return pending.length ? Promise.all(pending).then(() => request(acks, timeout, topics, options)) : request(acks, timeout, topics, options);
}

/** The client's own Produce API given messages whose string keys are made Buffers first (its encoder writes Buffers only). */
export function withBufferKeys<F extends (connection: never, acks: number, timeout: number, messages: ProduceMessage[], ...rest: never[]) => void>(api: F): F {
  const wrapped = (connection: never, acks: number, timeout: number, messages: ProduceMessage[], ...rest: never[]) =>
    api(connection, acks, timeout, messages.map((m) => (typeof m.key === "string" ? { ...m, key: Buffer.from(m.key) } : m)), ...rest);
  return Object.assign(wrapped, api) as unknown as F;
}

/** Codecs this encoder writes; for any other the client's own encoder is used. */
export const FAST_CODECS = new Set(["none", "gzip", "snappy", "lz4", "zstd"]);

interface SendingConnection {
  send(apiKey: number, apiVersion: number, createPayload: () => Writer | Promise<Writer>, parse: typeof produceV11.parseResponse, requestTagged: boolean, responseTagged: boolean, callback: (err: Error | null, response: unknown) => void): void;
}

/** Answers a broker gives a request whose sequence numbers do not follow what it has written for the producer. */
const SEQUENCE_GAP = ["OUT_OF_ORDER_SEQUENCE_NUMBER", "UNKNOWN_PRODUCER_ID"];

const kWaits = Symbol("rdma-telemetry.produce.waitsForEarlier");

/** The failure a request is given, without being sent, while an earlier one has still to go through again. */
export function waitsForEarlier(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { [kWaits]?: boolean })[kWaits] === true;
}

function waiting(cause?: Error): Error {
  const e = new GenericError("PLT_KFK_PROTOCOL", "Produce request waits for an earlier one to be acknowledged", { canRetry: true, ...(cause ? { cause } : {}) });
  Object.defineProperty(e, kWaits, { value: true });
  return e;
}

/**
 * The Produce API (v11) of the client, on this encoder, keeping each
 * partition's records in order, once, with several requests in flight, as
 * Java's idempotent producer does.
 *
 * Requests go out back to back while all is well. Once one fails (a broker
 * restarting, a leader moving), the client retries each request by itself,
 * in no set order; a later request reaching the broker first would be
 * answered OUT_OF_ORDER_SEQUENCE_NUMBER (or UNKNOWN_PRODUCER_ID), which the
 * client takes for lost producer state: it would send the whole request again
 * at once under a new producer id, ahead of the failed one and twice for the
 * partitions the broker had already written. So from a failure until every
 * request that failed is acknowledged, only the oldest request not yet
 * acknowledged is sent; the others are failed at once, retriably and without
 * being sent (waitsForEarlier), and come again once it is through, with their
 * sequence numbers (the broker drops the batches it already has: it remembers
 * the last five of each producer and partition, and no more than five
 * requests are ever outstanding). A broker takes a producer's first batch on
 * a partition whatever its sequence number, so a request with a partition
 * that has no batch of this producer acknowledged yet (the first requests of
 * a producer id, a partition written for the first time) goes alone. Only the
 * oldest request can then be told its sequence numbers do not follow, which
 * means the broker lost the producer's state, and the client starts a new
 * producer id as before. A producer the transport gives up on takes this
 * API, and what it has outstanding, with it.
 */
export function fastProduceApi(fallback: (...args: never[]) => void) {
  /** requests sent and not yet acknowledged, by their message list (the same on every retry), in the order first sent */
  const outstanding = new Map<ProduceMessage[], number>();
  /** outstanding requests that failed at least once */
  const failed = new Set<ProduceMessage[]>();
  /** requests on the wire now; those of them with a partition new to the producer */
  const onWire = new Set<ProduceMessage[]>();
  const freshOnWire = new Set<ProduceMessage[]>();
  /** partitions (topic NUL partition) with a batch of `ackedPid` acknowledged */
  let acked = new Set<string>();
  let ackedPid: bigint | undefined;
  const partitionsOf = new WeakMap<ProduceMessage[], string[]>();
  let sent = 0;
  /** one failure for every request held back (the client keeps each attempt's failure while it retries) */
  const held = waiting();
  const oldest = (order: number) => outstanding.values().next().value === order;
  const partitions = (messages: ProduceMessage[]): string[] => {
    let out = partitionsOf.get(messages);
    if (!out) {
      const set = new Set<string>();
      let topic: string | undefined;
      let partition: number | undefined;
      for (const m of messages) {
        if (m.topic === topic && m.partition === partition) continue;
        topic = m.topic;
        partition = m.partition;
        set.add(`${topic}\u0000${partition}`);
      }
      partitionsOf.set(messages, (out = [...set]));
    }
    return out;
  };
  const api = function produce(connection: SendingConnection, acks: number, timeout: number, messages: ProduceMessage[], options: ProduceRequestOptions, callback: (err: Error | null, response: unknown) => void): void {
    if (!FAST_CODECS.has(options.compression ?? "none")) {
      withBufferKeys(fallback as unknown as typeof api)(connection, acks, timeout, messages, options, callback);
      return;
    }
    let order = outstanding.get(messages);
    if (order === undefined) outstanding.set(messages, (order = sent++));
    // A batch for a partition where the broker has nothing of this producer
    // yet is taken whatever its sequence number: a later request must not get
    // there first. Such a request goes alone, and nothing goes beside it.
    const fresh = options.producerId !== ackedPid || partitions(messages).some((p) => !acked.has(p));
    if ((failed.size > 0 && !oldest(order)) || freshOnWire.size > 0 || (fresh && (onWire.size > 0 || !oldest(order)))) {
      callback(held, undefined);
      return;
    }
    onWire.add(messages);
    if (fresh) freshOnWire.add(messages);
    connection.send(0, 11, () => produceRequest(acks, timeout, messages, options), produceV11.parseResponse, true, true, (error, response) => {
      onWire.delete(messages);
      freshOnWire.delete(messages);
      if (!error) {
        outstanding.delete(messages);
        failed.delete(messages);
        if (options.producerId !== ackedPid) {
          ackedPid = options.producerId;
          acked = new Set();
        }
        for (const p of partitions(messages)) acked.add(p);
        callback(null, response);
        return;
      }
      failed.add(messages);
      // Sent before the failure of an earlier request was known: it waits for that one.
      if (!oldest(order) && SEQUENCE_GAP.some((id) => findErrorBy(error, "apiId", id))) callback(waiting(error), response);
      else callback(error, response);
    });
  };
  return Object.assign(api, { key: 0, version: 11, async: promisify(api) });
}
