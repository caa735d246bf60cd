// Kafka messages back into records: the inverse of encode.ts, so that a
// consumer prints the same JSON as the JSON-lines sink writes (snake_case
// names, "read"/"write", null for an absent figure).
import {
  Alert,
  AlertState,
  FlowAggregate,
  FlowHistogram,
  IoAggregate,
  IoHistogram,
  IoOp,
  IoRecord,
  MessageRecord,
  Mode,
  RawDigest,
  SwitchStats,
  type HistogramBucket,
  type Interval,
  type Stats,
} from "../generated/rdma/telemetry/v1/records.js";
import type { ModeName, RecordJson, StatsJson } from "@rdma-telemetry/contract";

const mode = (m: Mode): ModeName => (m === Mode.MODE_FULL ? "full" : m === Mode.MODE_POLLING ? "polling" : m === Mode.MODE_SUMMARY ? "summary" : "off");
const op = (o: IoOp): "read" | "write" => (o === IoOp.IO_OP_READ ? "read" : "write");
const num = (v: bigint | number | undefined): number | null => (v === undefined ? null : Number(v));
const stats = (s: Stats | undefined): StatsJson | null => (s ? { count: Number(s.count), min: s.min, mean: s.mean, p50: s.p50, p99: s.p99, max: s.max } : null);
const buckets = (bs: HistogramBucket[]) => bs.map((b) => ({ bucket: b.bucket, lower_ns: Number(b.lowerNs), upper_ns: b.upperNs === undefined ? null : Number(b.upperNs), count: Number(b.count) }));
const start = (i: Interval | undefined) => String(i?.startUnixNs ?? 0n);
const end = (i: Interval | undefined) => String(i?.endUnixNs ?? 0n);

/** A raw digest as JSON: its members by name, values as numbers. */
export interface RawDigestJson {
  type: "raw_digest";
  switch_id: string;
  digest: string;
  seq: number;
  list_timestamp_ns: string;
  fields: Record<string, number | string>;
}

/** Decodes a protobuf message by its `type` header into the record the JSON-lines sink would have written. */
export function recordFromMessage(type: string | undefined, value: Uint8Array): RecordJson | RawDigestJson {
  switch (type) {
    case "rdma.telemetry.v1.IoRecord": {
      const m = IoRecord.decode(value);
      return {
        type: "io", switch_id: m.switchId, interval_start_unix_ns: start(m.interval), host: m.host, target: m.target, host_qp: m.hostQp, target_qp: m.targetQp,
        cid: m.cid, cmd_psn: m.cmdPsn, op: op(m.op), bytes: Number(m.bytes), in_capsule: m.inCapsule, nvme_status: m.nvmeStatus,
        e2e_c_ns: num(m.e2eCNs), e2e_s_ns: num(m.e2eSNs), rtt_ns: num(m.rttNs), dal_ns: num(m.dalNs), dpl_ns: num(m.dplNs), incomplete: m.incomplete, mode: mode(m.mode),
        c_switch_id: m.cSwitchId || null, s_switch_id: m.sSwitchId || null, cmd_unix_ns: String(m.cmdUnixNs),
      };
    }
    case "rdma.telemetry.v1.IoAggregate": {
      const m = IoAggregate.decode(value);
      return {
        type: "io_interval", switch_id: m.switchId, interval_start_unix_ns: start(m.interval), interval_end_unix_ns: end(m.interval), host: m.host, target: m.target, op: op(m.op),
        count: Number(m.count), incomplete: Number(m.incomplete), bytes: Number(m.bytes), errors: Number(m.errors),
        e2e_c_ns: stats(m.e2eCNs), e2e_s_ns: stats(m.e2eSNs), rtt_ns: stats(m.rttNs), dal_ns: stats(m.dalNs), dpl_ns: stats(m.dplNs), mode: mode(m.mode),
        coverage: m.coverage ? { measured_pairs: Number(m.coverage.measuredPairs), known_pairs: Number(m.coverage.knownPairs), ratio: m.coverage.ratio } : null,
      };
    }
    case "rdma.telemetry.v1.MessageRecord": {
      const m = MessageRecord.decode(value);
      return {
        type: "message", switch_id: m.switchId, interval_start_unix_ns: start(m.interval), src: m.src, dst: m.dst, dest_qp: m.destQp, first_psn: m.firstPsn, last_psn: m.lastPsn,
        bytes: Number(m.bytes), packets: m.packets, retransmitted: m.retransmitted, fct_ns: Number(m.fctNs), fet_bps: m.fetBps ?? null, fnr: m.fnr,
        ecn_ce_packets: m.ecnCePackets, gap_ns: num(m.gapNs), mode: mode(m.mode), first_unix_ns: String(m.firstUnixNs),
      };
    }
    case "rdma.telemetry.v1.FlowAggregate": {
      const m = FlowAggregate.decode(value);
      return {
        type: "flow_interval", switch_id: m.switchId, interval_start_unix_ns: start(m.interval), interval_end_unix_ns: end(m.interval), src: m.src, dst: m.dst, dest_qp: m.destQp,
        messages: Number(m.messages), bytes: Number(m.bytes), packets: Number(m.packets), retransmitted: Number(m.retransmitted), fnr: m.fnr,
        fct_ns: stats(m.fctNs), fet_bps: stats(m.fetBps), ecn_ce_packets: Number(m.ecnCePackets), cnp_packets: Number(m.cnpPackets), gap_ns: stats(m.gapNs),
        mode: mode(m.mode), straddled_messages: Number(m.straddledMessages),
        coverage: m.coverage ? { measured_flows: Number(m.coverage.measuredFlows), known_flows: Number(m.coverage.knownFlows), ratio: m.coverage.ratio } : null,
      };
    }
    case "rdma.telemetry.v1.Alert": {
      const m = Alert.decode(value);
      return {
        type: "alert", switch_id: m.switchId, interval_start_unix_ns: start(m.interval), metric: m.metric, scope: m.scope as "host" | "target" | "pair" | "flow", scope_key: m.scopeKey,
        state: m.state === AlertState.ALERT_STATE_RAISED ? "raised" : "cleared", value: m.value, raise_threshold: m.raiseThreshold, clear_threshold: m.clearThreshold, at_unix_ns: String(m.atUnixNs),
      };
    }
    case "rdma.telemetry.v1.SwitchStats": {
      const m = SwitchStats.decode(value);
      return {
        type: "switch_stats", switch_id: m.switchId, interval_start_unix_ns: start(m.interval), interval_end_unix_ns: end(m.interval),
        digests_received: Number(m.digestsReceived), digests_lost: Number(m.digestsLost), digests_duplicated: Number(m.digestsDuplicated), bad_digests: Number(m.badDigests),
        switch_restarts: Number(m.switchRestarts), late_records: Number(m.lateRecords), late_responses: Number(m.lateResponses),
        totals_since_unix_ns: m.totalsSinceUnixNs.toString(), incomplete_ios: Number(m.incompleteIos), ios_left_window: Number(m.iosLeftWindow), ios_answer_lost: Number(m.iosAnswerLost), ios_pairing_confused: Number(m.iosPairingConfused), unknown_endpoint_digests: Number(m.unknownEndpointDigests),
        untracked_flows: Number(m.untrackedFlows), untracked_ios: Number(m.untrackedIos), io_references_lost: Number(m.ioReferencesLost), parser_errors: Number(m.parserErrors),
        unknown_opcodes: Number(m.unknownOpcodes), io_replaced: Number(m.ioReplaced), io_unpaired_responses: Number(m.ioUnpairedResponses),
        queue_pairs_learned: Number(m.queuePairsLearned), cnp_untracked: Number(m.cnpUntracked),
        reserved_address_packets: Number(m.reservedAddressPackets), ipv6_ext_header_packets: Number(m.ipv6ExtHeaderPackets), unknown_endpoint_packets: Number(m.unknownEndpointPackets), mode: mode(m.mode),
      };
    }
    case "rdma.telemetry.v1.IoHistogram": {
      const m = IoHistogram.decode(value);
      return {
        type: "io_histogram", switch_id: m.switchId, interval_start_unix_ns: start(m.interval), interval_end_unix_ns: end(m.interval),
        host: m.overflow ? null : m.host, target: m.overflow ? null : m.target, op: op(m.op), figure: m.figure as "e2e_c_ns" | "e2e_s_ns" | "dal_ns" | "dpl_ns",
        count: Number(m.count), buckets: buckets(m.buckets), p50_ns: m.p50Ns, p99_ns: m.p99Ns, mode: mode(m.mode),
      };
    }
    case "rdma.telemetry.v1.FlowHistogram": {
      const m = FlowHistogram.decode(value);
      return {
        type: "flow_histogram", switch_id: m.switchId, interval_start_unix_ns: start(m.interval), interval_end_unix_ns: end(m.interval),
        src: m.overflow ? null : m.src, dst: m.overflow ? null : m.dst, dest_qp: m.overflow ? null : m.destQp, figure: "fct_ns",
        count: Number(m.count), buckets: buckets(m.buckets), p50_ns: m.p50Ns, p99_ns: m.p99Ns, mode: mode(m.mode),
      };
    }
    case "rdma.telemetry.v1.RawDigest": {
      const m = RawDigest.decode(value);
      const fields: Record<string, number | string> = {};
      for (const f of m.fields) {
        let x = 0n;
        for (const b of f.value) x = (x << 8n) | BigInt(b);
        fields[f.name] = x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : x.toString();
      }
      return { type: "raw_digest", switch_id: m.switchId, digest: m.digest, seq: Number(m.seq), list_timestamp_ns: String(m.listTimestampNs), fields };
    }
    default:
      throw new Error(`unknown record type '${type ?? "(no type header)"}'`);
  }
}
