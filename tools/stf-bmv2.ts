// An STF test on BMv2's simple_switch, driven as p4c's bmv2stf.py drives
// it: the switch reads each port's packets from a pcap FIFO and writes what
// it sends to a pcap file (--use-files), tables and the replication engine
// are set with simple_switch_CLI over Thrift. Each run of consecutive
// commands goes to one CLI process, waited for before the next packet, so
// entries are in place when packets arrive. The outputs are checked with
// the same rules as the software switch's (checkExpectations), in BMv2's
// order on each port.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { closeSync, constants, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { checkExpectations, parseStf, StfNames, type Bmv2Json, type ReceivedPacket, type ResolvedMatch, type StfCommand } from "@rdma-telemetry/switch";
import { encodePcap } from "@rdma-telemetry/traffic";
import { freePort, waitForPort } from "./net.js";
import { P4_PREFIX } from "./bmv2.js";

const BIN = [join(P4_PREFIX, "bin"), ...(process.env.PATH ?? "").split(":")];
const find = (name: string) => BIN.map((d) => join(d, name)).find((p) => existsSync(p));

/**
 * How to start simple_switch_CLI: as it is, or (its `#!/usr/bin/env python3`
 * finding a python3 without Thrift's module, e.g. a pyenv one first on PATH)
 * with the system's python3; when neither starts, the reason (found once, then kept).
 */
let cliCommand: { argv: string[] } | { reason: string } | undefined;
function simpleSwitchCli(): { argv: string[] } | { reason: string } {
  if (cliCommand) return cliCommand;
  const cli = find("simple_switch_CLI");
  if (!cli) return (cliCommand = { reason: `simple_switch_CLI not found on PATH or in ${P4_PREFIX}/bin` });
  let reason = "";
  for (const argv of [[cli], ["/usr/bin/python3", cli], ["python3", cli]]) {
    const r = spawnSync(argv[0]!, [...argv.slice(1), "--help"], { encoding: "utf8", timeout: 30_000 });
    if (r.status === 0) return (cliCommand = { argv });
    reason ||= (r.stderr ?? "").trim().split("\n").at(-1) || (r.error?.message ?? `exit ${r.status}`);
  }
  return (cliCommand = { reason: `simple_switch_CLI does not start (${reason}): it needs Thrift's Python module (Debian: python3-thrift)` });
}

/** Why simple_switch cannot run an STF test here, or undefined when it can. */
export function bmv2StfUnavailable(): string | undefined {
  if (!find("simple_switch")) return `simple_switch not found on PATH or in ${P4_PREFIX}/bin`;
  const cli = simpleSwitchCli();
  if ("reason" in cli) return cli.reason;
  if (spawnSync("mkfifo", ["--version"], { stdio: "ignore" }).status !== 0) return "mkfifo is missing";
  return undefined;
}

export interface Bmv2StfResult {
  passed: boolean;
  failures: string[];
  /** what this run does not check */
  notes: string[];
  received: ReceivedPacket[];
}

/** simple_switch_CLI lines for a table or replication command, as bmv2stf.py writes them. */
export function cliLine(names: StfNames, c: StfCommand): string | undefined {
  const hex = (v: bigint) => `0x${v.toString(16)}`;
  switch (c.kind) {
    case "add": {
      const t = names.table(c.table);
      const a = names.action(t, c.action);
      const key = (m: ResolvedMatch) => (m.kind === "exact" ? hex(m.value) : m.kind === "lpm" ? `${hex(m.value)}/${m.prefixLen}` : `${hex(m.value)}&&&${hex(m.mask)}`);
      const keys = names.keys(t, c.keys).map(key).join(" ");
      // simple_switch: the lower the number, the higher the priority.
      const prio = t.matchType === "ternary" || t.matchType === "range" ? ` ${10000 - (c.priority ?? 0)}` : "";
      return `table_add ${t.name} ${a.name} ${keys} => ${a.args.map(hex).join(" ")}${prio}`;
    }
    case "setdefault": {
      const t = names.table(c.table);
      const a = names.action(t, c.action);
      return `table_set_default ${t.name} ${a.name} ${a.args.map(hex).join(" ")}`.trimEnd();
    }
    case "mirroring_add": return `mirroring_add ${c.session} ${c.port}`;
    case "mirroring_delete": return `mirroring_delete ${c.session}`;
    case "mc_mgrp_create": return `mc_mgrp_create ${c.group}`;
    case "mc_node_create": return `mc_node_create ${c.rid} ${c.ports.join(" ")}`;
    case "mc_node_update": return `mc_node_update ${c.node} ${c.ports.join(" ")}`;
    case "mc_node_associate": return `mc_node_associate ${c.group} ${c.node}`;
    case "register_write": return `register_write ${c.register} ${c.index} ${c.value}`;
    case "register_read": return `register_read ${c.register} ${c.index}`;
    case "register_reset": return `register_reset ${c.register}`;
    case "counter_write": return `counter_write ${c.counter} ${c.index} ${c.packets} ${c.bytes}`;
    case "counter_read": return `counter_read ${c.counter} ${c.index}`;
    case "remove_all": return undefined;
    default: return undefined;
  }
}

function runCli(cli: string[], thriftPort: number, lines: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cli[0]!, [...cli.slice(1), "--thrift-port", String(thriftPort)], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (out += d.toString()));
    p.on("error", reject);
    p.on("close", () => resolve(out));
    p.stdin.end(lines.join("\n") + "\n");
  });
}

/** Runs an STF test (its text) on simple_switch with the BMv2 JSON at `jsonFile`. */
export async function runStfOnBmv2(jsonFile: string, stfText: string, timeoutMs = 60_000): Promise<Bmv2StfResult> {
  const sw = find("simple_switch")!;
  const started = simpleSwitchCli();
  if ("reason" in started) throw new Error(started.reason);
  const cli = started.argv;
  const commands = parseStf(stfText);
  const names = new StfNames(JSON.parse(readFileSync(jsonFile, "utf8")) as Bmv2Json);
  const ports = [...new Set(commands.flatMap((c) => (c.kind === "packet" || c.kind === "expect" ? [c.port] : [])))].sort((a, b) => a - b);
  const dir = mkdtempSync(join(tmpdir(), "stf-bmv2-"));
  const failures: string[] = [];
  const notes: string[] = [];
  let proc: ChildProcess | undefined;
  const fifos = new Map<number, FileHandle>();
  const pending = new Map<number, Promise<FileHandle>>();
  try {
    for (const p of ports) {
      const r = spawnSync("mkfifo", [join(dir, `pcap${p}_in.pcap`)], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`mkfifo: ${r.stderr.trim()}`);
    }
    const thriftPort = await freePort();
    let exited: string | undefined;
    let log = "";
    proc = spawn(sw, ["--log-file", "switch.log", "--log-flush", "--use-files", "0", "--thrift-port", String(thriftPort), "--device-id", String(thriftPort), "--notifications-addr", `ipc://${join(dir, "notifications.ipc")}`, ...ports.flatMap((p) => ["-i", `${p}@pcap${p}`]), resolve(jsonFile)], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    proc.stdout!.on("data", (d: Buffer) => (log += d.toString()));
    proc.stderr!.on("data", (d: Buffer) => (log += d.toString()));
    proc.on("exit", (code, signal) => (exited = `simple_switch exited (${signal ?? code}): ${log.trim().split("\n").slice(-3).join(" / ")}`));
    const deadline = Date.now() + timeoutMs;
    // simple_switch opens the FIFOs in port order before its Thrift server starts.
    for (const p of ports) {
      const opening = open(join(dir, `pcap${p}_in.pcap`), "w");
      pending.set(p, opening);
      const fh = await Promise.race([opening, new Promise<never>((_, rej) => {
        const t = setInterval(() => {
          if (exited || Date.now() > deadline) {
            clearInterval(t);
            rej(new Error(exited ?? `simple_switch did not open port ${p}'s input`));
          }
        }, 50);
        void opening.finally(() => clearInterval(t));
      })]);
      pending.delete(p);
      await fh.write(encodePcap([]));
      fifos.set(p, fh);
    }
    await waitForPort(thriftPort, Math.max(1000, deadline - Date.now()), () => exited);
    const startNs = BigInt(Date.now()) * 1_000_000n;
    let sent = 0;
    let batch: string[] = [];
    const flush = async () => {
      if (!batch.length) return;
      const out = await runCli(cli, thriftPort, batch);
      for (const l of out.split("\n")) if (/error|invalid/i.test(l)) failures.push(`simple_switch_CLI: ${l.trim()}`);
      batch = [];
    };
    for (const c of commands) {
      if (c.kind === "packet") {
        await flush();
        // Strictly increasing timestamps, 1 ms apart: simple_switch merges its input captures by timestamp.
        const ns = startNs + BigInt(sent++) * 1_000_000n;
        const rec = encodePcap([{ timestampNs: ns, data: Buffer.from(c.data, "hex") }]).subarray(24);
        await fifos.get(c.port)!.write(rec);
        continue;
      }
      if (c.kind === "check_counter") {
        notes.push(`line ${c.line}: check_counter is not checked on BMv2 (p4c's runner ignores it too)`);
        continue;
      }
      const line = cliLine(names, c);
      if (line) batch.push(line);
    }
    await flush();
    for (const fh of fifos.values()) await fh.close();
    fifos.clear();
    // Give the switch time to send what it has, as bmv2stf.py does.
    await new Promise((r) => setTimeout(r, 2000));
    proc.kill("SIGTERM");
    await new Promise((r) => (exited ? r(undefined) : proc!.once("exit", r)));
    const received: ReceivedPacket[] = [];
    let n = 0;
    for (const p of ports) {
      const f = join(dir, `pcap${p}_out.pcap`);
      if (!existsSync(f)) continue;
      const bytes = readFileSync(f);
      if (bytes.length === 0) continue;
      // simple_switch's order on a port is the order to check: no two packets share an input.
      for (const data of pcapPackets(bytes, f)) received.push({ port: p, hex: data.toString("hex").toUpperCase(), input: n++ });
    }
    failures.push(...checkExpectations(commands, received));
    return { passed: failures.length === 0, failures, notes, received };
  } catch (err) {
    failures.push((err as Error).message);
    return { passed: false, failures, notes, received: [] };
  } finally {
    for (const fh of fifos.values()) await fh.close().catch(() => undefined);
    // A FIFO the switch never opened: opening its read end lets our pending open finish.
    for (const [p, opening] of pending) {
      try {
        closeSync(openSync(join(dir, `pcap${p}_in.pcap`), constants.O_RDONLY | constants.O_NONBLOCK));
      } catch {
        // gone already
      }
      await opening.then((fh) => fh.close()).catch(() => undefined);
    }
    if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The packets of simple_switch's output pcap (it writes link type 0, which the capture reader refuses). */
function pcapPackets(buf: Buffer, name: string): Buffer[] {
  const magic = buf.readUInt32LE(0);
  const le = magic === 0xa1b2c3d4 || magic === 0xa1b23c4d;
  if (!le && buf.readUInt32BE(0) !== 0xa1b2c3d4 && buf.readUInt32BE(0) !== 0xa1b23c4d) throw new Error(`${name}: not a pcap file`);
  const u32 = (o: number) => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const out: Buffer[] = [];
  for (let off = 24; off + 16 <= buf.length; ) {
    const incl = u32(off + 8);
    if (off + 16 + incl > buf.length) throw new Error(`${name}: record at ${off} is cut short`);
    out.push(buf.subarray(off + 16, off + 16 + incl));
    off += 16 + incl;
  }
  return out;
}
