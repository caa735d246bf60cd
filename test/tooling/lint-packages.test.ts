// The package lint (scripts/lint-packages.mjs) passes on this tree, and fails
// on a tree with an import against the package direction, an import of
// another package's file by path, and a cycle.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
// @ts-expect-error -- plain ESM script without types
import { lintPackages } from "../../scripts/lint-packages.mjs";

type Lint = (root: string) => { problems: string[]; packages: Array<{ name: string; deps: string[] }> };
const lint = lintPackages as Lint;
const root = new URL("../..", import.meta.url).pathname;
const tmp = mkdtempSync(join(tmpdir(), "lint-packages-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

test("this tree: every package depends one way, the application uses their public faces", () => {
  const r = lint(root);
  expect(r.problems).toEqual([]);
  const deps = Object.fromEntries(r.packages.map((p) => [p.name, p.deps]));
  expect(deps["@rdma-telemetry/p4runtime"]).toEqual([]);
  expect(deps["@rdma-telemetry/exporter"]).not.toContain("@rdma-telemetry/controller");
});

/** A copy of this tree's package manifests and sources, to break on purpose. */
function copy(name: string): string {
  const dir = join(tmp, name);
  mkdirSync(dir);
  cpSync(join(root, "package.json"), join(dir, "package.json"));
  for (const ws of ["p4runtime", "contract", "switch", "p4runtime-controller", "exporter", "traffic", "app", "bin"]) {
    cpSync(join(root, ws), join(dir, ws), { recursive: true, filter: (s) => !s.includes("/dist") && !s.includes("/generated") && !s.includes("/proto") });
  }
  return dir;
}

test("an import against the direction fails the lint, naming the file and the package", () => {
  const dir = copy("against");
  writeFileSync(join(dir, "exporter/src/bad.ts"), 'import { TelemetryController } from "@rdma-telemetry/controller";\nexport const c = TelemetryController;\n');
  expect(lint(dir).problems).toEqual(["exporter/src/bad.ts: imports @rdma-telemetry/controller, which @rdma-telemetry/exporter does not list in its dependencies (against the package direction?)"]);
});

test("another package's file by path, the application reaching into a package, and a cycle all fail the lint", () => {
  const dir = copy("path");
  writeFileSync(join(dir, "switch/src/bad.ts"), 'export { P4Schema } from "../../p4runtime/src/schema.js";\n');
  writeFileSync(join(dir, "app/bad.ts"), 'export { Exporter } from "../exporter/src/exporter.js";\n');
  const pj = join(dir, "p4runtime/package.json");
  writeFileSync(pj, JSON.stringify({ name: "@rdma-telemetry/p4runtime", dependencies: { "@rdma-telemetry/switch": "0.1.0", "@grpc/grpc-js": "1", "@bufbuild/protobuf": "2" } }));
  const problems = lint(dir).problems;
  expect(problems).toContain("switch/src/bad.ts: imports '../../p4runtime/src/schema.js' by path, outside @rdma-telemetry/switch (use @rdma-telemetry/p4runtime)");
  expect(problems).toContain("app/bad.ts: imports '../exporter/src/exporter.js' by path; use @rdma-telemetry/exporter");
  expect(problems.some((p) => p.startsWith("package cycle: @rdma-telemetry/p4runtime -> @rdma-telemetry/switch -> @rdma-telemetry/p4runtime"))).toBe(true);
});
