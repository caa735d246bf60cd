// BMv2 simple_switch_grpc as the tests and the benchmarks start it: with no
// pipeline (a controller pushes one), its ports on veth pairs (the switch
// holds `<name>s<port>`, the caller sends and receives on `<name>h<port>`),
// on a free port, bound to the life of this process.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { freePort, waitForPort } from "./net.js";

/** Where the P4 toolchain (p4c, BMv2, PI) is installed: $P4_PREFIX, default /opt/p4; PATH is searched too. */
export const P4_PREFIX = process.env.P4_PREFIX || "/opt/p4";

/** simple_switch_grpc from SIMPLE_SWITCH_GRPC, PATH or $P4_PREFIX/bin (default /opt/p4). */
export function findBmv2(): string | undefined {
  const candidates = [process.env.SIMPLE_SWITCH_GRPC, ...(process.env.PATH ?? "").split(":").map((d) => join(d, "simple_switch_grpc")), join(P4_PREFIX, "bin/simple_switch_grpc")];
  return candidates.find((c) => c && existsSync(c));
}

const works = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

/** Why BMv2 cannot be started here, or undefined when it can. */
export function bmv2Unavailable(): string | undefined {
  return !findBmv2() ? "simple_switch_grpc not found (set SIMPLE_SWITCH_GRPC, put it on PATH, or install BMv2 under $P4_PREFIX, default /opt/p4)"
    : process.getuid?.() !== 0 ? "creating veth pairs needs root"
    : !works("ip", ["-V"]) ? "the 'ip' command (iproute2) is missing"
    : !works("python3", ["--version"]) ? "python3 (binds the switch to this process) is missing"
    : undefined;
}

function ip(...args: string[]): void {
  const r = spawnSync("ip", args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.trim()}`);
}

// Runs the switch with PR_SET_PDEATHSIG, so that it dies with this process
// however that ends; BMV2_PRELOAD (if set) is preloaded into the switch only.
const BOUND_EXEC = [
  "import ctypes, os, sys",
  "ctypes.CDLL(None).prctl(1, 9)",
  "if os.getppid() != int(sys.argv[1]): sys.exit(1)",
  "env = dict(os.environ)",
  "pre = env.pop('BMV2_PRELOAD', '')",
  "if pre: env['LD_PRELOAD'] = pre",
  "os.execve(sys.argv[2], sys.argv[2:], env)",
].join("\n");

/** Whether this build of simple_switch_grpc has a Thrift server (BMv2 built with Thrift). */
function helpMentionsThrift(binary: string): boolean {
  return spawnSync(binary, ["--help"], { encoding: "utf8" }).stdout?.includes("--thrift-port") ?? false;
}

export interface Bmv2LaunchOptions {
  /** prefix of the veth names (at most 6 characters) */
  name: string;
  ports: readonly number[];
  deviceId: number;
  /** a shared library preloaded into the switch (e.g. a clock tap) */
  preload?: string;
  env?: NodeJS.ProcessEnv;
}

export interface Bmv2Process {
  address: string;
  proc: ChildProcess;
  /** why it exited, once it has */
  exited(): string | undefined;
  /** kills it and removes the veth pairs */
  cleanup(): void;
}

/**
 * Three characters of this process's id, for veth names: two test runs on one
 * machine (two worktrees, say) then never take each other's interfaces.
 */
export const VETH_TAG = (process.pid % 46_656).toString(36).padStart(3, "0");

/** Creates the veth pairs and starts simple_switch_grpc on them; resolves once it listens. */
export async function launchBmv2(o: Bmv2LaunchOptions): Promise<Bmv2Process> {
  const binary = findBmv2();
  if (!binary) throw new Error(bmv2Unavailable());
  const { name, ports } = o;
  const cleanupPorts = () => {
    for (const p of ports) spawnSync("ip", ["link", "del", `${name}s${p}`], { stdio: "ignore" });
  };
  for (const p of ports) {
    spawnSync("ip", ["link", "del", `${name}s${p}`], { stdio: "ignore" });
    ip("link", "add", `${name}s${p}`, "type", "veth", "peer", "name", `${name}h${p}`);
    for (const dev of [`${name}s${p}`, `${name}h${p}`]) {
      // No IPv6: the kernel would send router solicitations into the switch.
      spawnSync("sysctl", ["-qw", `net.ipv6.conf.${dev}.disable_ipv6=1`]);
      ip("link", "set", dev, "mtu", "9000");
      ip("link", "set", dev, "up");
    }
  }
  const grpcPort = await freePort();
  const address = `127.0.0.1:${grpcPort}`;
  // Its Thrift server too gets a port of its own (9090 by default): a second
  // switch on 9090 would never open its gRPC port.
  const thrift = helpMentionsThrift(binary) ? ["--thrift-port", String(await freePort())] : [];
  const args = ["--no-p4", "--device-id", String(o.deviceId), "--log-level", "error", ...thrift, ...ports.flatMap((p) => ["-i", `${p}@${name}s${p}`]), "--", "--grpc-server-addr", address, "--cpu-port", "510"];
  const proc = spawn("python3", ["-c", BOUND_EXEC, String(process.pid), binary, ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...o.env, BMV2_PRELOAD: o.preload ?? "" },
  });
  let stderr = "";
  let exited: string | undefined;
  proc.stderr!.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  proc.on("exit", (code, signal) => {
    exited = `simple_switch_grpc exited (${signal ?? code}): ${stderr.trim()}`;
  });
  const cleanup = () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    cleanupPorts();
  };
  try {
    await waitForPort(grpcPort, 60_000, () => exited);
    // simple_switch_grpc listens with SO_REUSEPORT: a second switch on the same
    // port would take some of our connections. The device id makes a
    // controller that reaches the wrong one fail instead.
    const listeners = spawnSync("ss", ["-Hltn", `sport = :${grpcPort}`], { encoding: "utf8" }).stdout.trim().split("\n").filter(Boolean);
    if (listeners.length > 1) throw new Error(`another process listens on ${address} too`);
  } catch (err) {
    cleanup();
    throw err;
  }
  return { address, proc, exited: () => exited, cleanup };
}
