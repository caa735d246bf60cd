// The status of a failed batch (a Write's updates, a Read's requests) as the
// google.rpc.Status a server puts in `grpc-status-details-bin`, and back.
//
// The P4Runtime spec asks for one p4.v1.Error per update, in order; gRPC
// clients refuse trailers over 8 KB by default (`grpc.max_metadata_size`), and
// a rotation of 2,048 updates cannot fit one Error each. So:
//  - when one Error per update fits, that is what is sent (OK ones empty);
//  - otherwise one Error per distinct failure (code and message), each with
//    the updates it stands for in its `details`, as an UpdateIndexes message:
//      message UpdateIndexes {
//        // runs of updates: gap since the end of the previous run, then length
//        repeated uint32 runs = 1 [packed = true];
//        uint32 updates = 2;  // updates in the batch
//        uint32 listed = 3;   // the runs cover the updates before this index
//                             // only (0: all); the rest are not reported
//      }
//    Messages are shortened, then failures of one code merged, then the list
//    cut short (`listed`) until the trailers fit.
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";
import { Status } from "./generated/google/rpc/status.js";
import { Error as P4Error } from "./generated/p4/v1/p4runtime.js";
import { codeName, GRPC_CODE, type ErrorCode } from "./errors.js";

export const P4_ERROR_TYPE_URL = "type.googleapis.com/p4.v1.Error";
export const UPDATE_INDEXES_TYPE_URL = "type.googleapis.com/rdma.telemetry.p4runtime.v1.UpdateIndexes";
/** gRPC's default limit on the metadata a client accepts (name + value + 32 bytes a header). */
export const DEFAULT_MAX_METADATA_SIZE = 8192;
/** what the rest of the trailers may take: grpc-status, content-type, :status, and slack */
const OTHER_TRAILERS = 256;
const SPACE = "rdma-telemetry";

/** One update's (or request's) outcome: canonical code (0 OK) and message. */
export interface BatchOutcome {
  code: number;
  message: string;
}

/** One row per update, OK ones included. */
export interface BatchUpdateError {
  index: number;
  code: ErrorCode | "OK";
  message: string;
}

/** How large a header is in gRPC's count: name + value (-bin values base64) + 32. */
const headerSize = (name: string, valueLength: number): number => name.length + valueLength + 32;
const base64Length = (n: number): number => 4 * Math.ceil(n / 3);

/** The gRPC message of a failed batch: how many failed, and the first failure. */
export function batchMessage(outcomes: readonly BatchOutcome[], what: "updates" | "requests"): string {
  let failed = 0;
  let first = -1;
  for (let i = 0; i < outcomes.length; i++) {
    if (outcomes[i]!.code === 0) continue;
    failed++;
    if (first < 0) first = i;
  }
  const f = outcomes[first];
  return `${failed} of ${outcomes.length} ${what} failed${f ? `: #${first}: ${shorten(f.message, 200)}` : ""}`;
}

/**
 * The google.rpc.Status (UNKNOWN) of a batch in which some failed, encoded,
 * within `maxMetadata` bytes of trailers together with `message` as grpc-message.
 */
export function encodeBatchStatus(outcomes: readonly BatchOutcome[], message: string, maxMetadata = DEFAULT_MAX_METADATA_SIZE): Buffer {
  const budget = maxMetadata - OTHER_TRAILERS - headerSize("grpc-message", encodeURI(message).length) - headerSize("grpc-status-details-bin", 0);
  const fits = (b: Uint8Array) => base64Length(b.length) <= budget;
  // One Error per update takes at least its Any's type URL each.
  const spec = base64Length(outcomes.length * (4 + P4_ERROR_TYPE_URL.length)) > budget ? undefined : Status.encode({
    code: GRPC_CODE.UNKNOWN,
    message,
    details: outcomes.map((o) => ({ typeUrl: P4_ERROR_TYPE_URL, value: o.code === 0 ? EMPTY : errorBytes(o.code, shorten(o.message, 256)) })),
  }).finish();
  if (spec && fits(spec)) return Buffer.from(spec);

  // One Error per distinct failure, with its runs of updates.
  let classes = group(outcomes, (o) => `${o.code}\u0000${shorten(o.message, 256)}`, (o) => shorten(o.message, 256));
  let b = compact(classes, outcomes.length, message, outcomes.length);
  if (fits(b)) return b;
  classes = group(outcomes, (o) => `${o.code}\u0000${shorten(o.message, 64)}`, (o) => shorten(o.message, 64));
  b = compact(classes, outcomes.length, message, outcomes.length);
  if (fits(b)) return b;
  classes = group(outcomes, (o) => String(o.code), (o) => shorten(o.message, 64));
  b = compact(classes, outcomes.length, message, outcomes.length);
  if (fits(b)) return b;
  // Still too large (failures scattered over a huge batch): report the longest prefix that fits.
  let lo = 0;
  let hi = outcomes.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(compact(classes, outcomes.length, message, mid))) lo = mid;
    else hi = mid - 1;
  }
  return compact(classes, outcomes.length, message, lo);
}

/**
 * The per-update rows of a batch's google.rpc.Status (either form above);
 * `count` is the batch's size when the caller knows it. Undefined if the
 * status carries no p4.v1.Error.
 */
export function decodeBatchStatus(status: Status, count?: number): BatchUpdateError[] | undefined {
  const errors = status.details.filter((d) => d.typeUrl.endsWith("/p4.v1.Error")).map((d) => P4Error.decode(d.value));
  if (errors.length === 0) return undefined;
  const compactForm = errors.some((e) => e.details?.typeUrl === UPDATE_INDEXES_TYPE_URL);
  if (!compactForm) return errors.map((e, index) => ({ index, code: codeName(e.canonicalCode), message: e.message }));

  let rows: BatchUpdateError[] | undefined;
  for (const e of errors) {
    if (e.details?.typeUrl !== UPDATE_INDEXES_TYPE_URL) continue;
    const ix = decodeUpdateIndexes(e.details.value);
    if (!rows) {
      const n = count ?? ix.updates;
      const listed = ix.listed === 0 ? n : ix.listed;
      rows = Array.from({ length: n }, (_, index) =>
        index < listed ? { index, code: "OK" as const, message: "" } : { index, code: "UNKNOWN" as const, message: `not reported: the switch's answer covers updates #0 to #${listed - 1} only` },
      );
    }
    const code = codeName(e.canonicalCode);
    let at = 0;
    for (let i = 0; i + 1 < ix.runs.length; i += 2) {
      at += ix.runs[i]!;
      for (const end = at + ix.runs[i + 1]!; at < end; at++) if (rows[at]) rows[at] = { index: at, code, message: e.message };
    }
  }
  return rows;
}

const EMPTY = Buffer.alloc(0);

function errorBytes(code: number, message: string, details?: { typeUrl: string; value: Buffer }): Buffer {
  return Buffer.from(P4Error.encode({ canonicalCode: code, message, space: details ? SPACE : "", code: 0, details }).finish());
}

function shorten(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

interface FailureClass {
  code: number;
  message: string;
  /** the indexes of its updates, ascending */
  indexes: number[];
}

function group(outcomes: readonly BatchOutcome[], key: (o: BatchOutcome) => string, message: (o: BatchOutcome) => string): FailureClass[] {
  const byKey = new Map<string, FailureClass>();
  outcomes.forEach((o, i) => {
    if (o.code === 0) return;
    const k = key(o);
    let c = byKey.get(k);
    if (!c) byKey.set(k, (c = { code: o.code, message: message(o), indexes: [] }));
    c.indexes.push(i);
  });
  return [...byKey.values()];
}

/** The compact form, listing the updates before `listed`. */
function compact(classes: readonly FailureClass[], updates: number, message: string, listed: number): Buffer {
  const details = classes.map((c) => {
    const runs: number[] = [];
    let end = 0;
    for (const i of c.indexes) {
      if (i >= listed) break;
      if (runs.length && i === end) runs[runs.length - 1]!++;
      else runs.push(i - end, 1);
      end = i + 1;
    }
    const ix = encodeUpdateIndexes(runs, updates, listed === updates ? 0 : listed);
    return { typeUrl: P4_ERROR_TYPE_URL, value: errorBytes(c.code, c.message, { typeUrl: UPDATE_INDEXES_TYPE_URL, value: ix }) };
  });
  return Buffer.from(Status.encode({ code: GRPC_CODE.UNKNOWN, message, details }).finish());
}

function encodeUpdateIndexes(runs: number[], updates: number, listed: number): Buffer {
  const w = new BinaryWriter();
  if (runs.length) {
    w.uint32(10).fork();
    for (const r of runs) w.uint32(r);
    w.join();
  }
  if (updates) w.uint32(16).uint32(updates);
  if (listed) w.uint32(24).uint32(listed);
  return Buffer.from(w.finish());
}

function decodeUpdateIndexes(b: Uint8Array): { runs: number[]; updates: number; listed: number } {
  const r = new BinaryReader(b);
  const runs: number[] = [];
  let updates = 0;
  let listed = 0;
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === 2) {
      const end = r.uint32() + r.pos;
      while (r.pos < end) runs.push(r.uint32());
    } else if (field === 1 && wire === 0) runs.push(r.uint32());
    else if (field === 2 && wire === 0) updates = r.uint32();
    else if (field === 3 && wire === 0) listed = r.uint32();
    else r.skip(wire, field);
  }
  return { runs, updates, listed };
}
