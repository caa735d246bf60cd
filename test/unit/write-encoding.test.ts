import { expect, test } from "vitest";
import { TableEntry, Update, Update_Type, WriteRequest, WriteRequest_Atomicity, type FieldMatch } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { encodeWriteRequest } from "../../p4runtime/src/write-encoding.js";

let seed = 5;
const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n;
const bytes = () => Buffer.from(Array.from({ length: [0, 1, 2, 4, 6, 16, 130][rnd(7)]! }, () => rnd(256)));
const id = () => [0, 1, 127, 128, 16_384, 2 ** 28 + 5, 2 ** 32 - 1][rnd(7)]!;

function match(): FieldMatch {
  const v = () => ({ value: bytes() });
  const kinds: Array<FieldMatch["fieldMatchType"]> = [
    undefined,
    { $case: "exact", value: v() },
    { $case: "optional", value: v() },
    { $case: "lpm", value: { value: bytes(), prefixLen: [0, 1, 24, 200][rnd(4)]! } },
    { $case: "ternary", value: { value: bytes(), mask: bytes() } },
    { $case: "range", value: { low: bytes(), high: bytes() } },
  ];
  return { fieldId: id(), fieldMatchType: kinds[rnd(kinds.length)] };
}

function entry(): TableEntry {
  const e = TableEntry.fromPartial({ tableId: id(), priority: [0, 1, 300, 2 ** 31 - 1][rnd(4)]!, isDefaultAction: rnd(2) === 1, isConst: rnd(3) === 1, metadata: bytes() });
  e.match = Array.from({ length: rnd(4) }, match);
  const a = rnd(4);
  if (a === 1) e.action = { type: undefined };
  if (a >= 2) e.action = { type: { $case: "action", value: { actionId: id(), params: Array.from({ length: rnd(4) }, () => ({ paramId: id(), value: bytes() })) } } };
  return e;
}

test("WriteRequests encode byte for byte as the generated encoder does, fast path or not", () => {
  for (let n = 0; n < 300; n++) {
    const updates: Update[] = Array.from({ length: rnd(6) }, () => {
      const e = entry();
      const r = rnd(10);
      // Outside the fast path: counters, idle timeouts, negative priorities, action profiles, other entities.
      if (r === 0) e.counterData = { byteCount: 5n, packetCount: 1n };
      if (r === 1) e.idleTimeoutNs = 1000n;
      if (r === 2) e.priority = -3;
      if (r === 3) e.action = { type: { $case: "actionProfileMemberId", value: 7 } };
      if (r === 4) return Update.fromPartial({ type: Update_Type.MODIFY, entity: { entity: { $case: "digestEntry", value: { digestId: 9, config: { maxTimeoutNs: 1n, maxListSize: 2, ackTimeoutNs: 3n } } } } });
      return { type: [Update_Type.UNSPECIFIED, Update_Type.INSERT, Update_Type.MODIFY, Update_Type.DELETE][rnd(4)]!, entity: { entity: { $case: "tableEntry", value: e } } };
    });
    const req: WriteRequest = { ...WriteRequest.fromPartial({ deviceId: BigInt(id()), role: ["", "r1"][rnd(2)]!, electionId: rnd(2) ? { high: 0n, low: BigInt(id()) } : undefined, atomicity: [WriteRequest_Atomicity.CONTINUE_ON_ERROR, WriteRequest_Atomicity.ROLLBACK_ON_ERROR][rnd(2)]! }), updates };
    const want = Buffer.from(WriteRequest.encode(req).finish());
    expect(encodeWriteRequest(req).equals(want), `request ${n}`).toBe(true);
  }
});
