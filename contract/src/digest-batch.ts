// One digest list of one switch, decoded: what the controller hands the
// exporter (in process, through the journal, or as raw digests on Kafka).
import type { DigestMember } from "@rdma-telemetry/p4runtime";
import type { EndpointEntry } from "./address.js";
import type { TelemetryDigest } from "./digests.js";

export interface DigestBatch {
  switchId: string;
  listTimestampNs: bigint;
  digests: TelemetryDigest[];
  /** samples of this list that could not be decoded (counted, and reported on switch_stats) */
  badDigests: number;
  /**
   * The switch session the list belongs to: it moves on when this controller
   * (or another) pushes the pipeline (a switch that restarted, or a new pipeline), after
   * which the switch's clock, sequence numbers and registers start anew.
   */
  session: number;
  /**
   * With `deferAck`, the owner acknowledges the list to the switch by calling
   * this once its digests are safe (e.g. journaled and fsync'd).
   */
  ack?: () => void;
  /**
   * The endpoint keys (240.0.0.0/4) the digests of this list use, each with
   * the IPv6 address it stands for on this switch: a batch is understood on
   * its own, wherever it goes (journal, raw-digest topic, another exporter).
   * A key used and not listed has no entry at the controller: its digests are
   * counted and dropped (unknown_endpoint_digests), never printed as an address.
   */
  endpoints?: readonly EndpointEntry[];
  /** the raw samples, by digest name, for the raw-digest topic */
  raw: { digest: string; samples: DigestMember[][] };
}
