import { describe, expect, test } from "vitest";
import { MatchTable, TableError, type KeyMatch } from "../../switch/src/bmv2/table.js";

const act = (id: number, ...data: number[]) => ({ actionId: id, data });
const entry = (match: KeyMatch[], priority: number, actionId: number) => ({ match, priority, action: act(actionId), packets: 0, bytes: 0 });

describe("match tables", () => {
  test("lpm picks the longest prefix and falls back to the default", () => {
    const t = new MatchTable("routes", 1, [{ name: "dst", matchType: "lpm", width: 32 }], [1, 2], 16, act(2), true, false, false);
    t.insert(entry([{ kind: "lpm", value: 0x0a000000n, prefixLen: 8 }], 0, 10));
    t.insert(entry([{ kind: "lpm", value: 0x0a000100n, prefixLen: 24 }], 0, 11));
    expect(t.lookup([0x0a000105])?.action.actionId).toBe(11);
    expect(t.lookup([0x0a020105])?.action.actionId).toBe(10);
    expect(t.lookup([0x0b000001])).toBeUndefined();
  });

  test("exact keys of several fields, duplicates and deletes", () => {
    const t = new MatchTable("w", 2, [{ name: "src", matchType: "exact", width: 32 }, { name: "qp", matchType: "exact", width: 24 }], [1], 2, act(1), false, false, false);
    const m: KeyMatch[] = [{ kind: "exact", value: 1n }, { kind: "exact", value: 7n }];
    t.insert(entry(m, 0, 1));
    expect(() => t.insert(entry(m, 0, 1))).toThrow(TableError);
    expect(t.lookup([1, 7])).toBeDefined();
    expect(t.lookup([1, 8])).toBeUndefined();
    t.insert(entry([{ kind: "exact", value: 2n }, { kind: "exact", value: 7n }], 0, 1));
    expect(() => t.insert(entry([{ kind: "exact", value: 3n }, { kind: "exact", value: 7n }], 0, 1))).toThrow(/full/);
    t.delete(m, 0);
    expect(t.lookup([1, 7])).toBeUndefined();
    expect(() => t.delete(m, 0)).toThrow(/no entry/);
  });

  test("ternary and range entries match by priority, higher first", () => {
    const t = new MatchTable("acl", 3, [{ name: "a", matchType: "ternary", width: 16 }, { name: "b", matchType: "range", width: 16 }], [1, 2, 3], 8, act(3), false, false, false);
    t.insert(entry([{ kind: "ternary", value: 0x0100n, mask: 0xff00n }, { kind: "any" }], 10, 1));
    t.insert(entry([{ kind: "ternary", value: 0x0102n, mask: 0xffffn }, { kind: "range", low: 5n, high: 9n }], 20, 2));
    expect(t.lookup([0x0102, 7])?.action.actionId).toBe(2);
    expect(t.lookup([0x0102, 10])?.action.actionId).toBe(1);
    expect(t.lookup([0x0203, 7])).toBeUndefined();
  });

  test("validation names the field that is wrong", () => {
    const t = new MatchTable("routes", 1, [{ name: "dst_addr", matchType: "lpm", width: 32 }], [1], 4, act(1), false, false, false);
    expect(t.validate([{ kind: "lpm", value: 0x0a000001n, prefixLen: 8 }], 0)).toMatch(/beyond its \/8 prefix/);
    expect(t.validate([{ kind: "lpm", value: 1n << 33n, prefixLen: 32 }], 0)).toMatch(/dst_addr/);
    expect(t.validate([{ kind: "exact", value: 1n }], 0)).toMatch(/is lpm, got a exact/);
  });
});
