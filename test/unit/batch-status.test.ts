// The status of a failed batch (p4runtime/src/batch-status.ts): whatever the
// batch, it fits gRPC's default 8 KB of trailers and decodes to one row per
// update; what does not fit is reported as not reported, never as OK.
import { describe, expect, test } from "vitest";
import { batchMessage, decodeBatchStatus, encodeBatchStatus, GRPC_CODE, type BatchOutcome } from "../../p4runtime/src/index.js";
import { Status } from "../../p4runtime/src/generated/google/rpc/status.js";

const trailerSize = (status: Buffer, message: string) => "grpc-status-details-bin".length + 4 * Math.ceil(status.length / 3) + 32 + "grpc-message".length + encodeURI(message).length + 32;

function roundTrip(outcomes: BatchOutcome[]) {
  const message = batchMessage(outcomes, "updates");
  const bin = encodeBatchStatus(outcomes, message);
  expect(trailerSize(bin, message)).toBeLessThanOrEqual(8192 - 100);
  return decodeBatchStatus(Status.decode(bin), outcomes.length)!;
}

/** A deterministic pseudo-random sequence. */
function rng(seed: number) {
  return () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
}

describe("batch status", () => {
  test("distinct messages of many failures: each failed update keeps its code, and its message while they fit", () => {
    const r = rng(1);
    const outcomes = Array.from({ length: 3000 }, (_, i): BatchOutcome => (r() < 0.5 ? { code: 0, message: "" } : { code: GRPC_CODE.NOT_FOUND, message: `no entry ${i % 7} in table t` }));
    const rows = roundTrip(outcomes);
    expect(rows.map((u) => u.code)).toEqual(outcomes.map((o) => (o.code ? "NOT_FOUND" : "OK")));
    expect(rows.map((u) => u.message)).toEqual(outcomes.map((o) => o.message));
  });

  test("failures scattered over 200,000 updates: the prefix that fits is exact, the rest is UNKNOWN 'not reported', none OK", () => {
    const r = rng(2);
    const codes = [GRPC_CODE.NOT_FOUND, GRPC_CODE.ALREADY_EXISTS, GRPC_CODE.INVALID_ARGUMENT];
    const outcomes = Array.from({ length: 200_000 }, (): BatchOutcome => (r() < 0.5 ? { code: 0, message: "" } : { code: codes[Math.floor(r() * 3)]!, message: `failure ${Math.floor(r() * 1e6)}` }));
    const rows = roundTrip(outcomes);
    expect(rows).toHaveLength(200_000);
    const listed = rows.findIndex((u) => u.message.startsWith("not reported"));
    expect(listed).toBeGreaterThan(1000);
    const name = (c: number) => Object.entries(GRPC_CODE).find(([, v]) => v === c)![0];
    expect(rows.slice(0, listed).map((u) => u.code)).toEqual(outcomes.slice(0, listed).map((o) => name(o.code)));
    expect(rows.slice(listed).every((u) => u.code === "UNKNOWN")).toBe(true);
  });
});
