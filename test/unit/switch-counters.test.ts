// The switch's statistics from the packet_events and flow_events counters:
// every event is held by some index, and an entry counts under each event its
// index holds. The index layout itself is checked against the P4 macros in
// test/p4/stats-index.test.ts, and end to end in test/switch/packets.test.ts.
import { describe, expect, test } from "vitest";
import { FLOW_EVENTS, FLOW_EVENTS_SIZE, P4_CONSTANTS as C, PACKET_EVENTS, PACKET_EVENTS_SIZE, SWITCH_COUNTER_NAMES, switchCounters, zeroSwitchCounters } from "../../contract/src/index.js";

const at = (offset: number, value = 1) => value << offset;

describe("switch counters", () => {
  test("every statistics event is counted by one of the two counters", () => {
    const named = new Set([...PACKET_EVENTS, ...FLOW_EVENTS].map(([name]) => name));
    expect([...SWITCH_COUNTER_NAMES].filter((n) => !named.has(n))).toEqual([]);
    // And each event is held by some index (no event that no packet can count).
    for (const [name, holds] of PACKET_EVENTS) expect(Array.from({ length: PACKET_EVENTS_SIZE }, (_, i) => i).some(holds), name).toBe(true);
    for (const [name, holds] of FLOW_EVENTS) expect(Array.from({ length: FLOW_EVENTS_SIZE }, (_, i) => i).some(holds), name).toBe(true);
  });

  test("an entry counts under every event of its index", () => {
    // A replaced command capsule that took an in-flight R_Key entry, with its I/O digest.
    const replaced = at(C.PKT_EV_ROCE) | at(C.PKT_EV_IO_OUTCOME, C.IO_OUTCOME_REPLACED) | at(C.PKT_EV_DIGEST, 1) | at(C.PKT_EV_IOREF_OVERWRITTEN);
    // A learned I/O pair (a learn digest).
    const learnedPair = at(C.PKT_EV_ROCE) | at(C.PKT_EV_DIGEST, 3) | at(C.PKT_EV_LEARNED);
    // A parser error without a BTH, and packets with no event at all.
    const parserError = at(C.PKT_EV_PARSER_ERROR);
    // A message's last packet that straddled a window, ECN-marked; a learned flow.
    const message = at(C.FLOW_EV_MESSAGE) | at(C.FLOW_EV_STRADDLED) | at(C.FLOW_EV_ECN_CE);
    const learnedFlow = at(C.FLOW_EV_LEARNED);
    const counted = switchCounters(
      [[replaced, 3], [learnedPair, 2], [parserError, 1], [0, 1000]],
      [[message, 5], [learnedFlow, 7], [0, 1006]],
    );
    expect(counted).toEqual({
      ...zeroSwitchCounters(),
      roce_packets: 5,
      io_commands: 3,
      io_replaced: 3,
      ioref_overwritten: 3,
      digests: 5,
      learned: 9,
      parser_errors: 1,
      messages: 5,
      straddled_messages: 5,
      ecn_ce: 5,
    });
  });

  test("each I/O outcome counts its own events", () => {
    const one = (outcome: number) => switchCounters([[at(C.PKT_EV_IO_OUTCOME, outcome), 1]], []);
    const pick = (c: ReturnType<typeof switchCounters>) => Object.entries(c).filter(([, v]) => v > 0).map(([k]) => k).sort();
    expect(pick(one(C.IO_OUTCOME_NONE))).toEqual([]);
    expect(pick(one(C.IO_OUTCOME_CMD))).toEqual(["io_commands"]);
    expect(pick(one(C.IO_OUTCOME_REPLACED))).toEqual(["io_commands", "io_replaced"]);
    expect(pick(one(C.IO_OUTCOME_UNTRACKED))).toEqual(["untracked_ios"]);
    expect(pick(one(C.IO_OUTCOME_RSP))).toEqual(["io_responses"]);
    expect(pick(one(C.IO_OUTCOME_UNMATCHED))).toEqual(["io_unmatched_responses"]);
    expect(pick(one(C.IO_OUTCOME_UNPAIRED))).toEqual(["io_unpaired_responses"]);
  });

  test("an index outside a counter is refused, with the counter named", () => {
    expect(() => switchCounters([[PACKET_EVENTS_SIZE, 1]], [])).toThrow(new RegExp(`packet_events: index ${PACKET_EVENTS_SIZE} is outside the counter \\(0\\.\\.${PACKET_EVENTS_SIZE - 1}\\)`));
    expect(() => switchCounters([], [[-1, 1]])).toThrow(/flow_events: index -1/);
  });
});
