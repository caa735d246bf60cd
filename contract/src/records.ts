// The exporter's records as plain objects, with the field names of SPEC §6-§7
// (snake_case, units in names). JSON lines carry them as they are; Kafka
// carries them as the protobuf messages of proto/rdma/telemetry/v1.

export type ModeName = "full" | "polling" | "summary" | "off";

/** A distribution: count, min, mean, p50, p99, max (the exporter's sketch summarises into it). */
export interface StatsJson {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p99: number;
  max: number;
}

export interface IoRecordJson {
  type: "io";
  switch_id: string;
  interval_start_unix_ns: string;
  host: string;
  target: string;
  /** the NVMe queue: its host-side and target-side QPs (host_qp 0: never learned) */
  host_qp: number;
  target_qp: number;
  cid: number;
  /** PSN of the command capsule (tells apart successive I/Os of one CID) */
  cmd_psn: number;
  op: "read" | "write";
  bytes: number;
  /** write with its data in the command capsule (DAL = e2e at S, no DPL) */
  in_capsule: boolean;
  /** CQE DW3 bits 31:16 with the phase bit cleared: 0 is success */
  nvme_status: number;
  e2e_c_ns: number | null;
  e2e_s_ns: number | null;
  rtt_ns: number | null;
  dal_ns: number | null;
  dpl_ns: number | null;
  incomplete: boolean;
  mode: ModeName;
  c_switch_id: string | null;
  s_switch_id: string | null;
  cmd_unix_ns: string;
}

export interface MessageRecordJson {
  type: "message";
  switch_id: string;
  interval_start_unix_ns: string;
  src: string;
  dst: string;
  dest_qp: number;
  first_psn: number;
  last_psn: number;
  bytes: number;
  packets: number;
  retransmitted: number;
  fct_ns: number;
  fet_bps: number | null;
  fnr: number;
  ecn_ce_packets: number;
  gap_ns: number | null;
  mode: ModeName;
  first_unix_ns: string;
}

export interface IoAggregateJson {
  type: "io_interval";
  switch_id: string;
  interval_start_unix_ns: string;
  interval_end_unix_ns: string;
  host: string;
  target: string;
  op: "read" | "write";
  count: number;
  incomplete: number;
  bytes: number;
  errors: number;
  e2e_c_ns: StatsJson | null;
  e2e_s_ns: StatsJson | null;
  rtt_ns: StatsJson | null;
  dal_ns: StatsJson | null;
  dpl_ns: StatsJson | null;
  mode: ModeName;
  /** the host-target pairs measured over those known when the interval closed (all of them in full mode); null where no controller says */
  coverage: { measured_pairs: number; known_pairs: number; ratio: number } | null;
}

export interface FlowAggregateJson {
  type: "flow_interval";
  switch_id: string;
  interval_start_unix_ns: string;
  interval_end_unix_ns: string;
  src: string;
  dst: string;
  dest_qp: number;
  messages: number;
  bytes: number;
  packets: number;
  retransmitted: number;
  fnr: number;
  fct_ns: StatsJson | null;
  fet_bps: StatsJson | null;
  ecn_ce_packets: number;
  cnp_packets: number;
  gap_ns: StatsJson | null;
  mode: ModeName;
  straddled_messages: number;
  coverage: { measured_flows: number; known_flows: number; ratio: number } | null;
}

export interface AlertJson {
  type: "alert";
  switch_id: string;
  interval_start_unix_ns: string;
  metric: string;
  scope: "host" | "target" | "pair" | "flow";
  scope_key: string;
  state: "raised" | "cleared";
  value: number;
  raise_threshold: number;
  clear_threshold: number;
  at_unix_ns: string;
}

export interface SwitchStatsJson {
  type: "switch_stats";
  switch_id: string;
  interval_start_unix_ns: string;
  interval_end_unix_ns: string;
  digests_received: number;
  digests_lost: number;
  digests_duplicated: number;
  bad_digests: number;
  /** new switch sessions seen (restart, pipeline reload): clock and sequence started anew */
  switch_restarts: number;
  /** I/Os and messages that arrived for an interval already closed: in their event records, not in the aggregates */
  late_records: number;
  /** responses that came after their I/O was reported incomplete (none within the I/O timeout): never a second I/O record */
  late_responses: number;
  /** the totals (digests_*, bad_digests, switch_restarts, late_*) count from the start of this interval on (the switch's clock) */
  totals_since_unix_ns: string;
  incomplete_ios: number;
  /** polling: I/Os whose pair left the window between command and response, in this interval (that vantage's figures absent, not incomplete) */
  ios_left_window: number;
  /** I/Os with no response seen whose answer is unknown: digests the switch sent after the command were lost (digests_lost), and one may have been the response; that vantage's figures absent, not incomplete */
  ios_answer_lost: number;
  /** responses the switch matched through another queue's pairing (a Tofino build keys queue pairs by QP number): neither I/O gets figures from it, neither is incomplete */
  ios_pairing_confused: number;
  /** digests of this interval dropped because an endpoint key (240.0.0.0/4) in them had no IPv6 address from the switch's controller: never printed as an address */
  unknown_endpoint_digests: number;
  /** from the switch's counters: newcomers not tracked because their slot was taken (full mode) */
  untracked_flows: number | null;
  untracked_ios: number | null;
  /** responses of I/Os whose own last data packet the switch did not see (their data reference taken by a newer I/O, or their data out of order): DAL absent at the storage side */
  io_references_lost: number | null;
  /** packets the switch could not parse whole (forwarded) */
  parser_errors: number | null;
  /** RoCE packets with a reserved BTH opcode (forwarded, not measured) */
  unknown_opcodes: number | null;
  /** open I/Os closed because a new command reused their key (response lost) */
  io_replaced: number | null;
  /** response capsules on a queue whose QP pairing was unknown (their I/Os are untracked) */
  io_unpaired_responses: number | null;
  /** host QP <-> target QP pairings learned */
  queue_pairs_learned: number | null;
  /** CNPs not counted because their host pair's slot was held by another pair */
  cnp_untracked: number | null;
  /** packets forwarded and not measured: IPv4 from or to 240.0.0.0/4 (the endpoint keys' range) */
  reserved_address_packets: number | null;
  /** IPv6 packets with an extension header chain (forwarded, not measured) */
  ipv6_ext_header_packets: number | null;
  /** RoCEv2 over IPv6 from or to an address with no endpoint key yet (forwarded, not measured; the switch reports the address) */
  unknown_endpoint_packets: number | null;
  mode: ModeName;
}

/** One bucket of a data-plane histogram: its index on the scale (contract/src/histogram.ts), bounds [lower, upper) and count. */
export interface HistogramBucketJson {
  bucket: number;
  lower_ns: number;
  /** null for the overflow bucket (2^32 ns and more) */
  upper_ns: number | null;
  count: number;
}

/**
 * A data-plane histogram of one figure of one host-target pair and op, over
 * an interval: every I/O the switch measured, with or without a digest.
 * host and target null: the overflow (pairs that had no histogram id).
 */
export interface IoHistogramJson {
  type: "io_histogram";
  switch_id: string;
  interval_start_unix_ns: string;
  interval_end_unix_ns: string;
  host: string | null;
  target: string | null;
  op: "read" | "write";
  figure: "e2e_c_ns" | "e2e_s_ns" | "dal_ns" | "dpl_ns";
  count: number;
  /** the buckets with a count, lowest first */
  buckets: HistogramBucketJson[];
  /** quantiles read from the buckets (within 6.25 % of the exact ones) */
  p50_ns: number;
  p99_ns: number;
  mode: ModeName;
}

/** A data-plane histogram of one flow's message FCT over an interval; src, dst and dest_qp null: the overflow (flows without an id). */
export interface FlowHistogramJson {
  type: "flow_histogram";
  switch_id: string;
  interval_start_unix_ns: string;
  interval_end_unix_ns: string;
  src: string | null;
  dst: string | null;
  dest_qp: number | null;
  figure: "fct_ns";
  count: number;
  buckets: HistogramBucketJson[];
  p50_ns: number;
  p99_ns: number;
  mode: ModeName;
}

export type RecordJson = IoRecordJson | MessageRecordJson | IoAggregateJson | FlowAggregateJson | AlertJson | SwitchStatsJson | IoHistogramJson | FlowHistogramJson;

export function modeName(mode: number): ModeName {
  return mode === 1 ? "full" : mode === 2 ? "polling" : mode === 3 ? "summary" : "off";
}
