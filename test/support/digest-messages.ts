// Raw-digest messages as a digests-only controller publishes them, for the
// exporter group's engines in unit tests.
import { EXPECTED, type IoDigest } from "../../contract/src/digests.js";
import { rawDigestMessages } from "../../exporter/src/kafka/digest-bus.js";
import { DEFAULT_TOPICS, type KafkaMessageOut } from "../../exporter/src/kafka/encode.js";

/** The raw-digest message of one I/O digest in a list stamped `listNs`. */
export function ioMessage(d: IoDigest, listNs: bigint, switchId = "tor", endpoints?: Array<{ key: number; address: string }>): KafkaMessageOut {
  const values = Object.keys(EXPECTED.io_digest_t!.fields).map((n) => (d as unknown as Record<string, number>)[n]!);
  return rawDigestMessages({ switchId, listTimestampNs: listNs, digests: [d], badDigests: 0, session: 0, raw: { digest: "io_digest_t", samples: [values] }, ...(endpoints ? { endpoints } : {}) }, DEFAULT_TOPICS)[0]!;
}
