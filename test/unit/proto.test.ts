import { describe, expect, test } from "vitest";
import { WriteRequest, Update_Type, StreamMessageResponse } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { IoRecord, IoOp, Mode, RawDigest } from "../../exporter/src/generated/rdma/telemetry/v1/records.js";

describe("generated protobuf code", () => {
  test("a P4Runtime write request round-trips, oneofs as discriminated unions and 64-bit ids as bigint", () => {
    const req = WriteRequest.fromPartial({
      deviceId: 18446744073709551615n,
      electionId: { high: 0n, low: 7n },
      updates: [{
        type: Update_Type.INSERT,
        entity: {
          entity: {
            $case: "tableEntry",
            value: {
              tableId: 33554433,
              match: [{ fieldId: 1, fieldMatchType: { $case: "lpm", value: { value: Buffer.from([10, 0, 0, 0]), prefixLen: 8 } } }],
              action: { type: { $case: "action", value: { actionId: 16777217, params: [{ paramId: 1, value: Buffer.from([1]) }] } } },
            },
          },
        },
      }],
    });
    const back = WriteRequest.decode(WriteRequest.encode(req).finish());
    expect(back.deviceId).toBe(18446744073709551615n);
    const e = back.updates[0]!.entity!.entity!;
    expect(e.$case).toBe("tableEntry");
    if (e.$case !== "tableEntry") throw new Error("unreachable");
    const m = e.value.match[0]!.fieldMatchType!;
    expect(m.$case).toBe("lpm");
    if (m.$case === "lpm") expect([...m.value.value]).toEqual([10, 0, 0, 0]);
  });

  test("a digest list in a stream message round-trips", () => {
    const msg = StreamMessageResponse.fromPartial({
      update: { $case: "digest", value: { digestId: 5, listId: 99n, timestamp: 1_800_000_000_000_000_000n, data: [{ data: { $case: "struct", value: { members: [{ data: { $case: "bitstring", value: Buffer.from([1, 2]) } }] } } }] } },
    });
    const back = StreamMessageResponse.decode(StreamMessageResponse.encode(msg).finish());
    expect(back.update?.$case).toBe("digest");
    if (back.update?.$case === "digest") expect(back.update.value.listId).toBe(99n);
  });

  test("records keep absent figures absent and units in field names", () => {
    const rec = IoRecord.fromPartial({ switchId: "tor-c", host: "10.0.1.1", target: "10.0.2.1", cid: 7, op: IoOp.IO_OP_READ, e2eCNs: 5000n, mode: Mode.MODE_FULL });
    const back = IoRecord.decode(IoRecord.encode(rec).finish());
    expect(back.e2eCNs).toBe(5000n);
    expect(back.dplNs).toBeUndefined();
    expect(IoRecord.toJSON(back)).toMatchObject({ switchId: "tor-c", e2eCNs: "5000" });
    const raw = RawDigest.decode(RawDigest.encode(RawDigest.fromPartial({ digest: "io_digest_t", seq: 3n, fields: [{ name: "seq", value: Buffer.from([3]) }] })).finish());
    expect(raw.fields[0]!.name).toBe("seq");
  });
});
