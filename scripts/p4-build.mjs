#!/usr/bin/env node
// Compiles p4/ with p4c (BMv2 backend) into p4/build/ (and, with the Tofino
// build's compact digests, -DDIGESTS_COMPACT, into p4/build/compact/) and
// with p4c-barefoot (Tofino 1 and 2) into p4/build/tna/ and p4/build/t2na/,
// the software switch's STF test programs (test/stf/*.p4) into
// test/stf/build/, writes the manifests (source hash, compiler version,
// output hashes) and regenerates the P4Info names.
//
//   node scripts/p4-build.mjs          compile both (needs p4c-bm2-ss and
//                                      p4c-barefoot; P4_SKIP_TNA=1 builds BMv2 only)
//   node scripts/p4-build.mjs --check  fail when p4/ changed since the last
//                                      compile or an output was edited; where
//                                      p4c is installed, also recompile and
//                                      compare (the Tofino compiles take about
//                                      a minute: only with P4_CHECK_TNA=1)
//
// p4c is found through $P4C, then PATH, then $P4_PREFIX/bin (default
// /opt/p4/bin); p4c-barefoot through $P4C_BAREFOOT, then PATH, then $P4_PREFIX/bin.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { generateNames, NAMES_FILE } from "./gen-p4-names.mjs";
import { manifestProblems } from "./p4-manifest.mjs";
import { buildTna, checkTnaManifest, recompileTnaAndCompare, tnaStatus } from "./p4-build-tna.mjs";
import { buildStf, checkStfManifest, recompileStfAndCompare } from "./p4-build-stf.mjs";

const root = new URL("..", import.meta.url).pathname;
const P4_DIR = "p4";
const MAIN = "p4/v1model/main.p4";
const BUILD = "p4/build";
const OUT = {
  json: `${BUILD}/telemetry.json`,
  p4infoText: `${BUILD}/telemetry.p4info.txtpb`,
  p4infoJson: `${BUILD}/telemetry.p4info.json`,
};
const MANIFEST = `${BUILD}/manifest.json`;
/**
 * The same program sending the compact digests of the Tofino build, so that
 * the controller's Tofino digest path is tested on BMv2 and the software switch.
 */
const COMPACT = { dir: `${BUILD}/compact`, defines: ["-DDIGESTS_COMPACT"] };
const COMPACT_MANIFEST = `${COMPACT.dir}/manifest.json`;

const sha256 = (data) => createHash("sha256").update(data).digest("hex");

/** Every P4 source file under p4/ (not the build outputs), sorted. */
export function p4Sources(dir = join(root, P4_DIR), base = root) {
  const out = [];
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) {
        if (relative(base, p) !== BUILD) walk(p);
      } else if (name.endsWith(".p4")) {
        out.push(relative(base, p));
      }
    }
  };
  walk(dir);
  return out.sort();
}

/** One hash over the paths and contents of all P4 sources. */
export function sourceHash(files = p4Sources(), base = root) {
  const h = createHash("sha256");
  for (const f of files) {
    h.update(f + "\0");
    h.update(readFileSync(join(base, f)));
    h.update("\0");
  }
  return h.digest("hex");
}

function findP4c() {
  const candidates = [process.env.P4C, ...((process.env.PATH ?? "").split(":").map((d) => join(d, "p4c-bm2-ss"))), join(process.env.P4_PREFIX || "/opt/p4", "bin/p4c-bm2-ss")];
  return candidates.find((c) => c && existsSync(c));
}

function p4cVersion(p4c) {
  const r = spawnSync(p4c, ["--version"], { encoding: "utf8" });
  const text = `${r.stdout}${r.stderr}`;
  const m = /Version\s+(\S+)(?:\s+\(SHA:\s*(\w+))?/.exec(text);
  return { version: m?.[1] ?? text.trim(), commit: m?.[2] ?? "unknown" };
}

function compile(p4c, outDir, defines = []) {
  mkdirSync(outDir, { recursive: true });
  const rel = (f) => relative(root, join(outDir, f.split("/").pop()));
  // Relative paths keep source references in the JSON independent of the checkout folder.
  execFileSync(p4c, [
    "--arch", "v1model", "--std", "p4-16",
    // The opcode table in define.p4 names every opcode, used or not.
    "--Wdisable=unused",
    ...defines,
    "-o", rel(OUT.json),
    "--p4runtime-files", `${rel(OUT.p4infoText)},${rel(OUT.p4infoJson)}`,
    MAIN,
  ], { cwd: root, stdio: "inherit" });
  // p4c writes protobuf maps (P4Info typeInfo) in hash order: sort keys so the output is stable.
  const info = join(outDir, OUT.p4infoJson.split("/").pop());
  writeFileSync(info, JSON.stringify(sortKeys(JSON.parse(readFileSync(info, "utf8"))), null, 1) + "\n");
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
  return v;
}

function outputsHashes(dir) {
  return Object.fromEntries(Object.values(OUT).map((f) => {
    const name = f.split("/").pop();
    return [name, sha256(readFileSync(join(dir, name)))];
  }));
}

function build() {
  const p4c = findP4c();
  if (!p4c) {
    console.error("p4:build: p4c-bm2-ss not found (set $P4C, put it on PATH, or install it under $P4_PREFIX/bin, default /opt/p4/bin)");
    process.exit(2);
  }
  const buildDir = join(root, BUILD);
  compile(p4c, buildDir);
  const files = p4Sources();
  const manifestOf = (target, dir, defines) => ({
    target,
    main: MAIN,
    ...(defines.length ? { defines } : {}),
    p4c: p4cVersion(p4c),
    source_sha256: sourceHash(files),
    sources: Object.fromEntries(files.map((f) => [f, sha256(readFileSync(join(root, f)))])),
    outputs: outputsHashes(dir),
  });
  const manifest = manifestOf("bmv2 v1model (simple_switch_grpc)", buildDir, []);
  writeFileSync(join(root, MANIFEST), JSON.stringify(manifest, null, 2) + "\n");
  const compactDir = join(root, COMPACT.dir);
  compile(p4c, compactDir, COMPACT.defines);
  writeFileSync(join(root, COMPACT_MANIFEST), JSON.stringify(manifestOf("bmv2 v1model (simple_switch_grpc), the Tofino build's compact digests", compactDir, COMPACT.defines), null, 2) + "\n");
  generateNames(join(root, OUT.p4infoJson), join(root, NAMES_FILE));
  buildStf(p4c);
  console.log(`p4:build: compiled ${MAIN} with p4c ${manifest.p4c.version}; wrote ${BUILD}/ and ${NAMES_FILE}`);
}

/** Problems with the committed build, as sentences; empty when all is well. */
export function checkManifest(base = root) {
  const mpath = join(base, MANIFEST);
  if (!existsSync(mpath)) return [`${MANIFEST} is missing: run \`npm run p4:build\``];
  const manifest = JSON.parse(readFileSync(mpath, "utf8"));
  const now = Object.fromEntries(p4Sources(join(base, P4_DIR), base).map((f) => [f, sha256(readFileSync(join(base, f)))]));
  const problems = manifestProblems(manifest, now, base, BUILD, (_name, data) => sha256(data));
  const cpath = join(base, COMPACT_MANIFEST);
  if (!existsSync(cpath)) problems.push(`${COMPACT_MANIFEST} is missing: run \`npm run p4:build\``);
  else problems.push(...manifestProblems(JSON.parse(readFileSync(cpath, "utf8")), now, base, COMPACT.dir, (_name, data) => sha256(data)));
  // A shared source changed is one problem, however many builds use it.
  return [...new Set([...problems, ...checkTnaManifest(base), ...checkStfManifest(base)])];
}

function check() {
  const problems = checkManifest();
  if (problems.length) {
    console.error("p4:check: the compiled P4 is out of date; run `npm run p4:build` where p4c is installed:\n  " + problems.join("\n  "));
    process.exit(1);
  }
  const p4c = findP4c();
  if (p4c) {
    const tmp = mkdtempSync(join(tmpdir(), "p4-check-"));
    try {
      const { version } = p4cVersion(p4c);
      // Recompiles one BMv2 build into dir; the outputs that differ from its
      // manifest's (compared only when the manifest's p4c is this one).
      const recompile = (dir, manifestPath, defines, label) => {
        compile(p4c, dir, defines);
        const m = JSON.parse(readFileSync(join(root, manifestPath), "utf8"));
        const fresh = outputsHashes(dir);
        const differ = Object.keys(fresh).filter((k) => fresh[k] !== m.outputs[k]);
        if (differ.length && version === m.p4c.version) {
          console.error(`p4:check: recompiling ${label}with p4c ${version} gives different ${differ.join(", ")}; run \`npm run p4:build\``);
          process.exit(1);
        }
        return { manifest: m, differ };
      };
      const { manifest, differ } = recompile(tmp, MANIFEST, [], "");
      recompile(join(tmp, "compact"), COMPACT_MANIFEST, COMPACT.defines, `${COMPACT.dir} `);
      console.log(differ.length
        ? `p4:check: sources match the manifest; p4c ${version} differs from the manifest's ${manifest.p4c.version}, so its outputs were not compared`
        : `p4:check: sources match the manifest and recompiling with p4c ${version} gives identical outputs`);
      const stfProblem = recompileStfAndCompare(p4c);
      if (stfProblem) {
        console.error(`p4:check: ${stfProblem}`);
        process.exit(1);
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  } else {
    console.log("p4:check: sources match the manifest (p4c not installed here: not recompiled)");
  }
  if (process.env.P4_CHECK_TNA === "1") {
    const problem = recompileTnaAndCompare();
    if (problem) {
      console.error(`p4:check: ${problem}`);
      process.exit(1);
    }
  } else {
    console.log(`p4:check: Tofino outputs checked by hash (set P4_CHECK_TNA=1 to recompile them with p4c-barefoot and compare); ${tnaStatus()}`);
  }
  const namesProblem = generateNames(join(root, OUT.p4infoJson), join(root, NAMES_FILE), { check: true });
  if (namesProblem) {
    console.error(`p4:check: ${namesProblem}`);
    process.exit(1);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes("--check")) check();
  else {
    build();
    if (process.env.P4_SKIP_TNA !== "1") buildTna();
  }
}
