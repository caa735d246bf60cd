// Files that ship with the package (the compiled P4), found from the package
// root whether the code runs from the sources (tsx) or from dist/.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function packageRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  for (;;) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "p4", "build"))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the rdma-telemetry package root above ${from}`);
    dir = up;
  }
}
