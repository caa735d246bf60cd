// BMv2 simple_switch_grpc for the tests: its ports are veth pairs (the
// switch holds one end, the tests send and receive on the other), it is
// configured by the real telemetry controller over P4Runtime, and a clock tap
// (clock-tap.c) records the clock readings its ingress timestamps come from.
//
// Available wherever simple_switch_grpc is installed (SIMPLE_SWITCH_GRPC,
// PATH or /opt/p4/bin) and the tests run as root with iproute2, python3 and a
// C compiler; `bmv2SkipReason` says what is missing otherwise.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Topology } from "../../app/topology.js";
import { parseConfig, type ControllerConfig } from "../../p4runtime-controller/src/config.js";
import { bmv2Unavailable, launchBmv2, VETH_TAG, type Bmv2Process } from "../../tools/bmv2.js";

const here = new URL(".", import.meta.url).pathname;
const root = new URL("../..", import.meta.url).pathname;

/** Why the BMv2 tests cannot run here, or undefined when they can (they also build a clock tap). */
export const bmv2SkipReason: string | undefined = bmv2Unavailable() ?? (spawnSync("cc", ["--version"], { stdio: "ignore" }).status !== 0 ? "a C compiler (cc, to build the clock tap) is missing" : undefined);

/** Says loudly that `what` did not run, and why. */
export function announceSkip(what: string): void {
  if (bmv2SkipReason) console.warn(`\n*** ${what} SKIPPED: ${bmv2SkipReason} ***\n`);
}

/** FNV-1a 64 of a frame, as the clock tap writes it (16 hex digits). */
export function fnv1a64(data: Uint8Array): string {
  // 64-bit arithmetic in two 32-bit halves: h * 0x100000001b3 = h * 0x1b3 + (h << 40).
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (const b of data) {
    lo = (lo ^ b) >>> 0;
    const l = lo * 0x1b3;
    const carry = Math.floor(l / 0x1_0000_0000);
    hi = (hi * 0x1b3 + ((lo << 8) >>> 0) + carry) % 0x1_0000_0000;
    lo = l % 0x1_0000_0000;
  }
  return hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
}

/** One frame as simple_switch took it in: its clock reading, ns since the epoch. */
export interface TapReading {
  ns: bigint;
  length: number;
  hash: string;
}

export interface Bmv2Options {
  /** prefix of the veth names (at most 6 characters): `<name>s<port>` on the switch, `<name>h<port>` on the test's side */
  name: string;
  ports: readonly number[];
}

/** A running simple_switch_grpc with no pipeline (the controller pushes it). */
export class Bmv2Switch {
  readonly tmp = mkdtempSync(join(tmpdir(), "bmv2-"));
  address = "";
  private bmv2: Bmv2Process | undefined;
  private readonly tapPath = join(this.tmp, "clock-tap.txt");
  private readonly onExit = () => this.cleanup();
  private tapCursor = 0;
  /** P4Runtime device id, unlike any other switch's */
  readonly deviceId = 2 + Math.floor(Math.random() * 0x7fff_fff0);

  readonly options: Bmv2Options;

  private constructor(options: Bmv2Options) {
    // The veth names carry this process's tag: another run's switch never takes them.
    this.options = { ...options, name: `${options.name}${VETH_TAG}` };
  }

  /** The interface on the test's side of `port`. */
  iface(port: number): string {
    return `${this.options.name}h${port}`;
  }

  static async start(options: Bmv2Options): Promise<Bmv2Switch> {
    if (bmv2SkipReason) throw new Error(bmv2SkipReason);
    const sw = new Bmv2Switch(options);
    try {
      await sw.launch();
    } catch (e) {
      sw.cleanup();
      throw e;
    }
    return sw;
  }

  private async launch(): Promise<void> {
    process.once("exit", this.onExit);
    const tap = join(this.tmp, "clock-tap.so");
    const cc = spawnSync("cc", ["-O2", "-shared", "-fPIC", "-o", tap, join(here, "clock-tap.c"), "-ldl"], { encoding: "utf8" });
    if (cc.status !== 0) throw new Error(`building the clock tap: ${cc.stderr}`);
    this.bmv2 = await launchBmv2({ ...this.options, deviceId: this.deviceId, preload: tap, env: { BMV2_CLOCK_TAP: this.tapPath } });
    this.address = this.bmv2.address;
    const header = existsSync(this.tapPath) ? readFileSync(this.tapPath, "utf8") : "";
    if (!header.startsWith("tap get_ts\n") || !/^start \d+$/m.test(header)) {
      throw new Error(`the clock tap cannot see this simple_switch_grpc's ingress timestamps (it needs SimpleSwitch::get_ts exported and the SimpleSwitch constructor's clock reading): ${JSON.stringify(header)}`);
    }
  }

  /** Controller configuration for this switch (BMv2 timestamps are µs). */
  /** The controller's config for this switch; `pipeline`: the compiled program to push (p4/build/ unless told). */
  controllerConfig(topology: Topology, digest: { max_list_size: number; max_timeout_us: number }, pipeline?: { p4info: string; deviceConfig: string }): ControllerConfig {
    return parseConfig({
      switch: { address: this.address, device_id: this.deviceId, switch_id: "bmv2", timestamp_unit_ns: 1000 },
      pipeline: { p4info: pipeline?.p4info ?? join(root, "p4/build/telemetry.p4info.json"), device_config: pipeline?.deviceConfig ?? join(root, "p4/build/telemetry.json") },
      ports: topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
      // Every IPv6 host the topology places has its endpoint key before its first packet (as replay gives them).
      endpoints: topologyEndpoints(topology),
      digest: { ...digest, ack_timeout_ms: 1000 },
    });
  }

  /** The constructor's clock reading (ns since the epoch): ingress timestamps count whole µs from it. */
  tapStartNs(): bigint {
    const m = /^start (\d+)$/m.exec(readFileSync(this.tapPath, "utf8"));
    return BigInt(m![1]!);
  }

  /** Every frame the switch took in so far, in the order it took them. */
  tapReadings(): TapReading[] {
    const out: TapReading[] = [];
    for (const m of readFileSync(this.tapPath, "utf8").matchAll(/^rx (\d+) (\d+) ([0-9a-f]{16})$/gm)) {
      out.push({ ns: BigInt(m[1]!), length: Number(m[2]), hash: m[3]! });
    }
    return out;
  }

  /**
   * How the switch took in `frames` (all sent since the last call): in the
   * order it took them, each frame's index and ingress timestamp as the
   * program saw it, ns since the switch started in whole µs
   * (ingress_global_timestamp × 1000). Identical frames are taken in the
   * order sent; frames nobody sent (none are expected) are passed over.
   * Throws when a frame never reached the switch's ingress.
   */
  arrivals(frames: readonly Uint8Array[]): Array<{ index: number; atNs: bigint }> {
    const start = this.tapStartNs();
    const readings = this.tapReadings();
    const waiting = new Map<string, number[]>();
    frames.forEach((f, i) => {
      const key = `${fnv1a64(f)}/${f.length}`;
      const q = waiting.get(key);
      if (q) q.push(i);
      else waiting.set(key, [i]);
    });
    const out: Array<{ index: number; atNs: bigint }> = [];
    for (; this.tapCursor < readings.length; this.tapCursor++) {
      const r = readings[this.tapCursor]!;
      const index = waiting.get(`${r.hash}/${r.length}`)?.shift();
      if (index !== undefined) out.push({ index, atNs: ((r.ns - start) / 1000n) * 1000n });
    }
    if (out.length < frames.length) {
      const missing = [...waiting.values()].flat().sort((a, b) => a - b);
      throw new Error(`${missing.length} of ${frames.length} frames never reached the switch's ingress (first: frame ${missing[0]})`);
    }
    return out;
  }

  private cleanup(): void {
    process.removeListener("exit", this.onExit);
    this.bmv2?.cleanup();
    rmSync(this.tmp, { recursive: true, force: true });
  }

  async stop(): Promise<void> {
    const proc = this.bmv2?.proc;
    const gone = proc && proc.exitCode === null && proc.signalCode === null ? new Promise((r) => proc.once("exit", r)) : undefined;
    this.cleanup();
    await gone;
  }
}

export interface WireFrame {
  port: number;
  data: Buffer;
}

/** Sends frames into the switch's ports and collects what comes out (wire.py serve). */
export class Wire {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly replies: Array<(line: string) => void> = [];
  private stderr = "";

  constructor(sw: Bmv2Switch) {
    const map = join(sw.tmp, "wire-ports.json");
    writeFileSync(map, JSON.stringify({ ifaces: Object.fromEntries(sw.options.ports.map((p) => [p, sw.iface(p)])) }));
    this.proc = spawn("python3", [join(here, "wire.py"), "serve", map]);
    this.proc.stderr.on("data", (d: Buffer) => {
      this.stderr += d.toString();
    });
    createInterface({ input: this.proc.stdout }).on("line", (l) => this.replies.shift()?.(l));
  }

  /**
   * Sends `data` into `port`; resolves with the frames that came out within
   * `waitMs` (or soon after the first `count` of them). A frame arriving between sends
   * fails the call: nothing should leave the switch unasked.
   */
  send(port: number, data: Uint8Array, waitMs: number, count = 1): Promise<WireFrame[]> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`wire.py did not answer: ${this.stderr}`)), waitMs + 5000);
      this.replies.push((line) => {
        clearTimeout(t);
        const r = JSON.parse(line) as { early: Array<{ port: number; hex: string }>; out: Array<{ port: number; hex: string }> };
        if (r.early.length) reject(new Error(`frames left the switch between sends: ${JSON.stringify(r.early)}`));
        else resolve(r.out.map((o) => ({ port: o.port, data: Buffer.from(o.hex, "hex") })));
      });
      this.proc.stdin.write(JSON.stringify({ port, hex: Buffer.from(data).toString("hex"), wait_ms: waitMs, count }) + "\n");
    });
  }

  close(): void {
    this.proc.stdin.end();
    this.proc.kill();
  }
}

export interface ReplayReport {
  sent_monotonic_ns: number[];
  received: Array<{ port: number; hex: string }>;
}

/** Sends `frames` (a pcap) into the switch paced by their timestamps × `slowdown` (wire.py replay). */
export function replayOnWire(sw: Bmv2Switch, pcap: string, ports: readonly number[], slowdown: number): ReplayReport {
  const map = join(sw.tmp, "replay-ports.json");
  const report = join(sw.tmp, "replay-report.json");
  writeFileSync(map, JSON.stringify({ ifaces: Object.fromEntries(sw.options.ports.map((p) => [p, sw.iface(p)])), ports }));
  const r = spawnSync("python3", [join(here, "wire.py"), "replay", pcap, map, String(slowdown), report], { encoding: "utf8", timeout: 120_000 });
  if (r.status !== 0) throw new Error(`wire.py replay: ${r.stderr || r.error?.message}`);
  return JSON.parse(readFileSync(report, "utf8")) as ReplayReport;
}

/** The IPv6 hosts a topology places (its /128 prefixes), as replay gives them to the controller. */
export function topologyEndpoints(topology: Topology): string[] {
  return topology.ports.flatMap((p) => p.prefixes.filter((x) => x.includes(":") && x.endsWith("/128")).map((x) => x.slice(0, -4)));
}
