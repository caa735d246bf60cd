// Vitest global setup: the tests run the `rdma-telemetry` command as it ships,
// dist/bin/rdma-telemetry.js (test/support/cli.ts), so the build is brought up
// to date first: `tsc -b tsconfig.build.json`, about a second when nothing
// changed. Starting the built command takes about half the CPU of compiling
// the sources on every start, and the suite starts it hundreds of times.
import { execFileSync } from "node:child_process";
import { join } from "node:path";

export default function setup(): void {
  const root = join(import.meta.dirname, "../..");
  try {
    execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b", "tsconfig.build.json"], { cwd: root, stdio: "pipe" });
  } catch (e) {
    const err = e as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`the build the tests run (tsc -b tsconfig.build.json) failed:\n${err.stdout?.toString() ?? ""}${err.stderr?.toString() ?? ""}`);
  }
}
