// rawDigestBatch reads raw digests (rdma.digest.v1) straight from their
// bytes; on every message, well formed or not, it must give what the
// generated decoder and batchFromRaw give: the same batch, or an error (the
// same one).
import { describe, expect, test } from "vitest";
import { EXPECTED } from "../../contract/src/digests.js";
import type { DigestBatch } from "../../contract/src/digest-batch.js";
import { readUintBE } from "../../p4runtime/src/wire.js";
import { batchFromRaw, rawDigestBatch, rawDigestMessages } from "../../exporter/src/kafka/digest-bus.js";
import { RawDigest } from "../../exporter/src/generated/rdma/telemetry/v1/records.js";
import { DEFAULT_TOPICS } from "../../exporter/src/kafka/encode.js";
import { rng } from "../support/rng.js";


/** A value of `width` bits: often an edge (0, 1, the largest), else uniform. */
function valueOf(r: () => number, width: number): number | Uint8Array {
  const edge = r();
  if (width > 48) {
    const b = new Uint8Array(Math.ceil(width / 8));
    for (let i = 0; i < b.length; i++) b[i] = Math.floor(r() * 256);
    return b;
  }
  if (edge < 0.1) return 0;
  if (edge < 0.2) return 2 ** width - 1;
  if (edge < 0.25) return 1;
  return Math.floor(r() * 2 ** width);
}

/** What both decoders give, in one comparable form: the batch (samples as numbers) and the message's seq, or the error. */
function outcome(decode: () => { batch: DigestBatch; seq: bigint }): unknown {
  try {
    const { batch, seq } = decode();
    const samples = batch.raw.samples.map((s) => s.map((v) => (typeof v === "number" ? v : v.length <= 6 ? readUintBE(v, 0, v.length) : Buffer.from(v).toString("hex"))));
    return { ...batch, raw: { digest: batch.raw.digest, samples }, seq };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function same(bytes: Uint8Array): { fast: unknown; generated: unknown } {
  return {
    fast: outcome(() => rawDigestBatch(bytes)),
    generated: outcome(() => {
      const raw = RawDigest.decode(bytes);
      return { batch: batchFromRaw(raw), seq: raw.seq };
    }),
  };
}

/** Raw digest messages of every digest the exporter knows, with random members, some with IPv6 endpoint entries. */
function messages(n: number, seed: number): Buffer[] {
  const r = rng(seed);
  const out: Buffer[] = [];
  const names = Object.keys(EXPECTED);
  for (let i = 0; i < n; i++) {
    const name = names[i % names.length]!;
    const fields = Object.values(EXPECTED[name]!.fields);
    const values = fields.map((w) => valueOf(r, w));
    const v6 = r() < 0.3;
    if (v6) {
      // Endpoint keys in the address members (the first two after seq, or wherever a 32-bit member is).
      const at = fields.flatMap((w, k) => (w === 32 ? [k] : [])).slice(0, 2);
      at.forEach((k, j) => (values[k] = 0xf0000001 + j));
    }
    const digests = [{ kind: EXPECTED[name]!.kind, seq: typeof values[0] === "number" ? values[0] : 0 }] as unknown as DigestBatch["digests"];
    const listTimestampNs = r() < 0.5 ? BigInt(Math.floor(r() * 2 ** 40)) : 1_800_000_000_000_000_000n + BigInt(Math.floor(r() * 2 ** 50));
    const batch: DigestBatch = {
      switchId: `tor-${Math.floor(r() * 4)}`, listTimestampNs, digests, badDigests: 0, session: 0, raw: { digest: name, samples: [values] },
      ...(v6 ? { endpoints: [{ key: 0xf0000001, address: "2001:db8::1" }, { key: 0xf0000002, address: "2001:db8::a:2" }] } : {}),
    };
    // rawDigestMessages carries only the entries of the keys a digest uses: every digest here is taken as an io or msg one.
    const d = { ...Object.fromEntries(Object.keys(EXPECTED[name]!.fields).map((f, k) => [f, values[k]])), kind: name === "msg_digest_t" ? "msg" : "io", seq: typeof values[0] === "number" ? values[0] : 0 };
    out.push(rawDigestMessages({ ...batch, digests: [d as never] }, DEFAULT_TOPICS)[0]!.value);
  }
  return out;
}

describe("raw digests read from their bytes", () => {
  const ok = messages(600, 7);

  test("well-formed messages: the same batches as the generated decoder", () => {
    let fastPath = 0;
    for (const m of ok) {
      const { fast, generated } = same(m);
      expect(fast).toEqual(generated);
      // Read from the bytes, members are numbers; the generated path gives their bytes.
      if (rawDigestBatch(m).batch.raw.samples[0]!.every((v) => typeof v === "number")) fastPath++;
    }
    // Learn digests (an IPv6 address member) go the generated way; the I/O and message digests are read from their bytes.
    const learn = ok.filter((m) => RawDigest.decode(m).digest === "learn_digest_t").length;
    expect(learn).toBeGreaterThan(0);
    expect(fastPath).toBe(ok.length - learn);
  });

  test("every truncation of a message: the same batch or the same error", () => {
    for (const m of ok.slice(0, 12)) for (let n = 0; n < m.length; n++) {
      const { fast, generated } = same(m.subarray(0, n));
      expect(fast, `first ${n} of ${m.length} bytes`).toEqual(generated);
    }
  });

  test("members missing, twice, out of order, unknown, too wide, empty; unknown fields; another digest", () => {
    const raw = RawDigest.decode(ok.find((m) => RawDigest.decode(m).digest === "io_digest_t")!);
    const variants: RawDigest[] = [
      { ...raw, fields: raw.fields.slice(1) },
      { ...raw, fields: [...raw.fields, raw.fields[3]!] },
      { ...raw, fields: [raw.fields[1]!, raw.fields[0]!, ...raw.fields.slice(2)] },
      { ...raw, fields: [...raw.fields, { name: "not_a_member", value: Buffer.from([1]) }] },
      { ...raw, fields: raw.fields.map((f, i) => (i === 2 ? { ...f, value: Buffer.from([0, 0, 0, 0, 0, 0, 1]) } : f)) },
      { ...raw, fields: raw.fields.map((f, i) => (i === 2 ? { ...f, value: Buffer.from([0xff, 0xff]) } : f)) },
      { ...raw, fields: raw.fields.map((f, i) => (i === 5 ? { ...f, value: Buffer.alloc(0) } : f)) },
      { ...raw, digest: "no_such_digest_t" },
      { ...raw, digest: "msg_digest_t" },
      { ...raw, seq: 2n ** 64n - 1n, listTimestampNs: 2n ** 63n + 12345n },
      { ...raw, endpoints: [{ key: 0xffffffff, address: "2001:db8::ffff" }] },
    ];
    for (const v of variants) {
      const bytes = RawDigest.encode(v).finish();
      const { fast, generated } = same(bytes);
      expect(fast).toEqual(generated);
    }
    // A field this encoder never writes (field 9, a varint) and a member value as a varint: the generated path's answer.
    const withExtra = Buffer.concat([Buffer.from(RawDigest.encode(raw).finish()), Buffer.from([0x48, 0x05])]);
    expect(same(withExtra).fast).toEqual(same(withExtra).generated);
    const field = Buffer.from([0x2a, 0x04, 0x0a, 0x01, 0x78, 0x10]);
    const bad = Buffer.concat([Buffer.from(RawDigest.encode({ ...raw, fields: [] }).finish()), field]);
    expect(same(bad).fast).toEqual(same(bad).generated);
  });

  test("random bytes and random corruptions: never a batch the generated decoder would not give", () => {
    const r = rng(11);
    for (let i = 0; i < 3000; i++) {
      const m = Buffer.from(ok[i % ok.length]!);
      const flips = 1 + Math.floor(r() * 3);
      for (let k = 0; k < flips; k++) m[Math.floor(r() * m.length)] = Math.floor(r() * 256);
      const { fast, generated } = same(m);
      expect(fast).toEqual(generated);
    }
  });
});
