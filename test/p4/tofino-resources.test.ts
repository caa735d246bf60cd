// The committed Tofino builds: the resource summary is what the assembly
// says, every register sits in one stage (or, split, consecutive ones), the
// manifest's fit status agrees with the stages used, and both builds fit
// their chips.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
// @ts-expect-error: a build script without type declarations
import { TNA_TARGETS, checkTnaManifest, memorySummary, phvSummary, resourceSummary, tnaSources } from "../../scripts/p4-build-tna.mjs";

const root = new URL("../..", import.meta.url).pathname;
const read = (f: string) => readFileSync(join(root, f), "utf8");

interface Target { name: string; dir: string; stages: number }
interface Gress { stages: number; stateful_alus: number; per_stage: Record<string, { tables: number; registers: string[] }> }
interface Summary { chip_stages: number; fits: boolean; ingress: Gress; egress: Gress }

describe.each((TNA_TARGETS as Target[]).map((t) => [t.name, t] as const))("%s build", (_name, target) => {
  const summary = JSON.parse(read(`${target.dir}/resources.json`)) as Summary;
  const manifest = JSON.parse(read(`${target.dir}/manifest.json`)) as { status: string; stages: { ingress: number; egress: number; chip: number } };

  test("resources.json is the summary of the committed assembly", () => {
    expect(resourceSummary(read(`${target.dir}/main.bfa`), target.stages)).toEqual(summary);
  });

  // A register lives in one pipeline, in one stage or, too large for one,
  // split by index ranges over consecutive stages (each entry in one stage:
  // the compiler sends a packet to the stage holding its index).
  test("every register of the P4Info is in one pipeline, in one stage or consecutive ones", () => {
    const p4info = JSON.parse(read(`${target.dir}/telemetry.p4info.json`)) as { registers?: { preamble: { name: string } }[] };
    const declared = (p4info.registers ?? []).map((r) => r.preamble.name.split(".").slice(-1)[0]).sort();
    const where = new Map<string, { gress: string; stages: number[] }[]>();
    for (const [gress, g] of [["ingress", summary.ingress], ["egress", summary.egress]] as const) {
      for (const [stage, s] of Object.entries(g.per_stage)) {
        for (const r of s.registers) {
          const w = where.get(r) ?? [];
          let e = w.find((x) => x.gress === gress);
          if (!e) w.push((e = { gress, stages: [] }));
          e.stages.push(Number(stage));
          where.set(r, w);
        }
      }
    }
    expect(declared.length).toBeGreaterThan(20);
    expect([...where.keys()].sort()).toEqual(declared);
    for (const [r, w] of where) {
      expect(w.length, r).toBe(1);
      const st = w[0]!.stages.sort((a, b) => a - b);
      expect(st[st.length - 1]! - st[0]!, r).toBe(st.length - 1);
    }
    // Tofino has four stateful ALUs per stage, shared by ingress and egress.
    const stages = new Set([...Object.keys(summary.ingress.per_stage), ...Object.keys(summary.egress.per_stage)]);
    for (const s of stages) {
      const n = (summary.ingress.per_stage[s]?.registers.length ?? 0) + (summary.egress.per_stage[s]?.registers.length ?? 0);
      expect(n, `stage ${s}`).toBeLessThanOrEqual(4);
    }
  });

  test("the manifest's status says what the stages say", () => {
    expect(manifest.stages).toEqual({ ingress: summary.ingress.stages, egress: summary.egress.stages, chip: target.stages });
    const fits = summary.ingress.stages <= target.stages && summary.egress.stages <= target.stages;
    expect(summary.fits).toBe(fits);
    expect(manifest.status.startsWith(fits ? "fits" : "does not fit")).toBe(true);
  });
});

// The seen-PSN window (docs/tofino.md, "Seen-PSN window"): Tofino 2's flow
// tracker has it, before the per-message counts that its answer decides;
// Tofino 1's has none (its egress stages are taken).
test("the seen-PSN window: in Tofino 2's egress, before the message counts; none in Tofino 1's", () => {
  const stagesOf = (dir: string, reg: string) => {
    const s = JSON.parse(read(`p4/build/${dir}/resources.json`)) as Summary;
    return Object.entries(s.egress.per_stage).filter(([, v]) => v.registers.includes(reg)).map(([k]) => Number(k));
  };
  const win = stagesOf("t2na", "flow_win");
  expect(win.length).toBeGreaterThan(0);
  expect(Math.max(...win)).toBeLessThan(Math.min(...stagesOf("t2na", "msg_counts")));
  expect(Math.min(...win)).toBeGreaterThan(Math.max(...stagesOf("t2na", "flow_psn_epoch")));
  expect(stagesOf("tna", "flow_win")).toEqual([]);
});

// A large I/O's last RDMA operation by the SGL's end (docs/spec.md, "Large
// I/Os"): both chips swap the SGL's address and length in stateful ALUs
// before the R_Key map keeps their sum beside the reference.
test.each(["tna", "t2na"])("the SGL's end: in the %s build, swapped before the R_Key map", (dir) => {
  const s = JSON.parse(read(`p4/build/${dir}/resources.json`)) as Summary;
  const stageOf = (reg: string) => Object.entries(s.ingress.per_stage).filter(([, v]) => v.registers.includes(reg)).map(([k]) => Number(k));
  const refs = stageOf("rkey_map_ref");
  expect(refs).toHaveLength(1);
  for (const swap of ["sgl_addr_swap", "sgl_len_swap"]) {
    expect(stageOf(swap), swap).toHaveLength(1);
    expect(stageOf(swap)[0]!, swap).toBeLessThan(refs[0]!);
  }
});

// Tofino 1's R_Key map key (docs/tofino.md, "Keys, slots and capacity"):
// a command's R_Key, little-endian in the capsule, byte-swapped and XORed
// with the command's source key by one XOR32 hash. Read from the assembly:
// each of the hash's 32 output bits is the swapped R_Key's bit XOR the
// source key's bit, and the command's action takes all 32.
test("Tofino 1: the command's R_Key map key is its R_Key, byte-swapped, XOR its source", () => {
  const bfa = read("p4/build/tna/main.bfa");
  const at = bfa.indexOf("TelemetryIngress.io_tracker.mix_cmd(");
  expect(at).toBeGreaterThan(0);
  const table = bfa.slice(bfa.lastIndexOf("\nstage ", at), bfa.indexOf("\n  action ", at) > 0 ? bfa.indexOf("\n  action ", at) : undefined);
  // The hash's inputs: position -> field and its bits.
  const xor = /xor\(0x20, \{ ([^}]*) \}\)/.exec(table);
  expect(xor, "an XOR32 hash").not.toBeNull();
  const out = Array.from({ length: 32 }, () => [] as string[]);
  for (const part of xor![1]!.split(/, (?=\d+:)/)) {
    const m = /^(\d+): ([\w.]+?)(?:\.(\d+)-(\d+))?(?:\((\d+)\.\.(\d+)\))?$/.exec(part.trim());
    expect(m, part).not.toBeNull();
    const [, pos, name, lo0, hi0, sLo, sHi] = m!;
    const base = lo0 === undefined ? 0 : Number(lo0);
    const width = sLo !== undefined ? Number(sHi) - Number(sLo) + 1 : hi0 !== undefined ? Number(hi0) - base + 1 : 32;
    const first = base + (sLo !== undefined ? Number(sLo) : 0);
    for (let i = 0; i < width; i++) out[(Number(pos) + i) % 32]!.push(`${name}[${first + i}]`);
  }
  for (let i = 0; i < 32; i++) {
    const swapped = 8 * (3 - (i >> 3)) + (i & 7); // bit i of the byte-swapped value is this bit of the little-endian one
    expect(out[i]!.sort(), `bit ${i}`).toEqual([`hdr.nvme_sqe.sgl_key_le[${swapped}]`, `meta.src_key[${i}]`].sort());
  }
  expect(table).toMatch(/mix_cmd\([^)]*\):[\s\S]*?- set W\d+\(0\.\.31\), hash_dist\(\d+, \d+, 0\.\.31\)/);
});

// Both chips: Tofino 1 (12 stages per pipeline) and Tofino 2 (20).
test.each([["tna", 12], ["t2na", 20]] as const)("the %s build fits its %i stages", (dir, stages) => {
  const summary = JSON.parse(read(`p4/build/${dir}/resources.json`)) as Summary;
  expect(summary.chip_stages).toBe(stages);
  expect(summary.fits).toBe(true);
  expect(summary.ingress.stages).toBeLessThanOrEqual(stages);
  expect(summary.egress.stages).toBeLessThanOrEqual(stages);
});

// The data-plane histograms are Tofino 2's only (docs/tofino.md, "Histograms").
test("the histograms: in the Tofino 2 build, in both pipelines; none in Tofino 1's", () => {
  type Memories = Record<string, { sram: number; map_ram: number; tcam: number; hash_dist: number }>;
  const memories = (dir: string) => {
    const s = JSON.parse(read(`p4/build/${dir}/resources.json`)) as { ingress: { memories: Memories }; egress: { memories: Memories } };
    return { ingress: s.ingress.memories, egress: s.egress.memories };
  };
  const t2 = memories("t2na");
  expect(t2.ingress.histograms?.sram).toBeGreaterThan(0);
  expect(t2.egress.histograms?.sram).toBeGreaterThan(0);
  const t1 = memories("tna");
  expect(t1.ingress.histograms).toBeUndefined();
  expect(t1.egress.histograms).toBeUndefined();
});

// An assembly written by hand, not by the compiler: the verdict follows the
// last stage used in either pipeline, and a register named by several
// tables of one stage (a register with several actions) counts once.
describe("the resource summary of an assembly", () => {
  const bfa = (lastEgressStage: number) => [
    "version:",
    '  run_id: "x"',
    "stage 0 ingress:",
    "  ternary_match config_telemetry_config 0:",
    "  hash_action tbl_take 1:",
    "stage 3 ingress:",
    "  exact_match tbl_io_tracker529 0:",
    "  stateful tbl_io_tracker529$salu.TelemetryIngress.io_tracker.rkey_map:",
    "  stateful tbl_io_tracker534$salu.TelemetryIngress.io_tracker.rkey_map:",
    "  gateway cond-87 1:",
    `stage ${lastEgressStage} egress:`,
    "  stateful tbl_flow_tracker731$salu.TelemetryIngress.flow_tracker.flow_seen:",
    "flexible_headers:",
    "  stateful not_a_stage_entry:",
  ].join("\n");

  test("within the chip: fits, with each stage's tables and registers", () => {
    const s = resourceSummary(bfa(11), 12) as Summary;
    expect(s.fits).toBe(true);
    expect(s.ingress.stages).toBe(4);
    expect(s.ingress.per_stage["3"]).toEqual({ tables: 2, registers: ["rkey_map"] });
    expect(s.ingress.per_stage["0"]).toEqual({ tables: 2, registers: [] });
    expect(s.egress).toMatchObject({ stages: 12, stateful_alus: 1 });
  });

  test("memories per part of the program: SRAM and map RAM blocks of its columns, TCAM blocks of its ternary tables, hash distribution units", () => {
    const asm = [
      "stage 2 ingress:",
      "  ternary_match io_tracker_io_class 1:",
      "    row: [ 0, 1 ]",
      "    column: 0",
      "  ternary_indirect io_tracker_io_class$tind:",
      "    row: 3",
      "    column: [ 2, 3, 4 ]",
      "  stateful io_tracker_owner_tbl$salu.TelemetryIngress.io_tracker.io_owner:",
      "    row: [ 15, 13 ]",
      "    column:",
      "    - [ 0, 1, 2, 3, 4, 5 ]",
      "    - [ 0, 1, 2 ]",
      "    maprams:",
      "    - [ 0, 1, 2, 3, 4, 5 ]",
      "    - [ 0, 1, 2 ]",
      "    hash_dist:",
      "      0: { hash: 0, mask: 0x3fff, shift: 0 }",
      "      1: { hash: 1, mask: 0xffff, shift: 0 }",
      "    input_xbar:",
      "  gateway cond-1 0:",
      "    row: 4",
      "stage 2 egress:",
      "  counter stats_flow_events_count$stats.TelemetryIngress.stats.flow_events:",
      "    row: 13",
      "    column: [ 0, 1 ]",
      "    maprams: [ 0, 1 ]",
    ].join("\n");
    expect(memorySummary(asm)).toEqual({
      ingress: { io_tracker: { sram: 12, map_ram: 9, tcam: 2, hash_dist: 2 } },
      egress: { stats: { sram: 2, map_ram: 2, tcam: 0, hash_dist: 0 } },
    });
  });

  test("PHV containers per pipeline, by size, each counted once", () => {
    const asm = ["phv ingress:", "  meta.a: W1", "  meta.b: { stage 0..3: H2(0..8), stage 4..11: W1 }", "  meta.c: TB3", "phv egress:", "  meta.d: B4", "stage 0 ingress:"].join("\n");
    expect(phvSummary(asm)).toEqual({
      ingress: { bits: 56, containers: { H: 1, TB: 1, W: 1 } },
      egress: { bits: 8, containers: { B: 1 } },
    });
  });

  test("a table one stage past the chip's last: does not fit", () => {
    const s = resourceSummary(bfa(12), 12) as Summary;
    expect(s.egress.stages).toBe(13);
    expect(s.fits).toBe(false);
  });
});

describe("the Tofino build's sources", () => {
  test("are the files p4/tna/main.p4 includes, transitively: the v1model trackers are not among them, so changing one leaves the Tofino builds current", () => {
    const files = tnaSources() as string[];
    expect(files).toContain("p4/tna/main.p4");
    expect(files).toContain("p4/tna/include/control/flow_tracker.p4");
    expect(files).toContain("p4/include/define.p4");
    expect(files).toContain("p4/include/stats_index.p4"); // through p4/tna/include/control/stats.p4
    for (const v1 of ["p4/include/control/flow_tracker.p4", "p4/include/control/io_tracker.p4", "p4/include/control/queue_pairs.p4"]) expect(files).not.toContain(v1);
    expect(checkTnaManifest()).toEqual([]);
  });
});
