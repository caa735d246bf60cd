// Where a member taking a partition over re-reads from: the oldest digest not
// yet settled; digests taken twice while open are recognised.
import { expect, test } from "vitest";
import { OpenDigests } from "../../exporter/src/group/open-digests.js";

test("the oldest open digest moves on as the engine settles; a digest seen twice while open is a duplicate", () => {
  const o = new OpenDigests(1000n);
  expect(o.oldest()).toBeUndefined();
  expect(o.add(10n, 5000n, "a", 1)).toBe(true);
  expect(o.add(11n, 6000n, "b", 2)).toBe(true);
  expect(o.add(12n, 9000n, "c", 3)).toBe(true);
  expect(o.add(13n, 6000n, "b", 4)).toBe(false);
  o.prune(5500n); // settled before 5500 - 1000: nothing yet
  expect(o.oldest()).toEqual({ offset: 10n, timestampMs: 1 });
  o.prune(6500n); // 5000 < 5500: a goes
  expect(o.oldest()).toEqual({ offset: 11n, timestampMs: 2 });
  expect(o.add(14n, 5000n, "a", 5)).toBe(true); // no longer open: taken again (and counted late by the member)
  o.prune(8500n); // b (6000) goes: the front is c (9000), whatever is behind it
  expect(o.oldest()).toEqual({ offset: 12n, timestampMs: 3 });
  o.prune(20_000n);
  expect(o.oldest()).toBeUndefined();
  expect(o.size).toBe(0);
});
