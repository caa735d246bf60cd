// A controller with records of its own (no Kafka), in polling mode, live on
// a software switch replaying one ToR's capture at its pace: digest lists
// wait up to 150 ms for more samples against rotations every 100 ms, so its
// digest stream lags the switch by more than a rotation period. Its records
// say less than full mode where a window did not hold a pair, never more or
// other (p4runtime-controller/src/window-gate.ts: a pair put back into the
// window is handed on once the stream has passed the rotation).
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, expect, test } from "vitest";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { startCli } from "../support/cli.js";
import { pollingMismatches, printed, truthIos } from "../support/fabric.js";

const dir = mkdtempSync(join(tmpdir(), "polling-live-"));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("polling live, digest lists more than a rotation late: no record says more than the switch saw", async () => {
  const workload = join(dir, "workload");
  mkdirSync(workload);
  const g = startCli(["generate", "--out-dir", workload, "--force", "--layout", "single", "--duration-ms", "1000", "--seed", "5", "--ip", "mixed", "--load", "0.5"], dir, children);
  expect(await g.exited, g.out()).toBe(0);
  const sw = startCli(["switch", "--listen", "127.0.0.1:0", "--topology", join(workload, "tor.topology.json"), "--pcap-in", join(workload, "tor.pcap"), "--capture-clock", "--pcap-delay-ms", "1500"], dir, children);
  const port = Number((await printed(sw, /P4Runtime on 127\.0\.0\.1:(\d+)/))[1]);
  const topology = JSON.parse(readFileSync(join(workload, "tor.topology.json"), "utf8")) as { ports: { prefixes: string[] }[] };
  const endpoints = topology.ports.flatMap((p) => p.prefixes.filter((x) => x.includes(":") && x.endsWith("/128")).map((x) => x.slice(0, -4)));
  const config = join(dir, "controller.json");
  writeFileSync(config, JSON.stringify({
    switch: { address: `127.0.0.1:${port}`, switch_id: "tor", timestamp_unit_ns: 1 }, ports: topology.ports, endpoints, mode: "polling",
    polling: { rotation_period_ms: 100, io_pair_capacity: 2, flow_capacity: 2 }, digest: { max_list_size: 4096, max_timeout_us: 150_000 },
  }));
  const out = join(dir, "records.jsonl");
  const controller = startCli(["controller", "--config", config, "--out", out, "--log-level", "info"], dir, children);
  await printed(sw, /every digest list acknowledged/, 120_000);
  controller.child.kill("SIGTERM");
  expect(await controller.exited, controller.out().slice(-2000)).toBe(0);
  const ios = readFileSync(out, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as RecordJson).filter((r): r is IoRecordJson => r.type === "io");
  const truth = truthIos(workload);
  const { wrong, absent } = pollingMismatches(truth, ios);
  console.log(`polling live: ${ios.length} records of ${truth.length} I/Os, ${absent} saying less, ${wrong.length} saying other`);
  if (wrong.length) console.log(wrong.join("\n"));
  expect(ios.length).toBeGreaterThan(0);
  expect(wrong).toEqual([]);
}, 180_000);
