import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { P4_COMPACT_DIGESTS, P4_NAMES, SWITCH_COUNTER_NAMES } from "../../contract/src/generated/telemetry-names.js";
import { FLOW_EVENTS_SIZE, PACKET_EVENTS_SIZE } from "../../contract/src/switch-counters.js";
import { P4Schema } from "../../p4runtime/src/schema.js";
// @ts-expect-error -- plain ESM script without types
import { checkManifest } from "../../scripts/p4-build.mjs";

const root = new URL("../..", import.meta.url).pathname;
const schema = P4Schema.fromJson(readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8"));

interface P4InfoJson {
  tables: Array<{ preamble: { id: number; name: string }; matchFields?: Array<{ name: string }>; actionRefs: Array<{ id: number }>; size: string }>;
  actions: Array<{ preamble: { id: number; name: string }; params?: Array<{ name: string; bitwidth: number }> }>;
  digests: Array<{ preamble: { name: string }; typeSpec: { struct: { name: string } } }>;
  counters: Array<{ preamble: { name: string }; size: string }>;
  typeInfo: { structs: Record<string, { members: Array<{ name: string; typeSpec: { bitstring: { bit: { bitwidth: number } } } }> }> };
}
interface Bmv2Json {
  pipelines: Array<{ tables: Array<{ name: string; key: Array<{ name: string }>; max_size: number; actions: string[] }> }>;
  actions: Array<{ name: string; runtime_data: Array<{ name: string; bitwidth: number }> }>;
  headers: Array<{ name: string; header_type: string }>;
  header_types: Array<{ name: string; fields: Array<[string, number, boolean]> }>;
  learn_lists: Array<{ name: string; elements: Array<{ value: [string, string] }> }>;
  counter_arrays: Array<{ name: string; size: number }>;
}

/** The program's own build switches; a conditional on anything else (a header guard, the compiler's) is kept. */
const SWITCHES = ["TARGET_TNA", "DIGESTS_COMPACT"];

/**
 * The lines of a P4 source that a v1model build compiles, with `defined`
 * among SWITCHES set (the main build sets none; p4/build/compact/
 * DIGESTS_COMPACT): `#ifdef`, `#ifndef` and `#if defined(A) || defined(B)`
 * of those switches followed, their `#else` parts too.
 */
function v1modelLines(text: string, defined: readonly string[] = []): string {
  const keep: boolean[] = [];
  const out: string[] = [];
  const isSet = (name: string) => (SWITCHES.includes(name) ? defined.includes(name) : undefined);
  for (const line of text.split("\n")) {
    const d = /^\s*#\s*(ifdef|ifndef|if|else|endif)\b\s*(.*)$/.exec(line);
    const arg = d?.[2]?.trim() ?? "";
    if (d?.[1] === "ifdef") keep.push(isSet(arg) ?? true);
    else if (d?.[1] === "ifndef") keep.push(isSet(arg) === undefined ? true : !isSet(arg));
    else if (d?.[1] === "if") {
      const names = [...arg.matchAll(/defined\s*\(\s*(\w+)\s*\)/g)].map((m) => m[1]!);
      const ours = names.length > 0 && names.every((n) => SWITCHES.includes(n)) && /^(\s*defined\s*\(\s*\w+\s*\)\s*(\|\||$))+$/.test(arg);
      keep.push(ours ? names.some((n) => isSet(n)) : true);
    } else if (d?.[1] === "else") keep.push(!keep.pop());
    else if (d?.[1] === "endif") keep.pop();
    else if (keep.every(Boolean)) out.push(line);
  }
  return out.join("\n");
}

/** The P4 sources, read as text: controls, their instances, tables, actions, structs, typedefs. */
function p4Sources(defined: readonly string[] = []) {
  const text = [join(root, "p4/v1model/main.p4"), join(root, "p4/v1model/include/define_v1model.p4"), ...readdirSync(join(root, "p4/include"), { recursive: true }).map(String).filter((f) => f.endsWith(".p4")).map((f) => join(root, "p4/include", f))]
    .map((f) => v1modelLines(readFileSync(f, "utf8").replace(/\/\/.*$/gm, ""), defined))
    .join("\n");
  const typedefs = new Map([...text.matchAll(/typedef\s+bit<(\d+)>\s+(\w+)\s*;/g)].map((m) => [m[2]!, Number(m[1])]));
  const width = (type: string): number => {
    const bit = /^bit<(\d+)>$/.exec(type);
    if (bit) return Number(bit[1]);
    const w = typedefs.get(type);
    if (w === undefined) throw new Error(`no typedef for ${type}`);
    return w;
  };
  // A control's body: from its declaration to the first closing brace at column 0.
  const controls = new Map([...text.matchAll(/^control\s+(\w+)\s*\([^]*?^\}/gm)].map((m) => [m[1]!, m[0]]));
  /** The body of the control that `path` (Top.instance.instance) names. */
  const body = (path: string[]): string => {
    let b = controls.get(path[0]!);
    if (!b) throw new Error(`no control ${path[0]}`);
    for (const inst of path.slice(1)) {
      const type: string | undefined = new RegExp(`(\\w+)\\(\\)\\s+${inst}\\s*;`).exec(b)?.[1];
      b = type ? controls.get(type) : undefined;
      if (!b) throw new Error(`no instance ${inst} in ${path.join(".")}`);
    }
    return b;
  };
  const split = (name: string) => {
    const parts = name.split(".");
    return { control: body(parts.slice(0, -1)), last: parts.at(-1)! };
  };
  return {
    declares(name: string, kind: "table" | "action"): boolean {
      const { control, last } = split(name);
      return new RegExp(`\\b${kind}\\s+${last}\\s*[({]`).test(control);
    },
    actionParams(name: string): Array<{ name: string; bitwidth: number }> {
      const { control, last } = split(name);
      const params = new RegExp(`\\baction\\s+${last}\\s*\\(([^)]*)\\)`).exec(control)![1]!.trim();
      // Directional parameters are bound by the table, not the control plane's.
      return params === "" ? [] : params.split(",").filter((p) => !/^\s*(in|out|inout)\s/.test(p)).map((p) => {
        const [type, pname] = p.trim().split(/\s+/).slice(-2) as [string, string];
        return { name: pname, bitwidth: width(type) };
      });
    },
    struct(name: string): Array<{ name: string; bitwidth: number }> {
      const m = new RegExp(`struct\\s+${name}\\s*\\{([^}]*)\\}`).exec(text);
      if (!m) throw new Error(`no struct ${name}`);
      return [...m[1]!.matchAll(/([\w<>]+)\s+(\w+)\s*;/g)].map((f) => ({ name: f[2]!, bitwidth: width(f[1]!) }));
    },
    statNames(): string[] {
      return [...text.matchAll(/const\s+bit<\d+>\s+STAT_(\w+)\s*=\s*(\d+)\s*;/g)]
        .map((m) => ({ name: m[1]!.toLowerCase(), index: Number(m[2]) }))
        .sort((a, b) => a.index - b.index)
        .map((s) => s.name);
    },
  };
}

describe("compiled P4 program", () => {
  test("the P4Info has the tables, actions, digests and counters the controller needs", () => {
    for (const t of ["forwarding.ipv4_routes", "ingress_port_role.port_roles", "egress_port_role.port_roles", "config.telemetry_config", "flow_tracker.flow_watchlist", "io_tracker.io_watchlist"]) {
      expect(schema.tables.has(t), t).toBe(true);
    }
    expect(schema.matchField(schema.tables.get("flow_tracker.flow_watchlist"), "dest_qp").bitwidth).toBe(24);
    expect(schema.tables.get("flow_tracker.flow_watchlist").size).toBe(1024n);
    expect(schema.digests.all().map((d) => d.preamble!.name).sort()).toEqual(["io_digest_t", "learn_digest_t", "msg_digest_t"]);
    // The statistics: a counter per index layout, one entry per set of events (define.p4's PKT_EV_*, FLOW_EV_*).
    expect(schema.counters.get("stats.packet_events").size).toBe(BigInt(PACKET_EVENTS_SIZE));
    expect(schema.counters.get("stats.flow_events").size).toBe(BigInt(FLOW_EVENTS_SIZE));
    expect(schema.counters.has("stats.port_packets")).toBe(true);
    expect(schema.param(schema.actions.get("config.set_config"), "ts_scale").bitwidth).toBe(48);
  });

  test.each(["p4/build", "p4/build/compact"])("the P4Info agrees with the BMv2 JSON compiled beside it (%s): tables, actions, digests, counters", (dir) => {
    // Two outputs of the compiler, read independently: the P4Info (as the
    // controller sees it) and the BMv2 JSON (as the switch runs it).
    const info = JSON.parse(readFileSync(join(root, dir, "telemetry.p4info.json"), "utf8")) as P4InfoJson;
    const bmv2 = JSON.parse(readFileSync(join(root, dir, "telemetry.json"), "utf8")) as Bmv2Json;
    const bmv2Tables = new Map(bmv2.pipelines.flatMap((p) => p.tables).map((t) => [t.name, t]));
    const bmv2Actions = new Map(bmv2.actions.map((a) => [a.name, a]));
    const actionName = new Map(info.actions.map((a) => [a.preamble.id, a.preamble.name]));
    expect(info.tables.length).toBeGreaterThan(0);
    for (const t of info.tables) {
      const b = bmv2Tables.get(t.preamble.name);
      expect(b, `BMv2 table ${t.preamble.name}`).toBeDefined();
      expect(b!.key.map((k) => k.name), t.preamble.name).toEqual((t.matchFields ?? []).map((m) => m.name));
      expect(b!.max_size, t.preamble.name).toBe(Number(t.size));
      expect([...b!.actions].sort(), t.preamble.name).toEqual(t.actionRefs.map((r) => actionName.get(r.id)).sort());
    }
    // No table of the program's own (those the compiler did not synthesise) is missing from the P4Info.
    expect([...bmv2Tables.keys()].filter((n) => n.startsWith("TelemetryIngress.")).sort()).toEqual(info.tables.map((t) => t.preamble.name).sort());
    for (const a of info.actions) {
      const b = bmv2Actions.get(a.preamble.name);
      expect(b, `BMv2 action ${a.preamble.name}`).toBeDefined();
      expect(b!.runtime_data, a.preamble.name).toEqual((a.params ?? []).map((p) => ({ name: p.name, bitwidth: p.bitwidth })));
    }
    // A digest's members are the BMv2 learn list's fields, in order and width.
    const scalars = new Map(bmv2.header_types.find((h) => h.name === bmv2.headers.find((x) => x.name === "scalars")!.header_type)!.fields.map(([n, w]) => [n, w]));
    const learnLists = new Map(bmv2.learn_lists.map((l) => [l.name, l]));
    expect([...learnLists.keys()].sort()).toEqual(info.digests.map((d) => d.preamble.name).sort());
    for (const d of info.digests) {
      const members = info.typeInfo.structs[d.typeSpec.struct.name]!.members.map((m) => m.typeSpec.bitstring.bit.bitwidth);
      const widths = learnLists.get(d.preamble.name)!.elements.map((e) => (e.value[0] === "scalars" ? scalars.get(e.value[1]) : undefined));
      expect(widths, d.preamble.name).toEqual(members);
    }
    const bmv2Counters = Object.fromEntries(bmv2.counter_arrays.map((c) => [c.name, c.size]));
    expect(bmv2Counters).toEqual(Object.fromEntries(info.counters.map((c) => [c.preamble.name, Number(c.size)])));
  });

  test("the generated names and digest layouts are the P4 sources' declarations", () => {
    const src = p4Sources();
    // Every table and action of the generated names is declared in the control its path names.
    for (const t of Object.values(P4_NAMES.tables)) expect(src.declares(t.name, "table"), t.name).toBe(true);
    for (const a of Object.values(P4_NAMES.actions)) if (a.name !== "NoAction") expect(src.declares(a.name, "action"), a.name).toBe(true);
    // An action's parameters: the names and widths written in the source.
    for (const a of Object.values(P4_NAMES.actions)) {
      if (a.name === "NoAction") continue;
      expect(src.actionParams(a.name).map((p) => p.name), a.name).toEqual(Object.keys(a.params));
      expect(src.actionParams(a.name).map((p) => p.bitwidth), a.name).toEqual(schema.actions.get(a.name).params.map((p) => p.bitwidth));
    }
    // A digest's fields: the struct in header.p4, widths through its typedefs.
    for (const [name, d] of Object.entries(P4_NAMES.digests)) expect(d.fields, name).toEqual(src.struct(name));
    expect(P4_NAMES.digests.io_digest_t.fields[0]).toEqual({ name: "seq", bitwidth: 32 });
    // The compact layout (generated from the Tofino P4Info): the structs the compact build selects.
    const compact = p4Sources(["DIGESTS_COMPACT"]);
    expect(Object.keys(P4_COMPACT_DIGESTS).sort()).toEqual(Object.keys(P4_NAMES.digests).sort());
    for (const [name, d] of Object.entries(P4_COMPACT_DIGESTS)) expect(d.fields, name).toEqual(compact.struct(name));
    expect(P4_COMPACT_DIGESTS.io_digest_t.fields).not.toEqual(P4_NAMES.digests.io_digest_t.fields);
    // The switch's statistics events: the STAT_* numbers of define.p4, in order.
    expect([...SWITCH_COUNTER_NAMES]).toEqual(src.statNames());
  });

  test("the compact build is the program with the Tofino build's digests: other entities as the main build's", () => {
    const load = (dir: string) => JSON.parse(readFileSync(join(root, dir, "telemetry.p4info.json"), "utf8")) as P4InfoJson & { pkgInfo?: { arch?: string } };
    const [main, compact] = [load("p4/build"), load("p4/build/compact")];
    expect(compact.tables).toEqual(main.tables);
    expect(compact.actions).toEqual(main.actions);
    expect(compact.counters).toEqual(main.counters);
    expect(compact.pkgInfo?.arch).toBe("v1model");
    const layout = (p: P4InfoJson) => Object.fromEntries(p.digests.map((d) => [d.preamble.name, { name: d.preamble.name, fields: p.typeInfo.structs[d.typeSpec.struct.name]!.members.map((m) => ({ name: m.name, bitwidth: m.typeSpec.bitstring.bit.bitwidth })) }]));
    expect(layout(compact)).toEqual(P4_COMPACT_DIGESTS);
    expect(layout(main)).toEqual(P4_NAMES.digests);
  });

  test("a lookup by a wrong name suggests the right one", () => {
    expect(() => schema.tables.get("ipv4_route")).toThrow(/no table named 'ipv4_route'\. Did you mean 'TelemetryIngress\.forwarding\.ipv4_routes'\?/);
  });
});

describe("manifest check", () => {
  const tmp = mkdtempSync(join(tmpdir(), "manifest-"));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  cpSync(join(root, "p4"), join(tmp, "p4"), { recursive: true });
  cpSync(join(root, "test/stf"), join(tmp, "test/stf"), { recursive: true });

  test("passes on the committed sources and outputs", () => {
    expect(checkManifest(tmp)).toEqual([]);
  });

  test("fails, naming the file, when a P4 source changes without a recompile", () => {
    appendFileSync(join(tmp, "p4/include/control/stats.p4"), "\n// changed\n");
    expect(checkManifest(tmp)).toEqual(["p4/include/control/stats.p4 changed since the last compile"]);
  });

  test("fails, naming the file, when an STF test program changes without a recompile", () => {
    appendFileSync(join(tmp, "test/stf/varbit.p4"), "\n// changed\n");
    expect(checkManifest(tmp)).toContain("test/stf/varbit.p4 changed since the last compile");
  });

  test("fails when an STF test program's compiled JSON is edited by hand", () => {
    const f = join(tmp, "test/stf/build/advance.json");
    writeFileSync(f, readFileSync(f, "utf8") + " ");
    expect(checkManifest(tmp)).toContain("test/stf/build/advance.json does not match the manifest (edited by hand?)");
  });

  test("fails when a compiled output is edited by hand", () => {
    const f = join(tmp, "p4/build/telemetry.p4info.txtpb");
    writeFileSync(f, readFileSync(f, "utf8") + "# edit\n");
    expect(checkManifest(tmp).some((p: string) => p.includes("telemetry.p4info.txtpb does not match the manifest"))).toBe(true);
  });
});
