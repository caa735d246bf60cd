// A group member's transaction sends its records in parts: each within the
// broker's limit on a produce batch and of at most 1,000 records, in order.
import { expect, test } from "vitest";
import { SEND_PART_BYTES, SEND_PART_RECORDS, sendParts } from "../../exporter/src/group/exporter-group.js";

test("records in parts of at most SEND_PART_BYTES and SEND_PART_RECORDS, by topic, in their order", () => {
  const messages = Array.from({ length: 5000 }, (_, i) => ({ topic: i % 3 ? "io" : "flow", key: `k${i}`, value: Buffer.alloc(i % 7 === 0 ? 2000 : 150, i), headers: { type: "x" } }));
  const parts = sendParts(messages);
  expect(parts.length).toBe(5); // 1,000 records a part
  const flat: string[] = [];
  for (const part of parts) {
    let bytes = 0;
    let count = 0;
    for (const t of part) for (const m of t.messages) {
      bytes += m.key.length + m.value.length + 5;
      count++;
    }
    expect(bytes).toBeLessThanOrEqual(SEND_PART_BYTES);
    expect(count).toBeLessThanOrEqual(SEND_PART_RECORDS);
    for (const t of part) for (const m of t.messages) flat.push(`${t.topic}:${m.key}`);
  }
  // Every record once; within a topic, in the order given.
  expect(flat.slice().sort()).toEqual(messages.map((m) => `${m.topic}:${m.key}`).sort());
  for (const topic of ["io", "flow"]) expect(flat.filter((x) => x.startsWith(`${topic}:`))).toEqual(messages.filter((m) => m.topic === topic).map((m) => `${topic}:${m.key}`));
  expect(sendParts([])).toEqual([]);
  // Larger records: the bytes close a part first.
  const big = sendParts(Array.from({ length: 3000 }, (_, i) => ({ topic: "io", key: `k${i}`, value: Buffer.alloc(1000), headers: {} })));
  const size = (p: (typeof big)[number]) => p[0]!.messages.reduce((a, m) => a + m.key.length + m.value.length, 0);
  expect(big).toHaveLength(6);
  for (const p of big.slice(0, -1)) {
    expect(size(p)).toBeLessThanOrEqual(SEND_PART_BYTES);
    expect(size(p) + 1005).toBeGreaterThan(SEND_PART_BYTES); // full: the next record would not fit
  }
});
