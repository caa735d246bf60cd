// Digest entries: a digest's list config (max list size, max timeout, ack
// timeout) inserted, modified, deleted and read; a digest sends lists only
// while it is configured.
import { Update_Type, type DigestEntry, type Entity } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import type { SoftwareSwitch } from "../../software-switch.js";
import type { PipelineBinding } from "../binding.js";
import { RpcError } from "../rpc.js";

export function writeDigestEntry(sw: SoftwareSwitch, b: PipelineBinding, type: Update_Type, d: DigestEntry): void {
  const T = Update_Type;
  if (!b.digests.has(d.digestId)) throw new RpcError("NOT_FOUND", `no digest with id ${d.digestId}`);
  const exists = sw.digests.config(d.digestId) !== undefined;
  if (type === T.DELETE) {
    if (!exists) throw new RpcError("NOT_FOUND", `digest ${d.digestId} is not configured`);
    sw.digests.configure(d.digestId, undefined);
    return;
  }
  if (type === T.INSERT && exists) throw new RpcError("ALREADY_EXISTS", `digest ${d.digestId} is already configured (use MODIFY)`);
  if (type === T.MODIFY && !exists) throw new RpcError("NOT_FOUND", `digest ${d.digestId} is not configured (use INSERT)`);
  if (!d.config) throw new RpcError("INVALID_ARGUMENT", `digest ${d.digestId}: no config`);
  if (d.config.maxListSize < 0 || d.config.maxTimeoutNs < 0n || d.config.ackTimeoutNs < 0n) throw new RpcError("INVALID_ARGUMENT", `digest ${d.digestId}: negative config value`);
  sw.digests.configure(d.digestId, { maxListSize: d.config.maxListSize, maxTimeoutNs: d.config.maxTimeoutNs, ackTimeoutNs: d.config.ackTimeoutNs });
}

/** One digest's config (a digest id is required, as on BMv2); nothing if it is not configured. */
export function readDigestEntry(sw: SoftwareSwitch, b: PipelineBinding, q: DigestEntry, out: Entity[]): void {
  if (q.digestId === 0) throw new RpcError("UNIMPLEMENTED", "digest_id must be set when reading DigestEntry");
  const id = q.digestId;
  if (!b.digests.has(id)) throw new RpcError("NOT_FOUND", `no digest with id ${id}`);
  const cfg = sw.digests.config(id);
  if (cfg) out.push({ entity: { $case: "digestEntry", value: { digestId: id, config: { maxListSize: cfg.maxListSize, maxTimeoutNs: cfg.maxTimeoutNs, ackTimeoutNs: cfg.ackTimeoutNs } } } });
}
