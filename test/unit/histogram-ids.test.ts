// Histogram ids: 1..1,023 given as pairs are learned, the newcomer refused
// (and counted) when all are held and none idle, an idle one's id reused;
// reads turn the counter cells of the ids that moved into per-bucket deltas.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { P4Schema } from "../../p4runtime/src/schema.js";
import type { Entity } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { HistogramTables } from "../../p4runtime-controller/src/histograms.js";

const root = new URL("../..", import.meta.url).pathname;
const schema = P4Schema.fromJson(readFileSync(`${root}p4/build/telemetry.p4info.json`, "utf8"));
const counterId = (name: string) => schema.counters.get(name).preamble!.id;

/** A switch's counter cells, as a P4Runtime read sees them (unset cells read 0). */
function fakeSwitch(cells: Map<string, number>) {
  return async function* (entities: Entity[]): AsyncIterable<Entity> {
    for (const e of entities) {
      if (e.entity?.$case !== "counterEntry") continue;
      const id = e.entity.value.counterId;
      const at = (i: number) => ({ entity: { $case: "counterEntry" as const, value: { counterId: id, index: { index: BigInt(i) }, data: { packetCount: BigInt(cells.get(`${id}|${i}`) ?? 0), byteCount: 0n } } } });
      if (e.entity.value.index) yield at(Number(e.entity.value.index.index));
      else for (const [k] of cells) if (k.startsWith(`${id}|`)) yield at(Number(k.split("|")[1]));
    }
  };
}

/** An e2e at C counted for pair `id` (0: the overflow) and op, in `bucket`: its cell, its range's and the pair's activity, as the switch counts them. */
function count(cells: Map<string, number>, id: number, op: number, bucket: number, n = 1): void {
  const bump = (k: string) => cells.set(k, (cells.get(k) ?? 0) + n);
  bump(`${counterId("TelemetryIngress.io_tracker.histograms.e2e_c")}|${(id << 9) | (op << 8) | bucket}`);
  bump(`${counterId("TelemetryIngress.io_tracker.histograms.io_ranges")}|${(id << 6) | (op << 5) | (0 << 3) | (bucket >> 5)}`);
  bump(`${counterId("TelemetryIngress.io_tracker.histograms.pair_ios")}|${(id << 1) | op}`);
}

describe("histogram ids", () => {
  test("1,023 pairs get ids; the next is refused and counted until an idle one's id is reused", () => {
    const h = HistogramTables.of(schema, 60_000)!;
    expect(h).toBeDefined();
    const ids = new Set<number>();
    for (let i = 0; i < 1023; i++) {
      const e = h.pairEntry(0x0a000000 + i, 0x0a010001, 0)!;
      expect(e.release).toBeUndefined();
      ids.add(e.action!.params.id!);
    }
    expect([...ids].sort((a, b) => a - b)).toEqual(Array.from({ length: 1023 }, (_, i) => i + 1));
    // The same pair again: no new entry.
    expect(h.pairEntry(0x0a000000, 0x0a010001, 0)).toBeUndefined();
    // Every id held, none idle for 60 s: refused, counted.
    expect(h.pairEntry(0x0b000000, 0x0a010001, 30_000)).toBeUndefined();
    expect(h.pairsRefused).toBe(1);
    // Its every digest asks again: still one pair refused, and no new look within a second.
    for (let t = 30_001; t < 30_900; t += 100) expect(h.pairEntry(0x0b000000, 0x0a010001, t)).toBeUndefined();
    expect(h.pairEntry(0x0b000000, 0x0a010001, 31_500)).toBeUndefined();
    expect(h.pairsRefused).toBe(1);
    // A minute on: the pair idle longest is let go for the newcomer (its entry named for removal), once.
    const e = h.pairEntry(0x0b000001, 0x0a010001, 61_000)!;
    expect(e.release).toEqual({ host: 0x0a000000, target: 0x0a010001 });
    expect(h.pairEntry(0x0b000001, 0x0a010001, 61_100)).toBeUndefined();
    expect(h.pairCount).toBe(1022);
  });

  test("an idle pair's id goes to a newcomer only once what the old pair counted since the last read is read out as its own", async () => {
    const h = HistogramTables.of(schema, 60_000)!;
    for (let i = 0; i < 1023; i++) h.pairEntry(0x0a000000 + i, 0x0a010001, 0);
    const cells = new Map<string, number>();
    expect((await h.read(fakeSwitch(cells), 1000)).io).toEqual([]);
    // After that read, pair 1 (0x0a000000, idle since 0) counts two writes: nothing reads them yet.
    count(cells, 1, 1, 100, 2);
    // A newcomer a minute on: pair 1's entry is to be removed; the newcomer waits, whatever it asks meanwhile.
    const newcomer = [0x0b000000, 0x0a010001] as const;
    expect(h.pairEntry(...newcomer, 61_000)!.release).toEqual({ host: 0x0a000000, target: 0x0a010001 });
    expect(h.pairEntry(...newcomer, 61_500)).toBeUndefined();
    expect(h.pairsRefused).toBe(0);
    // A read before the removal is written: the id still counts for pair 1, and is not free.
    count(cells, 1, 1, 100);
    expect((await h.read(fakeSwitch(cells), 62_000)).io).toEqual([{ host: 0x0a000000, target: 0x0a010001, op: "write", figure: "e2e_c", buckets: [[100, 3]] }]);
    expect(h.pairEntry(...newcomer, 62_100)).toBeUndefined();
    // The removal written, one more count came before it: read out as pair 1's, then the id is free.
    h.releasesWritten(h.releasesPending());
    count(cells, 1, 1, 100);
    expect((await h.read(fakeSwitch(cells), 63_000)).io).toEqual([{ host: 0x0a000000, target: 0x0a010001, op: "write", figure: "e2e_c", buckets: [[100, 1]] }]);
    const given = h.pairEntry(...newcomer, 63_100)!;
    expect(given.match).toEqual({ host: 0x0b000000, target: 0x0a010001 });
    expect(given.action!.params.id).toBe(1);
    // From then on the id's counts are the newcomer's.
    count(cells, 1, 1, 101);
    expect((await h.read(fakeSwitch(cells), 64_000)).io).toEqual([{ host: 0x0b000000, target: 0x0a010001, op: "write", figure: "e2e_c", buckets: [[101, 1]] }]);
    expect(h.pairCount).toBe(1023);
  });

  test("a read gives what each pair, op and figure counted since the last one; id 0 is the overflow", async () => {
    const h = HistogramTables.of(schema, 60_000)!;
    const id = h.pairEntry(0x0a000001, 0x0a010001, 0)!.action!.params.id!;
    const cells = new Map<string, number>();
    // Pair `id`, writes (op 1): 3 I/Os in bucket 100; the overflow, reads: 2 in bucket 90.
    count(cells, id, 1, 100, 3);
    count(cells, 0, 0, 90, 2);
    const first = await h.read(fakeSwitch(cells), 1000);
    expect(first.io).toEqual(expect.arrayContaining([
      { host: 0x0a000001, target: 0x0a010001, op: "write", figure: "e2e_c", buckets: [[100, 3]] },
      { host: null, target: null, op: "read", figure: "e2e_c", buckets: [[90, 2]] },
    ]));
    expect(first.io).toHaveLength(2);
    // Nothing moved: nothing read back.
    expect((await h.read(fakeSwitch(cells), 2000)).io).toEqual([]);
    // Two more in bucket 100 and one in 101: the deltas only.
    count(cells, id, 1, 100, 2);
    count(cells, id, 1, 101);
    const next = await h.read(fakeSwitch(cells), 3000);
    expect(next.io).toEqual([{ host: 0x0a000001, target: 0x0a010001, op: "write", figure: "e2e_c", buckets: [[100, 2], [101, 1]] }]);
    // A switch whose counters started anew (pipeline pushed): every cell counts from 0 again.
    h.resetBaselines();
    const again = await h.read(fakeSwitch(cells), 4000);
    expect(again.io.find((d) => d.host !== null)!.buckets).toEqual([[100, 5], [101, 1]]);
  });
});

describe("histogram reads on Tofino (io_ranges: one cell per response, its e2e figure's)", () => {
  const t2 = P4Schema.fromJson(readFileSync(`${root}p4/build/t2na/telemetry.p4info.json`, "utf8"));
  const id2 = (name: string) => t2.counters.get(name).preamble!.id;
  const H = "TelemetryIngress.io_tracker.histograms.";

  test("a moved e2e range has the other e2e figure's range read, and DAL and DPL up to it", async () => {
    const h = HistogramTables.of(t2, 60_000)!;
    expect(h).toBeDefined();
    const id = h.pairEntry(0x0a000001, 0x0a010001, 0)!.action!.params.id!;
    expect(id).toBeLessThan(256);
    const cells = new Map<string, number>();
    const bump = (k: string, n = 1) => cells.set(k, (cells.get(k) ?? 0) + n);
    const cell = (op: number, b: number) => (id << 9) | (op << 8) | b;
    // A write at a switch that is both its C and S: e2e in bucket 140 (range 4) at C and S,
    // DPL in bucket 70 (range 2), DAL in bucket 120 (range 3); io_ranges has e2e_c's cell only.
    bump(`${id2(`${H}e2e_c`)}|${cell(1, 140)}`);
    bump(`${id2(`${H}e2e_s`)}|${cell(1, 140)}`);
    bump(`${id2(`${H}dpl_c`)}|${cell(1, 70)}`);
    bump(`${id2(`${H}dal_s`)}|${cell(1, 120)}`);
    bump(`${id2(`${H}io_ranges`)}|${(id << 6) | (1 << 5) | (0 << 3) | 4}`);
    bump(`${id2(`${H}pair_ios`)}|${(id << 1) | 1}`);
    const r = await h.read(fakeSwitch(cells), 1000);
    const by = Object.fromEntries(r.io.map((d) => [d.figure, d.buckets]));
    expect(by).toEqual({ e2e_c: [[140, 1]], e2e_s: [[140, 1]], dpl: [[70, 1]], dal: [[120, 1]] });
    expect(r.io.every((d) => d.host === 0x0a000001 && d.op === "write")).toBe(true);
  });

  test("on BMv2 a figure's buckets are read only where its own range moved", async () => {
    const h = HistogramTables.of(schema, 60_000)!;
    const id = h.pairEntry(0x0a000001, 0x0a010001, 0)!.action!.params.id!;
    const cells = new Map<string, number>();
    count(cells, id, 1, 140);
    // A DAL count whose range cell did not move is not read.
    cells.set(`${counterId("TelemetryIngress.io_tracker.histograms.dal_s")}|${(id << 9) | (1 << 8) | 120}`, 1);
    const r = await h.read(fakeSwitch(cells), 1000);
    expect(r.io.map((d) => d.figure)).toEqual(["e2e_c"]);
  });

  test("a Tofino cell's 32 bits wrapping is read modulo 2^32; a cell read lower with nothing to explain it counts nothing", async () => {
    const h = HistogramTables.of(t2, 60_000)!;
    const id = h.pairEntry(0x0a000001, 0x0a010001, 0)!.action!.params.id!;
    const cells = new Map<string, number>();
    const keys = [
      `${id2(`${H}e2e_c`)}|${(id << 9) | (1 << 8) | 140}`,
      `${id2(`${H}io_ranges`)}|${(id << 6) | (1 << 5) | (0 << 3) | 4}`,
      `${id2(`${H}pair_ios`)}|${(id << 1) | 1}`,
    ];
    // 5 short of the wrap, then 12 more I/Os: the cells read 7.
    for (const k of keys) cells.set(k, 2 ** 32 - 5);
    await h.read(fakeSwitch(cells), 1000);
    for (const k of keys) cells.set(k, 7);
    const r = await h.read(fakeSwitch(cells), 2000);
    expect(r.io).toEqual([{ host: 0x0a000001, target: 0x0a010001, op: "write", figure: "e2e_c", buckets: [[140, 12]] }]);
    expect([h.cellsWrapped, h.cellsDecreased]).toEqual([3, 0]);
    // Lower by 3 (not a wrap: no cell moves 2^31 in one read): nothing counted, the new value the baseline.
    for (const k of keys) cells.set(k, 4);
    expect((await h.read(fakeSwitch(cells), 3000)).io).toEqual([]);
    expect([h.cellsWrapped, h.cellsDecreased]).toEqual([3, 1]);
    for (const k of keys) cells.set(k, 6);
    expect((await h.read(fakeSwitch(cells), 4000)).io[0]!.buckets).toEqual([[140, 2]]);
  });

  test("on BMv2 (64-bit cells) a cell read lower counts nothing, and is counted", async () => {
    const h = HistogramTables.of(schema, 60_000)!;
    const id = h.pairEntry(0x0a000001, 0x0a010001, 0)!.action!.params.id!;
    const cells = new Map<string, number>();
    count(cells, id, 1, 140, 2 ** 32 - 5);
    await h.read(fakeSwitch(cells), 1000);
    for (const [k] of cells) cells.set(k, 7);
    expect((await h.read(fakeSwitch(cells), 2000)).io).toEqual([]);
    expect(h.cellsWrapped).toBe(0);
    expect(h.cellsDecreased).toBe(1);
  });
});
