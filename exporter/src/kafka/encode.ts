// Records to Kafka messages: topic, key (one flow or host-target pair stays
// in one partition) and value (protobuf of proto/rdma/telemetry/v1, or JSON
// on request).
import {
  Alert,
  AlertState,
  FlowAggregate,
  FlowHistogram,
  IoAggregate,
  IoHistogram,
  IoOp,
  MessageRecord,
  Mode,
  RawDigest,
  Stats,
  SwitchStats,
} from "../generated/rdma/telemetry/v1/records.js";

/** A Buffer over the encoder's fresh output, without copying it. */
const bytes = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);
import type { HistogramBucketJson, ModeName, RecordJson, StatsJson } from "@rdma-telemetry/contract";
import { writeIoRecord } from "./io-record-writer.js";

export interface TopicNames {
  io: string;
  flow: string;
  alert: string;
  digest: string;
}

export const DEFAULT_TOPICS: TopicNames = { io: "rdma.io.v1", flow: "rdma.flow.v1", alert: "rdma.alert.v1", digest: "rdma.digest.v1" };

export type Encoding = "protobuf" | "json";

export interface KafkaMessageOut {
  topic: string;
  key: string;
  value: Buffer;
  headers: Record<string, string>;
}

const mode = (m: ModeName): Mode => (m === "full" ? Mode.MODE_FULL : m === "polling" ? Mode.MODE_POLLING : m === "summary" ? Mode.MODE_SUMMARY : Mode.MODE_UNSPECIFIED);
const op = (o: "read" | "write"): IoOp => (o === "read" ? IoOp.IO_OP_READ : IoOp.IO_OP_WRITE);
const big = (v: number | null): bigint | undefined => (v === null ? undefined : BigInt(Math.round(v)));
const stats = (s: StatsJson | null): Stats | undefined => (s ? { count: BigInt(s.count), min: s.min, mean: s.mean, p50: s.p50, p99: s.p99, max: s.max } : undefined);

const histogramBuckets = (bs: HistogramBucketJson[]) => bs.map((b) => ({ bucket: b.bucket, lowerNs: BigInt(b.lower_ns), upperNs: b.upper_ns === null ? undefined : BigInt(b.upper_ns), count: BigInt(b.count) }));

function interval(start: string, lengthNs: bigint, end?: string) {
  return { startUnixNs: BigInt(start), endUnixNs: end !== undefined ? BigInt(end) : BigInt(start) + lengthNs };
}

/** The message type name carried in the `type` header. */
export function messageType(r: RecordJson): string {
  switch (r.type) {
    case "io": return "rdma.telemetry.v1.IoRecord";
    case "io_interval": return "rdma.telemetry.v1.IoAggregate";
    case "message": return "rdma.telemetry.v1.MessageRecord";
    case "flow_interval": return "rdma.telemetry.v1.FlowAggregate";
    case "alert": return "rdma.telemetry.v1.Alert";
    case "switch_stats": return "rdma.telemetry.v1.SwitchStats";
    case "io_histogram": return "rdma.telemetry.v1.IoHistogram";
    case "flow_histogram": return "rdma.telemetry.v1.FlowHistogram";
  }
}

/** One headers object per type and encoding, shared by every message (clients cache its bytes by identity). */
const sharedHeaders = { protobuf: new Map<string, Record<string, string>>(), json: new Map<string, Record<string, string>>() };
function headersOf(type: string, encoding: Encoding): Record<string, string> {
  const byType = sharedHeaders[encoding];
  let h = byType.get(type);
  if (!h) byType.set(type, (h = Object.freeze({ type, encoding }) as Record<string, string>));
  return h;
}

export function encodeRecord(r: RecordJson, topics: TopicNames, encoding: Encoding, intervalNs: bigint): KafkaMessageOut {
  const headers = headersOf(messageType(r), encoding);
  const json = (topic: string, key: string): KafkaMessageOut => ({ topic, key, value: Buffer.from(JSON.stringify(r)), headers });
  switch (r.type) {
    case "io": {
      const key = `${r.host}|${r.target}`;
      if (encoding === "json") return json(topics.io, key);
      return { topic: topics.io, key, value: writeIoRecord(r, intervalNs), headers };
    }
    case "io_interval": {
      const key = `${r.host}|${r.target}`;
      if (encoding === "json") return json(topics.io, key);
      const m = IoAggregate.fromPartial({
        switchId: r.switch_id, interval: interval(r.interval_start_unix_ns, intervalNs, r.interval_end_unix_ns), host: r.host, target: r.target, op: op(r.op),
        count: BigInt(r.count), incomplete: BigInt(r.incomplete), bytes: BigInt(r.bytes), errors: BigInt(r.errors),
        e2eCNs: stats(r.e2e_c_ns), e2eSNs: stats(r.e2e_s_ns), rttNs: stats(r.rtt_ns), dalNs: stats(r.dal_ns), dplNs: stats(r.dpl_ns), mode: mode(r.mode),
        coverage: r.coverage ? { measuredPairs: BigInt(r.coverage.measured_pairs), knownPairs: BigInt(r.coverage.known_pairs), ratio: r.coverage.ratio } : undefined,
      });
      return { topic: topics.io, key, value: bytes(IoAggregate.encode(m).finish()), headers };
    }
    case "message": {
      const key = `${r.src}|${r.dst}|${r.dest_qp}`;
      if (encoding === "json") return json(topics.flow, key);
      const m = MessageRecord.fromPartial({
        switchId: r.switch_id, interval: interval(r.interval_start_unix_ns, intervalNs), src: r.src, dst: r.dst, destQp: r.dest_qp, firstPsn: r.first_psn, lastPsn: r.last_psn,
        bytes: BigInt(r.bytes), packets: r.packets, retransmitted: r.retransmitted, fctNs: BigInt(r.fct_ns), fetBps: r.fet_bps ?? undefined, fnr: r.fnr,
        ecnCePackets: r.ecn_ce_packets, gapNs: big(r.gap_ns), mode: mode(r.mode), firstUnixNs: BigInt(r.first_unix_ns),
      });
      return { topic: topics.flow, key, value: bytes(MessageRecord.encode(m).finish()), headers };
    }
    case "flow_interval": {
      const key = `${r.src}|${r.dst}|${r.dest_qp}`;
      if (encoding === "json") return json(topics.flow, key);
      const m = FlowAggregate.fromPartial({
        switchId: r.switch_id, interval: interval(r.interval_start_unix_ns, intervalNs, r.interval_end_unix_ns), src: r.src, dst: r.dst, destQp: r.dest_qp,
        messages: BigInt(r.messages), bytes: BigInt(r.bytes), packets: BigInt(r.packets), retransmitted: BigInt(r.retransmitted), fnr: r.fnr,
        fctNs: stats(r.fct_ns), fetBps: stats(r.fet_bps), ecnCePackets: BigInt(r.ecn_ce_packets), cnpPackets: BigInt(r.cnp_packets), gapNs: stats(r.gap_ns),
        mode: mode(r.mode), straddledMessages: BigInt(r.straddled_messages),
        coverage: r.coverage ? { measuredFlows: BigInt(r.coverage.measured_flows), knownFlows: BigInt(r.coverage.known_flows), ratio: r.coverage.ratio } : undefined,
      });
      return { topic: topics.flow, key, value: bytes(FlowAggregate.encode(m).finish()), headers };
    }
    case "alert": {
      if (encoding === "json") return json(topics.alert, r.scope_key);
      const m = Alert.fromPartial({
        switchId: r.switch_id, interval: interval(r.interval_start_unix_ns, intervalNs), metric: r.metric, scope: r.scope, scopeKey: r.scope_key,
        state: r.state === "raised" ? AlertState.ALERT_STATE_RAISED : AlertState.ALERT_STATE_CLEARED, value: r.value,
        raiseThreshold: r.raise_threshold, clearThreshold: r.clear_threshold, atUnixNs: BigInt(r.at_unix_ns),
      });
      return { topic: topics.alert, key: r.scope_key, value: bytes(Alert.encode(m).finish()), headers };
    }
    case "switch_stats": {
      if (encoding === "json") return json(topics.alert, r.switch_id);
      const m = SwitchStats.fromPartial({
        switchId: r.switch_id, interval: interval(r.interval_start_unix_ns, intervalNs, r.interval_end_unix_ns), digestsReceived: BigInt(r.digests_received),
        digestsLost: BigInt(r.digests_lost), digestsDuplicated: BigInt(r.digests_duplicated), badDigests: BigInt(r.bad_digests), mode: mode(r.mode),
        untrackedFlows: BigInt(r.untracked_flows ?? 0), untrackedIos: BigInt(r.untracked_ios ?? 0), ioReferencesLost: BigInt(r.io_references_lost ?? 0), parserErrors: BigInt(r.parser_errors ?? 0), unknownOpcodes: BigInt(r.unknown_opcodes ?? 0),
        ioReplaced: BigInt(r.io_replaced ?? 0), ioUnpairedResponses: BigInt(r.io_unpaired_responses ?? 0), queuePairsLearned: BigInt(r.queue_pairs_learned ?? 0),
        cnpUntracked: BigInt(r.cnp_untracked ?? 0), incompleteIos: BigInt(r.incomplete_ios), iosLeftWindow: BigInt(r.ios_left_window ?? 0), iosAnswerLost: BigInt(r.ios_answer_lost ?? 0), iosPairingConfused: BigInt(r.ios_pairing_confused ?? 0), unknownEndpointDigests: BigInt(r.unknown_endpoint_digests ?? 0),
        reservedAddressPackets: BigInt(r.reserved_address_packets ?? 0), ipv6ExtHeaderPackets: BigInt(r.ipv6_ext_header_packets ?? 0), unknownEndpointPackets: BigInt(r.unknown_endpoint_packets ?? 0), switchRestarts: BigInt(r.switch_restarts), lateRecords: BigInt(r.late_records),
        lateResponses: BigInt(r.late_responses), totalsSinceUnixNs: BigInt(r.totals_since_unix_ns),
      });
      return { topic: topics.alert, key: r.switch_id, value: bytes(SwitchStats.encode(m).finish()), headers };
    }
    case "io_histogram": {
      const key = r.host === null ? `overflow|${r.switch_id}` : `${r.host}|${r.target}`;
      if (encoding === "json") return json(topics.io, key);
      const m = IoHistogram.fromPartial({
        switchId: r.switch_id, interval: interval(r.interval_start_unix_ns, intervalNs, r.interval_end_unix_ns), host: r.host ?? "", target: r.target ?? "", op: op(r.op),
        figure: r.figure, count: BigInt(r.count), buckets: histogramBuckets(r.buckets), p50Ns: r.p50_ns, p99Ns: r.p99_ns, overflow: r.host === null, mode: mode(r.mode),
      });
      return { topic: topics.io, key, value: bytes(IoHistogram.encode(m).finish()), headers };
    }
    case "flow_histogram": {
      const key = r.src === null ? `overflow|${r.switch_id}` : `${r.src}|${r.dst}|${r.dest_qp}`;
      if (encoding === "json") return json(topics.flow, key);
      const m = FlowHistogram.fromPartial({
        switchId: r.switch_id, interval: interval(r.interval_start_unix_ns, intervalNs, r.interval_end_unix_ns), src: r.src ?? "", dst: r.dst ?? "", destQp: r.dest_qp ?? 0,
        figure: r.figure, count: BigInt(r.count), buckets: histogramBuckets(r.buckets), p50Ns: r.p50_ns, p99Ns: r.p99_ns, overflow: r.src === null, mode: mode(r.mode),
      });
      return { topic: topics.flow, key, value: bytes(FlowHistogram.encode(m).finish()), headers };
    }
  }
}

/** A raw digest, keyed so that both vantages of an I/O (or one flow) meet in one partition. */
export function encodeRawDigest(d: RawDigest, key: string, topics: TopicNames): KafkaMessageOut {
  return { topic: topics.digest, key, value: bytes(RawDigest.encode(d).finish()), headers: headersOf("rdma.telemetry.v1.RawDigest", "protobuf") };
}
