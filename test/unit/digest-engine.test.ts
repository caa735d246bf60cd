import { expect, test } from "vitest";
import { DigestEngine, sampleHash, type DigestList } from "../../switch/src/digest-engine.js";

function engine(cfg: { maxListSize: number; maxTimeoutNs?: bigint; ackTimeoutNs?: bigint }) {
  const sent: DigestList[] = [];
  const e = new DigestEngine((l) => sent.push(l));
  // (A timeout that never passes in these tests unless one is given.)
  e.configure(1, { maxListSize: cfg.maxListSize, maxTimeoutNs: cfg.maxTimeoutNs ?? 1n << 62n, ackTimeoutNs: cfg.ackTimeoutNs ?? 0n });
  return { e, sent };
}

test("nothing is sent for a digest without a DigestEntry", () => {
  const { e, sent } = engine({ maxListSize: 1 });
  e.add(2, [1, 2], 0n);
  expect(sent).toHaveLength(0);
  expect(e.unconfiguredDrops).toBe(1);
});

test("a list goes out at max_list_size, or when max_timeout_ns has passed since its first sample", () => {
  const { e, sent } = engine({ maxListSize: 3, maxTimeoutNs: 1000n });
  e.add(1, [1], 0n);
  e.add(1, [2], 10n);
  e.add(1, [3], 20n);
  expect(sent.map((l) => l.samples)).toEqual([[[1], [2], [3]]]);
  e.add(1, [4], 100n);
  e.tick(1099n);
  expect(sent).toHaveLength(1);
  e.tick(1100n);
  expect(sent.map((l) => l.samples)).toEqual([[[1], [2], [3]], [[4]]]);
  expect(sent[1]!.timestampNs).toBe(1100n);
});

test("max_timeout_ns 0: every sample goes out at once, in a list of its own, whatever max_list_size says", () => {
  const { e, sent } = engine({ maxListSize: 100, maxTimeoutNs: 0n });
  e.add(1, [1], 5n);
  expect(sent.map((l) => l.samples)).toEqual([[[1]]]);
  e.add(1, [2], 6n);
  expect(sent.map((l) => l.samples)).toEqual([[[1]], [[2]]]);
  expect(sent.map((l) => l.timestampNs)).toEqual([5n, 6n]);
});

test("a sample equal to one pending or unacknowledged is suppressed until the ack or the ack timeout", () => {
  const { e, sent } = engine({ maxListSize: 2, ackTimeoutNs: 1000n });
  e.add(1, [7, 1n << 60n], 0n);
  e.add(1, [7, 1n << 60n], 1n); // same as pending
  e.add(1, [8, 0], 2n);
  expect(e.suppressed).toBe(1);
  expect(sent).toHaveLength(1);
  e.add(1, [7, 1n << 60n], 3n); // in the unacknowledged list
  expect(e.suppressed).toBe(2);
  expect(e.ack(1, sent[0]!.listId)).toBe(true);
  expect(e.ack(1, sent[0]!.listId)).toBe(false);
  e.add(1, [7, 1n << 60n], 4n);
  e.add(1, [8, 0], 5n);
  expect(sent).toHaveLength(2);
  e.add(1, [8, 0], 6n); // unacknowledged again...
  expect(e.suppressed).toBe(3);
  e.add(1, [8, 0], 5n + 1000n); // ...until the ack timeout passes
  expect(e.suppressed).toBe(3);
  expect(e.unackedLists).toBe(0);
});

// Two one-member samples whose sampleHash collide. Found once by a birthday
// search over the multiples of 7919 (sampleHash([i * 7919]) for i = 0, 1, ...
// until a hash repeats; the repeat came at i = 3,799,241 after some seconds).
// Only values of 2^32 and above can collide with anything: below, the hash of
// one member is a bijection of the value.
const COLLIDING: readonly [number, number] = [2_282_279_557, 30_086_181_560];

test("the precomputed pair collides: distinct values, one hash", () => {
  expect(COLLIDING[0]).not.toBe(COLLIDING[1]);
  expect(sampleHash([COLLIDING[0]])).toBe(sampleHash([COLLIDING[1]]));
  // ...and the hash is not constant: a neighbour hashes elsewhere.
  expect(sampleHash([COLLIDING[1] + 7919])).not.toBe(sampleHash([COLLIDING[0]]));
});

test("distinct samples with the same hash are both sent", () => {
  const pair = COLLIDING;
  const { e, sent } = engine({ maxListSize: 3, ackTimeoutNs: 1000n });
  e.add(1, [pair[0]], 0n);
  e.add(1, [pair[1]], 1n);
  e.add(1, [pair[1]], 2n);
  expect(e.suppressed).toBe(1);
  e.add(1, [5], 3n);
  expect(sent[0]!.samples).toEqual([[pair[0]], [pair[1]], [5]]);
  e.add(1, [pair[0]], 4n);
  e.add(1, [pair[1]], 5n);
  expect(e.suppressed).toBe(3);
  e.ack(1, sent[0]!.listId);
  e.add(1, [pair[1]], 6n);
  expect(e.suppressed).toBe(3);
});
