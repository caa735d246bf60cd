// The alerts raised, carried from one engine to another (an exporter group
// partition moving to another member), and their bound in offset metadata.
import { describe, expect, test } from "vitest";
import type { AlertJson, IoAggregateJson } from "../../contract/src/records.js";
import { AlertEngine, alertHash, ALERT_HASH_CHARS, type AlertRule } from "../../exporter/src/alerts.js";
import { commitMetadata } from "../../exporter/src/group/exporter-group.js";

const rules: AlertRule[] = [{ metric: "incomplete", scope: "pair", raise: 1, clear: 0.5 }];

function agg(interval: number, host: string, incomplete: number): IoAggregateJson {
  return { type: "io_interval", switch_id: "tor-c", interval_start_unix_ns: String(interval), interval_end_unix_ns: String(interval + 1), host, target: "10.0.2.1", op: "read", count: 10, incomplete, bytes: 0, errors: 0, e2e_c_ns: null, e2e_s_ns: null, rtt_ns: null, dal_ns: null, dpl_ns: null, mode: "full", coverage: null };
}

describe("alert state carried between engines", () => {
  test("an engine restored from another's raised alerts neither raises them again nor misses their clearing", () => {
    const a: AlertJson[] = [];
    const first = new AlertEngine(rules, (x) => a.push(x));
    first.observe(agg(0, "h1", 3));
    first.observe(agg(0, "h2", 3));
    first.flush();
    expect(a.map((x) => `${x.scope_key}:${x.state}`)).toEqual(["h1|10.0.2.1:raised", "h2|10.0.2.1:raised"]);
    const b: AlertJson[] = [];
    const second = new AlertEngine(rules, (x) => b.push(x));
    second.restoreRaised(first.raisedHashes());
    second.observe(agg(1, "h1", 3)); // still over
    second.observe(agg(1, "h2", 0)); // back under
    second.observe(agg(1, "h3", 0)); // never raised
    second.flush();
    expect(b.map((x) => `${x.scope_key}:${x.state}`)).toEqual(["h2|10.0.2.1:cleared"]);
    expect(second.raisedHashes()).toEqual([alertHash("incomplete@pair:h1|10.0.2.1")]);
  });

  test("alert hashes: fixed width, URL-safe, distinct over many keys", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const h = alertHash(`dal_ns.p99@target:10.${i >> 8}.${i & 255}.1`);
      expect(h).toMatch(new RegExp(`^[A-Za-z0-9_-]{${ALERT_HASH_CHARS}}$`));
      seen.add(h);
    }
    expect(seen.size).toBe(20_000);
  });

  test("offset metadata stays within 4 KiB: hundreds of raised alerts fit, clock placements go first, what does not fit is counted", () => {
    const state = { r: "123456789", t: 1_764_660_000_000 };
    const hashes = (n: number) => Array.from({ length: n }, (_, i) => alertHash(`fnr@flow:10.0.0.${i}|10.0.1.1|${i}`));
    const clocks = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`tor-${i}`, "1800000000000000000"]));
    const parse = (s: string) => { expect(Buffer.byteLength(s)).toBeLessThanOrEqual(4096); return JSON.parse(s) as { a?: string; n?: number; c?: Record<string, string> }; };
    // 500 alerts and 4 switches: all of it.
    let m = parse(commitMetadata(state, hashes(500), clocks(4)));
    expect([m.a!.length / ALERT_HASH_CHARS, Object.keys(m.c!).length, m.n]).toEqual([500, 4, undefined]);
    // 500 alerts and 40 switches: the alerts, not the clocks.
    m = parse(commitMetadata(state, hashes(500), clocks(40)));
    expect([m.a!.length / ALERT_HASH_CHARS, m.c, m.n]).toEqual([500, undefined, undefined]);
    // 1,000 alerts: as many as fit, and how many there were.
    m = parse(commitMetadata(state, hashes(1000), clocks(4)));
    expect(m.a!.length / ALERT_HASH_CHARS).toBeGreaterThan(550);
    expect(m.n).toBe(1000);
    // None raised: the metadata as before.
    expect(JSON.parse(commitMetadata(state, [], clocks(1)))).toEqual({ ...state, c: clocks(1) });
  });
});
