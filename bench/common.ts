// What the benchmarks share: where they run from, how they print, and the bundled trace.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateTraffic } from "@rdma-telemetry/traffic";

// Run from bench/ (tsx) or from dist/bench/ (npm run bench: the built code users run).
export const here = dirname(fileURLToPath(import.meta.url));
export const compiled = import.meta.url.endsWith(".js");
export const root = compiled ? join(here, "../..") : join(here, "..");
export const print = (s: string) => process.stdout.write(s + "\n");

/** The f-quantile (0..1) of durations in ms, to 0.1 ms; sorts `times`. */
export function quantile(times: number[]): (f: number) => string {
  times.sort((a, b) => a - b);
  return (f) => times[Math.min(times.length - 1, Math.floor(f * times.length))]!.toFixed(1);
}

/** The bundled trace: the generator's default traffic, seed 42, single switch. */
export function trace(durationMs: number) {
  return generateTraffic({ seed: 42, layout: "single", durationNs: durationMs * 1e6, hosts: 4, targets: 2, ioRate: 20_000 });
}
