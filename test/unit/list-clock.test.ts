import { expect, test } from "vitest";
import { ListClock, PLAUSIBLE_UNIX_NS } from "../../p4runtime-controller/src/list-clock.js";

test("Unix list timestamps pass unchanged", () => {
  const c = new ListClock(() => 5n);
  expect(c.toUnix(1_800_000_000_000_000_000n)).toBe(1_800_000_000_000_000_000n);
  expect(c.toUnix(PLAUSIBLE_UNIX_NS)).toBe(PLAUSIBLE_UNIX_NS);
  expect(c.offsetNs).toBeUndefined();
});

test("a clock since boot is mapped to the host's clock once, and keeps its own spacing", () => {
  let now = 1_790_000_000_000_000_000n;
  const c = new ListClock(() => now);
  const mapped: bigint[] = [];
  const bootNs = 3_600_000_000_000n; // an hour since boot
  expect(c.toUnix(bootNs, (o) => mapped.push(o))).toBe(now);
  now += 10_000_000_000n; // the host's clock moves on; the mapping stays
  expect(c.toUnix(bootNs + 1_500n, (o) => mapped.push(o))).toBe(1_790_000_000_000_001_500n);
  expect(mapped).toEqual([1_790_000_000_000_000_000n - bootNs]);
});
