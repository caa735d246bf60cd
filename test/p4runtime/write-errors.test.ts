// A Write batch that fails, of any size, over real gRPC against the software
// switch's P4Runtime server: the client learns which updates failed (index and
// canonical code), and the status the switch sends stays under gRPC's default
// 8 KB metadata limit, so that any client receives it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { P4Info } from "../../p4runtime/src/generated/p4/config/v1/p4info.js";
import { SetForwardingPipelineConfigRequest_Action, Update_Type, type Update } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { P4RuntimeClient, P4Schema, P4WriteError, tableEntity, toUint128 } from "../../p4runtime/src/index.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";

const root = new URL("../..", import.meta.url).pathname;
const p4infoText = readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8");
const schema = P4Schema.fromJson(p4infoText);
const WATCHLIST = "TelemetryIngress.flow_tracker.flow_watchlist";

let server: P4RuntimeServer;
let client: P4RuntimeClient;
let stream: ReturnType<P4RuntimeClient["streamChannel"]>;
/** what the switch put in each failed Write's trailers */
const trailers: grpc.Metadata[] = [];

beforeAll(async () => {
  server = new P4RuntimeServer(new SoftwareSwitch({ clock: "virtual" }), { deviceId: 1n, cpuPort: 510 });
  const address = `127.0.0.1:${await server.listen("127.0.0.1:0")}`;
  client = new P4RuntimeClient({ address, deviceId: 1n, timeoutMs: 30_000 });
  stream = client.streamChannel();
  stream.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(1n), status: undefined } } });
  await stream[Symbol.asyncIterator]().next();
  await client.setPipeline({
    role: "",
    electionId: toUint128(1n),
    action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT,
    config: { p4info: P4Info.fromJSON(JSON.parse(p4infoText)), p4DeviceConfig: readFileSync(join(root, "p4/build/telemetry.json")), cookie: { cookie: 1n } },
  });
});

afterAll(async () => {
  stream.close();
  client.close();
  await server.close();
});

/** A watchlist entry for flow `i`. */
function flow(i: number, type: Update_Type): Update {
  const match = { src: `10.1.${(i >> 8) & 255}.${i & 255}`, dst: "10.2.0.1", dest_qp: i + 1 };
  return { type, entity: tableEntity(schema, { table: WATCHLIST, match, action: { name: "TelemetryIngress.flow_tracker.watch", params: { flow_slot: i, flow_epoch: 1 } } }) };
}

/** Sends `updates` and returns the P4WriteError it fails with. */
async function failedWrite(updates: Update[]): Promise<P4WriteError> {
  const err = await client.write(updates, 1n).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, String(err)).toBeInstanceOf(P4WriteError);
  const md = ((err as P4WriteError).cause as grpc.ServiceError).metadata;
  trailers.push(md);
  return err as P4WriteError;
}

/** Bytes of the trailers as gRPC counts them against its metadata limit (name + value + 32 for each; binary values base64). */
function metadataSize(md: grpc.Metadata): number {
  let n = 0;
  for (const [k, vs] of Object.entries(md.getMap())) {
    const v = Buffer.isBuffer(vs) ? vs.toString("base64") : String(vs);
    n += k.length + v.length + 32;
  }
  return n;
}

describe("a failed Write batch", () => {
  for (const n of [1, 400, 2048, 10_000]) {
    test(`MODIFY of ${n} entries that do not exist: every update is reported NOT_FOUND, by index`, async () => {
      const err = await failedWrite(Array.from({ length: n }, (_, i) => flow(i, Update_Type.MODIFY)));
      expect(err.updates).toHaveLength(n);
      expect(err.failures.map((u) => u.index)).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(err.isNotFoundOnly()).toBe(true);
      expect(err.failures[0]!.message).toMatch(/flow_watchlist|no entry|not found/i);
      const size = metadataSize(trailers.at(-1)!);
      console.log(`a failed Write of ${n} updates: ${size} bytes of grpc-status-details-bin`);
      expect(size).toBeLessThanOrEqual(8192);
    });
  }

  test("a mixed batch of 2,048 (every third update an INSERT that succeeds): the failed ones by index and code, the others OK", async () => {
    const updates = Array.from({ length: 2048 }, (_, i) => flow(100_000 + i, i % 3 === 0 ? Update_Type.INSERT : i % 3 === 1 ? Update_Type.MODIFY : Update_Type.DELETE));
    // and one update of a kind of its own: an action the table does not have
    updates[7] = { type: Update_Type.INSERT, entity: tableEntity(schema, { table: WATCHLIST, match: { src: "10.9.9.9", dst: "10.2.0.1", dest_qp: 1 }, action: { name: "TelemetryIngress.io_tracker.watch", params: { gen: 1 } } }) };
    const err = await failedWrite(updates);
    expect(err.updates).toHaveLength(2048);
    const expected = updates.map((u, i) => (i === 7 ? "INVALID_ARGUMENT" : u.type === Update_Type.INSERT ? "OK" : "NOT_FOUND"));
    expect(err.updates.map((u) => u.code)).toEqual(expected);
    expect(err.updates.map((u) => u.index)).toEqual(updates.map((_, i) => i));
    expect(err.updates[7]!.message).not.toBe("");
    expect(metadataSize(trailers.at(-1)!)).toBeLessThanOrEqual(8192);
  });

  test("a small failed batch is reported as the P4Runtime spec says: one p4.v1.Error per update, in order", async () => {
    const err = await failedWrite([flow(200_000, Update_Type.INSERT), flow(200_001, Update_Type.MODIFY)]);
    expect(err.updates.map((u) => u.code)).toEqual(["OK", "NOT_FOUND"]);
    const { Status } = await import("../../p4runtime/src/generated/google/rpc/status.js");
    const status = Status.decode(trailers.at(-1)!.get("grpc-status-details-bin")[0] as Buffer);
    expect(status.details.map((d) => d.typeUrl)).toEqual(["type.googleapis.com/p4.v1.Error", "type.googleapis.com/p4.v1.Error"]);
  });
});
