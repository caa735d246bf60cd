#!/usr/bin/env node
// The package lint: the workspace packages depend on each other one way only.
//
//   node scripts/lint-packages.mjs [--root DIR]
//
// Fails (exit 1, one line a problem) when
// - a package imports a file of another package by path instead of by name;
// - a package imports a package (workspace or npm) its package.json does not
//   list among its dependencies;
// - the workspace packages' dependencies form a cycle;
// - the application (app/, bin/, bench/) reaches into a package's files by
//   path instead of through its public face (tests may: they test internals).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";

const APP_DIRS = ["app", "bin", "bench"];

function walk(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (n === "node_modules" || n === "dist" || n === "generated") return [];
    return statSync(p).isDirectory() ? walk(p) : p.endsWith(".ts") ? [p] : [];
  });
}

/** Import specifiers of a TypeScript file (static, dynamic and re-exports). */
function imports(file) {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:^|\s)(?:import|export)\s[^;]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)/gm)].map((m) => m[1] ?? m[2]);
}

/** The npm package a bare specifier names: "@scope/name" or "name". */
function packageName(spec) {
  const parts = spec.split("/");
  return spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

export function lintPackages(root) {
  const rootPkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const packages = (rootPkg.workspaces ?? []).map((dir) => {
    const pkg = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"));
    return { dir, name: pkg.name, deps: new Set(Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies })) };
  });
  const byName = new Map(packages.map((p) => [p.name, p]));
  const owner = (abs) => packages.find((p) => abs === join(root, p.dir) || abs.startsWith(join(root, p.dir) + sep));
  const problems = [];
  const builtins = new Set(builtinModules);

  for (const p of packages) {
    for (const file of walk(join(root, p.dir, "src"))) {
      const at = relative(root, file);
      for (const spec of imports(file)) {
        if (spec.startsWith(".")) {
          const target = resolve(dirname(file), spec);
          const o = owner(target);
          if (o !== p) problems.push(`${at}: imports '${spec}' by path, outside ${p.name}${o ? ` (use ${o.name})` : ""}`);
        } else if (spec.startsWith("node:") || builtins.has(spec)) {
          continue;
        } else {
          const name = packageName(spec);
          if (!p.deps.has(name)) problems.push(`${at}: imports ${name}, which ${p.name} does not list in its dependencies${byName.has(name) ? " (against the package direction?)" : ""}`);
        }
      }
    }
  }

  // The workspace graph: one way only.
  const state = new Map();
  const visit = (p, path) => {
    if (state.get(p.name) === "done") return;
    if (state.get(p.name) === "open") {
      problems.push(`package cycle: ${[...path.slice(path.indexOf(p.name)), p.name].join(" -> ")}`);
      return;
    }
    state.set(p.name, "open");
    for (const d of p.deps) if (byName.has(d)) visit(byName.get(d), [...path, p.name]);
    state.set(p.name, "done");
  };
  for (const p of packages) visit(p, []);

  for (const dir of APP_DIRS) {
    for (const file of walk(join(root, dir))) {
      for (const spec of imports(file)) {
        if (!spec.startsWith(".")) continue;
        const o = owner(resolve(dirname(file), spec));
        if (o) problems.push(`${relative(root, file)}: imports '${spec}' by path; use ${o.name}`);
      }
    }
  }
  return { problems, packages: packages.map((p) => ({ name: p.name, deps: [...p.deps].filter((d) => byName.has(d)) })) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const i = process.argv.indexOf("--root");
  const root = i > 0 ? resolve(process.argv[i + 1]) : new URL("..", import.meta.url).pathname;
  const { problems, packages } = lintPackages(root);
  if (problems.length) {
    for (const p of problems) console.error(`lint-packages: ${p}`);
    process.exit(1);
  }
  console.log(`lint-packages: ${packages.length} packages, one way: ${packages.map((p) => `${p.name.replace("@rdma-telemetry/", "")}${p.deps.length ? ` <- ${p.deps.map((d) => d.replace("@rdma-telemetry/", "")).join(",")}` : ""}`).join("; ")}`);
}
