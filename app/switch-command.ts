// `rdma-telemetry switch`: the software switch as a standalone P4Runtime
// target, as simple_switch_grpc is, for any controller (p4runtime-shell,
// finsy, ONOS, this project's own). Packets come from captures given per
// port (--pcap-in PORT=FILE, replayed at their own pace on the switch's
// clock), and what the switch sends out goes to one capture per port
// (--pcap-out DIR).
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { P4Info } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import { P4RuntimeServer, SoftwareSwitch } from "@rdma-telemetry/switch";
import { openCapture, PcapWriter } from "@rdma-telemetry/traffic";
import type { Logger } from "@rdma-telemetry/p4runtime";
import { ipv4Source, type Topology } from "./topology.js";

export interface SwitchCommandOptions {
  listen: string;
  deviceId: bigint;
  cpuPort: number;
  /** a pipeline to start with (both or neither) */
  p4info?: string;
  deviceConfig?: string;
  /** a capture per port, or (port undefined) a capture whose packets enter on the port their source address sits behind in `topology` */
  pcapIn: Array<{ port?: number; file: string }>;
  pcapOut?: string;
  /** where each address sits, for captures given without a port */
  topology?: Topology;
  /**
   * The switch's clock is the captures' (a packet is measured at its capture
   * time, the clock moving on in real time between packets), so that its
   * measurements are those of `replay`; otherwise the host's clock.
   */
  captureClock?: boolean;
  /** captures are replayed once the switch has a pipeline, and this long after (default 0) */
  pcapDelayMs?: number;
  logger: Logger;
  print: (t: string) => void;
  signal: AbortSignal;
}

/** A usage problem with the switch's options: refused before anything starts. */
export class SwitchOptionError extends Error {
  override readonly name = "SwitchOptionError";
}

/** "PORT=FILE", or "FILE" (ports from --topology) */
export function parsePcapIn(v: string): { port?: number; file: string } {
  if (!v.includes("=") && v.length > 0) return { file: v };
  const m = /^(\d+)=(.+)$/.exec(v);
  const port = m ? Number(m[1]) : NaN;
  if (!m || !Number.isInteger(port) || port < 0 || port > 511) throw new SwitchOptionError(`--pcap-in must be PORT=FILE with a port 0-511 (got '${v}')`);
  return { port, file: m[2]! };
}

export async function runSwitch(o: SwitchCommandOptions): Promise<void> {
  if ((o.p4info === undefined) !== (o.deviceConfig === undefined)) throw new SwitchOptionError("--p4info and --device-config go together");
  const byAddress = o.pcapIn.find((p) => p.port === undefined);
  if (byAddress && !o.topology) throw new SwitchOptionError(`--pcap-in must be PORT=FILE, or FILE with --topology FILE (each packet then enters on the port of its source address) (got '${byAddress.file}')`);
  // Everything that can be refused is, before the switch listens.
  const inputs = o.pcapIn.map((p) => ({ ...p, capture: openCapture(p.file) }));
  if (o.pcapOut) mkdirSync(o.pcapOut, { recursive: true });
  const sw = new SoftwareSwitch({ clock: o.captureClock ? "virtual" : "live" });
  const server = new P4RuntimeServer(sw, { deviceId: o.deviceId, cpuPort: o.cpuPort, logger: (level, msg, fields) => o.logger[level](msg, fields) });
  if (o.p4info && o.deviceConfig) {
    let p4info: P4Info;
    try {
      p4info = P4Info.fromJSON(JSON.parse(readFileSync(o.p4info, "utf8")));
    } catch (err) {
      throw new SwitchOptionError(`--p4info ${o.p4info}: not a P4Info JSON file (${(err as Error).message})`);
    }
    try {
      server.loadPipeline(p4info, readFileSync(o.deviceConfig));
    } catch (err) {
      throw new SwitchOptionError(`--device-config ${o.deviceConfig}: ${(err as Error).message}`);
    }
  }
  const writers = new Map<number, PcapWriter>();
  if (o.pcapOut) {
    const dir = o.pcapOut;
    sw.on("packet", (p) => {
      let w = writers.get(p.port);
      if (!w) writers.set(p.port, (w = new PcapWriter(join(dir, `port-${p.port}.pcap`))));
      w.write({ timestampNs: sw.nowUnixNs(), data: Buffer.from(p.data), originalLength: p.data.length });
    });
  }
  let port: number;
  try {
    port = await server.listen(o.listen);
  } catch (err) {
    throw new SwitchOptionError(`--listen ${o.listen}: ${(err as Error).message}`);
  }
  // On the captures' clock, the switch's time is the last packet's while captures are replayed (it never runs
  // ahead of a replay that falls behind), and runs on in real time from the last one once they are over.
  let clockAt: { captureNs: bigint; hr: bigint } | undefined;
  let replaying = 0;
  const tick = setInterval(() => sw.tick(clockAt && replaying === 0 ? clockAt.captureNs + (process.hrtime.bigint() - clockAt.hr) : undefined), 1);
  o.print(`switch: P4Runtime on ${o.listen.replace(/:\d+$/, `:${port}`)}, device ${o.deviceId}, CPU port ${o.cpuPort}${o.p4info ? `, pipeline from ${o.p4info}` : ", no pipeline yet"}`);
  if (inputs.length) {
    // A controller sets the pipeline (and writes its entries meanwhile): the captures wait for it.
    while (!sw.program && !o.signal.aborted) await new Promise((r) => setTimeout(r, 20));
    if (o.pcapDelayMs) await new Promise((r) => setTimeout(r, o.pcapDelayMs));
  }
  // Each capture is replayed on its port at its own pace, from when the switch starts.
  replaying = inputs.length;
  const replays = inputs.map(async ({ port: inPort, capture, file }) => {
    let first: bigint | undefined;
    const t0 = process.hrtime.bigint();
    let n = 0;
    let unrouted = 0;
    for (const pkt of capture) {
      if (o.signal.aborted) break;
      first ??= pkt.timestampNs;
      const due = pkt.timestampNs - first;
      const ahead = due - (process.hrtime.bigint() - t0);
      if (ahead > 1_000_000n) await new Promise((r) => setTimeout(r, Number(ahead / 1_000_000n)));
      let port = inPort;
      if (port === undefined) {
        const src = ipv4Source(pkt.data);
        port = src === undefined ? undefined : o.topology!.portOf(src);
        if (port === undefined) {
          unrouted++;
          continue;
        }
      }
      sw.process({ port, data: pkt.data, unixNs: o.captureClock ? pkt.timestampNs : undefined });
      if (o.captureClock && (!clockAt || pkt.timestampNs > clockAt.captureNs)) clockAt = { captureNs: pkt.timestampNs, hr: process.hrtime.bigint() };
      n++;
    }
    replaying--;
    o.print(`switch: ${n} packets of ${file} sent in ${inPort === undefined ? "on the ports of their source addresses" : `on port ${inPort}`}${unrouted ? `; ${unrouted} with a source address outside the topology left out` : ""}`);
  });
  await Promise.all(replays);
  await new Promise<void>((resolve) => (o.signal.aborted ? resolve() : o.signal.addEventListener("abort", () => resolve(), { once: true })));
  clearInterval(tick);
  await server.close();
  for (const w of writers.values()) w.close();
}
