// The switch's statistics events from its two event counters. packet_events
// and flow_events count each packet once, at the index of the packet's set of
// events (p4/include/stats_index.p4, offsets in define.p4); an event's count
// is the sum of the entries whose index holds it. The offsets and codes come
// from the generated P4 constants.
import { P4_CONSTANTS as C, SWITCH_COUNTER_NAMES } from "./generated/telemetry-names.js";

export type SwitchCounterName = (typeof SWITCH_COUNTER_NAMES)[number];
/** Packets counted per statistics event, every event of the switch named. */
export type SwitchCounters = Record<SwitchCounterName, number>;

/** Whether a counter index holds an event. */
type Holds = (index: number) => boolean;

const bit = (offset: number): Holds => (index) => ((index >>> offset) & 1) === 1;
const field = (offset: number, width: number) => (index: number) => (index >>> offset) & ((1 << width) - 1);
const outcome = field(C.PKT_EV_IO_OUTCOME, 3);
const outcomeIs = (...codes: number[]): Holds => (index) => codes.includes(outcome(index));
const unmeasuredIs = (code: number): Holds => (index) => field(C.PKT_EV_UNMEASURED, 2)(index) === code;

/** The events of packet_events' index. */
export const PACKET_EVENTS: ReadonlyArray<readonly [SwitchCounterName, Holds]> = [
  ["roce_packets", bit(C.PKT_EV_ROCE)],
  ["parser_errors", bit(C.PKT_EV_PARSER_ERROR)],
  ["unknown_opcodes", bit(C.PKT_EV_UNKNOWN_OPCODE)],
  ["no_route", bit(C.PKT_EV_NO_ROUTE)],
  // A LEARN_ENDPOINT digest has a bit of its own (the TNA build leaves the digest kind to the I/O tracker).
  ["digests", (index) => field(C.PKT_EV_DIGEST, 2)(index) !== 0 || bit(C.PKT_EV_ENDPOINT_LEARNED)(index)],
  ["io_commands", outcomeIs(C.IO_OUTCOME_CMD, C.IO_OUTCOME_REPLACED)],
  ["io_replaced", outcomeIs(C.IO_OUTCOME_REPLACED, C.IO_OUTCOME_CLOSED)],
  ["untracked_ios", outcomeIs(C.IO_OUTCOME_UNTRACKED)],
  ["io_responses", outcomeIs(C.IO_OUTCOME_RSP)],
  ["io_unmatched_responses", outcomeIs(C.IO_OUTCOME_UNMATCHED)],
  ["io_unpaired_responses", outcomeIs(C.IO_OUTCOME_UNPAIRED)],
  ["ioref_overwritten", bit(C.PKT_EV_IOREF_OVERWRITTEN)],
  ["queue_pairs_learned", bit(C.PKT_EV_QUEUE_PAIR_LEARNED)],
  ["learned", bit(C.PKT_EV_LEARNED)],
  ["reserved_address", unmeasuredIs(C.UNMEASURED_RESERVED_ADDRESS)],
  ["ipv6_ext_header", unmeasuredIs(C.UNMEASURED_IPV6_EXT_HEADER)],
  ["unknown_endpoint", unmeasuredIs(C.UNMEASURED_UNKNOWN_ENDPOINT)],
];

/** The events of flow_events' index. */
export const FLOW_EVENTS: ReadonlyArray<readonly [SwitchCounterName, Holds]> = [
  ["messages", bit(C.FLOW_EV_MESSAGE)],
  ["straddled_messages", bit(C.FLOW_EV_STRADDLED)],
  ["cnp", bit(C.FLOW_EV_CNP)],
  ["cnp_untracked", bit(C.FLOW_EV_CNP_UNTRACKED)],
  ["untracked_flows", bit(C.FLOW_EV_UNTRACKED_FLOW)],
  ["ecn_ce", bit(C.FLOW_EV_ECN_CE)],
  ["learned", bit(C.FLOW_EV_LEARNED)],
];

/** The number of entries of each counter (2^bits of its index). */
export const PACKET_EVENTS_SIZE = 2 ** C.PKT_EV_BITS;
export const FLOW_EVENTS_SIZE = 2 ** C.FLOW_EV_BITS;

/** Every event at 0. */
export function zeroSwitchCounters(): SwitchCounters {
  return Object.fromEntries(SWITCH_COUNTER_NAMES.map((k) => [k, 0])) as SwitchCounters;
}

/**
 * Packets per event from the two counters' entries, (index, packets) each.
 * An index outside a counter is refused: it would be counted under events
 * the switch did not see.
 */
export function switchCounters(packetEvents: Iterable<readonly [number, number]>, flowEvents: Iterable<readonly [number, number]>): SwitchCounters {
  const out = zeroSwitchCounters();
  const add = (counter: string, size: number, events: typeof PACKET_EVENTS, entries: Iterable<readonly [number, number]>) => {
    for (const [index, packets] of entries) {
      if (!Number.isInteger(index) || index < 0 || index >= size) throw new RangeError(`${counter}: index ${index} is outside the counter (0..${size - 1})`);
      if (packets === 0) continue;
      for (const [name, holds] of events) if (holds(index)) out[name] += packets;
    }
  };
  add("packet_events", PACKET_EVENTS_SIZE, PACKET_EVENTS, packetEvents);
  add("flow_events", FLOW_EVENTS_SIZE, FLOW_EVENTS, flowEvents);
  return out;
}
