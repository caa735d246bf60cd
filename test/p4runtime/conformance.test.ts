// The software switch's P4Runtime server against the spec, item by item
// (see docs/p4runtime-conformance.md): status codes, arbitration, roles,
// counters and request bytes that do not decode. Requests go through the
// client library, or as raw gRPC where the library would not send them.
import * as grpc from "@grpc/grpc-js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, test } from "vitest";
import { P4Info } from "../../p4runtime/src/generated/p4/config/v1/p4info.js";
import { Status } from "../../p4runtime/src/generated/google/rpc/status.js";
import { SetForwardingPipelineConfigRequest_Action, Update_Type, WriteRequest } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { P4RuntimeClient, P4Schema, tableEntity, toUint128 } from "../../p4runtime/src/index.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";

const root = new URL("../..", import.meta.url).pathname;
const p4infoText = readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8");
const schema = P4Schema.fromJson(p4infoText);
const p4info = P4Info.fromJSON(JSON.parse(p4infoText));
const deviceConfig = readFileSync(join(root, "p4/build/telemetry.json"));

let server: P4RuntimeServer;
let address = "";
const clients: P4RuntimeClient[] = [];
beforeEach(async () => {
  server = new P4RuntimeServer(new SoftwareSwitch({ clock: "virtual" }), { deviceId: 1n, cpuPort: 510 });
  address = `127.0.0.1:${await server.listen("127.0.0.1:0")}`;
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await server.close();
});

function client(): P4RuntimeClient {
  const c = new P4RuntimeClient({ address, deviceId: 1n, timeoutMs: 5000 });
  clients.push(c);
  return c;
}

/** Arbitrates (role "" unless given) and waits for the answer. */
async function arbitrate(c: P4RuntimeClient, electionId: bigint, role?: { name: string; config?: { typeUrl: string; value: Buffer } }) {
  const ch = c.streamChannel();
  ch.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: role ? { id: 0n, name: role.name, config: role.config } : undefined, electionId: toUint128(electionId), status: undefined } } });
  for await (const m of ch) if (m.update?.$case === "arbitration") return { ch, answer: m.update.value };
  throw new Error("no arbitration answer");
}

async function primaryWithPipeline(): Promise<P4RuntimeClient> {
  const c = client();
  await arbitrate(c, 1n);
  await c.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info, p4DeviceConfig: deviceConfig, cookie: { cookie: 1n } } });
  return c;
}

test("a stream that arbitrates again for another device fails with FAILED_PRECONDITION (its first arbitration for an unknown device: NOT_FOUND)", async () => {
  const { ch } = await arbitrate(client(), 5n);
  ch.send({ update: { $case: "arbitration", value: { deviceId: 2n, role: undefined, electionId: toUint128(5n), status: undefined } } });
  expect((await ch.closed)?.code).toBe("FAILED_PRECONDITION");
  const other = new P4RuntimeClient({ address, deviceId: 2n });
  clients.push(other);
  const wrong = other.streamChannel();
  wrong.send({ update: { $case: "arbitration", value: { deviceId: 2n, role: undefined, electionId: toUint128(6n), status: undefined } } });
  expect((await wrong.closed)?.code).toBe("NOT_FOUND");
});

test("a role's config is echoed in the arbitration answer; a write for a role nobody arbitrated for is NOT_FOUND", async () => {
  const config = { typeUrl: "type.googleapis.com/example.RoleConfig", value: Buffer.from([1, 2, 3]) };
  const { answer } = await arbitrate(client(), 3n, { name: "sdn", config });
  expect(answer.role?.name).toBe("sdn");
  expect(answer.role?.config?.typeUrl).toBe(config.typeUrl);
  expect([...(answer.role?.config?.value ?? [])]).toEqual([1, 2, 3]);
  const c = await primaryWithPipeline();
  const route = tableEntity(schema, { table: "ipv4_routes", match: { dst_addr: "10.0.0.0/8" }, action: { name: "forwarding.route", params: { port: 1 } } });
  await expect(c.write([{ type: Update_Type.INSERT, entity: route }], 1n, { role: "no-such-role" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  await expect(c.write([{ type: Update_Type.INSERT, entity: route }], 2n, { role: "sdn" })).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
});

test("a counter MODIFY without data leaves the cell as it was", async () => {
  const c = await primaryWithPipeline();
  const counterId = schema.counters.get("stats.packet_events").preamble!.id;
  const cell = (data?: { packetCount: bigint; byteCount: bigint }) => ({ entity: { $case: "counterEntry" as const, value: { counterId, index: { index: 3n }, data } } });
  await c.write([{ type: Update_Type.MODIFY, entity: cell({ packetCount: 5n, byteCount: 500n }) }], 1n);
  await c.write([{ type: Update_Type.MODIFY, entity: cell() }], 1n);
  const [read] = await c.readAll([cell()]);
  expect(read?.entity?.$case === "counterEntry" && read.entity.value.data).toEqual({ packetCount: 5n, byteCount: 500n });
});

/** A raw unary call with `bytes` as the request, bypassing every encoder. */
function raw(method: string, bytes: Buffer): Promise<grpc.ServiceError | Buffer> {
  const Client = grpc.makeGenericClientConstructor({ m: { path: `/p4.v1.P4Runtime/${method}`, requestStream: false, responseStream: false, requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b } }, "raw");
  const rc = new Client(address, grpc.credentials.createInsecure()) as unknown as { m: (req: Buffer, cb: (err: grpc.ServiceError | null, res: Buffer) => void) => void; close(): void };
  return new Promise((resolve) => rc.m(bytes, (err, res) => {
    rc.close();
    resolve(err ?? res);
  }));
}

test("request bytes that do not decode are INVALID_ARGUMENT, not INTERNAL; the switch keeps serving", async () => {
  const garbage = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]); // a length far past the end
  for (const method of ["Write", "GetForwardingPipelineConfig", "SetForwardingPipelineConfig"]) {
    const r = await raw(method, garbage);
    expect(r instanceof Error && r.code, method).toBe(grpc.status.INVALID_ARGUMENT);
    expect(r instanceof Error && r.details, method).toMatch(/does not decode/);
  }
  expect((await client().capabilities()).p4runtimeApiVersion).toBe("1.5.0");
});

test("a failed Write's status in the details carries the same message as the gRPC status", async () => {
  await primaryWithPipeline();
  const bad = WriteRequest.encode(WriteRequest.fromPartial({ deviceId: 1n, electionId: toUint128(1n), updates: [{ type: Update_Type.DELETE, entity: tableEntity(schema, { table: "ipv4_routes", match: { dst_addr: "10.9.0.0/16" } }) }] })).finish();
  const r = await raw("Write", Buffer.from(bad));
  expect(r).toBeInstanceOf(Error);
  const err = r as grpc.ServiceError;
  const status = Status.decode(err.metadata.get("grpc-status-details-bin")[0] as Buffer);
  expect(status.message).toBe(err.details);
  expect(status.details).toHaveLength(1);
});
