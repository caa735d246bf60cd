// The v1model (BMv2) and Tofino builds (Tofino 1, tna; Tofino 2, t2na) name
// the same P4Runtime entities, so that the controller runs on either
// unchanged: tables with their match fields, actions with their parameters,
// counters, and digests. The Tofino program runs its flow tracker in egress;
// its entities keep the v1model names (TelemetryIngress.flow_tracker.*).
// Registers are left out: the controller never reads them (BMv2 cannot), and
// the TNA build keeps its state in other registers (pairs of 32-bit words).
// The data-plane histograms are in the Tofino 2 build only.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { P4_COMPACT_DIGESTS } from "../../contract/src/generated/telemetry-names.js";

const root = new URL("../..", import.meta.url).pathname;

interface Preamble { name: string; id: number; }
interface P4InfoJson {
  tables?: { preamble: Preamble; matchFields?: { name: string; bitwidth?: number; matchType?: string }[]; actionRefs?: { id: number }[]; size?: string }[];
  actions?: { preamble: Preamble; params?: { name: string; bitwidth?: number }[] }[];
  counters?: { preamble: Preamble; spec?: { unit?: string }; size?: string }[];
  digests?: { preamble: Preamble; typeSpec?: { struct?: { name: string } } }[];
  typeInfo?: { structs?: Record<string, { members?: { name: string; typeSpec?: { bitstring?: { bit?: { bitwidth?: number } } } }[] }> };
}

const load = (f: string) => JSON.parse(readFileSync(join(root, f), "utf8")) as P4InfoJson;
/**
 * The data-plane histograms (docs/histograms.md): every entity under an
 * instance named `histograms`. The Tofino 2 build has them all, with fewer
 * ids (the id tables and counter arrays smaller, the cell layouts the same);
 * the Tofino 1 build has none of them (its stages are taken,
 * docs/tofino.md): the one chip-level difference, and the controller then
 * refuses summary mode.
 */
const HISTOGRAMS = /^TelemetryIngress\.(io_tracker|flow_tracker)\.histograms\./;
const HIST_IO_PAIRS = "TelemetryIngress.io_tracker.histograms.io_pairs";
const HIST_FLOWS = "TelemetryIngress.flow_tracker.histograms.flows";
/** Cells per id of each counter array (the layouts the controller reads: p4runtime-controller/src/histograms.ts). */
const HIST_CELLS_PER_ID: Record<string, { ids: string; cells: number }> = {
  "TelemetryIngress.io_tracker.histograms.e2e_c": { ids: HIST_IO_PAIRS, cells: 512 },
  "TelemetryIngress.io_tracker.histograms.e2e_s": { ids: HIST_IO_PAIRS, cells: 512 },
  "TelemetryIngress.io_tracker.histograms.dal_s": { ids: HIST_IO_PAIRS, cells: 512 },
  "TelemetryIngress.io_tracker.histograms.dpl_c": { ids: HIST_IO_PAIRS, cells: 512 },
  "TelemetryIngress.io_tracker.histograms.pair_ios": { ids: HIST_IO_PAIRS, cells: 2 },
  "TelemetryIngress.io_tracker.histograms.io_ranges": { ids: HIST_IO_PAIRS, cells: 64 },
  "TelemetryIngress.flow_tracker.histograms.fct": { ids: HIST_FLOWS, cells: 256 },
  "TelemetryIngress.flow_tracker.histograms.flow_messages": { ids: HIST_FLOWS, cells: 1 },
  "TelemetryIngress.flow_tracker.histograms.fct_ranges": { ids: HIST_FLOWS, cells: 8 },
};
function withoutHistograms(p: P4InfoJson): P4InfoJson {
  const keep = <T extends { preamble: Preamble }>(xs: T[] | undefined) => xs?.filter((x) => !HISTOGRAMS.test(x.preamble.name));
  return { ...p, tables: keep(p.tables), actions: keep(p.actions), counters: keep(p.counters) };
}
/** The id tables' and counter arrays' sizes left out (they scale with the ids, checked apart). */
function withoutHistogramSizes(p: P4InfoJson): P4InfoJson {
  const isIdTable = (n: string) => n === HIST_IO_PAIRS || n === HIST_FLOWS;
  return {
    ...p,
    tables: p.tables?.map((t) => (isIdTable(t.preamble.name) ? { ...t, size: undefined } : t)),
    counters: p.counters?.map((c) => (HISTOGRAMS.test(c.preamble.name) ? { ...c, size: undefined } : c)),
  };
}
const v1All = load("p4/build/telemetry.p4info.json");
const v1 = withoutHistograms(v1All);
/** Each chip's build, and whether it has the histograms. */
const tofino = {
  "Tofino 1": { p4info: load("p4/build/tna/telemetry.p4info.json"), histograms: false },
  "Tofino 2": { p4info: load("p4/build/t2na/telemetry.p4info.json"), histograms: true },
};

function tables(p: P4InfoJson) {
  const actionName = new Map((p.actions ?? []).map((a) => [a.preamble.id, a.preamble.name]));
  return Object.fromEntries((p.tables ?? []).map((t) => [t.preamble.name, {
    matchFields: (t.matchFields ?? []).map((f) => ({ name: f.name, bitwidth: f.bitwidth, matchType: f.matchType })),
    actions: (t.actionRefs ?? []).map((r) => actionName.get(r.id)).sort(),
    size: t.size,
  }]));
}

const actions = (p: P4InfoJson) =>
  Object.fromEntries((p.actions ?? []).map((a) => [a.preamble.name, (a.params ?? []).map((x) => ({ name: x.name, bitwidth: x.bitwidth }))]));

const counters = (p: P4InfoJson) =>
  Object.fromEntries((p.counters ?? []).map((c) => [c.preamble.name, { unit: c.spec?.unit, size: c.size }]));

function digests(p: P4InfoJson) {
  return Object.fromEntries((p.digests ?? []).map((d) => {
    const members = p.typeInfo?.structs?.[d.typeSpec?.struct?.name ?? ""]?.members ?? [];
    return [d.preamble.name, members.map((m) => ({ name: m.name, bitwidth: m.typeSpec?.bitstring?.bit?.bitwidth }))];
  }));
}

/**
 * Where the TNA digests differ, and why: Tofino packs a digest into one
 * learn quantum of 48 bytes (the v1model digests are 64 and 79 bytes); see
 * p4/include/header.p4 and docs/tofino.md. Exactly these members are left
 * out, narrowed or packed together (io `evo`: event, vantage and op in one
 * byte, as each member takes whole bytes of the quantum); any other
 * difference fails the test. The controller
 * reads this compact layout too and fills in what it lacks
 * (contract/src/digests.ts).
 */
const TNA_DIGEST_DIFFERENCES: Record<string, { omitted: string[]; narrowed: Record<string, number>; packed?: { name: string; bitwidth: number; members: string[] } }> = {
  io_digest_t: {
    omitted: ["mode", "ts"],
    narrowed: { flags: 4, cmd_psn: 16, bytes: 24, e2e_ns: 32, to_data_ns: 32, from_data_ns: 32, host_prep_ns: 32 },
    packed: { name: "evo", bitwidth: 8, members: ["event", "vantage", "op"] },
  },
  msg_digest_t: {
    omitted: ["mode", "first_ts", "extra_ecn_ce"],
    narrowed: { flags: 1, packets: 16, retransmitted: 16, ecn_ce: 16, fct_ns: 32, gap_ns: 32, extra_packets: 16, extra_retransmitted: 16, straddled: 8, cnp: 16 },
  },
  learn_digest_t: { omitted: [], narrowed: {} },
};

describe.each(Object.entries(tofino))("P4Info parity of the v1model and %s builds", (_chip, { p4info: tna, histograms }) => {
  // The v1model build to compare with: with the histograms (their sizes apart) or without them.
  const expected = histograms ? withoutHistogramSizes(v1All) : v1;

  test("the same tables, with the same match fields, actions and sizes", () => {
    expect(Object.keys(tables(v1)).length).toBeGreaterThan(0);
    expect(tables(histograms ? withoutHistogramSizes(tna) : tna)).toEqual(tables(expected));
  });

  test("the same actions, with the same parameters and widths", () => {
    expect(actions(tna)).toEqual(actions(expected));
  });

  test(histograms ? "the histograms' entities, all of them" : "only the histograms' entities are left out, and the Tofino build has none of them", () => {
    const names = (p: P4InfoJson) => [...(p.tables ?? []), ...(p.actions ?? []), ...(p.counters ?? [])].map((x) => x.preamble.name);
    const v1Hist = names(v1All).filter((n) => HISTOGRAMS.test(n));
    expect(v1Hist.length).toBeGreaterThan(10);
    expect(names(tna).filter((n) => HISTOGRAMS.test(n)).sort()).toEqual(histograms ? [...v1Hist].sort() : []);
  });

  test("the same counters and units; the histogram arrays sized by their ids", () => {
    expect(Object.keys(counters(v1)).sort()).toEqual(["TelemetryIngress.stats.flow_events", "TelemetryIngress.stats.packet_events", "TelemetryIngress.stats.port_packets"]);
    expect(counters(histograms ? withoutHistogramSizes(tna) : tna)).toEqual(counters(expected));
    // Every build's arrays hold its ids' cells exactly (the controller's index layouts).
    for (const p of histograms ? [v1All, tna] : [v1All]) {
      const sizes = Object.fromEntries((p.tables ?? []).map((t) => [t.preamble.name, Number(t.size)]));
      for (const c of p.counters ?? []) {
        const per = HIST_CELLS_PER_ID[c.preamble.name];
        if (!HISTOGRAMS.test(c.preamble.name)) continue;
        expect(per, c.preamble.name).toBeDefined();
        expect(Number(c.size), c.preamble.name).toBe(sizes[per!.ids]! * per!.cells);
      }
    }
  });

  test("the same digests; members differ only where Tofino's 48-byte digest limit says", () => {
    const a = digests(v1);
    const b = digests(tna);
    expect(Object.keys(b).sort()).toEqual(Object.keys(a).sort());
    for (const [name, members] of Object.entries(a)) {
      const diff = TNA_DIGEST_DIFFERENCES[name];
      expect(diff, name).toBeDefined();
      if (!diff) continue;
      const packed = diff.packed;
      const expected = members
        .filter((m) => !diff.omitted.includes(m.name) && !packed?.members.slice(1).includes(m.name))
        .map((m) => (packed?.members[0] === m.name ? { name: packed.name, bitwidth: packed.bitwidth } : { name: m.name, bitwidth: diff.narrowed[m.name] ?? m.bitwidth }));
      expect(b[name], name).toEqual(expected);
      // Every listed difference is a real one (the list does not go stale).
      for (const o of [...diff.omitted, ...(packed?.members ?? [])]) expect(members.some((m) => m.name === o), `${name}.${o}`).toBe(true);
      for (const [n, w] of Object.entries(diff.narrowed)) expect(members.find((m) => m.name === n)?.bitwidth, `${name}.${n}`).not.toBe(w);
    }
  });

  test("the compact layout the controller reads (generated) is this build's digests", () => {
    expect(Object.fromEntries(Object.entries(P4_COMPACT_DIGESTS).map(([name, d]) => [name, d.fields.map((f) => ({ ...f }))]))).toEqual(digests(tna));
  });
});
