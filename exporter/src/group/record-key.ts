// The identity of a record: the same record made twice (by a restarted
// controller replaying its journal, or by an exporter group member that took
// over a partition and re-read its open digests) has the same key.
import type { RecordJson } from "@rdma-telemetry/contract";
import type { RawDigestJson } from "../kafka/decode.js";

/** The key that names a record: the same record written twice has the same key. */
export function recordKey(r: RecordJson | RawDigestJson): string {
  switch (r.type) {
    // (Not by time: a restarted exporter places a switch's clock again, to within a digest list's delay.)
    case "io": return `io|${r.host}|${r.target}|${r.target_qp}|${r.cid}|${r.cmd_psn}`;
    case "message": return `message|${r.switch_id}|${r.src}|${r.dst}|${r.dest_qp}|${r.first_psn}`;
    case "io_interval": return `io_interval|${r.switch_id}|${r.interval_start_unix_ns}|${r.host}|${r.target}|${r.op}`;
    case "flow_interval": return `flow_interval|${r.switch_id}|${r.interval_start_unix_ns}|${r.src}|${r.dst}|${r.dest_qp}`;
    case "alert": return `alert|${r.switch_id}|${r.metric}|${r.scope_key}|${r.state}|${r.at_unix_ns}`;
    case "switch_stats": return `switch_stats|${r.switch_id}|${r.interval_start_unix_ns}`;
    case "io_histogram": return `io_histogram|${r.switch_id}|${r.interval_start_unix_ns}|${r.host}|${r.target}|${r.op}|${r.figure}`;
    case "flow_histogram": return `flow_histogram|${r.switch_id}|${r.interval_start_unix_ns}|${r.src}|${r.dst}|${r.dest_qp}`;
    case "raw_digest": return `raw_digest|${r.switch_id}|${r.digest}|${r.list_timestamp_ns}|${r.seq}`;
  }
}
