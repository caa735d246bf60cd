// An exporter group member's open digests: a digest published twice (the same
// switch, digest, list time and sequence number) is taken once while it is
// open; the same sequence number in another list (a switch that restarted)
// is another digest; once settled, a digest is let go.
import { describe, expect, test } from "vitest";
import { OpenDigests } from "../../exporter/src/group/open-digests.js";

describe("open digests", () => {
  test("the oldest open digest moves on as the engine settles; a digest seen twice while open is a duplicate", () => {
    const o = new OpenDigests(1000n);
    // a, b, c: three digests of one switch, by sequence number.
    const add = (offset: bigint, listNs: bigint, seq: bigint, ts: number) => o.add(offset, listNs, ts, "tor-a", "io_digest_t", listNs, seq);
    expect(o.oldest()).toBeUndefined();
    expect(add(10n, 5000n, 1n, 1)).toBe(true);
    expect(add(11n, 6000n, 2n, 2)).toBe(true);
    expect(add(12n, 9000n, 3n, 3)).toBe(true);
    expect(add(13n, 6000n, 2n, 4)).toBe(false);
    o.prune(5500n); // settled before 5500 - 1000: nothing yet
    expect(o.oldest()).toEqual({ offset: 10n, takenMs: 1 });
    o.prune(6500n); // 5000 < 5500: a goes
    expect(o.oldest()).toEqual({ offset: 11n, takenMs: 2 });
    expect(add(14n, 5000n, 1n, 5)).toBe(true); // no longer open: taken again (and counted late by the member)
    o.prune(8500n); // b (6000) goes: the front is c (9000), whatever is behind it
    expect(o.oldest()).toEqual({ offset: 12n, takenMs: 3 });
    o.prune(20_000n);
    expect(o.oldest()).toBeUndefined();
    expect(o.size).toBe(0);
  });

  test("a digest twice is a duplicate; another switch, digest, list or sequence number is not", () => {
    const o = new OpenDigests(10n);
    expect(o.add(0n, 100n, 1, "tor-a", "io_digest_t", 100n, 5n)).toBe(true);
    expect(o.add(1n, 100n, 1, "tor-a", "io_digest_t", 100n, 5n)).toBe(false);
    expect(o.add(2n, 100n, 1, "tor-b", "io_digest_t", 100n, 5n)).toBe(true);
    expect(o.add(3n, 100n, 1, "tor-a", "msg_digest_t", 100n, 5n)).toBe(true);
    expect(o.add(4n, 100n, 1, "tor-a", "io_digest_t", 100n, 6n)).toBe(true);
    // The switch restarted: its sequence numbers start over in lists of another time.
    expect(o.add(5n, 120n, 1, "tor-a", "io_digest_t", 120n, 5n)).toBe(true);
    expect(o.add(6n, 130n, 1, "tor-a", "io_digest_t", 130n, 5n)).toBe(true);
    expect(o.add(7n, 120n, 1, "tor-a", "io_digest_t", 120n, 5n)).toBe(false);
    expect(o.add(8n, 130n, 1, "tor-a", "io_digest_t", 130n, 5n)).toBe(false);
    expect(o.size).toBe(6);
  });

  test("settled digests are let go: the same digest again is taken (it is past the window the member keeps)", () => {
    const o = new OpenDigests(10n);
    o.add(0n, 100n, 1, "tor-a", "io_digest_t", 100n, 5n);
    o.add(1n, 120n, 2, "tor-a", "io_digest_t", 120n, 5n);
    o.add(2n, 125n, 3, "tor-a", "io_digest_t", 125n, 7n);
    o.prune(121n); // before 111: the first
    expect(o.oldest()).toEqual({ offset: 1n, takenMs: 2 });
    expect(o.add(3n, 100n, 4, "tor-a", "io_digest_t", 100n, 5n)).toBe(true);
    // The other list time of sequence number 5 is still open.
    expect(o.add(4n, 120n, 4, "tor-a", "io_digest_t", 120n, 5n)).toBe(false);
    o.prune(1000n);
    expect(o.size).toBe(0);
    expect(o.oldest()).toBeUndefined();
    expect(o.add(5n, 120n, 5, "tor-a", "io_digest_t", 120n, 5n)).toBe(true);
    expect(o.add(6n, 125n, 5, "tor-a", "io_digest_t", 125n, 7n)).toBe(true);
  });

  test("sequence numbers beyond 2^53", () => {
    const o = new OpenDigests(10n);
    const big = 2n ** 60n + 1n;
    expect(o.add(0n, 100n, 1, "tor-a", "io_digest_t", 100n, big)).toBe(true);
    expect(o.add(1n, 100n, 1, "tor-a", "io_digest_t", 100n, big + 1n)).toBe(true);
    expect(o.add(2n, 100n, 1, "tor-a", "io_digest_t", 100n, big)).toBe(false);
    o.prune(1000n);
    expect(o.add(3n, 100n, 1, "tor-a", "io_digest_t", 100n, big)).toBe(true);
  });
});
