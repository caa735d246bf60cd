// The exporter's Produce v11 encoder gives the bytes of @platformatic/kafka's
// own, uncompressed and with every codec, for requests of several topics and
// partitions, null and empty keys and values, keys as strings (ASCII or not,
// short or long) or bytes, headers, timestamps, idempotent sequence numbers,
// record lengths on each side of a varint boundary.
import { describe, expect, test } from "vitest";
import { NumericMap, produceV11, type Writer } from "@platformatic/kafka";
import { produceRequest, withBufferKeys, type ProduceMessage, type ProduceRequestOptions } from "../../exporter/src/kafka/produce-request.js";

function messages(n: number, seed: number): ProduceMessage[] {
  const out: ProduceMessage[] = [];
  // Within ±2^31 ms of each other: the client's encoder writes larger timestamp deltas wrongly (its 64-bit zigzag shifts by 31).
  const t0 = BigInt(Date.now());
  for (let i = 0; i < n; i++) {
    const k = (i * 7919 + seed) % 97;
    const valueLength = k < 3 ? 0 : (k * 13 + i) % 300 + (i % 50 === 0 ? 20_000 : 0);
    const value = Buffer.alloc(valueLength, (i + seed) & 0xff);
    out.push({
      topic: `t${i % 3}`,
      partition: (i * 31 + seed) % 5,
      key: k === 5 ? null : Buffer.from(k === 11 ? `ключ-${i}` : k === 13 ? `long-${i}-`.repeat(12) : `key-${k}`.repeat(k % 4)),
      value: k === 7 ? null : value,
      headers: i % 4 === 0 ? new Map() : new Map<Buffer, Buffer>([[Buffer.from("type"), Buffer.from(`rdma.telemetry.v1.T${k}`)], [Buffer.from("encoding"), Buffer.from("protobuf")]]),
      timestamp: i % 6 === 0 ? undefined : t0 + BigInt((i * 104729) % 100_000) - 50_000n,
    });
  }
  return out;
}

const copy = (ms: ProduceMessage[]): ProduceMessage[] => ms.map((m) => ({ ...m }));
/** The same messages with every other key a string, as the exporter's transport gives them. */
const stringKeys = (ms: ProduceMessage[]): ProduceMessage[] => ms.map((m, i) => ({ ...m, key: i % 2 && Buffer.isBuffer(m.key) ? m.key.toString() : m.key }));

async function bytes(w: Writer | Promise<Writer>): Promise<Buffer> {
  return (await w).buffer;
}

describe("Produce request encoder", () => {
  for (const compression of ["none", "gzip", "snappy", "lz4", "zstd"] as const) {
    test(`the client's bytes, ${compression}`, async () => {
      for (const [n, seed] of [[1, 0], [7, 1], [400, 2], [3000, 3]] as const) {
        const ms = messages(n, seed);
        // One timestamp for the messages left without one: both encoders take Date.now() otherwise.
        const now = BigInt(Date.now());
        for (const m of ms) m.timestamp ??= now;
        const sequences = new NumericMap();
        for (let p = 0; p < 5; p++) sequences.set(`t1:${p}`, 1000 * p + seed);
        const idempotent: ProduceRequestOptions = { compression, producerId: 4242n, producerEpoch: 3, sequences };
        for (const options of [{ compression }, idempotent, { ...idempotent, transactionalId: "tx-1" }]) {
          const ours = await bytes(produceRequest(-1, 30_000, stringKeys(ms), options));
          const theirs = await bytes((compression === "gzip" ? produceV11.createRequestAsync : produceV11.createRequest)(-1, 30_000, copy(ms) as never, options as never));
          expect(ours.equals(theirs), `${n} messages, ${JSON.stringify({ ...options, sequences: undefined, producerId: String(options.producerId) })}`).toBe(true);
        }
      }
    });
  }

  test("the client's own encoder (brokers without Produce v11) is given string keys as bytes", () => {
    let given: ProduceMessage[] = [];
    const api = Object.assign((_connection: never, _acks: number, _timeout: number, messages: ProduceMessage[]) => void (given = messages), { key: 0, version: 9 });
    const wrapped = withBufferKeys(api);
    const key = Buffer.from("bytes");
    wrapped(undefined as never, -1, 1000, [{ topic: "t", partition: 0, key: "ключ", value: null }, { topic: "t", partition: 1, key, value: null }, { topic: "t", partition: 2, key: null, value: null }]);
    expect(given.map((m) => m.key)).toEqual([Buffer.from("ключ"), key, null]);
    expect(wrapped.version).toBe(9);
  });

  test("acks=0 asks for no response", async () => {
    const w = await produceRequest(0, 1000, messages(3, 0));
    expect(w.context.noResponse).toBe(true);
  });
});
