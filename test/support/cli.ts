// The rdma-telemetry command as a process of its own, from the sources, its
// output gathered (stdout and stderr), for tests that start long-running commands.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = join(import.meta.dirname, "../..");

export interface CliProcess {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

/** Starts `rdma-telemetry ARGS` in `cwd` (KAFKA_BROKERS cleared: brokers are given as flags; `env` added); `children` collects it for cleanup. */
export function startCli(args: string[], cwd: string, children: ChildProcess[], env: NodeJS.ProcessEnv = {}): CliProcess {
  const tsx = pathToFileURL(join(root, "node_modules/tsx/dist/loader.mjs")).href;
  const child = spawn(process.execPath, ["--conditions=source", "--import", tsx, join(root, "bin/rdma-telemetry.ts"), ...args], {
    cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KAFKA_BROKERS: "", ...env },
  });
  children.push(child);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return { child, out: () => out, exited: new Promise((r) => child.once("exit", r)) };
}
