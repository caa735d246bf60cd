// The statistics counters' index macros (p4/include/stats_index.p4, used by
// both builds) put each event at the offset define.p4 gives it, the one the
// controller reads it from (contract/src/switch-counters.ts).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { P4_CONSTANTS as C } from "../../contract/src/generated/telemetry-names.js";
import { FLOW_EVENTS_SIZE, PACKET_EVENTS_SIZE } from "../../contract/src/switch-counters.js";

const root = new URL("../..", import.meta.url).pathname;
const source = readFileSync(join(root, "p4/include/stats_index.p4"), "utf8");

/** The macro's concatenated fields, highest first, as [field, offset, width]. */
function layout(macro: string): Array<[string, number, number]> {
  const m = new RegExp(`#define ${macro}\\([^)]*\\) \\(\\(bit<32>\\)\\(((?:[^\\n]*\\\\\\n)*[^\\n]*)\\)\\)`).exec(source);
  if (!m) throw new Error(`no ${macro} in stats_index.p4`);
  const parts = m[1]!.replace(/\\\n/g, " ").split("++").map((p) => p.trim());
  const fields = parts.map((p): [string, number] => {
    const bool = /^\(bit<1>\)\(s\)\.(\w+)$/.exec(p);
    if (bool) return [bool[1]!, 1];
    if (p === "(s).io_outcome") return ["io_outcome", 3];
    if (p === "(digest_kind)[1:0]") return ["digest_kind", 2];
    if (p === "(s).unmeasured") return ["unmeasured", 2];
    throw new Error(`${macro}: unexpected part ${p}`);
  });
  let offset = 0;
  const out: Array<[string, number, number]> = [];
  for (const [name, width] of fields.reverse()) {
    out.push([name, offset, width]);
    offset += width;
  }
  return out;
}

/** Each counter: its index macro, the fields at define.p4's offsets (lowest first), its width and size. */
const COUNTERS = [
  {
    counter: "packet_events", macro: "PACKET_EVENTS_INDEX", bits: C.PKT_EV_BITS, size: PACKET_EVENTS_SIZE, sizeMacro: "PACKET_EVENTS_SIZE",
    fields: [
      ["roce", C.PKT_EV_ROCE, 1],
      ["parser_error", C.PKT_EV_PARSER_ERROR, 1],
      ["unknown_opcode", C.PKT_EV_UNKNOWN_OPCODE, 1],
      ["no_route", C.PKT_EV_NO_ROUTE, 1],
      ["digest_kind", C.PKT_EV_DIGEST, 2],
      ["io_outcome", C.PKT_EV_IO_OUTCOME, 3],
      ["ioref_overwritten", C.PKT_EV_IOREF_OVERWRITTEN, 1],
      ["queue_pair_learned", C.PKT_EV_QUEUE_PAIR_LEARNED, 1],
      ["learned", C.PKT_EV_LEARNED, 1],
      ["unmeasured", C.PKT_EV_UNMEASURED, 2],
      ["endpoint_learned", C.PKT_EV_ENDPOINT_LEARNED, 1],
    ],
  },
  {
    counter: "flow_events", macro: "FLOW_EVENTS_INDEX", bits: C.FLOW_EV_BITS, size: FLOW_EVENTS_SIZE, sizeMacro: "FLOW_EVENTS_SIZE",
    fields: [
      ["message", C.FLOW_EV_MESSAGE, 1],
      ["straddled", C.FLOW_EV_STRADDLED, 1],
      ["cnp", C.FLOW_EV_CNP, 1],
      ["cnp_untracked", C.FLOW_EV_CNP_UNTRACKED, 1],
      ["untracked_flow", C.FLOW_EV_UNTRACKED_FLOW, 1],
      ["ecn_ce", C.FLOW_EV_ECN_CE, 1],
      ["flow_learned", C.FLOW_EV_LEARNED, 1],
    ],
  },
] as const;

describe("statistics counter indices", () => {
  for (const c of COUNTERS) {
    test(`${c.counter}: each field at define.p4's offset, ${c.bits} bits in all`, () => {
      const fields = layout(c.macro);
      expect(fields).toEqual(c.fields);
      const [, offset, width] = fields.at(-1)!;
      expect(offset + width).toBe(c.bits);
      expect(2 ** c.bits).toBe(c.size);
      expect(source).toContain(`#define ${c.sizeMacro} ${c.size} `);
    });
  }
});
