// pipeline: packets/s through the telemetry program on the software switch (one core), and BMv2 beside it where tcpreplay is installed.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Rig } from "../app/rig.js";
import { Pipeline } from "@rdma-telemetry/switch";
import { parseConfig } from "@rdma-telemetry/controller";
import { TelemetryController } from "@rdma-telemetry/controller";
import { ipSource, Topology } from "../app/topology.js";
import { writePcap } from "@rdma-telemetry/traffic";

import { bmv2Unavailable, launchBmv2 } from "../tools/bmv2.js";
import { print, trace } from "./common.js";

export async function benchPipeline(): Promise<void> {
  const t = trace(1000);
  const sw = t.switches[0]!;
  const rig = new Rig({ name: "bench", topology: Topology.parse(sw.topology) });
  let digests = 0;
  await rig.start((b) => (digests += b.digests.length));
  const packets = sw.packets;
  const ports = packets.map((p) => rig.options.topology.portOf(ipSource(p.data)!)!);
  // Warm up, then time the pipeline alone (the switch's own work per packet).
  const run = (n: number) => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const p = packets[i % packets.length]!;
      rig.sw.process({ port: ports[i % packets.length]!, data: p.data, unixNs: p.timestampNs + BigInt(Math.floor(i / packets.length)) * 2_000_000_000n, wireLength: p.originalLength });
    }
    return performance.now() - t0;
  };
  run(50_000);
  const n = Math.max(packets.length, 500_000);
  const ms = run(n);
  await rig.drain();
  print(`pipeline: ${n} packets in ${ms.toFixed(0)} ms = ${Math.round((n / ms) * 1000).toLocaleString("en")} packets/s on one core, digests to the P4Runtime stream included (trace: ${packets.length} packets, ${digests} digests delivered)`);
  // The compiled program alone: parse, ingress, egress, deparse, learn (no digest lists, no gRPC).
  const pipeline = rig.sw.program ? new Pipeline(rig.sw.program) : undefined;
  if (pipeline) {
    // Packets as a port delivers them: ns since the switch started, as numbers.
    const start = packets[0]!.timestampNs;
    const offsets = packets.map((p) => Number(p.timestampNs - start));
    const alone = (reps: number) => {
      const t0 = performance.now();
      for (let r = 0; r < reps; r++) {
        for (let i = 0; i < packets.length; i++) {
          const p = packets[i]!;
          pipeline.process({ port: ports[i]!, data: p.data, timestampNs: offsets[i]! + r * 2e9, wireLength: p.originalLength });
        }
      }
      return performance.now() - t0;
    };
    alone(1);
    const ms2 = alone(3);
    print(`pipeline (program alone): ${3 * packets.length} packets in ${ms2.toFixed(0)} ms = ${Math.round(((3 * packets.length) / ms2) * 1000).toLocaleString("en")} packets/s on one core (target >= 1,000,000; BMv2's own notes give about 80,000)`);
  }
  await rig.stop();
  await benchBmv2(packets.slice(0, 200_000), rig.options.topology);
}

/** BMv2 simple_switch_grpc on the same trace, where it and tcpreplay are installed (root, veth pairs). */
export async function benchBmv2(packets: ReadonlyArray<{ timestampNs: bigint; data: Buffer; originalLength: number }>, topology: Topology): Promise<void> {
  const tcpreplay = spawnSync("tcpreplay", ["--version"]).status === 0;
  const unavailable = bmv2Unavailable() ?? (!tcpreplay ? "tcpreplay not installed" : undefined);
  if (unavailable) {
    print(`pipeline (BMv2): not measured (${unavailable})`);
    return;
  }
  const ports = topology.ports.map((p) => p.port);
  const sw = await launchBmv2({ name: "bnb", ports, deviceId: 1 });
  const grpcAddress = sw.address;
  try {
    const controller = new TelemetryController(parseConfig({
      switch: { address: grpcAddress, switch_id: "bmv2", timestamp_unit_ns: 1000 },
      ports: topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
      digest: { max_list_size: 1024, max_timeout_us: 1000 },
    }));
    let digests = 0;
    controller.on("digests", (b) => (digests += b.digests.length));
    controller.start();
    await controller.ready(20_000);
    // Everything enters on the first compute port, as fast as tcpreplay sends.
    const file = join(tmpdir(), `bmv2-bench-${process.pid}.pcap`);
    writePcap(file, packets);
    const rx = () => ports.reduce((a, p) => a + Number(readFileSync(`/sys/class/net/bnbh${p}/statistics/rx_packets`, "utf8")), 0);
    const before = rx();
    const t0 = performance.now();
    const replay = spawnSync("tcpreplay", ["--topspeed", "-q", "-i", `bnbh${ports[0]}`, file], { encoding: "utf8" });
    let last = rx();
    let lastChange = performance.now();
    while (performance.now() - lastChange < 1000) {
      await new Promise((r) => setTimeout(r, 50));
      const now = rx();
      if (now !== last) {
        last = now;
        lastChange = performance.now();
      }
    }
    const seconds = (lastChange - t0) / 1000;
    const forwarded = last - before;
    print(`pipeline (BMv2 simple_switch_grpc, same trace, same program, same run): ${forwarded} of ${packets.length} packets forwarded in ${seconds.toFixed(1)} s = ${Math.round(forwarded / seconds).toLocaleString("en")} packets/s (tcpreplay ${replay.status === 0 ? "--topspeed" : "failed"}; ${digests} digests)`);
    await controller.stop();
    rmSync(file, { force: true });
  } finally {
    sw.cleanup();
  }
}
