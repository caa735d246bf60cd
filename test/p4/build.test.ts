import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { P4_NAMES } from "../../contract/src/generated/telemetry-names.js";
import { P4Schema } from "../../p4runtime/src/schema.js";
// @ts-expect-error -- plain ESM script without types
import { checkManifest } from "../../scripts/p4-build.mjs";

const root = new URL("../..", import.meta.url).pathname;
const schema = P4Schema.fromJson(readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8"));

describe("compiled P4 program", () => {
  test("the P4Info has the tables, actions, digests and counters the controller needs", () => {
    for (const t of ["forwarding.ipv4_routes", "ingress_port_role.port_roles", "egress_port_role.port_roles", "config.telemetry_config", "flow_tracker.flow_watchlist", "io_tracker.io_watchlist"]) {
      expect(schema.tables.has(t), t).toBe(true);
    }
    expect(schema.matchField(schema.tables.get("flow_tracker.flow_watchlist"), "dest_qp").bitwidth).toBe(24);
    expect(schema.tables.get("flow_tracker.flow_watchlist").size).toBe(1024n);
    expect(schema.digests.all().map((d) => d.preamble!.name).sort()).toEqual(["io_digest_t", "learn_digest_t", "msg_digest_t"]);
    expect(schema.counters.has("stats.telemetry_stats")).toBe(true);
    expect(schema.counters.has("stats.port_packets")).toBe(true);
    expect(schema.param(schema.actions.get("config.set_config"), "ts_scale").bitwidth).toBe(48);
  });

  test("the generated names are the P4Info's names", () => {
    for (const t of Object.values(P4_NAMES.tables)) expect(schema.tables.get(t.name).preamble!.name).toBe(t.name);
    for (const a of Object.values(P4_NAMES.actions)) expect(schema.actions.get(a.name).preamble!.name).toBe(a.name);
    const io = P4_NAMES.digests.io_digest_t.fields;
    expect(io[0]).toEqual({ name: "seq", bitwidth: 32 });
  });

  test("a lookup by a wrong name suggests the right one", () => {
    expect(() => schema.tables.get("ipv4_route")).toThrow(/no table named 'ipv4_route'\. Did you mean 'TelemetryIngress\.forwarding\.ipv4_routes'\?/);
  });
});

describe("manifest check", () => {
  const tmp = mkdtempSync(join(tmpdir(), "manifest-"));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  cpSync(join(root, "p4"), join(tmp, "p4"), { recursive: true });

  test("passes on the committed sources and outputs", () => {
    expect(checkManifest(tmp)).toEqual([]);
  });

  test("fails, naming the file, when a P4 source changes without a recompile", () => {
    appendFileSync(join(tmp, "p4/include/control/stats.p4"), "\n// changed\n");
    expect(checkManifest(tmp)).toEqual(["p4/include/control/stats.p4 changed since the last compile"]);
  });

  test("fails when a compiled output is edited by hand", () => {
    const f = join(tmp, "p4/build/telemetry.p4info.txtpb");
    writeFileSync(f, readFileSync(f, "utf8") + "# edit\n");
    expect(checkManifest(tmp).some((p: string) => p.includes("telemetry.p4info.txtpb does not match the manifest"))).toBe(true);
  });
});
