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
