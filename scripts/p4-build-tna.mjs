// The Tofino (TNA) build of the telemetry program: compiles p4/tna/main.p4
// with p4c-barefoot into p4/build/tna/ and writes its manifest. Used by
// scripts/p4-build.mjs (`npm run p4:build`, `npm run p4:check`).
//
// p4c-barefoot stops before the assembler (bfas is not open source), so the
// outputs are the compiler's: P4Info (text and JSON), bfrt.json,
// context.json and a resource summary taken from context.json. Outputs are
// normalised (build date, run id, paths, key order) so that a recompile
// gives the same bytes.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { manifestProblems } from "./p4-manifest.mjs";

const root = new URL("..", import.meta.url).pathname;
export const TNA_MAIN = "p4/tna/main.p4";
export const TNA_BUILD = "p4/build/tna";
export const TNA_MANIFEST = `${TNA_BUILD}/manifest.json`;
const TNA_SOURCE_DIRS = ["p4/include", "p4/tna"];
export const TNA_OUTPUTS = ["telemetry.p4info.txtpb", "telemetry.p4info.json", "bfrt.json", "context.json", "resources.json"];
const VENV = "/opt/p4-src/venv/bin";

const sha256 = (data) => createHash("sha256").update(data).digest("hex");

/** The P4 sources the TNA build reads, sorted. */
export function tnaSources(base = root) {
  const out = [];
  const walk = (d) => {
    if (!existsSync(d)) return;
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith(".p4")) out.push(relative(base, p));
    }
  };
  for (const d of TNA_SOURCE_DIRS) walk(join(base, d));
  return out.sort();
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
  const candidates = [process.env.P4C_BAREFOOT, ...((process.env.PATH ?? "").split(":").map((d) => join(d, "p4c-barefoot"))), "/opt/p4/bin/p4c-barefoot"];
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

/** context.json without what changes from one compile to the next. */
function normaliseContext(ctx) {
  const c = { ...ctx };
  for (const k of ["build_date", "run_id", "compile_command"]) delete c[k];
  return c;
}

/** Stages, SRAM/TCAM, stateful ALUs, hash and PHV use, from context.json's tables (and the PHV records). */
export function resourceSummary(ctx) {
  const stages = new Set();
  const perControl = {};
  const add = (control, key, n) => {
    perControl[control] ??= { tables: 0, registers: 0, sram_blocks: 0, tcam_blocks: 0, map_ram_blocks: 0, stages: [] };
    perControl[control][key] += n;
  };
  const registers = [];
  for (const t of ctx.tables ?? []) {
    const name = String(t.name ?? "");
    const parts = name.split(".");
    const control = parts.length > 2 ? parts.slice(0, -1).join(".") : parts[0];
    const kind = t.table_type;
    const stagesOf = [];
    for (const st of t.stage_tables ?? []) {
      stages.add(st.stage_number);
      stagesOf.push(st.stage_number);
      const mem = st.memory_resource_allocation;
      const units = (mem?.memory_units_and_vpns ?? []).reduce((n, u) => n + (u.memory_units?.length ?? 0), 0);
      if (mem?.memory_type === "sram") add(control, "sram_blocks", units);
      else if (mem?.memory_type === "tcam") add(control, "tcam_blocks", units);
      else if (mem?.memory_type === "map_ram") add(control, "map_ram_blocks", units);
      for (const extra of st.stateful_alu ? [st.stateful_alu] : []) void extra;
    }
    if (kind === "match") add(control, "tables", 1);
    if (kind === "stateful") {
      add(control, "registers", 1);
      registers.push({ name, size: t.size, width: t.register_width ?? t.alu_width ?? undefined, stages: [...new Set(stagesOf)].sort((a, b) => a - b) });
    }
    for (const s of stagesOf) if (!perControl[control].stages.includes(s)) perControl[control].stages.push(s);
  }
  for (const c of Object.values(perControl)) c.stages.sort((a, b) => a - b);
  return { stages_used: stages.size, stages: [...stages].sort((a, b) => a - b), per_control: perControl, registers };
}

/**
 * Compiles into outDir. Returns { seconds, error }: error is the compiler's
 * first error when the back end failed (the front end's P4Info and bfrt.json
 * are still written, so that the parity test and the controller see the
 * program's entities; context.json and resources.json are not).
 */
export function compileTna(p4c, outDir) {
  const raw = mkdtempSync(join(tmpdir(), "p4-tna-"));
  const started = Date.now();
  try {
    const env = { ...process.env, PATH: existsSync(VENV) ? `${VENV}:${process.env.PATH ?? ""}` : process.env.PATH };
    const r = spawnSync(p4c, [
      "--target", "tofino", "--arch", "tna", "--std", "p4-16",
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
    if (!error) {
      const ctx = normaliseContext(JSON.parse(readFileSync(join(raw, "pipe", "context.json"), "utf8")));
      writeFileSync(join(outDir, "context.json"), JSON.stringify(ctx) + "\n");
      writeFileSync(join(outDir, "resources.json"), JSON.stringify(resourceSummary(ctx), null, 1) + "\n");
    }
    return { seconds, error };
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

export function buildTna() {
  const p4c = findBarefoot();
  if (!p4c) {
    console.error("p4:build: p4c-barefoot not found (set $P4C_BAREFOOT, put it on PATH, or install it under /opt/p4/bin); P4_SKIP_TNA=1 builds BMv2 only");
    process.exit(2);
  }
  const dir = join(root, TNA_BUILD);
  const { seconds, error } = compileTna(p4c, dir);
  const files = tnaSources();
  const resources = error ? undefined : JSON.parse(readFileSync(join(dir, "resources.json"), "utf8"));
  const manifest = {
    target: "tofino (tna), p4c-barefoot without the assembler",
    main: TNA_MAIN,
    compiler: barefootVersion(p4c),
    compile_seconds: seconds,
    // "fits" when the back end placed the program; otherwise its first error
    // (only the front end's P4Info and bfrt.json are then kept).
    status: error ? `does not fit: ${error}` : "fits",
    stages_used: resources?.stages_used ?? null,
    source_sha256: sourceHash(files),
    sources: Object.fromEntries(files.map((f) => [f, sha256(readFileSync(join(root, f)))])),
    outputs: outputHashes(dir),
  };
  writeFileSync(join(root, TNA_MANIFEST), JSON.stringify(manifest, null, 2) + "\n");
  if (error) {
    console.error(`p4:build: p4c-barefoot ${manifest.compiler.version} could not fit ${TNA_MAIN} (${seconds} s): ${error}; wrote the front end's P4Info and bfrt.json to ${TNA_BUILD}/`);
    process.exitCode = 1;
    return;
  }
  console.log(`p4:build: compiled ${TNA_MAIN} with p4c-barefoot ${manifest.compiler.version} in ${seconds} s (${resources.stages_used} stages); wrote ${TNA_BUILD}/`);
}

/** Problems with the committed TNA build, as sentences; empty when all is well. */
export function checkTnaManifest(base = root) {
  const mpath = join(base, TNA_MANIFEST);
  if (!existsSync(mpath)) return [`${TNA_MANIFEST} is missing: run \`npm run p4:build\``];
  const manifest = JSON.parse(readFileSync(mpath, "utf8"));
  const now = Object.fromEntries(tnaSources(base).map((f) => [f, sha256(readFileSync(join(base, f)))]));
  return manifestProblems(manifest, now, base, TNA_BUILD, outputHash);
}

/** Recompiles the TNA build and compares; a sentence when it differs, else undefined. */
export function recompileTnaAndCompare() {
  const p4c = findBarefoot();
  if (!p4c) {
    console.log("p4:check: p4c-barefoot not installed here: TNA outputs checked by hash only");
    return undefined;
  }
  const manifest = JSON.parse(readFileSync(join(root, TNA_MANIFEST), "utf8"));
  const { version } = barefootVersion(p4c);
  const tmp = mkdtempSync(join(tmpdir(), "p4-tna-check-"));
  try {
    const { seconds, error } = compileTna(p4c, tmp);
    if (error) console.log(`p4:check: p4/tna does not fit Tofino 1 yet: ${error}`);
    const fresh = outputHashes(tmp);
    const keys = [...new Set([...Object.keys(fresh), ...Object.keys(manifest.outputs)])];
    const differ = keys.filter((k) => fresh[k] !== manifest.outputs[k]);
    if (differ.length && version === manifest.compiler.version) {
      return `recompiling p4/tna with p4c-barefoot ${version} gives different ${differ.join(", ")}; run \`npm run p4:build\``;
    }
    console.log(differ.length
      ? `p4:check: p4c-barefoot ${version} differs from the manifest's ${manifest.compiler.version}, so the TNA outputs were not compared`
      : `p4:check: recompiling p4/tna with p4c-barefoot ${version} (${seconds} s) gives identical outputs`);
    return undefined;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
