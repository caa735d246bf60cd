// The controller SIGKILLed mid-traffic and started again on its digest
// journal, as real processes (switch, controller): every I/O whose digests
// the switch delivered before the kill is in the records, none twice, and
// what the switch sent while no controller listened is counted as lost.
import { fork, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, expect, test } from "vitest";
import type { IoRecordJson, RecordJson, SwitchStatsJson } from "../../exporter/src/records.js";
import { readIoFrames } from "../support/nvme-frames.js";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "controller-restart-"));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));


function startController(config: string, out: string, journal: string, append: boolean): Promise<ChildProcess> {
  const args = ["--import", "tsx", join(root, "bin/rdma-telemetry.ts"), "controller", "--config", config, "--out", out, "--journal", journal, ...(append ? ["--append"] : [])];
  const c = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, KAFKA_BROKERS: "" } });
  children.push(c);
  return new Promise((resolve, reject) => {
    c.stdout!.on("data", (d: Buffer) => {
      if (d.toString().includes("primary on")) resolve(c);
    });
    c.once("exit", (code) => reject(new Error(`controller exited (${code})`)));
  });
}

test("SIGKILL of the controller mid-traffic: after a restart on its journal, every delivered I/O is recorded once, the gap counted", async () => {
  const sw = fork(join(root, "test/support/switch-process.ts"), ["0"], { execArgv: ["--import", "tsx"], stdio: ["ignore", "ignore", "inherit", "ipc"] });
  children.push(sw);
  const port = await new Promise<number>((r) => sw.once("message", (m: { port: number }) => r(m.port)));
  const config = join(dir, "controller.json");
  writeFileSync(config, JSON.stringify({
    switch: { address: `127.0.0.1:${port}`, switch_id: "tor", timestamp_unit_ns: 1 },
    ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.1/32"] }, { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] }],
    digest: { max_list_size: 16, max_timeout_us: 2000 },
  }));
  const out = join(dir, "records.jsonl");
  const journal = join(dir, "journal");
  let fed = 0;
  const feed = async (n: number) => {
    for (let k = 0; k < n; k++, fed++) {
      sw.send({ frames: readIoFrames(fed, 0x20000) });
      await new Promise((r) => setTimeout(r, 4));
    }
  };

  const first = await startController(config, out, journal, false);
  await feed(300); // about 1.3 s: some intervals close, some records are still in memory
  await new Promise((r) => setTimeout(r, 400)); // the last lists delivered and journaled
  first.kill("SIGKILL");
  await new Promise((r) => first.once("exit", r));
  await feed(50); // no controller: the switch's digests of these go nowhere
  const second = await startController(config, out, journal, true);
  await feed(100);
  await new Promise((r) => setTimeout(r, 3500)); // the correlation window and the I/O timeout pass, intervals close
  second.kill("SIGTERM");
  await new Promise((r) => second.once("exit", r));

  const records = readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson);
  const ios = records.filter((r): r is IoRecordJson => r.type === "io");
  const psns = ios.map((r) => r.cmd_psn);
  expect(new Set(psns).size, "no I/O recorded twice").toBe(psns.length);
  const have = new Set(psns);
  const missingBefore = [...Array(300).keys()].filter((i) => !have.has(i));
  const missingAfter = [...Array(100).keys()].map((i) => 350 + i).filter((i) => !have.has(i));
  expect(missingBefore, "I/Os delivered before the kill").toEqual([]);
  expect(missingAfter, "I/Os after the restart").toEqual([]);
  expect(ios.filter((r) => r.cmd_psn >= 300 && r.cmd_psn < 350).every((r) => r.incomplete || r.e2e_c_ns !== null)).toBe(true);
  const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
  // Each I/O sent while no controller listened lost its command and response digests.
  expect(stats.at(-1)!.digests_lost).toBeGreaterThanOrEqual(90);
  const intervals = records.filter((r) => r.type === "io_interval").map((r) => `${r.switch_id}|${r.interval_start_unix_ns}|${r.type === "io_interval" ? r.op : ""}`);
  expect(new Set(intervals).size, "no interval written twice").toBe(intervals.length);
}, 60_000);
