// The STF runner's parts: the file format, the expectation match, and the
// names and values of table commands as p4c's bmv2stf.py makes them.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { matchesExpectation, parseStf, runStf, StfCommandError, StfNames, StfSyntaxError, type Bmv2Json } from "@rdma-telemetry/switch";

const json = (name: string) => JSON.parse(readFileSync(new URL(`../stf/build/${name}.json`, import.meta.url), "utf8")) as Bmv2Json;

describe("STF parsing", () => {
  test("reads commands with their lines, priorities, keys, actions and entry ids", () => {
    const cmds = parseStf([
      "# a comment",
      "add test1 503 data.f1:0x****0202 extra$0.h:0x25 ingress.setb1(val:7, port : 3) = A",
      "setdefault t act()",
      "packet 0 01 02  0A0b # trailing comment",
      "expect 2 01** 02 $",
      "expect 3",
      "mc_node_create 400 6 7",
      "WAIT",
    ].join("\n"));
    expect(cmds).toEqual([
      { line: 2, kind: "add", table: "test1", priority: 503, keys: [{ name: "data.f1", value: "0x****0202" }, { name: "extra$0.h", value: "0x25" }], action: { name: "ingress.setb1", args: [{ name: "val", value: "7" }, { name: "port", value: "3" }] }, id: "A" },
      { line: 3, kind: "setdefault", table: "t", action: { name: "act", args: [] } },
      { line: 4, kind: "packet", port: 0, data: "01020A0b" },
      { line: 5, kind: "expect", port: 2, data: "01**02$" },
      { line: 6, kind: "expect", port: 3, data: undefined },
      { line: 7, kind: "mc_node_create", rid: 400, ports: [6, 7] },
      { line: 8, kind: "wait" },
    ]);
  });

  test("a bad line is refused with its number and what is wrong", () => {
    expect(() => parseStf("wait\npacket 0 01 0")).toThrow(new StfSyntaxError(2, "packet: an odd number of hex digits"));
    expect(() => parseStf("frobnicate 1")).toThrow(/STF line 1: unknown command 'frobnicate'/);
    expect(() => parseStf("add t k:0x1 act(x)")).toThrow(/STF line 1: add: bad action argument 'x'/);
    expect(() => parseStf("expect 1 01 zz")).toThrow(/packet data may hold hex digits/);
  });
});

describe("STF expectations", () => {
  test("'*' nibbles match anything, a final '$' asks for the exact length, a shorter packet never matches", () => {
    expect(matchesExpectation("01**03", "01FF03")).toBe(true);
    expect(matchesExpectation("01**03", "01FF0344")).toBe(true);
    expect(matchesExpectation("01**03$", "01FF0344")).toBe(false);
    expect(matchesExpectation("01**03$", "01FF03")).toBe(true);
    expect(matchesExpectation("01**0344", "01FF03")).toBe(false);
    expect(matchesExpectation("ab", "AB")).toBe(true);
    expect(matchesExpectation("01", "02")).toBe(false);
  });
});

describe("STF names and values", () => {
  const names = new StfNames(json("action_conditional"));

  test("a table and an action by a suffix of their names; arguments by name", () => {
    const t = names.table("t");
    expect(t.name).toBe("IngressImpl.t");
    expect(names.action(t, { name: "classify", args: [{ name: "port", value: "2" }, { name: "limit", value: "0x80" }] })).toMatchObject({ name: "IngressImpl.classify", args: [0x80n, 2n] });
    expect(() => names.table("nope")).toThrow(new StfCommandError("no table named 'nope'"));
    expect(() => names.action(t, { name: "classify", args: [{ name: "limit", value: "1" }] })).toThrow(/no value for parameter 'port'/);
    expect(() => names.keys(t, [{ name: "h.d", value: "1" }])).toThrow(/has no key field 'h.d' \(its keys: hdr.h.c\)/);
  });

  test("ternary values take their mask from the digits; LPM prefixes from the number of digits", () => {
    const t = { name: "x", matchType: "ternary", actions: [], keys: [{ name: "h.f", matchType: "ternary", width: 32 }, { name: "s[0].g", matchType: "lpm", width: 32 }] };
    expect(names.keys(t, [{ name: "f", value: "0x****0101" }, { name: "s$0.g", value: "0x0a01" }])).toEqual([
      { kind: "ternary", value: 0x0101n, mask: 0xffffn },
      { kind: "lpm", value: 0x0a01n & 0xffff0000n, prefixLen: 16 },
    ]);
    expect(names.keys(t, [{ name: "s$0.g", value: "0x0a000000/8" }])).toEqual([{ kind: "ternary", value: 0n, mask: 0n }, { kind: "lpm", value: 0x0a000000n, prefixLen: 8 }]);
    expect(() => names.keys(t, [{ name: "f", value: "12" }])).toThrow(/a decimal value \('12'\) has no mask/);
  });

  test("multicast commands configure the switch's packet replication; a replica it cannot hold is refused", () => {
    expect(runStf(json("advance"), "mc_mgrp_create 1\nmc_node_create 0 2 3\nmc_node_associate 1 0\npacket 0 0300ABCDEE\nexpect 1 0300ABCDEE").failures).toEqual([]);
    expect(() => runStf(json("advance"), "mc_mgrp_create 1\nmc_node_create 0 511\nmc_node_associate 1 0")).toThrow(/multicast group 1: egress port 511/);
  });

  test("a table entry the program cannot hold is refused with the line", () => {
    expect(() => runStf(json("action_conditional"), "add t h.c:0x1ff classify(limit:1, port:1)")).toThrow(/line 1: value of key field 'hdr.h.c' does not fit in 8 bits/);
  });
});
