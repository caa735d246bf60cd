// The rdma-telemetry command as a process of its own, as it ships
// (dist/bin/rdma-telemetry.js, the package's bin; test/setup/build.ts brings
// the build up to date before any test), its output gathered (stdout and
// stderr), for tests that start long-running commands.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

const root = join(import.meta.dirname, "../..");

/** What follows `node` to run the `rdma-telemetry` command: the built bin script. */
export const CLI: readonly string[] = [join(root, "dist/bin/rdma-telemetry.js")];

export interface CliProcess {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

/** Starts `rdma-telemetry ARGS` in `cwd` (KAFKA_BROKERS cleared: brokers are given as flags; `env` added); `children` collects it for cleanup. */
export function startCli(args: string[], cwd: string, children: ChildProcess[], env: NodeJS.ProcessEnv = {}): CliProcess {
  const child = spawn(process.execPath, [...CLI, ...args], {
    cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KAFKA_BROKERS: "", ...env },
  });
  children.push(child);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return { child, out: () => out, exited: new Promise((r) => child.once("exit", r)) };
}
