// The generator's schedules are streamed: the same seed and options give the
// same traffic, byte for byte, and memory does not grow with the run's length.
import { createHash } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, test } from "vitest";
import { streamTraffic, type GeneratorOptions } from "../../traffic/src/generator.js";
import { demoFaults } from "../../app/demo.js";

/** sha256 of every item the stream yields, in order: packets (switch, time, bytes, wire length) and truths. */
function digest(opts: Partial<GeneratorOptions>): string {
  const h = createHash("sha256");
  const big = (_k: string, v: unknown) => (typeof v === "bigint" ? v.toString() : v);
  for (const item of streamTraffic(opts)) {
    if (item.kind === "packet") h.update(`${item.sw.name} ${item.timestampNs} ${item.originalLength} `).update(item.data);
    else h.update(JSON.stringify(item, (k, v: unknown) => (k === "sw" ? undefined : big(k, v))));
    h.update("\n");
  }
  return h.digest("hex");
}

describe("generator schedules", () => {
  // Hashes of the traffic as the generator made it before its keep-alives were streamed.
  test.each([
    ["two ToRs, demo faults, three keep-alive rounds", { seed: 3, durationNs: 6_200_000_000, ioRate: 100, gradientGapNs: 80_000_000, faults: demoFaults(6_200_000_000) }, "83acb7734472950ad57a7e3a3f5608c83b875ec37e25f46c63b7e9c4036cb1b3"],
    ["one ToR", { seed: 9, layout: "single", durationNs: 3_700_000_000, ioRate: 200, gradientGapNs: 40_000_000 }, "46681d156cfd1d0c9eefe06c701f0cd68cbc4dc8e93064e0586c7eef53c6e78d"],
    ["two ToRs, default load, short", { seed: 1, durationNs: 1_100_000_000 }, "d722a4caa0e0a2120be0f9b81310d5fb94154b8ad862694f637722338bcce374"],
  ] as Array<[string, Partial<GeneratorOptions>, string]>)("%s: the same bytes for the same seed", (_name, opts, sha) => {
    expect(digest(opts)).toBe(sha);
  });

  test("the first packets of a day-long run take no more memory than those of a ten-second one", () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    /** Heap held by a stream after its first 20,000 packets (the stream still open). */
    const heldAfterStart = (durationNs: number): number => {
      gc();
      const before = process.memoryUsage().heapUsed;
      const it = streamTraffic({ seed: 5, durationNs, ioRate: 200, gradientGapNs: 40_000_000 })[Symbol.iterator]();
      for (let packets = 0; packets < 20_000;) {
        const r = it.next();
        if (r.done) throw new Error("the stream ended early");
        if (r.value.kind === "packet") packets++;
      }
      gc();
      const held = process.memoryUsage().heapUsed - before;
      it.return?.(undefined);
      return held;
    };
    const short = heldAfterStart(10_000_000_000);
    const day = heldAfterStart(86_400_000_000_000);
    expect(day - short).toBeLessThan(16 << 20);
  });
});
