// digests and writes: the P4Runtime path of the software switch in its own process.
import { fork, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { P4Info } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import { SetForwardingPipelineConfigRequest_Action, Update_Type, type Update } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { parseConfig } from "@rdma-telemetry/controller";
import { TelemetryController } from "@rdma-telemetry/controller";
import { Exporter } from "@rdma-telemetry/exporter";
import { Topology } from "../app/topology.js";
import { P4RuntimeClient, toUint128 } from "@rdma-telemetry/p4runtime";
import { tableEntity } from "@rdma-telemetry/p4runtime";
import { P4Schema } from "@rdma-telemetry/p4runtime";
import { compiled, here, print, quantile, root } from "./common.js";

/** The software switch in a child process (bench/switch-worker.ts); resolves with its P4Runtime port. */
export async function switchProcess(clock: "virtual" | "live"): Promise<{ worker: ChildProcess; port: number }> {
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const worker = fork(join(here, `switch-worker.${compiled ? "js" : "ts"}`), [clock], { execArgv: [...profile, ...(compiled ? [] : ["--conditions=source", "--import", "tsx"])] });
  const port = await new Promise<number>((resolve) => worker.once("message", (m: { port: number }) => resolve(m.port)));
  return { worker, port };
}

/** A telemetry controller for the switch on `port`: one compute port, 10.0.1.0/24. */
function benchController(port: number, extra: Record<string, unknown> = {}): TelemetryController {
  const topology = Topology.parse({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }] });
  return new TelemetryController(parseConfig({
    switch: { address: `127.0.0.1:${port}`, switch_id: "bench", timestamp_unit_ns: 1 },
    ports: topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
    ...extra,
  }));
}

export async function benchDigests(): Promise<void> {
  // The switch runs in a child process (a switch is a process of its own); its
  // digest lists cross P4Runtime to the controller (decode, ack) and the exporter (records).
  const n = 300_000;
  const { worker, port } = await switchProcess("virtual");
  const controller = benchController(port, { digest: { max_list_size: 1024, max_timeout_us: 1000 } });
  const exporter = new Exporter({ perEventRecords: true });
  let records = 0;
  let digests = 0;
  exporter.addSink(() => records++);
  controller.on("digests", (b) => {
    digests += b.digests.length;
    exporter.onBatch(b);
  });
  controller.start();
  await controller.ready();
  const t0 = performance.now();
  worker.send({ digests: n, digestId: controller.schema.digests.get("msg_digest_t").preamble!.id });
  while (digests < n) await new Promise((r) => setTimeout(r, 1));
  const ms = performance.now() - t0;
  print(`digests: ${n} message digests from the switch (its own process) over P4Runtime to the controller and into the exporter (${records} records) in ${ms.toFixed(0)} ms = ${Math.round((n / ms) * 1000).toLocaleString("en")} digests/s (target >= 200,000)`);
  await controller.stop();
  worker.disconnect();
}

export async function benchWrites(): Promise<void> {
  const p4infoText = readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8");
  const schema = P4Schema.fromJson(p4infoText);
  // The switch in its own process: the figures are the controller's writes and
  // the switch's answers, not both sharing one event loop and one heap.
  const { worker, port } = await switchProcess("live");
  const c = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n });
  const ch = c.streamChannel();
  ch.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(1n), status: undefined } } });
  for await (const m of ch) if (m.update?.$case === "arbitration") break;
  await c.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info: P4Info.fromJSON(JSON.parse(p4infoText)), p4DeviceConfig: readFileSync(join(root, "p4/build/telemetry.json")), cookie: { cookie: 1n } } });
  const watch = (i: number, type: Update_Type, round: number): Update => ({
    type,
    entity: tableEntity(schema, { table: "flow_tracker.flow_watchlist", match: { src: 0x0a000000 + (i >> 8), dst: 0x0a010000 + (i & 255), dest_qp: round * 4096 + i }, action: { name: "flow_tracker.watch", params: { flow_slot: i, flow_epoch: round } } }),
  });
  for (const batch of [1, 64, 1024]) {
    // 1024 inserts then 1024 deletes (the table holds 1024 entries).
    const round = 100 + batch;
    const t0 = performance.now();
    for (const type of [Update_Type.INSERT, Update_Type.DELETE]) {
      for (let i = 0; i < 1024; i += batch) {
        await c.write(Array.from({ length: batch }, (_, k) => watch(i + k, type, round)), 1n);
      }
    }
    const ms = performance.now() - t0;
    print(`writes: 2048 table writes (1024 inserts, 1024 deletes) in batches of ${batch}: ${Math.round((2048 / ms) * 1000).toLocaleString("en")} writes/s`);
  }
  // A rotation: delete the 1024 entries of the window, insert the next 1024, in one write.
  let round = 1;
  await c.write(Array.from({ length: 1024 }, (_, i) => watch(i, Update_Type.INSERT, round)), 1n);
  // A controller rotates every period for as long as it runs: the first five
  // rotations warm up (JIT), the next thousand are timed.
  const times: number[] = [];
  for (let r = 0; r < 1005; r++) {
    const updates = [...Array.from({ length: 1024 }, (_, i) => watch(i, Update_Type.DELETE, round)), ...Array.from({ length: 1024 }, (_, i) => watch(i, Update_Type.INSERT, round + 1))];
    const t0 = performance.now();
    await c.write(updates, 1n);
    if (r >= 5) times.push(performance.now() - t0);
    round++;
  }
  const q = quantile(times);
  const within = times.filter((t) => t <= 20).length / times.length;
  print(`rotation: swap a 1024-entry watchlist (1024 deletes + 1024 inserts, one write), ${times.length} rotations: median ${q(0.5)} ms, p90 ${q(0.9)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms; ${(within * 100).toFixed(1)} % within 20 ms (target <= 20 ms)`);
  ch.close();
  c.close();
  // The same writes from finsy (PyPI) against the same server, in the same run.
  // (Asynchronously: the server answering finsy runs in this process.)
  const py = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn("python3", [join(root, "bench/finsy_writes.py"), `127.0.0.1:${port}`, join(root, "p4/build/telemetry.p4info.txtpb"), join(root, "p4/build/telemetry.json")]);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.on("error", (err) => resolve({ code: -1, stdout, stderr: err.message }));
  });
  if (py.code === 0) print(py.stdout.trim());
  else print(`finsy: not measured (${/No module named 'finsy'/.test(py.stderr) ? "pip install finsy" : py.stderr.trim().split("\n").slice(-1)[0]})`);
  worker.disconnect();
}

export async function benchCounters(): Promise<void> {
  // The controller's statistics read (readCounters): both event counters,
  // 4,096 + 128 entries, from the software switch in its own process.
  const { worker, port } = await switchProcess("live");
  const controller = benchController(port);
  controller.start();
  await controller.ready();
  const times: number[] = [];
  for (let r = 0; r < 105; r++) {
    const t0 = performance.now();
    await controller.readCounters();
    if (r >= 5) times.push(performance.now() - t0);
  }
  const q = quantile(times);
  print(`counters: the switch's statistics (packet_events and flow_events, ${controller.schema.counters.get("stats.packet_events").size + controller.schema.counters.get("stats.flow_events").size} entries) read and summed per event, ${times.length} reads: median ${q(0.5)} ms, p90 ${q(0.9)} ms, max ${q(1)} ms`);
  await controller.stop();
  worker.disconnect();
}
