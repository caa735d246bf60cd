// The controller SIGKILLed mid-traffic and started again on its digest
// journal, as real processes (switch, controller). Shared by the test that
// checks the JSON-lines file and the one that checks Kafka.
//
// I/O i carries command PSN i. I/Os 0..299 are fed before the kill (and
// their digests delivered), 300..349 while no controller runs (their digests
// are lost, and must be counted), 350..449 after the restart.
import { fork, spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { IoRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { readIoFrames } from "./nvme-frames.js";
import { until } from "./wait.js";
import { CLI } from "./cli.js";

const root = new URL("../..", import.meta.url).pathname;

export const BEFORE_KILL = 300;
export const WHILE_DOWN = 50;
export const AFTER_RESTART = 100;

/** The software switch in a process of its own (see switch-process.ts), on `port` (0: any). */
export async function startSwitch(children: ChildProcess[], port = 0): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(join(root, "test/support/switch-process.ts"), [String(port)], { execArgv: ["--conditions=source", "--import", "tsx"], stdio: ["ignore", "ignore", "inherit", "ipc"] });
  children.push(child);
  const bound = await new Promise<number>((resolve, reject) => {
    child.once("message", (m: { port: number }) => resolve(m.port));
    child.once("exit", (code) => reject(new Error(`switch process exited (${code})`)));
  });
  return { child, port: bound };
}

/** `rdma-telemetry controller` with `args`; resolves once it is primary. */
export function startController(args: string[], env: NodeJS.ProcessEnv, children: ChildProcess[]): Promise<ChildProcess> {
  const c = spawn(process.execPath, [...CLI, "controller", ...args], { cwd: root, stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } });
  children.push(c);
  return new Promise((resolve, reject) => {
    c.stdout!.on("data", (d: Buffer) => {
      if (d.toString().includes("primary on")) resolve(c);
    });
    c.once("exit", (code) => reject(new Error(`controller exited (${code})`)));
  });
}

/**
 * Resolves once every digest list the switch process has sent for the frames
 * fed so far is acknowledged: with a journal, the controller acknowledges a
 * list once it is journaled and synced. (A list not acknowledged within the
 * ack timeout, 1 s, is let go by the switch, and counts as settled here.)
 */
export async function digestsSettled(sw: ChildProcess, timeoutMs = 10_000): Promise<void> {
  const query = () =>
    new Promise<{ sentLists: number; unackedLists: number }>((resolve) => {
      const on = (m: { digests?: { sentLists: number; unackedLists: number } }) => {
        if (!m.digests) return;
        sw.off("message", on);
        resolve(m.digests);
      };
      sw.on("message", on);
      sw.send({ query: "digests" });
    });
  let last = { sentLists: 0, unackedLists: -1 };
  await until(async () => (last = await query()).unackedLists === 0, timeoutMs, () => `the switch's digest lists to be acknowledged (${last.unackedLists} of ${last.sentLists} not yet)`);
}

export async function stop(c: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (c.exitCode !== null) return;
  c.kill(signal);
  await new Promise((r) => c.once("exit", r));
}

/** A controller config for one switch with a compute port (1) and a storage port (33). */
export function writeControllerConfig(dir: string, port: number, switchId: string): string {
  const config = join(dir, "controller.json");
  writeFileSync(config, JSON.stringify({
    switch: { address: `127.0.0.1:${port}`, switch_id: switchId, timestamp_unit_ns: 1 },
    ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.1/32"] }, { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] }],
    digest: { max_list_size: 16, max_timeout_us: 2000 },
  }));
  return config;
}

/** Feeds I/Os to a switch, numbered on from 0 across calls (I/O i has command PSN i), one every 4 ms. */
export function ioFeeder(): (sw: ChildProcess, n: number) => Promise<void> {
  let fed = 0;
  return async (sw, n) => {
    for (let k = 0; k < n; k++, fed++) {
      sw.send({ frames: readIoFrames(fed, 0x20000) });
      await new Promise((r) => setTimeout(r, 4));
    }
  };
}

/**
 * Runs the scenario: `args(first)` gives the controller's own arguments
 * besides --config and --journal (the second run is told first = false).
 */
export async function killAndRestartController(o: { dir: string; switchId: string; args: (first: boolean) => string[]; env?: NodeJS.ProcessEnv; children: ChildProcess[] }): Promise<void> {
  const sw = await startSwitch(o.children);
  const config = writeControllerConfig(o.dir, sw.port, o.switchId);
  const journal = join(o.dir, "journal");
  const feed = ioFeeder();
  const env = o.env ?? {};
  const first = await startController(["--config", config, "--journal", journal, ...o.args(true)], env, o.children);
  await feed(sw.child, BEFORE_KILL); // about 1.3 s: some intervals close, some records are still in memory
  await digestsSettled(sw.child); // the last lists delivered and journaled
  await stop(first, "SIGKILL");
  await feed(sw.child, WHILE_DOWN); // no controller: the switch's digests of these go nowhere
  const second = await startController(["--config", config, "--journal", journal, ...o.args(false)], env, o.children);
  await feed(sw.child, AFTER_RESTART);
  await new Promise((r) => setTimeout(r, 3500)); // the correlation window and the I/O timeout pass, intervals close
  await stop(second, "SIGTERM");
  await stop(sw.child, "SIGKILL");
}

/** Checks what a run of the scenario wrote: every delivered I/O once, the loss counted, no interval twice. */
export function checkRestartRecords(records: RecordJson[]): void {
  const ios = records.filter((r): r is IoRecordJson => r.type === "io");
  const psns = ios.map((r) => r.cmd_psn);
  expect(new Set(psns).size, "no I/O recorded twice").toBe(psns.length);
  const have = new Set(psns);
  const missingBefore = [...Array(BEFORE_KILL).keys()].filter((i) => !have.has(i));
  const missingAfter = [...Array(AFTER_RESTART).keys()].map((i) => BEFORE_KILL + WHILE_DOWN + i).filter((i) => !have.has(i));
  expect(missingBefore, "I/Os delivered before the kill").toEqual([]);
  expect(missingAfter, "I/Os after the restart").toEqual([]);
  expect(ios.filter((r) => r.cmd_psn >= BEFORE_KILL && r.cmd_psn < BEFORE_KILL + WHILE_DOWN).every((r) => r.incomplete || r.e2e_c_ns !== null)).toBe(true);
  const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
  // Each I/O sent while no controller listened lost its command and response digests.
  expect(Math.max(...stats.map((s) => s.digests_lost ?? 0))).toBeGreaterThanOrEqual(WHILE_DOWN * 2 - 10);
  const intervals = records.filter((r) => r.type === "io_interval").map((r) => `${r.switch_id}|${r.interval_start_unix_ns}|${r.type === "io_interval" ? r.op : ""}`);
  expect(new Set(intervals).size, "no interval written twice").toBe(intervals.length);
}

