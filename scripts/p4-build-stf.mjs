// The software switch's own STF tests (test/stf/*.p4, one feature each):
// compiled with p4c-bm2-ss into test/stf/build/, with a manifest of source
// and output hashes, since CI has no p4c. Used by p4-build.mjs: `npm run
// p4:build` compiles them, `npm run p4:check` fails when a .p4 changed
// without a recompile and, where p4c is installed, recompiles and compares.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { manifestProblems } from "./p4-manifest.mjs";

const root = new URL("..", import.meta.url).pathname;
const STF_DIR = "test/stf";
const BUILD = "test/stf/build";
const MANIFEST = `${BUILD}/manifest.json`;

const sha256 = (data) => createHash("sha256").update(data).digest("hex");

/** The STF test programs, as paths from the repository root, sorted. */
export function stfSources(base = root) {
  const dir = join(base, STF_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f.endsWith(".p4")).sort().map((f) => `${STF_DIR}/${f}`);
}

function p4cVersion(p4c) {
  const r = spawnSync(p4c, ["--version"], { encoding: "utf8" });
  return /Version\s+(\S+)/.exec(`${r.stdout}${r.stderr}`)?.[1] ?? "unknown";
}

/** Compiles every test program into `outDir`; returns each output's hash by name. */
function compileAll(p4c, outDir) {
  mkdirSync(outDir, { recursive: true });
  const outputs = {};
  for (const src of stfSources()) {
    const name = src.split("/").pop().replace(/\.p4$/, ".json");
    // From the repository root with relative paths: source references in the JSON do not depend on the checkout.
    execFileSync(p4c, ["--arch", "v1model", "--std", "p4-16", "--Wdisable=uninitialized-use", "-o", relative(root, join(outDir, name)), src], { cwd: root, stdio: "inherit" });
    outputs[name] = sha256(readFileSync(join(outDir, name)));
  }
  return outputs;
}

/** Compiles the STF test programs and writes their manifest. */
export function buildStf(p4c) {
  const outDir = join(root, BUILD);
  rmSync(outDir, { recursive: true, force: true });
  const outputs = compileAll(p4c, outDir);
  const sources = Object.fromEntries(stfSources().map((f) => [f, sha256(readFileSync(join(root, f)))]));
  writeFileSync(join(root, MANIFEST), JSON.stringify({ target: "bmv2 v1model (simple_switch): the software switch's STF tests", p4c: { version: p4cVersion(p4c) }, sources, outputs }, null, 2) + "\n");
  console.log(`p4:build: compiled ${Object.keys(outputs).length} STF test programs into ${BUILD}/`);
}

/** Problems with the committed STF test builds, as sentences. */
export function checkStfManifest(base = root) {
  const mpath = join(base, MANIFEST);
  if (!existsSync(mpath)) return stfSources(base).length ? [`${MANIFEST} is missing: run \`npm run p4:build\``] : [];
  const manifest = JSON.parse(readFileSync(mpath, "utf8"));
  const now = Object.fromEntries(stfSources(base).map((f) => [f, sha256(readFileSync(join(base, f)))]));
  return manifestProblems(manifest, now, base, BUILD, (_name, data) => sha256(data));
}

/** Recompiles the STF test programs and compares with the manifest; a problem, or undefined. */
export function recompileStfAndCompare(p4c) {
  const manifest = JSON.parse(readFileSync(join(root, MANIFEST), "utf8"));
  const version = p4cVersion(p4c);
  const tmp = mkdtempSync(join(tmpdir(), "p4-check-stf-"));
  try {
    const fresh = compileAll(p4c, tmp);
    const differ = Object.keys(fresh).filter((k) => fresh[k] !== manifest.outputs[k]);
    if (differ.length && version === manifest.p4c.version) return `recompiling the STF test programs with p4c ${version} gives different ${differ.join(", ")}; run \`npm run p4:build\``;
    console.log(differ.length
      ? `p4:check: STF test programs: p4c ${version} differs from the manifest's ${manifest.p4c.version}, so their outputs were not compared`
      : `p4:check: STF test programs: recompiling with p4c ${version} gives identical outputs`);
    return undefined;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
