import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { buildTableEntry } from "../../p4runtime/src/entities.js";
import { P4Schema } from "../../p4runtime/src/schema.js";
import { P4_NAMES } from "../../contract/src/generated/telemetry-names.js";

const schema = P4Schema.fromJson(readFileSync(new URL("../../p4/build/telemetry.p4info.json", import.meta.url), "utf8"));
const route = (dst: string) => buildTableEntry(schema, { table: P4_NAMES.tables.forwarding_ipv4_routes.name, match: { dst_addr: dst }, action: { name: P4_NAMES.actions.forwarding_route.name, params: { port: 4 } } });

describe("table entries", () => {
  test("a don't-care LPM match (/0) is omitted, as the P4Runtime spec asks; any other prefix is kept", () => {
    expect(route("0.0.0.0/0").match).toEqual([]);
    const m = route("10.1.0.0/16").match;
    expect(m).toHaveLength(1);
    expect(m[0]!.fieldMatchType).toEqual({ $case: "lpm", value: { value: Buffer.from([10, 1, 0, 0]), prefixLen: 16 } });
  });
});
