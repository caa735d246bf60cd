// The switches the packet tests run on: the software switch (in this
// process, behind its P4Runtime server) and BMv2 simple_switch_grpc (veth
// pairs), each configured by the telemetry controller over P4Runtime.
import type { Topology } from "../../app/topology.js";
import { Rig } from "../../app/rig.js";
import type { TelemetryDigest } from "../../contract/src/digests.js";
import { TelemetryController } from "../../p4runtime-controller/src/controller.js";
import { announceSkip, Bmv2Switch, bmv2SkipReason, Wire, type WireFrame } from "../bmv2/harness.js";

export interface Sent {
  /** what left the switch, by port */
  out: WireFrame[];
  /** the packet's ingress timestamp as the program saw it (ns since the switch started) */
  atNs: bigint;
  /** the software switch's report of a failed assert or an internal error */
  error?: string;
}

export interface PacketTarget {
  readonly name: string;
  /** why this target cannot run here */
  readonly skipReason: string | undefined;
  readonly controller: TelemetryController;
  start(topology: Topology): Promise<void>;
  send(port: number, data: Uint8Array): Promise<Sent>;
  /** The digests received since the last call: waits for `atLeast` of them, then for any stragglers. */
  digests(atLeast?: number): Promise<TelemetryDigest[]>;
  stop(): Promise<void>;
}

/** The software switch on a virtual clock: each packet 1 µs after the one before. */
export function softwareTarget(): PacketTarget {
  let rig: Rig | undefined;
  const got: TelemetryDigest[] = [];
  let now = 1_800_000_000_000_000_000n;
  let start: bigint | undefined;
  return {
    name: "software switch",
    skipReason: undefined,
    get controller() {
      return rig!.controller;
    },
    async start(topology) {
      rig = new Rig({ name: "pkt", topology, maxListSize: 1, maxTimeoutUs: 1 });
      await rig.start((b) => got.push(...b.digests));
    },
    async send(port, data) {
      now += 1000n;
      start ??= now;
      const r = rig!.sw.process({ port, data, unixNs: now })!;
      return { out: r.outputs, atNs: now - start, error: r.error };
    },
    async digests() {
      await rig!.drain();
      return got.splice(0);
    },
    async stop() {
      await rig?.stop();
    },
  };
}

/** BMv2 simple_switch_grpc; ingress timestamps from its clock tap. */
export function bmv2Target(vethPrefix: string): PacketTarget {
  let sw: Bmv2Switch | undefined;
  let wire: Wire | undefined;
  let controller: TelemetryController | undefined;
  const got: TelemetryDigest[] = [];
  let lastBatchAt = 0;
  announceSkip("BMv2 packet tests");
  return {
    name: "BMv2 simple_switch_grpc",
    skipReason: bmv2SkipReason,
    get controller() {
      return controller!;
    },
    async start(topology) {
      sw = await Bmv2Switch.start({ name: vethPrefix, ports: topology.ports.map((p) => p.port) });
      controller = new TelemetryController(sw.controllerConfig(topology, { max_list_size: 1, max_timeout_us: 100 }));
      controller.on("digests", (b) => {
        got.push(...b.digests);
        lastBatchAt = Date.now();
      });
      controller.start();
      await controller.ready(20_000);
      wire = new Wire(sw);
    },
    async send(port, data) {
      // A dropped packet shows as nothing out within 300 ms.
      const out = await wire!.send(port, data, 300);
      const [arrival] = sw!.arrivals([data]);
      return { out, atNs: arrival!.atNs };
    },
    async digests(atLeast = 0) {
      const deadline = Date.now() + 10_000;
      while (got.length < atLeast && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      // Lists leave BMv2 within 100 µs of their digest; 200 ms of quiet means none is on its way.
      const since = Date.now();
      while (Date.now() - Math.max(lastBatchAt, since) < 200) await new Promise((r) => setTimeout(r, 20));
      return got.splice(0);
    },
    async stop() {
      wire?.close();
      await controller?.stop();
      await sw?.stop();
    },
  };
}
