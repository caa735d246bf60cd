// The compact (Tofino) digest layout, decoded into the full one: each member
// the compact layout lacks filled in, narrowed members zero-extended, values
// out of their compact width refused naming the member, and the full-layout
// raw sample that goes downstream decoding to the same digest.
import { describe, expect, test } from "vitest";
import {
  BadDigestError,
  compactContext,
  decodeCompactDigest,
  decodeDigest,
  digestLayoutOf,
  EXPECTED,
  EXPECTED_COMPACT,
  fullDigestValues,
  MODE_FULL,
  MODE_POLLING,
  type DigestSchema,
  type IoDigest,
  type MsgDigest,
} from "../../contract/src/digests.js";
import { P4_COMPACT_DIGESTS, P4_NAMES } from "../../contract/src/generated/telemetry-names.js";

const TS_MOD = 2 ** 48;
/** A Unix-time list timestamp (Tofino under Stratum stamps lists with Unix ns). */
const UNIX_T = 1_765_432_100_123_456_789n;

/** A compact sample from named members (others 0), in the compact layout's order. */
function sample(name: string, members: Record<string, unknown>): unknown[] {
  return Object.keys(EXPECTED_COMPACT[name]!.fields).map((f) => members[f] ?? 0);
}

type Field = { name: string; bitwidth: number };
/** A P4Info's digests as the controller reads them (mutable copies). */
const schemaOf = (layout: Record<string, { name: string; fields: readonly Field[] }>): Array<DigestSchema & { fields: Field[] }> =>
  Object.values(layout).map((d) => ({ name: d.name, fields: d.fields.map((f) => ({ ...f })) }));

describe("which layout a P4Info's digests follow", () => {
  test("the full layout and the compact one are recognised; they differ where the docs say", () => {
    expect(digestLayoutOf(schemaOf(P4_NAMES.digests))).toEqual({ layout: "full", problems: [] });
    expect(digestLayoutOf(schemaOf(P4_COMPACT_DIGESTS))).toEqual({ layout: "compact", problems: [] });
    const missing = (n: string) => Object.keys(EXPECTED[n]!.fields).filter((f) => !(f in EXPECTED_COMPACT[n]!.fields));
    // io event, vantage and op travel packed in `evo` (one byte of the quantum).
    expect(missing("io_digest_t")).toEqual(["event", "vantage", "mode", "op", "ts"]);
    expect(Object.keys(EXPECTED_COMPACT.io_digest_t!.fields).filter((f) => !(f in EXPECTED.io_digest_t!.fields))).toEqual(["evo"]);
    expect(missing("msg_digest_t")).toEqual(["mode", "first_ts", "extra_ecn_ce"]);
    expect(missing("learn_digest_t")).toEqual([]);
  });

  test("a third layout is refused, naming the digest and the member, against the nearest layout", () => {
    const third = schemaOf(P4_COMPACT_DIGESTS);
    third.find((d) => d.name === "io_digest_t")!.fields.find((f) => f.name === "flags")!.bitwidth = 3;
    const r = digestLayoutOf(third);
    expect(r.layout).toBeUndefined();
    expect(r.problems).toEqual(["digest 'io_digest_t' member 'flags' is 3 bits, expected 4 (compact (Tofino) layout)"]);
    // A member of one layout's width, the rest of the other's: neither.
    const mixed = schemaOf(P4_NAMES.digests);
    mixed.find((d) => d.name === "msg_digest_t")!.fields.find((f) => f.name === "packets")!.bitwidth = 16;
    expect(digestLayoutOf(mixed).problems).toEqual(["digest 'msg_digest_t' member 'packets' is 16 bits, expected 32 (full (BMv2) layout)"]);
    // An extra member, and members out of order.
    const extra = schemaOf(P4_COMPACT_DIGESTS);
    extra[0]!.fields.push({ name: "spare", bitwidth: 8 });
    expect(digestLayoutOf(extra).problems).toEqual([`digest '${extra[0]!.name}' has member 'spare', which the compact layout does not (compact (Tofino) layout)`]);
    const swapped = schemaOf(P4_COMPACT_DIGESTS);
    const learn = swapped.find((d) => d.name === "learn_digest_t")!;
    learn.fields = [learn.fields[1]!, learn.fields[0]!, ...learn.fields.slice(2)];
    expect(digestLayoutOf(swapped).problems[0]).toMatch(/^digest 'learn_digest_t' has its members in the order kind, seq, .* expected seq, kind, /);
  });
});

describe("compact digests decoded into the full layout", () => {
  test("io: mode from the controller, ts from the list (modulo 2^48, before any Unix mapping), narrowed members as sent", () => {
    const values = sample("io_digest_t", { seq: 7, evo: (2 << 4) | (3 << 2) | 2, flags: 0xf, host: 0x0a000101, target: 0x0a000201, host_qp: 0xffffff, target_qp: 17, cmd_psn: 0xffff, cid: 0xffff, status: 0xfffe, bytes: 0xffffff, e2e_ns: 0xffffffff, to_data_ns: 1, from_data_ns: 2, host_prep_ns: 3, gen: 9 });
    const d = decodeCompactDigest("io_digest_t", values, compactContext(MODE_POLLING, UNIX_T)) as IoDigest;
    expect(d).toEqual({
      kind: "io", seq: 7, event: 2, vantage: 3, mode: MODE_POLLING, op: 2, flags: 0xf, host: 0x0a000101, target: 0x0a000201, host_qp: 0xffffff, target_qp: 17,
      cmd_psn: 0xffff, cid: 0xffff, status: 0xfffe, bytes: 0xffffff, ts: Number(UNIX_T % BigInt(TS_MOD)), e2e_ns: 0xffffffff, to_data_ns: 1, from_data_ns: 2, host_prep_ns: 3, gen: 9,
    });
    // A clock since boot (PI's) is below 2^48: taken as it is.
    expect((decodeCompactDigest("io_digest_t", values, compactContext(MODE_FULL, 5_000_000_123n)) as IoDigest).ts).toBe(5_000_000_123);
    expect((decodeCompactDigest("io_digest_t", values, compactContext(MODE_FULL, 5_000_000_123n)) as IoDigest).mode).toBe(MODE_FULL);
  });

  test("msg: first_ts is the list's time less the FCT, wrapping modulo 2^48 on a Unix clock, never below 0 on a clock since boot; extra_ecn_ce 0", () => {
    const values = sample("msg_digest_t", { seq: 1, flags: 1, src: 1, dst: 2, dest_qp: 3, first_psn: 0xfffffe, last_psn: 0xffffff, bytes: 0xffffffff, packets: 0xffff, retransmitted: 5, ecn_ce: 6, fct_ns: 1000, gap_ns: 0xffffffff, extra_packets: 7, extra_retransmitted: 8, straddled: 0xff, cnp: 9 });
    const at = (t: bigint) => decodeCompactDigest("msg_digest_t", values, compactContext(MODE_FULL, t)) as MsgDigest;
    const d = at(UNIX_T);
    expect(d).toEqual({
      kind: "msg", seq: 1, mode: MODE_FULL, flags: 1, src: 1, dst: 2, dest_qp: 3, first_psn: 0xfffffe, last_psn: 0xffffff, bytes: 0xffffffff, packets: 0xffff, retransmitted: 5, ecn_ce: 6,
      first_ts: Number(UNIX_T % BigInt(TS_MOD)) - 1000, fct_ns: 1000, gap_ns: 0xffffffff, extra_packets: 7, extra_retransmitted: 8, extra_ecn_ce: 0, straddled: 0xff, cnp: 9,
    });
    // The list just past a multiple of 2^48: the message started before it.
    expect(at(BigInt(TS_MOD) * 6000n + 400n).first_ts).toBe(TS_MOD + 400 - 1000);
    // A clock since boot, younger than the message: 0, not a time 78 hours on.
    expect(at(400n).first_ts).toBe(0);
    expect(at(1000n).first_ts).toBe(0);
    expect(at(1001n).first_ts).toBe(1);
  });

  test("learn: the same members, as sent", () => {
    const d = decodeCompactDigest("learn_digest_t", sample("learn_digest_t", { seq: 3, kind: 2, src: 4, dst: 5, dest_qp: 6 }), compactContext(MODE_FULL, 1n));
    expect(d).toEqual({ kind: "learn", seq: 3, learn: 2, src: 4, dst: 5, dest_qp: 6, addr: 0n });
    // LEARN_ENDPOINT: the IPv6 address (128 bits) as the stream gives it, big-endian bytes.
    const addr = Buffer.from("20010db8000000010000000000000099", "hex");
    const e = decodeCompactDigest("learn_digest_t", [3, 3, 0, 0, 0, addr], compactContext(MODE_FULL, 1n));
    expect(e).toEqual({ kind: "learn", seq: 3, learn: 3, src: 0, dst: 0, dest_qp: 0, addr: 0x20010db8000000010000000000000099n });
    expect(Buffer.from(fullDigestValues("learn_digest_t", e)[5] as Uint8Array).equals(addr)).toBe(true);
  });

  test("members arrive as numbers or as big-endian bytes, whichever the stream gave", () => {
    const asBytes = sample("io_digest_t", { cmd_psn: Uint8Array.of(0xff, 0xfe), bytes: Uint8Array.of(0x10, 0, 0), e2e_ns: Uint8Array.of(0, 0, 0, 0, 0, 9) });
    const d = decodeCompactDigest("io_digest_t", asBytes, compactContext(MODE_FULL, 1n)) as IoDigest;
    expect([d.cmd_psn, d.bytes, d.e2e_ns]).toEqual([0xfffe, 0x100000, 9]);
  });

  test("a value past its compact width is refused, naming the digest and the member", () => {
    const c = compactContext(MODE_FULL, UNIX_T);
    const bad: Array<[string, Record<string, unknown>, RegExp]> = [
      ["io_digest_t", { flags: 16 }, /digest 'io_digest_t' member 'flags': value 16 does not fit in 4 bits/],
      ["io_digest_t", { evo: 256 }, /member 'evo': value 256 does not fit in 8 bits/],
      ["io_digest_t", { cmd_psn: 0x10000 }, /member 'cmd_psn': value 65536 does not fit in 16 bits/],
      ["io_digest_t", { bytes: Uint8Array.of(1, 0, 0, 0) }, /member 'bytes': value 16777216 does not fit in 24 bits/],
      ["io_digest_t", { e2e_ns: 2 ** 32 }, /member 'e2e_ns': value 4294967296 does not fit in 32 bits/],
      ["msg_digest_t", { flags: 2 }, /digest 'msg_digest_t' member 'flags': value 2 does not fit in 1 bits/],
      ["msg_digest_t", { packets: 65536 }, /member 'packets': value 65536 does not fit in 16 bits/],
      ["msg_digest_t", { straddled: 256 }, /member 'straddled': value 256 does not fit in 8 bits/],
      ["msg_digest_t", { fct_ns: -1 }, /member 'fct_ns': value -1 does not fit in 32 bits/],
      ["learn_digest_t", { kind: "x" }, /member 'kind': unexpected value of type string/],
    ];
    for (const [name, members, message] of bad) {
      expect(() => decodeCompactDigest(name, sample(name, members), c), `${name} ${JSON.stringify(Object.keys(members))}`).toThrow(message);
      expect(() => decodeCompactDigest(name, sample(name, members), c)).toThrow(BadDigestError);
    }
    // A full-layout sample is not a compact one.
    const fullIo = Object.keys(EXPECTED.io_digest_t!.fields).map(() => 0);
    expect(() => decodeCompactDigest("io_digest_t", fullIo, c)).toThrow(/digest 'io_digest_t' has 20 members, expected 16 \(compact layout\)/);
    expect(() => decodeCompactDigest("nope_t", [], c)).toThrow(/unknown digest 'nope_t'/);
  });

  test("the raw sample handed downstream is the full layout's: it decodes, as a full digest, to the same digest", () => {
    const c = compactContext(MODE_POLLING, UNIX_T);
    for (const name of Object.keys(EXPECTED_COMPACT)) {
      const widths = Object.values(EXPECTED_COMPACT[name]!.fields);
      // Every member at its compact maximum, and at 1.
      for (const pick of [(w: number): number | bigint => (w > 48 ? (1n << BigInt(w)) - 1n : 2 ** w - 1), () => 1]) {
        const d = decodeCompactDigest(name, widths.map(pick), c);
        const raw = fullDigestValues(name, d);
        expect(raw.length, name).toBe(Object.keys(EXPECTED[name]!.fields).length);
        expect(decodeDigest(name, raw), name).toEqual(d);
      }
    }
  });
});
