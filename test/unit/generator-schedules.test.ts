// The generator's schedules are streamed: the same seed and options give the
// same traffic, packet for packet, and memory does not grow with the run's length.
import { createHash } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, test } from "vitest";
import { streamTraffic, type GeneratorOptions } from "../../traffic/src/generator.js";
import { demoFaults } from "../../app/demo.js";

/** The headers a schedule decides: Ethernet, IPv4, UDP and BTH (addresses, QPs, PSNs, opcodes). */
const SCHEDULED_HEADER_BYTES = 54;

/**
 * sha256 of every item the stream yields, in order: packets (switch, capture
 * time, wire length, headers) and the truth of every I/O and message.
 */
function digest(opts: Partial<GeneratorOptions>): string {
  const h = createHash("sha256");
  const big = (_k: string, v: unknown) => (typeof v === "bigint" ? v.toString() : v);
  for (const item of streamTraffic(opts)) {
    if (item.kind === "packet") h.update(`${item.sw.name} ${item.timestampNs} ${item.originalLength} `).update(item.data.subarray(0, SCHEDULED_HEADER_BYTES));
    else h.update(JSON.stringify(item, (k, v: unknown) => (k === "sw" ? undefined : big(k, v))));
    h.update("\n");
  }
  return h.digest("hex");
}

describe("generator schedules", () => {
  // Hashes of the traffic as the generator made it before its keep-alives were streamed (capsule contents left out: they do not depend on the schedule),
  // with the messages' truth carrying late_packets, reordered and each late packet (the packets are unchanged: without `late` the hashes are those before it).
  // Since then the gradient sync is shaped as NCCL's (the receiver's CTS, WRITE with Immediate, ACKs and NAKs), the queues send Flushes, and new admin queues get Linux's set-up commands: new hashes.
  // Then an I/O whose response a switch missed waits until that switch's capture passes its I/O timeout (or the end), with
  // unanswered_at_end; the packets unchanged (every packet byte compared with the generator before).
  test.each([
    ["two ToRs, demo faults, three keep-alive rounds", { seed: 3, durationNs: 6_200_000_000, ioRate: 100, gradientGapNs: 80_000_000, faults: demoFaults(6_200_000_000) }, "d1d480d6bc769773bf9caaa65c86206c5693c6048b332e3b78f3fbcbf1ff2c28"],
    ["one ToR", { seed: 9, layout: "single", durationNs: 3_700_000_000, ioRate: 200, gradientGapNs: 40_000_000 }, "f13d5fb39a6ddecb1f95cd534674c5c90cf9f80ee0e1303b16cdba3f2d5ae48a"],
  ] as Array<[string, Partial<GeneratorOptions>, string]>)("%s: the same traffic for the same seed", (_name, opts, sha) => {
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
