// p4c's BMv2 STF corpus on the software switch: every v1model
// `*-bmv2.p4` under p4c's testdata/p4_16_samples that has an `.stf`,
// compiled with p4c-bm2-ss as p4c's run-bmv2-test.py does (the JSON cached
// by the source's hash), its STF run in process. Prints each test's
// outcome — pass, refused at load (with the reason), wrong output — and the
// counts; with --bmv2, also simple_switch's outcome on the same tests.
//
// With --parser-inline, also p4c's parser-inline suite, compiled without and
// with --parser-inline-opt as p4c's CMakeLists runs it (counted apart).
//
//   npm run stf:corpus -- [--p4c-src DIR] [--cache DIR] [--bmv2] [--parser-inline] [--jobs N] [NAME-FILTER...]
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import { CompiledProgram, InvalidProgramError, UnsupportedProgramError, runStf, StfUnsupportedError, type Bmv2Json } from "@rdma-telemetry/switch";
import { bmv2StfUnavailable, runStfOnBmv2 } from "./stf-bmv2.js";
import { P4_PREFIX } from "./bmv2.js";

type Outcome =
  | { kind: "pass" }
  | { kind: "refused"; reason: string }
  | { kind: "wrong-output"; detail: string }
  | { kind: "not-compiled"; reason: string }
  | { kind: "error"; detail: string };

const { values: opts, positionals: filters } = parseArgs({
  options: {
    "p4c-src": { type: "string", default: process.env.P4C_SRC ?? join(P4_PREFIX, "src/p4c") },
    cache: { type: "string", default: join(tmpdir(), "rdma-telemetry-stf-corpus") },
    p4c: { type: "string", default: existsSync(join(P4_PREFIX, "bin/p4c-bm2-ss")) ? join(P4_PREFIX, "bin/p4c-bm2-ss") : "p4c-bm2-ss" },
    bmv2: { type: "boolean", default: false },
    "parser-inline": { type: "boolean", default: false },
    jobs: { type: "string", default: "2" },
    verbose: { type: "boolean", short: "v", default: false },
  },
  allowPositionals: true,
});

const samples = join(opts["p4c-src"]!, "testdata", "p4_16_samples");

/** A test: its name as printed, its program and STF (path from p4_16_samples, no extension), the compiler flags. */
interface CorpusTest {
  name: string;
  path: string;
  flags: string[];
  suite: "bmv2" | "parser-inline";
}

/** Compiler flags that p4c's backends/bmv2/CMakeLists.txt gives single tests. */
const EXTRA_FLAGS: Record<string, string[]> = {
  // its test loads an extern module into simple_switch (libextern_func_module.so)
  "extern-funcs-bmv2": ["--emit-externs"],
};

const withStf = (dir: string) => readdirSync(join(samples, dir)).filter((f) => f.endsWith(".p4") && existsSync(join(samples, dir, f.replace(/\.p4$/, ".stf"))));
const tests: CorpusTest[] = withStf(".")
  .filter((f) => f.endsWith("-bmv2.p4"))
  .filter((f) => /include.*v1model\.p4/.test(readFileSync(join(samples, f), "utf8")))
  .map((f) => f.replace(/\.p4$/, ""))
  .map((n) => ({ name: n, path: n, flags: EXTRA_FLAGS[n] ?? [], suite: "bmv2" as const }));
if (opts["parser-inline"]) {
  for (const f of withStf("parser-inline")) {
    const n = f.replace(/\.p4$/, "");
    tests.push({ name: `parser-inline/${n}`, path: `parser-inline/${n}`, flags: [], suite: "parser-inline" });
    tests.push({ name: `parser-inline/${n} (--parser-inline-opt)`, path: `parser-inline/${n}`, flags: ["--parser-inline-opt"], suite: "parser-inline" });
  }
}
const selected = tests.filter((t) => !filters.length || filters.some((x) => t.name.includes(x))).sort((a, b) => a.name.localeCompare(b.name));

const version = spawnSync(opts.p4c!, ["--version"], { encoding: "utf8" });
if (version.status !== 0) {
  console.error(`${opts.p4c}: cannot run it (${version.error?.message ?? version.stderr.trim()})`);
  process.exit(2);
}
const cacheDir = join(opts.cache!, createHash("sha256").update(version.stdout).digest("hex").slice(0, 12));
mkdirSync(cacheDir, { recursive: true });

/** Compiles a test as run-bmv2-test.py does (`p4c-bm2-ss -o JSON [FLAGS] FILE`), or reads the cached JSON. */
function compile(t: CorpusTest): Promise<{ json: string } | { error: string }> {
  const src = join(samples, `${t.path}.p4`);
  const flags = t.flags;
  const hash = createHash("sha256").update(readFileSync(src)).update(flags.join(" ")).digest("hex").slice(0, 16);
  const out = join(cacheDir, `${basename(t.path)}-${hash}.json`);
  const failed = `${out}.error`;
  if (existsSync(out)) return Promise.resolve({ json: out });
  if (existsSync(failed)) return Promise.resolve({ error: readFileSync(failed, "utf8") });
  return new Promise((resolve) => {
    const child = spawn("nice", ["-n", "10", opts.p4c!, "-o", out, ...flags, src], { cwd: join(samples, t.path, ".."), stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    child.stdout.on("data", (d: Buffer) => (text += d.toString()));
    child.stderr.on("data", (d: Buffer) => (text += d.toString()));
    child.on("close", (code) => {
      if (code === 0 && existsSync(out)) return resolve({ json: out });
      const error = (text.split("\n").find((l) => /error/i.test(l)) ?? text.split("\n")[0] ?? `exit ${code}`).trim();
      writeFileSync(failed, error);
      resolve({ error });
    });
  });
}

function runOne(t: CorpusTest, jsonFile: string): Outcome {
  const stf = readFileSync(join(samples, `${t.path}.stf`), "utf8");
  let program: CompiledProgram;
  try {
    program = new CompiledProgram(JSON.parse(readFileSync(jsonFile, "utf8")) as Bmv2Json);
  } catch (err) {
    if (err instanceof UnsupportedProgramError || err instanceof InvalidProgramError) return { kind: "refused", reason: err.message };
    return { kind: "error", detail: `load: ${(err as Error).stack ?? err}` };
  }
  try {
    const r = runStf(program, stf);
    if (r.passed) return { kind: "pass" };
    return { kind: "wrong-output", detail: [...r.errors, ...r.failures].slice(0, 4).join("; ") };
  } catch (err) {
    if (err instanceof StfUnsupportedError) return { kind: "refused", reason: err.message };
    return { kind: "error", detail: (err as Error).message };
  }
}

async function main(): Promise<void> {
  const jobs = Math.max(1, Number(opts.jobs));
  const compiled = new Map<CorpusTest, { json: string } | { error: string }>();
  let next = 0;
  await Promise.all(Array.from({ length: jobs }, async () => {
    while (next < selected.length) {
      const t = selected[next++]!;
      compiled.set(t, await compile(t));
    }
  }));
  const bmv2Why = opts.bmv2 ? bmv2StfUnavailable() : undefined;
  if (opts.bmv2 && bmv2Why) console.log(`BMv2: not run (${bmv2Why})`);
  const results: Array<{ test: CorpusTest; ours: Outcome; bmv2?: string }> = [];
  for (const t of selected) {
    const c = compiled.get(t)!;
    const ours: Outcome = "error" in c ? { kind: "not-compiled", reason: c.error } : runOne(t, c.json);
    let bmv2: string | undefined;
    if (opts.bmv2 && !bmv2Why && "json" in c) {
      const r = await runStfOnBmv2(c.json, readFileSync(join(samples, `${t.path}.stf`), "utf8"));
      bmv2 = r.passed ? "pass" : `fail: ${r.failures.slice(0, 2).join("; ")}`;
    }
    results.push({ test: t, ours, ...(bmv2 !== undefined ? { bmv2 } : {}) });
    const line = `${t.name}: ${describe(ours)}${bmv2 !== undefined ? `   [BMv2: ${bmv2}]` : ""}`;
    if (opts.verbose || ours.kind !== "pass" || (bmv2 !== undefined && bmv2 !== "pass")) console.log(line);
  }
  console.log("");
  const suites: Array<[CorpusTest["suite"], string]> = [
    ["bmv2", "v1model *-bmv2.p4 with an .stf"],
    ["parser-inline", "parser-inline/*.p4 with an .stf, without and with --parser-inline-opt"],
  ];
  for (const [suite, what] of suites) {
    const rs = results.filter((r) => r.test.suite === suite);
    if (!rs.length) continue;
    const count = (k: Outcome["kind"]) => rs.filter((r) => r.ours.kind === k).length;
    console.log(`p4c STF corpus (${basename(opts["p4c-src"]!)} testdata/p4_16_samples, ${what}): ${rs.length} tests`);
    console.log(`  software switch: ${count("pass")} pass, ${count("refused")} refused by name (at load, or at a command needing what the switch lacks), ${count("wrong-output")} wrong output, ${count("error")} runner errors, ${count("not-compiled")} not compiled by p4c`);
    if (opts.bmv2 && !bmv2Why) {
      const bm = rs.filter((r) => r.bmv2 !== undefined);
      console.log(`  BMv2 simple_switch, same run: ${bm.filter((r) => r.bmv2 === "pass").length} pass, ${bm.filter((r) => r.bmv2 !== "pass").length} fail (of ${bm.length} compiled)`);
    }
  }
  const bad = results.filter((r) => r.ours.kind === "wrong-output" || r.ours.kind === "error").length;
  process.exitCode = bad > 0 ? 1 : 0;
}

function describe(o: Outcome): string {
  switch (o.kind) {
    case "pass": return "pass";
    case "refused": return `refused: ${o.reason}`;
    case "wrong-output": return `WRONG OUTPUT: ${o.detail}`;
    case "not-compiled": return `not compiled by p4c: ${o.reason}`;
    case "error": return `RUNNER ERROR: ${o.detail}`;
  }
}

await main();
