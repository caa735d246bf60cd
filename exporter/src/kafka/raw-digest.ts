// A raw digest from rdma.digest.v1 back into a batch of one. Apart from
// digest-bus.ts (and its Kafka client), so that an exporter group member's
// engine threads load only what decoding needs.
import { decodeDigest, EXPECTED, type DigestBatch, type EndpointEntry } from "@rdma-telemetry/contract";
import type { RawDigest } from "../generated/rdma/telemetry/v1/records.js";

/** Decodes a raw digest back into a batch of one; throws BadDigestError naming what is wrong. */
export function batchFromRaw(raw: RawDigest): DigestBatch {
  const want = EXPECTED[raw.digest];
  const names = Object.keys(want?.fields ?? {});
  const byName = new Map(raw.fields.map((f) => [f.name, f.value]));
  const values = names.map((n) => byName.get(n) ?? Buffer.alloc(0));
  const d = decodeDigest(raw.digest, values.map((v) => (v.length ? v : new Uint8Array([0]))));
  if (names.some((n) => !byName.has(n))) throw new Error(`raw digest '${raw.digest}' from ${raw.switchId} lacks members ${names.filter((n) => !byName.has(n)).join(", ")}`);
  const endpoints: EndpointEntry[] = raw.endpoints.map((e) => ({ key: e.key >>> 0, address: e.address }));
  return { switchId: raw.switchId, listTimestampNs: raw.listTimestampNs, digests: [d], badDigests: 0, session: 0, raw: { digest: raw.digest, samples: [values] }, ...(endpoints.length ? { endpoints } : {}) };
}
