import { describe, expect, test } from "vitest";
import { recordFromMessage } from "../../exporter/src/kafka/decode.js";
import { DEFAULT_TOPICS, encodeRecord } from "../../exporter/src/kafka/encode.js";
import type { RecordJson } from "../../contract/src/records.js";

const iv = { interval_start_unix_ns: "1800000000000000000" };
const ivEnd = { ...iv, interval_end_unix_ns: "1800000001000000000" };
const st = { count: 3, min: 1, mean: 2, p50: 2, p99: 3, max: 3 };
const records: RecordJson[] = [
  { type: "io", switch_id: "tor-c", ...iv, host: "10.0.1.1", target: "10.0.2.1", host_qp: 0x101, target_qp: 0x801, cid: 0x1003, cmd_psn: 77, op: "write", bytes: 4096, in_capsule: true,
    nvme_status: 0x0502, e2e_c_ns: 70_000, e2e_s_ns: 64_000, rtt_ns: 6_000, dal_ns: 64_000, dpl_ns: null, incomplete: false, mode: "full", c_switch_id: "tor-c", s_switch_id: "tor-s", cmd_unix_ns: "1800000000000123456" },
  { type: "io", switch_id: "tor-s", ...iv, host: "10.0.1.1", target: "10.0.2.1", host_qp: 0, target_qp: 0x801, cid: 4, cmd_psn: 78, op: "read", bytes: 512, in_capsule: false,
    nvme_status: 0, e2e_c_ns: null, e2e_s_ns: null, rtt_ns: null, dal_ns: null, dpl_ns: null, incomplete: true, mode: "polling", c_switch_id: null, s_switch_id: "tor-s", cmd_unix_ns: "1800000000000123999" },
  { type: "io_interval", switch_id: "tor-c", ...ivEnd, host: "10.0.1.1", target: "10.0.2.1", op: "read", count: 3, incomplete: 0, bytes: 12288, errors: 1, e2e_c_ns: st, e2e_s_ns: null, rtt_ns: st, dal_ns: null, dpl_ns: null, mode: "polling", coverage: { measured_pairs: 3, known_pairs: 8, ratio: 0.375 } },
  { type: "message", switch_id: "tor-c", ...iv, src: "10.0.1.1", dst: "10.0.1.2", dest_qp: 0x2000, first_psn: 5, last_psn: 68, bytes: 262144, packets: 64, retransmitted: 1, fct_ns: 21_000, fet_bps: 1e11, fnr: 1 / 64, ecn_ce_packets: 2, gap_ns: null, mode: "full", first_unix_ns: "1800000000000000777" },
  { type: "flow_interval", switch_id: "tor-c", ...ivEnd, src: "10.0.1.1", dst: "10.0.1.2", dest_qp: 0x2000, messages: 3, bytes: 786432, packets: 192, retransmitted: 1, fnr: 1 / 192, fct_ns: st, fet_bps: st, ecn_ce_packets: 2, cnp_packets: 1, gap_ns: null, mode: "polling", straddled_messages: 0, coverage: { measured_flows: 2, known_flows: 4, ratio: 0.5 } },
  { type: "alert", switch_id: "tor-s", ...iv, metric: "dal_ns.p99", scope: "target", scope_key: "10.0.2.1", state: "raised", value: 300_000, raise_threshold: 250_000, clear_threshold: 180_000, at_unix_ns: "1800000000500000000" },
  { type: "switch_stats", switch_id: "tor-s", ...ivEnd, digests_received: 10, digests_lost: 1, digests_duplicated: 0, bad_digests: 2, switch_restarts: 1, late_records: 0, late_responses: 2, totals_since_unix_ns: "1700000000000000000", incomplete_ios: 3, ios_left_window: 5, ios_answer_lost: 6, ios_pairing_confused: 7, untracked_flows: 0, untracked_ios: 4,
    io_references_lost: 0, parser_errors: 5, unknown_opcodes: 6, io_replaced: 7, io_unpaired_responses: 8, queue_pairs_learned: 9, cnp_untracked: 1, unknown_endpoint_digests: 2, reserved_address_packets: 3, ipv6_ext_header_packets: 4, unknown_endpoint_packets: 5, mode: "full" },
  // IPv6 endpoints: RFC 5952 text in the same string fields.
  { type: "io", switch_id: "tor-c", ...iv, host: "2001:db8:0:1::1", target: "2001:db8:0:2::1", host_qp: 0x101, target_qp: 0x801, cid: 7, cmd_psn: 79, op: "read", bytes: 4096, in_capsule: false,
    nvme_status: 0, e2e_c_ns: 70_000, e2e_s_ns: 64_000, rtt_ns: 6_000, dal_ns: 60_000, dpl_ns: null, incomplete: false, mode: "full", c_switch_id: "tor-c", s_switch_id: "tor-s", cmd_unix_ns: "1800000000000124000" },
  { type: "message", switch_id: "tor-c", ...iv, src: "2001:db8:0:1::1", dst: "2001:db8:0:1::2", dest_qp: 0x2000, first_psn: 5, last_psn: 68, bytes: 262144, packets: 64, retransmitted: 0, fct_ns: 21_000, fet_bps: 1e11, fnr: 0, ecn_ce_packets: 0, gap_ns: null, mode: "full", first_unix_ns: "1800000000000000778" },
];

describe("records from Kafka messages", () => {
  test.each(records.map((r) => [r.type, r] as const))("%s: protobuf and back gives the JSON-lines record", (_t, r) => {
    const m = encodeRecord(r, DEFAULT_TOPICS, "protobuf", 1_000_000_000n);
    expect(recordFromMessage(m.headers.type, m.value)).toEqual(r);
  });
});
