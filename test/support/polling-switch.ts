// One generated ToR replayed live by a software switch on the capture's clock,
// with a polling controller's config for it: windows of 2 pairs and 2 flows
// rotated every 100 ms, digest lists waiting up to `listTimeoutUs`.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startCli, type CliProcess } from "./cli.js";
import { printed } from "./fabric.js";

export async function pollingSwitch(dir: string, children: ChildProcess[], o: { durationMs: number; seed: number; load: number; listTimeoutUs: number; rotationMs?: number; pairs?: number; generate?: string[] }): Promise<{ workload: string; sw: CliProcess; config: string }> {
  const workload = join(dir, "workload");
  mkdirSync(workload);
  const g = startCli(["generate", "--out-dir", workload, "--force", "--layout", "single", "--duration-ms", String(o.durationMs), "--seed", String(o.seed), "--ip", "mixed", "--load", String(o.load), ...(o.generate ?? [])], dir, children);
  if ((await g.exited) !== 0) throw new Error(`generate failed: ${g.out()}`);
  const sw = startCli(["switch", "--listen", "127.0.0.1:0", "--topology", join(workload, "tor.topology.json"), "--pcap-in", join(workload, "tor.pcap"), "--capture-clock", "--pcap-delay-ms", "1500"], dir, children);
  const port = Number((await printed(sw, /P4Runtime on 127\.0\.0\.1:(\d+)/))[1]);
  const topology = JSON.parse(readFileSync(join(workload, "tor.topology.json"), "utf8")) as { ports: { prefixes: string[] }[] };
  const endpoints = topology.ports.flatMap((p) => p.prefixes.filter((x) => x.includes(":") && x.endsWith("/128")).map((x) => x.slice(0, -4)));
  const config = join(dir, "controller.json");
  writeFileSync(config, JSON.stringify({
    switch: { address: `127.0.0.1:${port}`, switch_id: "tor", timestamp_unit_ns: 1 }, ports: topology.ports, endpoints, mode: "polling",
    polling: { rotation_period_ms: o.rotationMs ?? 100, io_pair_capacity: o.pairs ?? 2, flow_capacity: 2 }, digest: { max_list_size: 4096, max_timeout_us: o.listTimeoutUs },
  }));
  return { workload, sw, config };
}
