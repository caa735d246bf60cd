import { expect, test } from "vitest";
import { StreamMessageResponse } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { encodeDigestListMessage } from "../../switch/src/p4runtime/digest-encoding.js";

test("the hand-written digest list encoding is what the generated decoder reads", () => {
  const samples = [[0, 1, 0x0a000101, 2 ** 47 + 5, 300], [4_294_967_295, 0, 255, 256, (1n << 80n) + 7n]];
  const bytes = encodeDigestListMessage(7, 123456789012n, 1_800_000_000_000_000_123n, samples);
  const m = StreamMessageResponse.decode(bytes);
  expect(m.update?.$case).toBe("digest");
  if (m.update?.$case !== "digest") return;
  const d = m.update.value;
  expect([d.digestId, d.listId, d.timestamp]).toEqual([7, 123456789012n, 1_800_000_000_000_000_123n]);
  const values = d.data.map((p) => (p.data?.$case === "struct" ? p.data.value.members.map((x) => (x.data?.$case === "bitstring" ? BigInt("0x" + x.data.value.toString("hex")) : -1n)) : []));
  expect(values).toEqual(samples.map((s) => s.map((v) => BigInt(v))));
  // Canonical: no leading zero bytes, zero is one byte.
  const first = d.data[0]!.data;
  expect(first?.$case === "struct" && first.value.members[0]!.data?.$case === "bitstring" && [...first.value.members[0]!.data.value]).toEqual([0]);
  // Byte-for-byte what the generated encoder writes for the same message.
  expect(Buffer.compare(bytes, Buffer.from(StreamMessageResponse.encode(m).finish()))).toBe(0);
});

test("the fast decoder reads what the encoder writes, and falls back for other messages", async () => {
  const { decodeStreamMessageResponse, isFastDigestList, memberBytes } = await import("../../p4runtime/src/digest-decoding.js");
  const samples = [[0, 1, 0x0a000101, 2 ** 48 - 1], [4_294_967_295, 0, 255, (1n << 48n) + 256n]];
  const m = decodeStreamMessageResponse(encodeDigestListMessage(9, 77n, 1_800_000_000_000_000_001n, samples));
  expect(m.update?.$case).toBe("digest");
  if (m.update?.$case !== "digest") return;
  const d = m.update.value;
  expect([d.digestId, d.listId, d.timestamp]).toEqual([9, 77n, 1_800_000_000_000_000_001n]);
  expect(isFastDigestList(d)).toBe(true);
  if (!isFastDigestList(d)) return;
  // Members of up to 48 bits arrive as numbers, wider ones as their bitstrings.
  expect(d.samples[0]).toEqual([0, 1, 0x0a000101, 2 ** 48 - 1]);
  expect(d.samples[1]!.slice(0, 3)).toEqual([4_294_967_295, 0, 255]);
  expect(Buffer.from(d.samples[1]![3] as Uint8Array).toString("hex")).toBe("01000000000100");
  expect(d.samples.map((s) => s.map((m) => BigInt("0x" + memberBytes(m).toString("hex"))))).toEqual(samples.map((s) => s.map(BigInt)));
  expect([...memberBytes(0)]).toEqual([0]);
  expect([...memberBytes(256)]).toEqual([1, 0]);
  // The generated shape is there on request.
  expect(d.data[1]!.data?.$case).toBe("struct");
  const arb = StreamMessageResponse.encode({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: { high: 0n, low: 3n }, status: { code: 0, message: "primary", details: [] } } } }).finish();
  const back = decodeStreamMessageResponse(Buffer.from(arb));
  expect(back.update?.$case).toBe("arbitration");
});

test("members wider than 1000 bits keep the protobuf lengths right", () => {
  const wide = (1n << 1200n) - 3n;
  const samples = [[wide, 5], [1, wide >> 7n]];
  const m = StreamMessageResponse.decode(encodeDigestListMessage(3, 1n, 2n, samples));
  if (m.update?.$case !== "digest") throw new Error("not a digest");
  const values = m.update.value.data.map((p) => (p.data?.$case === "struct" ? p.data.value.members.map((x) => (x.data?.$case === "bitstring" ? BigInt("0x" + x.data.value.toString("hex")) : -1n)) : []));
  expect(values).toEqual(samples.map((s) => s.map((v) => BigInt(v))));
});
