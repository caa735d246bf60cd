// The Tofino builds of the telemetry program: compiles p4/tna/main.p4 with
// p4c-barefoot for Tofino 1 (tna) into p4/build/tna/ and for Tofino 2 (t2na)
// into p4/build/t2na/, each with its manifest. Used by scripts/p4-build.mjs
// (`npm run p4:build`, `npm run p4:check`).
//
// p4c-barefoot stops before the assembler (bfas is in Intel's SDE, not open
// source), so the outputs are the compiler's: P4Info (text and JSON),
// bfrt.json, the assembly (main.bfa, what the SDE's assembler turns into
// tofino.bin and context.json) and a resource summary taken from the
// assembly: stages per pipeline, tables and stateful ALUs per stage. The
// compiler places tables past the chip's last stage without an error (the
// assembler would refuse them), so "fits" is decided here: every stage used
// must exist on the chip. Outputs are normalised (run id, key order) so that
// a recompile gives the same bytes.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { manifestProblems } from "./p4-manifest.mjs";

const root = new URL("..", import.meta.url).pathname;
export const TNA_MAIN = "p4/tna/main.p4";
export const TNA_OUTPUTS = ["telemetry.p4info.txtpb", "telemetry.p4info.json", "bfrt.json", "main.bfa", "resources.json"];
/** The chips built: p4c-barefoot's target and architecture, the build directory, the MAU stages per pipeline. */
export const TNA_TARGETS = [
  { name: "Tofino 1", target: "tofino", arch: "tna", dir: "p4/build/tna", stages: 12 },
  { name: "Tofino 2", target: "tofino2", arch: "t2na", dir: "p4/build/t2na", stages: 20 },
];
const manifestPath = (t) => `${t.dir}/manifest.json`;
const P4_PREFIX = process.env.P4_PREFIX || "/opt/p4";
/** The Python environment the toolchain's build made (its compiler calls python3 with jsl), where there is one. */
const VENV = join(P4_PREFIX, "venv/bin");

const sha256 = (data) => createHash("sha256").update(data).digest("hex");

/**
 * The P4 sources the TNA build reads, sorted: p4/tna/main.p4 and every file it
 * includes with `#include "..."`, followed transitively (under any #if: a
 * superset is safe). The compiler's own headers (`#include <...>`) are not
 * the project's. A file of p4/include that only the v1model program reads
 * (the v1model trackers) is not among them, so changing it leaves the
 * Tofino builds current.
 */
export function tnaSources(base = root) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    const abs = join(base, file);
    if (!existsSync(abs)) throw new Error(`${file} is included by the TNA build and missing`);
    seen.add(file);
    for (const m of readFileSync(abs, "utf8").matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) {
      visit(relative(base, join(dirname(abs), m[1])));
    }
  };
  visit(TNA_MAIN);
  return [...seen].sort();
}

function sourceHash(files, base = root) {
  const h = createHash("sha256");
  for (const f of files) {
    h.update(f + "\0");
    h.update(readFileSync(join(base, f)));
    h.update("\0");
  }
  return h.digest("hex");
}

export function findBarefoot() {
  const candidates = [process.env.P4C_BAREFOOT, ...((process.env.PATH ?? "").split(":").map((d) => join(d, "p4c-barefoot"))), join(P4_PREFIX, "bin/p4c-barefoot")];
  return candidates.find((c) => c && existsSync(c));
}

function barefootVersion(p4c) {
  const r = spawnSync(p4c, ["--version"], { encoding: "utf8" });
  const m = /Version\s+(\S+)/.exec(`${r.stdout}${r.stderr}`);
  // The p4c commit it was built from, where the toolchain's notes say (the p4lang/p4c row of BUILD_NOTES.md).
  let commit = "unknown";
  const notes = join(p4c, "..", "..", "BUILD_NOTES.md");
  if (existsSync(notes)) {
    const c = /^\|\s*p4lang\/p4c\s*\|[^|]*\|\s*([0-9a-f]{40})\s*\|/m.exec(readFileSync(notes, "utf8"));
    if (c) commit = c[1];
  }
  return { name: "p4c-barefoot (bf-p4c)", version: m?.[1] ?? "unknown", p4c_commit: commit };
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
  return v;
}

/** The assembly without what changes from one compile to the next (its run id). */
export function normaliseBfa(text) {
  return text.replace(/^(\s*run_id:\s*)"[^"]*"/m, '$1""');
}

/**
 * Stages, logical tables and stateful ALUs per stage and pipeline, from the
 * assembly (`stage N ingress:` sections; `stateful` entries name their
 * register). `stages` is the chip's count: fits when no stage is beyond it.
 */
export function resourceSummary(bfa, stages) {
  const gresses = { ingress: {}, egress: {} };
  let cur;
  for (const line of bfa.split("\n")) {
    const st = /^stage (\d+) (ingress|egress):/.exec(line);
    if (st) {
      cur = gresses[st[2]][st[1]] ??= { tables: [], registers: [] };
      continue;
    }
    if (/^\S/.test(line)) { cur = undefined; continue; }
    const t = /^  (exact_match|ternary_match|hash_action|gateway|stateful|phase0_match|proxy_hash) ([^:\s]+)( \d+)?:/.exec(line);
    if (!t || !cur) continue;
    if (t[1] === "stateful") {
      const reg = t[2].split(".").slice(-1)[0];
      if (!cur.registers.includes(reg)) cur.registers.push(reg);
    } else {
      const name = t[2].replace(/\$.*/, "");
      if (!cur.tables.includes(name)) cur.tables.push(name);
    }
  }
  const summary = { chip_stages: stages, fits: true };
  const memories = memorySummary(bfa);
  const phv = phvSummary(bfa);
  for (const [g, per] of Object.entries(gresses)) {
    const used = Object.keys(per).map(Number).sort((x, y) => x - y);
    const last = used.length ? used[used.length - 1] + 1 : 0;
    if (last > stages) summary.fits = false;
    summary[g] = {
      stages: last,
      stateful_alus: used.reduce((n, k) => n + per[k].registers.length, 0),
      per_stage: Object.fromEntries(used.map((k) => [k, { tables: per[k].tables.length, registers: per[k].registers.sort() }])),
      memories: memories[g],
      phv: phv[g],
    };
  }
  return summary;
}

/** The part of the program a table of the assembly belongs to, by its name (the trackers' histograms apart). */
function controlOf(name) {
  for (const c of ["histograms", "io_tracker", "flow_tracker", "stats"]) if (name.includes(c)) return c;
  return "other";
}

/** A row:, column: or maprams: value of the assembly: a number, a list, or a block of lists. */
function countUnits(lines, i, indent) {
  const rest = lines[i].slice(lines[i].indexOf(":") + 1).trim();
  const nums = (t) => (t.match(/\d+/g) ?? []).length;
  if (rest) return nums(rest);
  let n = 0;
  for (let j = i + 1; j < lines.length && lines[j].startsWith(`${indent}- `); j++) n += nums(lines[j]);
  return n;
}

/**
 * Memories per pipeline and part of the program, from the assembly: SRAM
 * and map RAM blocks (exact and hash tables, action data, ternary
 * indirection, registers, counters), TCAM blocks (ternary tables) and
 * 16-bit hash distribution units (indexes, fingerprints, byte swaps).
 */
export function memorySummary(bfa) {
  const out = { ingress: {}, egress: {} };
  const lines = bfa.split("\n");
  let gress;
  let cur;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const st = /^stage \d+ (ingress|egress):/.exec(line);
    if (st) { gress = st[1]; cur = undefined; continue; }
    if (/^\S/.test(line)) { gress = undefined; cur = undefined; continue; }
    if (!gress) continue;
    const t = /^  (\w+) ([^:\s]+)( \d+)?:\s*$/.exec(line);
    if (t) {
      cur = undefined;
      if (t[1] === "gateway") continue; // gateways hold no memory
      const control = controlOf(t[2]);
      const m = (out[gress][control] ??= { sram: 0, map_ram: 0, tcam: 0, hash_dist: 0 });
      cur = { kind: t[1], m, rows: 0, columns: 0 };
      continue;
    }
    if (!cur) continue;
    if (/^    hash_dist:\s*$/.test(line)) {
      for (let j = i + 1; j < lines.length && /^      \d+: \{/.test(lines[j]); j++) cur.m.hash_dist++;
      continue;
    }
    const f = /^    (row|column|maprams):/.exec(line);
    if (!f) continue;
    const n = countUnits(lines, i, "    ");
    if (f[1] === "maprams") cur.m.map_ram += n;
    else {
      // A table's blocks are its columns in its rows (a list of columns per row, or one).
      const before = Math.max(cur.rows, cur.columns);
      if (f[1] === "row") cur.rows = n; else cur.columns = n;
      const units = Math.max(cur.rows, cur.columns) - before;
      if (cur.kind === "ternary_match") cur.m.tcam += units; else cur.m.sram += units;
    }
  }
  return out;
}

/**
 * PHV containers per pipeline, by kind: 8-, 16- and 32-bit (B, H, W), with
 * Tofino 1's tagalong (T) and Tofino 2's mocha (M) and dark (D) ones.
 */
export function phvSummary(bfa) {
  const out = { ingress: { bits: 0, containers: {} }, egress: { bits: 0, containers: {} } };
  let gress;
  const seen = { ingress: new Set(), egress: new Set() };
  for (const line of bfa.split("\n")) {
    const h = /^phv (ingress|egress):/.exec(line);
    if (h) { gress = h[1]; continue; }
    if (/^\S/.test(line)) { gress = undefined; continue; }
    if (!gress) continue;
    for (const c of line.slice(line.indexOf(":") + 1).match(/\b([TMD]?[BHW])(\d+)\b/g) ?? []) seen[gress].add(c);
  }
  for (const g of ["ingress", "egress"]) {
    for (const c of [...seen[g]].sort()) {
      const kind = c.replace(/\d+$/, "");
      out[g].containers[kind] = (out[g].containers[kind] ?? 0) + 1;
      out[g].bits += { B: 8, H: 16, W: 32 }[kind.slice(-1)];
    }
  }
  return out;
}

/**
 * Compiles for one chip into outDir. Returns { seconds, error, resources }:
 * error is the compiler's first error when the back end failed (the front
 * end's P4Info and bfrt.json are still written, so that the parity test and
 * the controller see the program's entities; main.bfa and resources.json
 * are not).
 */
export function compileTna(p4c, target, outDir) {
  const raw = mkdtempSync(join(tmpdir(), "p4-tna-"));
  const started = Date.now();
  try {
    const env = { ...process.env, PATH: existsSync(VENV) ? `${VENV}:${process.env.PATH ?? ""}` : process.env.PATH };
    const r = spawnSync(p4c, [
      "--target", target.target, "--arch", target.arch, "--std", "p4-16",
      // The opcode table in define.p4 names every opcode, used or not; register
      // actions read control-scope values that the apply block sets first.
      "--Wdisable=unused", "--Wdisable=uninitialized-use",
      "--p4runtime-force-std-externs",
      "--p4runtime-files", `${join(raw, "telemetry.p4info.txtpb")},${join(raw, "telemetry.p4info.json")}`,
      "--bf-rt-schema", join(raw, "bfrt.json"),
      "-o", raw,
      TNA_MAIN,
    ], { cwd: root, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    const seconds = Math.round((Date.now() - started) / 1000);
    const log = `${r.stdout ?? ""}${r.stderr ?? ""}`.split("\n").filter((l) => !/^W0000|absl::/.test(l)).join("\n");
    let error;
    if (r.status !== 0) {
      const first = /error:.*/.exec(log)?.[0] ?? `exit status ${r.status}`;
      const slices = /(\d+) field slices remain unallocated/.exec(log);
      error = slices ? `${first} (${slices[1]} PHV field slices unallocated)` : first;
      console.error(log);
      if (!existsSync(join(raw, "telemetry.p4info.json")) || !existsSync(join(raw, "bfrt.json"))) {
        throw new Error(`p4c-barefoot failed on ${TNA_MAIN}: ${error}`);
      }
    }
    mkdirSync(outDir, { recursive: true });
    for (const f of TNA_OUTPUTS) rmSync(join(outDir, f), { force: true });
    writeFileSync(join(outDir, "telemetry.p4info.txtpb"), readFileSync(join(raw, "telemetry.p4info.txtpb")));
    const info = JSON.parse(readFileSync(join(raw, "telemetry.p4info.json"), "utf8"));
    writeFileSync(join(outDir, "telemetry.p4info.json"), JSON.stringify(sortKeys(info), null, 1) + "\n");
    writeFileSync(join(outDir, "bfrt.json"), JSON.stringify(JSON.parse(readFileSync(join(raw, "bfrt.json"), "utf8"))) + "\n");
    let resources;
    if (!error) {
      const bfa = normaliseBfa(readFileSync(join(raw, "pipe", "main.bfa"), "utf8"));
      writeFileSync(join(outDir, "main.bfa"), bfa);
      resources = resourceSummary(bfa, target.stages);
      writeFileSync(join(outDir, "resources.json"), JSON.stringify(resources, null, 1) + "\n");
    }
    return { seconds, error, resources };
  } finally {
    rmSync(raw, { recursive: true, force: true });
  }
}

/**
 * The hash an output is compared by. bfrt.json lists the snapshot tables of
 * ingress and egress in either order from one compile to the next, and their
 * ids follow the order: compared with tables sorted by name and the snapshot
 * tables' ids left out.
 */
export function outputHash(name, data) {
  if (name !== "bfrt.json") return sha256(data);
  const bfrt = JSON.parse(data.toString("utf8"));
  const tables = [...(bfrt.tables ?? [])].sort((x, y) => String(x.name).localeCompare(String(y.name))).map((t) => {
    if (!String(t.name).startsWith("pipe.snapshot")) return t;
    const { id, depends_on, ...rest } = t;
    void id; void depends_on;
    return rest;
  });
  return sha256(JSON.stringify({ ...bfrt, tables }));
}

function outputHashes(dir) {
  return Object.fromEntries(TNA_OUTPUTS.filter((f) => existsSync(join(dir, f))).map((f) => [f, outputHash(f, readFileSync(join(dir, f)))]));
}

/** "fits (...)" or "does not fit: ..." for a manifest. */
function fitStatus(target, error, resources) {
  if (error) return `does not fit: ${error}`;
  const { ingress, egress } = resources;
  const figures = `ingress ${ingress.stages}, egress ${egress.stages} of ${target.stages} stages`;
  return resources.fits ? `fits (${figures})` : `does not fit: table placement needs ${figures}`;
}

export function buildTna() {
  const p4c = findBarefoot();
  if (!p4c) {
    console.error("p4:build: p4c-barefoot not found (set $P4C_BAREFOOT, put it on PATH, or install it under $P4_PREFIX/bin, default /opt/p4/bin); P4_SKIP_TNA=1 builds BMv2 only");
    process.exit(2);
  }
  const files = tnaSources();
  for (const target of TNA_TARGETS) {
    const dir = join(root, target.dir);
    const { seconds, error, resources } = compileTna(p4c, target, dir);
    const manifest = {
      target: `${target.name}: p4c-barefoot --target ${target.target} --arch ${target.arch}, without the assembler`,
      main: TNA_MAIN,
      compiler: barefootVersion(p4c),
      compile_seconds: seconds,
      status: fitStatus(target, error, resources),
      stages: resources ? { ingress: resources.ingress.stages, egress: resources.egress.stages, chip: target.stages } : null,
      source_sha256: sourceHash(files),
      sources: Object.fromEntries(files.map((f) => [f, sha256(readFileSync(join(root, f)))])),
      outputs: outputHashes(dir),
    };
    writeFileSync(join(root, manifestPath(target)), JSON.stringify(manifest, null, 2) + "\n");
    console.log(`p4:build: ${target.name}: compiled ${TNA_MAIN} with p4c-barefoot ${manifest.compiler.version} in ${seconds} s: ${manifest.status}; wrote ${target.dir}/`);
  }
}

/** Problems with the committed Tofino builds, as sentences; empty when all is well. */
export function checkTnaManifest(base = root) {
  const now = Object.fromEntries(tnaSources(base).map((f) => [f, sha256(readFileSync(join(base, f)))]));
  return TNA_TARGETS.flatMap((target) => {
    const mpath = join(base, manifestPath(target));
    if (!existsSync(mpath)) return [`${manifestPath(target)} is missing: run \`npm run p4:build\``];
    const manifest = JSON.parse(readFileSync(mpath, "utf8"));
    return manifestProblems(manifest, now, base, target.dir, outputHash);
  });
}

/** The committed builds' fit, one line per chip. */
export function tnaStatus(base = root) {
  return TNA_TARGETS.map((t) => {
    const mpath = join(base, manifestPath(t));
    return `${t.name}: ${existsSync(mpath) ? JSON.parse(readFileSync(mpath, "utf8")).status : "not built"}`;
  }).join("; ");
}

/** Recompiles the Tofino builds and compares; a sentence when one differs, else undefined. */
export function recompileTnaAndCompare() {
  const p4c = findBarefoot();
  if (!p4c) {
    console.log("p4:check: p4c-barefoot not installed here: Tofino outputs checked by hash only");
    return undefined;
  }
  const { version } = barefootVersion(p4c);
  for (const target of TNA_TARGETS) {
    const manifest = JSON.parse(readFileSync(join(root, manifestPath(target)), "utf8"));
    const tmp = mkdtempSync(join(tmpdir(), "p4-tna-check-"));
    try {
      const { seconds } = compileTna(p4c, target, tmp);
      const fresh = outputHashes(tmp);
      const keys = [...new Set([...Object.keys(fresh), ...Object.keys(manifest.outputs)])];
      const differ = keys.filter((k) => fresh[k] !== manifest.outputs[k]);
      if (differ.length && version === manifest.compiler.version) {
        return `recompiling p4/tna for ${target.name} with p4c-barefoot ${version} gives different ${differ.join(", ")}; run \`npm run p4:build\``;
      }
      console.log(differ.length
        ? `p4:check: p4c-barefoot ${version} differs from the manifest's ${manifest.compiler.version}, so the ${target.name} outputs were not compared`
        : `p4:check: recompiling p4/tna for ${target.name} with p4c-barefoot ${version} (${seconds} s) gives identical outputs`);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  return undefined;
}
