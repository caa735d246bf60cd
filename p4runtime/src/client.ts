// A P4Runtime client on @grpc/grpc-js: unary calls as promises, Read as an
// async iterable, the StreamChannel as an async iterable of messages with a
// send side; cancellation by AbortSignal. gRPC errors are wrapped once, here,
// into P4RuntimeError / P4WriteError (which keeps every per-update error).
import * as grpc from "@grpc/grpc-js";
import { Status } from "./generated/google/rpc/status.js";
import {
  CapabilitiesRequest,
  GetForwardingPipelineConfigRequest,
  P4RuntimeService,
  type P4RuntimeClient as GrpcP4RuntimeClient,
  ReadRequest,
  SetForwardingPipelineConfigRequest,
  StreamMessageRequest,
  WriteRequest,
  type CapabilitiesResponse,
  type Entity,
  type GetForwardingPipelineConfigRequest_ResponseType,
  type GetForwardingPipelineConfigResponse,
  type StreamMessageResponse,
  type Update,
} from "./generated/p4/v1/p4runtime.js";
import { decodeStreamMessageResponse } from "./digest-decoding.js";
import { decodeBatchStatus, type BatchUpdateError } from "./batch-status.js";
import { encodeWriteRequest } from "./write-encoding.js";
import { toUint128 } from "./wire.js";
import { codeName, P4RuntimeError, type ErrorCode } from "./errors.js";

export interface TlsOptions {
  /** PEM CA bundle to verify the switch */
  ca?: Buffer;
  /** PEM client certificate and key, for mutual TLS */
  cert?: Buffer;
  key?: Buffer;
  /** expected server name, when it differs from the address */
  serverName?: string;
}

export interface ClientOptions {
  address: string;
  deviceId: bigint;
  /** omitted: plaintext */
  tls?: TlsOptions;
  /** per-call deadline for unary calls and reads, ms */
  timeoutMs?: number;
  /** grpc-js channel options, over the defaults (DEFAULT_CHANNEL_OPTIONS) */
  channelOptions?: grpc.ChannelOptions;
  /**
   * StreamChannel messages held for a reader that is behind: above this the
   * stream is paused (HTTP/2 flow control then holds the switch back) until
   * the reader has taken half of them. Default 4096.
   */
  streamHighWaterMark?: number;
}

/** The channel options the client starts from. */
export const DEFAULT_CHANNEL_OPTIONS: Readonly<grpc.ChannelOptions> = {
  "grpc.max_receive_message_length": 64 << 20,
  "grpc.max_send_message_length": 64 << 20,
  "grpc.initial_reconnect_backoff_ms": 200,
  "grpc.max_reconnect_backoff_ms": 2000,
  // Digest lists of a thousand samples are ~60 KiB: with the default 64 KiB
  // HTTP/2 window the switch would wait for a window update after each one.
  "grpc-node.flow_control_window": 8 << 20,
};

/** One update's outcome in a failed Write: its index in the batch, canonical code and message. */
export type UpdateError = BatchUpdateError;

/** A Write in which some updates failed; `updates` has one row per update, OK ones included. */
export class P4WriteError extends P4RuntimeError {
  override readonly name = "P4WriteError";
  constructor(message: string, readonly updates: UpdateError[], options?: { cause?: unknown }) {
    super(message, "UNKNOWN", false, options);
  }

  get failures(): UpdateError[] {
    return this.updates.filter((u) => u.code !== "OK");
  }

  /** Every failure is NOT_FOUND (e.g. deleting what is already gone). */
  isNotFoundOnly(): boolean {
    return this.failures.length > 0 && this.failures.every((u) => u.code === "NOT_FOUND");
  }

  /** Every failure is ALREADY_EXISTS (e.g. inserting what is already there). */
  isAlreadyExistsOnly(): boolean {
    return this.failures.length > 0 && this.failures.every((u) => u.code === "ALREADY_EXISTS");
  }
}

// What a later attempt can mend by itself: the switch away or busy, a call cut short.
const RETRIABLE = new Set<ErrorCode>(["UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED", "CANCELLED", "UNKNOWN", "INTERNAL"]);

/**
 * Wraps a grpc-js error, decoding P4Runtime per-update errors from the status
 * details (batch-status.ts); `count` is the batch's size when known.
 */
export function wrapGrpcError(err: unknown, what: string, count?: number): P4RuntimeError {
  const e = err as grpc.ServiceError;
  const code = typeof e?.code === "number" ? codeName(e.code) : "UNKNOWN";
  const c: ErrorCode = code === "OK" ? "UNKNOWN" : code;
  const detailsBin = e?.metadata?.get?.("grpc-status-details-bin")?.[0];
  if (detailsBin instanceof Buffer) {
    let updates: UpdateError[] | undefined;
    try {
      updates = decodeBatchStatus(Status.decode(detailsBin), count);
    } catch {
      // fall through: not a P4Runtime status
    }
    if (updates?.length) {
      const failed = updates.filter((u) => u.code !== "OK");
      const first = failed[0];
      if (what === "Read" && first) {
        // A Read batch reports one p4.Error per request; the error takes their code when they agree.
        const same: ErrorCode = first.code !== "OK" && failed.every((u) => u.code === first.code) ? first.code : "UNKNOWN";
        return new P4RuntimeError(`Read: ${failed.length} of ${updates.length} requests failed (#${first.index}: ${first.code} ${first.message})`, same, RETRIABLE.has(same), { cause: err });
      }
      return new P4WriteError(`${what}: ${failed.length} of ${updates.length} updates failed${first ? ` (#${first.index}: ${first.code} ${first.message})` : ""}`, updates, { cause: err });
    }
  }
  return new P4RuntimeError(`${what}: ${c}: ${e?.details ?? e?.message ?? String(err)}`, c, RETRIABLE.has(c), { cause: err });
}

/** The generated client, with digest lists on the StreamChannel read by the fast decoder and table writes by the fast encoder. */
const FastClient = grpc.makeGenericClientConstructor(
  {
    ...P4RuntimeService,
    streamChannel: { ...P4RuntimeService.streamChannel, responseDeserialize: decodeStreamMessageResponse },
    // write() hands over the bytes it serialized itself (see there).
    write: { ...P4RuntimeService.write, requestSerialize: (b: Buffer) => b },
  },
  "p4.v1.P4Runtime",
);

export interface StreamChannel extends AsyncIterable<StreamMessageResponse> {
  send(msg: StreamMessageRequest): void;
  close(): void;
  readonly closed: Promise<P4RuntimeError | undefined>;
  /** messages received and not yet taken by the reader */
  readonly buffered: number;
  /** true while the stream is paused for a reader that is behind */
  readonly paused: boolean;
}

export class P4RuntimeClient {
  private readonly grpcClient: GrpcP4RuntimeClient;

  constructor(readonly options: ClientOptions) {
    const creds = options.tls
      ? grpc.credentials.createSsl(options.tls.ca ?? null, options.tls.key ?? null, options.tls.cert ?? null)
      : grpc.credentials.createInsecure();
    const channelOptions: grpc.ChannelOptions = { ...DEFAULT_CHANNEL_OPTIONS, ...options.channelOptions };
    if (options.tls?.serverName) channelOptions["grpc.ssl_target_name_override"] = options.tls.serverName;
    this.grpcClient = new FastClient(options.address, creds, channelOptions) as unknown as GrpcP4RuntimeClient;
  }

  get deviceId(): bigint {
    return this.options.deviceId;
  }

  close(): void {
    this.grpcClient.close();
  }

  /** The deadline of a call; cancellation by AbortSignal is wired to each call (see cancelOn). */
  private callOptions(): Partial<grpc.CallOptions> {
    return this.options.timeoutMs ? { deadline: Date.now() + this.options.timeoutMs } : {};
  }

  private unary<Req, Res>(what: string, fn: (req: Req, md: grpc.Metadata, opts: Partial<grpc.CallOptions>, cb: (err: grpc.ServiceError | null, res: Res) => void) => grpc.ClientUnaryCall, req: Req, signal?: AbortSignal, count?: number): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new P4RuntimeError(`${what}: aborted`, "CANCELLED"));
        return;
      }
      let release = () => {};
      const call = fn.call(this.grpcClient, req, new grpc.Metadata(), this.callOptions(), (err, res) => {
        release();
        if (err) reject(wrapGrpcError(err, what, count));
        else resolve(res);
      });
      release = cancelOn(signal, call);
    });
  }

  capabilities(signal?: AbortSignal): Promise<CapabilitiesResponse> {
    return this.unary("Capabilities", this.grpcClient.capabilities as never, CapabilitiesRequest.fromPartial({}), signal);
  }

  async write(updates: Update[], electionId: bigint, opts: { role?: string; signal?: AbortSignal } = {}): Promise<void> {
    // The updates go as they are (the entity builders make complete messages:
    // a deep copy of thousands of updates would cost more than the write).
    const req: WriteRequest = { ...WriteRequest.fromPartial({ deviceId: this.deviceId, role: opts.role ?? "", electionId: toUint128(electionId) }), updates };
    // Serialized here: grpc-js keeps the message it was given until the call
    // object is collected, and two thousand updates outliving the write would
    // be copied by the next young-generation collections.
    await this.unary("Write", this.grpcClient.write as never, encodeWriteRequest(req), opts.signal, updates.length);
  }

  async *read(entities: Entity[], opts: { role?: string; signal?: AbortSignal } = {}): AsyncGenerator<Entity> {
    if (opts.signal?.aborted) throw new P4RuntimeError("Read: aborted", "CANCELLED");
    const call = this.grpcClient.read(ReadRequest.fromPartial({ deviceId: this.deviceId, role: opts.role ?? "", entities }), new grpc.Metadata(), this.callOptions());
    const release = cancelOn(opts.signal, call);
    try {
      for await (const res of call as AsyncIterable<{ entities: Entity[] }>) yield* res.entities;
    } catch (err) {
      throw wrapGrpcError(err, "Read");
    } finally {
      release();
    }
  }

  async readAll(entities: Entity[], opts: { role?: string; signal?: AbortSignal } = {}): Promise<Entity[]> {
    const out: Entity[] = [];
    for await (const e of this.read(entities, opts)) out.push(e);
    return out;
  }

  setPipeline(req: Omit<SetForwardingPipelineConfigRequest, "deviceId" | "roleId">, signal?: AbortSignal): Promise<unknown> {
    return this.unary("SetForwardingPipelineConfig", this.grpcClient.setForwardingPipelineConfig as never, SetForwardingPipelineConfigRequest.fromPartial({ ...req, deviceId: this.deviceId }), signal);
  }

  getPipeline(responseType: GetForwardingPipelineConfigRequest_ResponseType, signal?: AbortSignal): Promise<GetForwardingPipelineConfigResponse> {
    return this.unary("GetForwardingPipelineConfig", this.grpcClient.getForwardingPipelineConfig as never, GetForwardingPipelineConfigRequest.fromPartial({ deviceId: this.deviceId, responseType }), signal);
  }

  /**
   * Opens the StreamChannel. Messages arrive in order; the iterator ends when
   * the stream does. A reader that falls behind by `streamHighWaterMark`
   * messages pauses the stream until it catches up.
   */
  streamChannel(signal?: AbortSignal): StreamChannel {
    const call = this.grpcClient.streamChannel(new grpc.Metadata(), {});
    const high = Math.max(2, this.options.streamHighWaterMark ?? 4096);
    const queue: StreamMessageResponse[] = [];
    let head = 0;
    let paused = false;
    let wake: (() => void) | undefined;
    let done = false;
    let resolveClosed!: (e: P4RuntimeError | undefined) => void;
    const closed = new Promise<P4RuntimeError | undefined>((r) => (resolveClosed = r));
    let release = () => {};
    const finish = (err?: P4RuntimeError) => {
      if (done) return;
      done = true;
      release();
      resolveClosed(err);
      wake?.();
    };
    call.on("data", (m: StreamMessageResponse) => {
      queue.push(m);
      if (!paused && queue.length - head >= high) {
        paused = true;
        call.pause();
      }
      wake?.();
    });
    call.on("error", (err) => finish(wrapGrpcError(err, "StreamChannel")));
    call.on("end", () => finish(undefined));
    release = cancelOn(signal, call);
    return {
      send: (msg) => {
        if (!done) call.write(StreamMessageRequest.fromPartial(msg));
      },
      close: () => {
        call.end();
        call.cancel();
        finish(undefined);
      },
      closed,
      get buffered() {
        return queue.length - head;
      },
      get paused() {
        return paused;
      },
      async *[Symbol.asyncIterator]() {
        for (;;) {
          while (head < queue.length) {
            const m = queue[head]!;
            queue[head++] = undefined as never;
            if (head > 1024 && head * 2 > queue.length) {
              queue.splice(0, head);
              head = 0;
            }
            if (paused && queue.length - head <= high / 2) {
              paused = false;
              call.resume();
            }
            yield m;
          }
          if (done) return;
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
        }
      },
    };
  }
}

/** Cancels `call` when `signal` aborts (at once if it already has); returns the function that lets go of the signal. */
function cancelOn(signal: AbortSignal | undefined, call: { cancel(): void }): () => void {
  if (!signal) return () => {};
  if (signal.aborted) {
    call.cancel();
    return () => {};
  }
  const onAbort = () => call.cancel();
  signal.addEventListener("abort", onAbort, { once: true });
  return () => signal.removeEventListener("abort", onAbort);
}
