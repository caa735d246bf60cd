// The client library's call options against a real gRPC server (a small
// P4Runtime service in this process): a reader that falls behind pauses the
// StreamChannel and loses nothing, an AbortSignal cancels unary calls and
// reads (also one aborted before the call), and channel options reach grpc-js.
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, test } from "vitest";
import { P4RuntimeClient, P4RuntimeError } from "../../p4runtime/src/index.js";
import { P4RuntimeService, type ReadResponse, type StreamMessageResponse } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { until } from "../support/wait.js";

const FLOOD = 20_000;
let server: grpc.Server;
let address = "";
/** StreamChannel messages the server has written, and how many the HTTP/2 stream took without waiting. */
let written = 0;
/** Capabilities calls the server has received. */
let capabilityCalls = 0;

beforeAll(async () => {
  server = new grpc.Server();
  server.addService(P4RuntimeService, {
    // Floods the stream with arbitration answers, numbered by election id, honouring backpressure.
    streamChannel: (call: grpc.ServerDuplexStream<unknown, StreamMessageResponse>) => {
      written = 0;
      const more = () => {
        while (written < FLOOD) {
          const ok = call.write({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: { high: 0n, low: BigInt(written) }, status: { code: 0, message: "x".repeat(200), details: [] } } } });
          written++;
          if (!ok) return void call.once("drain", more);
        }
        call.end();
      };
      more();
    },
    // Answers only when cancelled: for the AbortSignal tests.
    capabilities: () => void capabilityCalls++,
    // One response of about 100 KiB.
    read: (call: grpc.ServerWritableStream<unknown, ReadResponse>) => {
      call.write({ entities: Array.from({ length: 1000 }, (_, i) => ({ entity: { $case: "digestEntry", value: { digestId: i, config: { maxTimeoutNs: 1n, maxListSize: 1, ackTimeoutNs: BigInt("9".repeat(18)) } } } })) });
      call.end();
    },
  } as never);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  address = `127.0.0.1:${port}`;
});
afterAll(() => server.forceShutdown());

test("a reader that falls behind pauses the stream: the buffer stays bounded, and every message arrives in order", async () => {
  const client = new P4RuntimeClient({ address, deviceId: 1n, streamHighWaterMark: 256 });
  const ch = client.streamChannel();
  ch.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: { high: 0n, low: 1n }, status: undefined } } });
  // Not reading: the client pauses once its buffer is full, and the server's writes wait.
  await until(() => ch.paused, 10_000, () => `the stream to pause (${ch.buffered} buffered, ${written} written)`);
  expect(ch.buffered).toBeGreaterThanOrEqual(256);
  expect(ch.buffered).toBeLessThan(2 * 256 + 200); // (messages already parsed when the pause took effect)
  expect(written).toBeLessThan(FLOOD);
  let next = 0n;
  let maxBuffered = 0;
  for await (const m of ch) {
    if (m.update?.$case !== "arbitration") continue;
    expect(m.update.value.electionId?.low).toBe(next);
    next++;
    maxBuffered = Math.max(maxBuffered, ch.buffered);
  }
  expect(next).toBe(BigInt(FLOOD));
  expect(maxBuffered).toBeLessThan(2 * 256 + 200);
  client.close();
});

test("an AbortSignal cancels a unary call in flight, and one aborted before the call never starts it", async () => {
  const client = new P4RuntimeClient({ address, deviceId: 1n });
  const ac = new AbortController();
  const calls = capabilityCalls;
  const pending = client.capabilities(ac.signal);
  // Aborted once the server has the call: in flight, not before it started.
  await until(() => capabilityCalls === calls + 1, 5000, "the call to reach the server");
  ac.abort();
  await expect(pending).rejects.toMatchObject({ code: "CANCELLED" });
  await expect(client.capabilities(AbortSignal.abort())).rejects.toBeInstanceOf(P4RuntimeError);
  await expect(client.readAll([], { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: "CANCELLED" });
  client.close();
});

test("channel options reach grpc-js: a receive limit below a response's size fails the read with RESOURCE_EXHAUSTED", async () => {
  const small = new P4RuntimeClient({ address, deviceId: 1n, channelOptions: { "grpc.max_receive_message_length": 16 << 10 } });
  await expect(small.readAll([])).rejects.toMatchObject({ code: "RESOURCE_EXHAUSTED" });
  small.close();
  const big = new P4RuntimeClient({ address, deviceId: 1n });
  expect(await big.readAll([])).toHaveLength(1000);
  big.close();
});
