import { expect, test } from "vitest";
import { StreamMessageResponse } from "../../generated/proto/p4/v1/p4runtime.js";
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
  const { decodeStreamMessageResponse, isFastDigestList } = await import("../../p4runtime-controller/src/lib/digest-decoding.js");
  const samples = [[0, 1, 0x0a000101, 2 ** 47 + 5], [4_294_967_295, 0, 255, 256]];
  const m = decodeStreamMessageResponse(encodeDigestListMessage(9, 77n, 1_800_000_000_000_000_001n, samples));
  expect(m.update?.$case).toBe("digest");
  if (m.update?.$case !== "digest") return;
  const d = m.update.value;
  expect([d.digestId, d.listId, d.timestamp]).toEqual([9, 77n, 1_800_000_000_000_000_001n]);
  expect(isFastDigestList(d)).toBe(true);
  if (!isFastDigestList(d)) return;
  expect(d.samples.map((s) => s.map((b) => BigInt("0x" + Buffer.from(b).toString("hex"))))).toEqual(samples.map((s) => s.map(BigInt)));
  // The generated shape is there on request.
  expect(d.data[1]!.data?.$case).toBe("struct");
  const arb = StreamMessageResponse.encode({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: { high: 0n, low: 3n }, status: { code: 0, message: "primary", details: [] } } } }).finish();
  const back = decodeStreamMessageResponse(Buffer.from(arb));
  expect(back.update?.$case).toBe("arbitration");
});
