// Summary mode against full mode as the load grows: the same ToR (one
// switch) with 2, 8 and 32 hosts on 2 targets, 2,000 I/Os per second each,
// replayed through the compiled program on the software switch. Prints, per
// second of traffic, the digests the switch sent, the records the exporter
// made, and the I/Os the data-plane histograms counted. In summary mode the
// digests follow the watchlists (2 pairs, 2 flows), not the load.
import { generateTraffic } from "@rdma-telemetry/traffic";
import { replaySwitches } from "../app/replay.js";
import { Topology } from "../app/topology.js";
import { print } from "./common.js";

const LOADS = [1, 4, 16];
const DURATION_NS = 1_000_000_000;

export async function benchSummary(): Promise<void> {
  print("summary mode: per second of traffic, one ToR, 2,000 I/Os/s per host; watchlists of 2 pairs and 2 flows, rotated every 100 ms");
  print("load  hosts  mode      I/Os/s   digests/s  digests of 1×  records/s  I/Os in histograms/s");
  const base: Record<string, number> = {};
  for (const load of LOADS) {
    const traffic = generateTraffic({ seed: 11, layout: "single", durationNs: DURATION_NS, hosts: 2 * load, targets: 2, ioRate: 2000 });
    for (const mode of ["full", "summary"] as const) {
      let records = 0;
      let histogramIos = 0;
      const result = await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
        mode,
        polling: { ioPairCapacity: 2, flowCapacity: 2, rotationPeriodMs: 100 },
        onRecord: (r) => {
          records++;
          if (r.type === "io_histogram" && (r.figure === "e2e_c_ns")) histogramIos += r.count;
        },
      });
      const digests = result.rigs.reduce((a, r) => a + r.sw.digests.sentSamples, 0);
      const perS = (n: number) => (n / (DURATION_NS / 1e9)).toFixed(0).padStart(9);
      const ios = traffic.ios.length;
      if (load === 1) base[mode] = digests;
      const rel = `${((digests / base[mode]!) * 100).toFixed(0)} %`.padStart(13);
      print(`${String(load).padStart(3)}×  ${String(2 * load).padStart(5)}  ${mode.padEnd(8)} ${perS(ios)}  ${perS(digests)}  ${rel}  ${perS(records)}  ${perS(histogramIos)}`);
    }
  }
}
