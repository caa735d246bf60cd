// Meters (programs/meters.p4), indirect and direct: BMv2's two-rate
// three-color marker on the switch's clock, packet by packet; P4Runtime
// MeterEntry, DirectMeterEntry and table entries' meter_config, written and
// read with the spec's codes. Where BMv2 simple_switch_grpc runs, the same
// requests go to it, and meters whose buckets never refill (rate 0, so the
// colors do not depend on either switch's clock) color the same packets
// alike.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { P4Info } from "../../p4runtime/src/generated/p4/config/v1/p4info.js";
import { SetForwardingPipelineConfigRequest_Action, TableEntry, Update_Type, type Entity, type MeterConfig } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { P4RuntimeClient, P4WriteError, toUint128 } from "../../p4runtime/src/index.js";
import { configureMeter, GREEN, newMeterArray, RED, YELLOW } from "../../switch/src/bmv2/meters.js";
import { Pipeline } from "../../switch/src/bmv2/pipeline.js";
import { CompiledProgram } from "../../switch/src/bmv2/program.js";
import { UnsupportedProgramError } from "../../switch/src/bmv2/errors.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { announceSkip, Bmv2Switch, bmv2SkipReason, Wire } from "../bmv2/harness.js";

const dir = new URL("./programs/", import.meta.url);
const jsonText = readFileSync(new URL("meters.json", dir), "utf8");
const p4infoJson = JSON.parse(readFileSync(new URL("meters.p4info.json", dir), "utf8"));
const p4info = P4Info.fromJSON(p4infoJson);
const meterId = (name: string) => (p4infoJson.meters as Array<{ preamble: { id: number; name: string } }>).find((m) => m.preamble.name === name)!.preamble.id;
const BY_PACKETS = meterId("I.by_packets");
const BY_BYTES = meterId("I.by_bytes");

/** A packet for cell (and table entry) `index`, `size` bytes long. */
const packet = (index: number, size = 4) => Buffer.concat([Buffer.from([index, 0xee, 0xee, 0xee]), Buffer.alloc(size - 4)]);
const MISS = 0xff;

describe("meters on the software switch", () => {
  const program = new CompiledProgram(JSON.parse(jsonText));
  const pl = new Pipeline(program);
  const byPackets = program.meters.get("I.by_packets")!;
  const byBytes = program.meters.get("I.by_bytes")!;
  const colors = (index: number, atNs: number, size = 4) => {
    const out = pl.process({ port: 0, data: packet(index, size), timestampNs: atNs }).output!.data;
    return [out[1], out[2], out[3]];
  };

  test("an unconfigured cell marks every packet GREEN", () => {
    expect(colors(0, 0)).toEqual([GREEN, GREEN, MISS]);
    expect(colors(0, 0)).toEqual([GREEN, GREEN, MISS]);
  });

  test("buckets that never refill: the committed burst is GREEN, then YELLOW up to the peak burst, then RED", () => {
    configureMeter(byPackets, 1, { cir: 0, cburst: 2, pir: 0, pburst: 3 });
    expect([0, 1, 2, 3, 4].map(() => colors(1, 5_000_000)[0])).toEqual([GREEN, GREEN, YELLOW, RED, RED]);
  });

  test("buckets refill at their rate, in whole µs since the switch started (BMv2's arithmetic)", () => {
    configureMeter(byPackets, 2, { cir: 1000, cburst: 1, pir: 2000, pburst: 1 });
    const t = 1_000_000_000;
    expect(colors(2, t)[0]).toBe(GREEN);
    expect(colors(2, t)[0]).toBe(RED); // the peak bucket is empty
    expect(colors(2, t + 500_000)[0]).toBe(YELLOW); // one peak token in 500 µs, no committed one yet
    expect(colors(2, t + 1_000_000)[0]).toBe(GREEN); // one of each
    expect(colors(2, t + 1_000_999)[0]).toBe(RED); // 999 ns more is no whole µs
  });

  test("a bytes meter pays the packet's length", () => {
    configureMeter(byBytes, 3, { cir: 0, cburst: 100, pir: 0, pburst: 150 });
    // 60 + 40 take the committed 100; the next 40 only the peak's (50 left); 20 is more than
    // the peak's 10 left: RED; a packet of 4 bytes still fits the peak: YELLOW.
    expect([60, 40, 40, 20, 4].map((size) => colors(3, 7_000_000, size)[1])).toEqual([GREEN, GREEN, YELLOW, RED, YELLOW]);
  });

  test("unconfiguring a cell makes it GREEN again; a committed rate above the peak is refused by name", () => {
    configureMeter(byPackets, 1, undefined);
    expect(colors(1, 9_000_000)[0]).toBe(GREEN);
    expect(() => configureMeter(byPackets, 1, { cir: 10, cburst: 1, pir: 5, pburst: 1 })).toThrow(/committed rate 10 exceeds the peak rate 5/);
    expect(() => configureMeter(byPackets, 4, undefined)).toThrow(/has 4 cells, index 4/);
  });

  test("a direct meter: a miss leaves the field, a hit on an unconfigured entry is GREEN, a configured entry meters its own packets", () => {
    const table = program.tables.get("I.by_entry")!;
    const mark = program.actionsByName.get("I.mark")!.id;
    const cell = newMeterArray("I.per_entry", 2, 1, false);
    configureMeter(cell, 0, { cir: 0, cburst: 1, pir: 0, pburst: 2 });
    table.insert({ match: [{ kind: "exact", value: 1n }], priority: 0, action: { actionId: mark, data: [] }, packets: 0, bytes: 0, meter: undefined });
    table.insert({ match: [{ kind: "exact", value: 2n }], priority: 0, action: { actionId: mark, data: [] }, packets: 0, bytes: 0, meter: cell });
    expect(colors(3, 0)[2]).toBe(MISS);
    expect([colors(1, 0)[2], colors(1, 0)[2]]).toEqual([GREEN, GREEN]);
    expect([0, 1, 2, 3].map(() => colors(2, 0)[2])).toEqual([GREEN, YELLOW, RED, RED]);
  });

  test("a direct meter without a result field is refused at load, by name", () => {
    const json = JSON.parse(jsonText);
    delete json.meter_arrays[2].result_target;
    expect(() => new CompiledProgram(json)).toThrow(UnsupportedProgramError);
    expect(() => new CompiledProgram(json)).toThrow(/meter 'I.per_entry': a direct meter without a table or a result field/);
  });
});

// ---- over P4Runtime, and on BMv2 ----------------------------------------------------------

const TABLE = (p4infoJson.tables as Array<{ preamble: { id: number } }>)[0]!.preamble.id;
const MARK = (p4infoJson.actions as Array<{ preamble: { id: number; name: string } }>).find((a) => a.preamble.name === "I.mark")!.preamble.id;
const meterConfig = (c: Partial<MeterConfig>): MeterConfig => ({ cir: 0n, cburst: 0n, pir: 0n, pburst: 0n, eburst: 0n, ...c });
const tableEntry = (index: number, config?: Partial<MeterConfig>): TableEntry =>
  TableEntry.fromPartial({ tableId: TABLE, match: [{ fieldId: 1, fieldMatchType: { $case: "exact", value: { value: Buffer.from([index]) } } }], action: { type: { $case: "action", value: { actionId: MARK, params: [] } } }, meterConfig: config && meterConfig(config) });
const row = (index: number, config?: Partial<MeterConfig>): Entity => ({ entity: { $case: "tableEntry", value: tableEntry(index, config) } });
const direct = (index: number, config?: Partial<MeterConfig>): Entity => ({ entity: { $case: "directMeterEntry", value: { tableEntry: tableEntry(index), config: config && meterConfig(config), counterData: undefined } } });

const entry = (id: number, index: number | undefined, config?: Partial<MeterConfig>): Entity => ({
  entity: { $case: "meterEntry", value: { meterId: id, index: index === undefined ? undefined : { index: BigInt(index) }, config: config && { cir: 0n, cburst: 0n, pir: 0n, pburst: 0n, eburst: 0n, ...config }, counterData: undefined } },
});

async function connect(address: string, deviceId: bigint): Promise<P4RuntimeClient> {
  const c = new P4RuntimeClient({ address, deviceId, timeoutMs: 20_000 });
  const ch = c.streamChannel();
  ch.send({ update: { $case: "arbitration", value: { deviceId, role: undefined, electionId: toUint128(1n), status: undefined } } });
  for await (const m of ch) if (m.update?.$case === "arbitration") break;
  await c.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info, p4DeviceConfig: Buffer.from(jsonText), cookie: { cookie: 1n } } });
  return c;
}

async function code(c: P4RuntimeClient, type: Update_Type, e: Entity): Promise<string> {
  try {
    await c.write([{ type, entity: e }], 1n);
    return "OK";
  } catch (err) {
    return err instanceof P4WriteError ? err.failures[0]!.code : (err as { code: string }).code;
  }
}

/** [what, type, entity, our code, BMv2's code] */
const WRITES: Array<[string, Update_Type, Entity, string, string]> = [
  ["INSERT", Update_Type.INSERT, entry(BY_PACKETS, 0, { cburst: 1n, pburst: 1n }), "INVALID_ARGUMENT", "INVALID_ARGUMENT"],
  ["DELETE", Update_Type.DELETE, entry(BY_PACKETS, 0), "INVALID_ARGUMENT", "INVALID_ARGUMENT"],
  // An unknown id: NOT_FOUND, as the switch answers for counters.
  ["an unknown meter", Update_Type.MODIFY, entry(12345, 0, { cburst: 1n, pburst: 1n }), "NOT_FOUND", "INVALID_ARGUMENT"],
  ["an index past the array", Update_Type.MODIFY, entry(BY_PACKETS, 4, { cburst: 1n, pburst: 1n }), "OUT_OF_RANGE", "UNKNOWN"],
  ["eburst set on a two-rate meter", Update_Type.MODIFY, entry(BY_PACKETS, 0, { cburst: 1n, pburst: 1n, eburst: 5n }), "INVALID_ARGUMENT", "OK"],
  ["a committed rate above the peak", Update_Type.MODIFY, entry(BY_PACKETS, 0, { cir: 10n, cburst: 1n, pir: 5n, pburst: 1n }), "INVALID_ARGUMENT", "UNKNOWN"],
  ["one cell", Update_Type.MODIFY, entry(BY_PACKETS, 0, { cir: 0n, cburst: 2n, pir: 0n, pburst: 3n }), "OK", "OK"],
  ["every cell of the bytes meter (no index)", Update_Type.MODIFY, entry(BY_BYTES, undefined, { cir: 0n, cburst: 50n, pir: 0n, pburst: 60n }), "OK", "UNIMPLEMENTED"],
  ["one cell of the bytes meter", Update_Type.MODIFY, entry(BY_BYTES, 0, { cir: 0n, cburst: 100n, pir: 0n, pburst: 150n }), "OK", "OK"],
  ["a table entry with a direct meter config", Update_Type.INSERT, row(1, { cburst: 1n, pburst: 2n }), "OK", "OK"],
  // BMv2 inserts the entry all the same, then cannot find it for reads and direct meter writes.
  ["a table entry with a direct meter config whose committed rate is above the peak", Update_Type.INSERT, row(5, { cir: 9n, cburst: 1n, pir: 1n, pburst: 2n }), "INVALID_ARGUMENT", "UNKNOWN"],
  ["a table entry without one", Update_Type.INSERT, row(2), "OK", "OK"],
  ["a direct meter entry INSERT", Update_Type.INSERT, direct(2, { cburst: 1n, pburst: 1n }), "INVALID_ARGUMENT", "INVALID_ARGUMENT"],
  ["a direct meter entry of an entry that does not exist", Update_Type.MODIFY, direct(3, { cburst: 1n, pburst: 1n }), "NOT_FOUND", "INVALID_ARGUMENT"],
  ["a direct meter entry MODIFY", Update_Type.MODIFY, direct(2, { cburst: 2n, pburst: 3n }), "OK", "OK"],
];

/** `pbursts`: the peak bursts a read of the whole bytes meter gives after WRITES. */
function suite(name: string, start: () => Promise<{ client: P4RuntimeClient; send(data: Buffer): Promise<Buffer>; close(): Promise<void> }>, column: 3 | 4, pbursts: Array<bigint | undefined>) {
  describe(name, () => {
    let t: Awaited<ReturnType<typeof start>>;
    beforeAll(async () => {
      t = await start();
    }, 120_000);
    afterAll(async () => {
      await t?.close();
    });

    test("MODIFY only, the spec's codes", async () => {
      const got: string[] = [];
      for (const w of WRITES) got.push(`${w[0]}: ${await code(t.client, w[1], w[2])}`);
      expect(got).toEqual(WRITES.map((w) => `${w[0]}: ${w[column]}`));
    }, 60_000);

    test("reads: one cell, a whole array; the configured cell reads back its config", async () => {
      const [one] = await t.client.readAll([entry(BY_PACKETS, 0)]);
      const v = one!.entity?.$case === "meterEntry" ? one!.entity.value : undefined;
      expect(v?.config && [v.config.cir, v.config.cburst, v.config.pir, v.config.pburst]).toEqual([0n, 2n, 0n, 3n]);
      const all = await t.client.readAll([entry(BY_BYTES, undefined)]);
      expect(all).toHaveLength(4);
      expect(all.map((e) => (e.entity?.$case === "meterEntry" ? e.entity.value.config?.pburst : undefined))).toEqual(pbursts);
      const [d] = await t.client.readAll([direct(2)]);
      expect(d!.entity?.$case === "directMeterEntry" && d!.entity.value.config).toMatchObject({ cburst: 2n, pburst: 3n });
      if (column === 3) expect(await t.client.readAll([row(5)])).toEqual([]); // the refused INSERT left nothing
      const [withConfig] = await t.client.readAll([row(1, {})]);
      expect(withConfig!.entity?.$case === "tableEntry" && withConfig!.entity.value.meterConfig).toMatchObject({ cburst: 1n, pburst: 2n });
    }, 60_000);

    test("the configured cells color packets: packets GREEN, GREEN, YELLOW, RED; bytes by length", async () => {
      const got: number[][] = [];
      for (const size of [60, 40, 40, 20]) {
        const out = await t.send(packet(0, size));
        got.push([out[1]!, out[2]!]);
      }
      expect(got).toEqual([[GREEN, GREEN], [GREEN, GREEN], [YELLOW, YELLOW], [RED, RED]]);
      // Direct: entry 1 (committed burst 1, peak 2), entry 2 (2, 3), entry 3 missing.
      const direct: number[] = [];
      for (const index of [1, 1, 1, 2, 2, 2, 2, 3]) direct.push((await t.send(packet(index, 20)))[3]!);
      expect(direct).toEqual([GREEN, YELLOW, RED, GREEN, GREEN, YELLOW, RED, MISS]);
      // A MODIFY of the table entry without a meter config resets its meter (spec): GREEN again.
      // BMv2 keeps the meter's config and state: still RED.
      await t.client.write([{ type: Update_Type.MODIFY, entity: row(1) }], 1n);
      expect((await t.send(packet(1, 20)))[3]).toBe(column === 3 ? GREEN : RED);
    }, 60_000);
  });
}

suite("the software switch over P4Runtime", async () => {
  const sw = new SoftwareSwitch({ clock: "virtual" });
  const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
  const client = await connect(`127.0.0.1:${await server.listen("127.0.0.1:0")}`, 1n);
  let now = 1_000_000_000n;
  return {
    client,
    async send(data) {
      return sw.process({ port: 0, data, unixNs: (now += 1000n) })!.output!.data;
    },
    async close() {
      client.close();
      await server.close();
    },
  };
}, 3, [150n, 60n, 60n, 60n]);

describe.skipIf(bmv2SkipReason !== undefined)("BMv2 simple_switch_grpc, the same requests and packets", () => {
  announceSkip("BMv2 meter tests");
  suite("BMv2", async () => {
    const bmv2 = await Bmv2Switch.start({ name: "prem", ports: [0, 1] });
    const wire = new Wire(bmv2);
    const client = await connect(bmv2.address, BigInt(bmv2.deviceId));
    return {
      client,
      async send(data) {
        const out = await wire.send(0, data, 3000);
        expect(out.map((o) => o.port)).toEqual([1]);
        // Ethernet pads short frames; the colors are in the first bytes.
        return out[0]!.data;
      },
      async close() {
        client.close();
        wire.close();
        await bmv2.stop();
      },
    };
  }, 4, [150n, undefined, undefined, undefined]);
});
