// The software switch's own STF tests: one small P4 program a feature
// (test/stf/*.p4, compiled into test/stf/build/ by `npm run p4:build`), its
// packets and expected outputs in the .stf beside it. Each runs on the
// software switch; where simple_switch is installed, the same test runs on
// BMv2 too, so the expectations are BMv2's behaviour, not ours.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { CompiledProgram, runStf, type Bmv2Json } from "@rdma-telemetry/switch";
import { bmv2StfUnavailable, runStfOnBmv2 } from "../../tools/stf-bmv2.js";

const dir = new URL(".", import.meta.url).pathname;
const tests = readdirSync(dir).filter((f) => f.endsWith(".stf")).map((f) => f.replace(/\.stf$/, "")).sort();
const load = (name: string) => JSON.parse(readFileSync(join(dir, "build", `${name}.json`), "utf8")) as Bmv2Json;
const stf = (name: string) => readFileSync(join(dir, `${name}.stf`), "utf8");

/** The primitives and parser operations a program's JSON uses: what each test is there to exercise. */
function ops(json: Bmv2Json): Set<string> {
  return new Set([...JSON.stringify(json).matchAll(/"op": ?"([A-Za-z_]+)"/g)].map((m) => m[1]!));
}

describe("STF tests on the software switch", () => {
  test("every feature has its test program", () => {
    expect(tests).toEqual(["action_conditional", "advance", "checksum_payload", "counters", "header_union", "stack_copy", "stack_index", "varbit"]);
    expect(load("checksum_payload").calculations.flatMap((c) => c.input.map((i) => i.type))).toContain("payload");
    expect(ops(load("action_conditional"))).toContain("_jump_if_zero");
    expect(ops(load("advance"))).toContain("advance");
    expect(load("header_union").header_union_stacks).toHaveLength(1);
    expect(ops(load("header_union"))).toContain("valid_union");
    expect(ops(load("stack_copy"))).toContain("assign_header_stack");
    expect(ops(load("stack_index"))).toContain("dereference_header_stack");
    expect(ops(load("varbit"))).toContain("extract_VL");
  });

  for (const name of tests) {
    test(name, () => {
      const r = runStf(new CompiledProgram(load(name)), stf(name));
      expect(r.errors).toEqual([]);
      expect(r.failures).toEqual([]);
      expect(r.passed).toBe(true);
      expect(r.received.length).toBe(stf(name).split("\n").filter((l) => l.startsWith("expect ")).length);
    });
  }

  test("a changed expectation fails, naming the port, the packet and the line", () => {
    const text = stf("varbit").replace("expect 1 10 AA ABCD CC ABCD EEFF $", "expect 1 10 AA ABCD CC ABCE EEFF $");
    const r = runStf(new CompiledProgram(load("varbit")), text);
    expect(r.passed).toBe(false);
    expect(r.failures).toEqual([expect.stringMatching(/^port 1, packet 0 \(expect at line 4\): expected 10AAABCDCCABCEEEFF\$, got 10AAABCDCCABCDEEFF$/)]);
  });
});

test("a counter that does not hold what check_counter says fails the test", () => {
  const text = stf("counters").replace("check_counter per_index(2) packets == 2", "check_counter per_index(2) packets == 3").replace("check_counter per_entry(A) packets == 2", "check_counter per_entry(A) packets < 2");
  const r = runStf(new CompiledProgram(load("counters")), text);
  expect(r.passed).toBe(false);
  expect(r.failures).toEqual(["line 9: counter per_index(2) packets is 2, expected == 3", "line 14: counter per_entry(A) packets is 2, expected < 2"]);
});

const bmv2SkipReason = bmv2StfUnavailable();
describe.skipIf(bmv2SkipReason !== undefined)(`STF tests on BMv2 simple_switch${bmv2SkipReason ? ` (SKIPPED: ${bmv2SkipReason})` : ""}`, () => {
  for (const name of tests) {
    test(name, async () => {
      const r = await runStfOnBmv2(join(dir, "build", `${name}.json`), stf(name));
      expect(r.failures).toEqual([]);
      expect(r.passed).toBe(true);
    });
  }
});
