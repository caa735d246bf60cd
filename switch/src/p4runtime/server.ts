// The P4Runtime gRPC service (p4runtime v1.5) in front of a SoftwareSwitch:
// capabilities, arbitration (arbitration.ts), the forwarding pipeline config
// (pipeline-config.ts), batched writes with per-update errors and reads with
// wildcards (the rules of each entity kind in entities/), and the stream
// channel (digest lists with acks, packet-out and packet-in).
import * as grpc from "@grpc/grpc-js";
import type { P4Info } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import {
  P4RuntimeService,
  SetForwardingPipelineConfigRequest_Action,
  WriteRequest_Atomicity,
  type CapabilitiesRequest,
  type CapabilitiesResponse,
  type Entity,
  type GetForwardingPipelineConfigRequest,
  type GetForwardingPipelineConfigResponse,
  type ReadRequest,
  type ReadResponse,
  type SetForwardingPipelineConfigRequest,
  type SetForwardingPipelineConfigResponse,
  StreamMessageResponse,
  type StreamMessageRequest,
  type WriteResponse,
} from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { batchMessage, encodeBatchStatus, fromUint128, GRPC_CODE, type BatchOutcome } from "@rdma-telemetry/p4runtime";
import type { DigestList } from "../digest-engine.js";
import type { SoftwareSwitch } from "../software-switch.js";
import { Arbitration, type Controller, type Stream } from "./arbitration.js";
import type { PipelineBinding } from "./binding.js";
import { encodeDigestListMessage } from "./digest-encoding.js";
import { applyUpdate, readEntity, type EntityTarget } from "./entities/index.js";
import { newReplicaForms } from "./entities/replication.js";
import { applyTableWrite } from "./entities/tables.js";
import { decodeWriteRequest, type LazyWriteRequest } from "./fast-write.js";
import { PipelineConfig } from "./pipeline-config.js";
import { grpcError, RpcError, toRpc, type ServerLogger } from "./rpc.js";

export const P4RUNTIME_API_VERSION = "1.5.0";

export interface P4RuntimeServerOptions {
  deviceId: bigint;
  /** port that packet-out is injected on and packet-in is taken from */
  cpuPort: number;
  logger?: ServerLogger;
  /** decode every update with the generated decoder (tests compare both paths) */
  genericWrites?: boolean;
}

export class P4RuntimeServer {
  private readonly grpcServer = new grpc.Server({ "grpc.max_receive_message_length": 64 << 20, "grpc.max_send_message_length": 64 << 20 });
  private readonly arbitration: Arbitration;
  private readonly pipeline: PipelineConfig;
  /** how replicas were written (uint32 or bytes ports), so that reads give them back alike */
  private readonly replicaForms = newReplicaForms();
  digestListsDropped = 0;
  /** updates applied as read from the request bytes (fast-write.ts) */
  fastWrites = 0;

  constructor(readonly sw: SoftwareSwitch, readonly options: P4RuntimeServerOptions) {
    // Ports are 9 bits (v1model), and 511 is the drop port: a CPU port past 510 would never see a packet.
    if (!Number.isInteger(options.cpuPort) || options.cpuPort < 0 || options.cpuPort > 510) throw new RangeError(`the CPU port must be 0-510 (got ${options.cpuPort})`);
    const log: ServerLogger = (level, msg, fields) => this.options.logger?.(level, msg, fields);
    this.arbitration = new Arbitration(options.deviceId, log);
    this.pipeline = new PipelineConfig(sw, log);
    // Digest lists are written pre-encoded (digest-encoding.ts); everything else through the generated encoder.
    const service = {
      ...P4RuntimeService,
      capabilities: tolerant(P4RuntimeService.capabilities),
      setForwardingPipelineConfig: tolerant(P4RuntimeService.setForwardingPipelineConfig),
      getForwardingPipelineConfig: tolerant(P4RuntimeService.getForwardingPipelineConfig),
      read: tolerant(P4RuntimeService.read),
      streamChannel: {
        ...P4RuntimeService.streamChannel,
        responseSerialize: (v: StreamMessageResponse | Buffer): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(StreamMessageResponse.encode(v).finish())),
      },
      // Table writes are read from the request's bytes as they are applied (fast-write.ts).
      write: tolerant({ ...P4RuntimeService.write, requestDeserialize: decodeWriteRequest }),
    };
    this.grpcServer.addService(service, {
      capabilities: refuseMalformed(this.capabilities.bind(this)),
      setForwardingPipelineConfig: refuseMalformed(this.setPipeline.bind(this)),
      getForwardingPipelineConfig: refuseMalformed(this.getPipeline.bind(this)),
      write: refuseMalformed(this.write.bind(this)),
      read: refuseMalformedStream(this.read.bind(this)),
      streamChannel: this.streamChannel.bind(this),
    });
    sw.on("digest", (list) => this.sendDigest(list));
    sw.on("packet", (pkt) => {
      if (pkt.port === this.options.cpuPort) this.toPrimaries({ update: { $case: "packet", value: { payload: pkt.data, metadata: [] } } });
    });
  }

  /** Binds to `address` ("127.0.0.1:0" picks a port); returns the port. */
  listen(address: string, credentials = grpc.ServerCredentials.createInsecure()): Promise<number> {
    return new Promise((resolve, reject) => {
      this.grpcServer.bindAsync(address, credentials, (err, port) => (err ? reject(err) : resolve(port)));
    });
  }

  /** Stops serving: streams are cancelled, the switch keeps its state. */
  async close(): Promise<void> {
    this.arbitration.close();
    await new Promise<void>((resolve) => this.grpcServer.tryShutdown(() => resolve()));
    this.grpcServer.forceShutdown();
  }

  /**
   * Commits a pipeline as SetForwardingPipelineConfig(VERIFY_AND_COMMIT)
   * would, without a controller (a switch started with its program);
   * throws with the reason when it does not load.
   */
  loadPipeline(p4info: P4Info, deviceConfig: Buffer, cookie?: bigint): void {
    try {
      this.pipeline.set(SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, { p4info, p4DeviceConfig: deviceConfig, cookie: cookie === undefined ? undefined : { cookie } });
    } catch (err) {
      throw new Error(toRpc(err).message);
    }
  }

  get pipelineCookie(): bigint | undefined {
    return this.pipeline.committed?.cookie;
  }

  get binding(): PipelineBinding | undefined {
    return this.pipeline.committed?.binding;
  }

  private requireDevice(deviceId: bigint): void {
    if (deviceId !== this.options.deviceId) throw new RpcError("NOT_FOUND", `no device with id ${deviceId} (this switch is device ${this.options.deviceId})`);
  }

  /** The switch under the committed pipeline; FAILED_PRECONDITION before there is one. */
  private entityTarget(): EntityTarget {
    const c = this.pipeline.require();
    return { sw: this.sw, binding: c.binding, originalDefaults: c.originalDefaults, replicaForms: this.replicaForms };
  }

  /** To the primary controllers' streams (see Arbitration.primaries); false if there is none. */
  private toPrimaries(msg: StreamMessageResponse | Buffer): boolean {
    let sent = false;
    for (const t of this.arbitration.primaries()) {
      t.stream.write(msg as StreamMessageResponse);
      sent = true;
    }
    return sent;
  }

  private sendDigest(list: DigestList): void {
    const b = this.pipeline.committed?.binding.digests.get(list.digestId);
    if (!b) return;
    const sent = this.toPrimaries(encodeDigestListMessage(list.digestId, list.listId, list.timestampNs, list.samples));
    if (!sent) this.digestListsDropped++;
  }

  // ---- RPCs -----------------------------------------------------------------------

  private capabilities(_call: grpc.ServerUnaryCall<CapabilitiesRequest, CapabilitiesResponse>, cb: grpc.sendUnaryData<CapabilitiesResponse>): void {
    cb(null, { p4runtimeApiVersion: P4RUNTIME_API_VERSION, experimental: undefined });
  }

  private setPipeline(call: grpc.ServerUnaryCall<SetForwardingPipelineConfigRequest, SetForwardingPipelineConfigResponse>, cb: grpc.sendUnaryData<SetForwardingPipelineConfigResponse>): void {
    try {
      const req = call.request;
      this.requireDevice(req.deviceId);
      this.arbitration.requirePrimary(req.role, req.electionId);
      this.pipeline.set(req.action, req.config);
      cb(null, {});
    } catch (err) {
      cb(grpcError(toRpc(err)));
    }
  }

  private getPipeline(call: grpc.ServerUnaryCall<GetForwardingPipelineConfigRequest, GetForwardingPipelineConfigResponse>, cb: grpc.sendUnaryData<GetForwardingPipelineConfigResponse>): void {
    try {
      this.requireDevice(call.request.deviceId);
      cb(null, this.pipeline.get(call.request.responseType));
    } catch (err) {
      cb(grpcError(toRpc(err)));
    }
  }

  private write(call: grpc.ServerUnaryCall<LazyWriteRequest, WriteResponse>, cb: grpc.sendUnaryData<WriteResponse>): void {
    try {
      const req = call.request;
      this.requireDevice(req.deviceId);
      this.arbitration.requirePrimary(req.role, req.electionId);
      const target = this.entityTarget();
      if (req.atomicity !== WriteRequest_Atomicity.CONTINUE_ON_ERROR) {
        throw new RpcError("UNIMPLEMENTED", `atomicity ${WriteRequest_Atomicity[req.atomicity]} is not supported (use CONTINUE_ON_ERROR)`);
      }
      const outcomes: BatchOutcome[] = [];
      let failed = 0;
      for (let i = 0; i < req.count; i++) {
        try {
          const w = this.options.genericWrites ? undefined : req.fast(i, target.binding);
          if (w) {
            applyTableWrite(w);
            this.fastWrites++;
          } else applyUpdate(target, req.update(i));
          outcomes.push(ok());
        } catch (err) {
          failed++;
          outcomes.push(failure(toRpc(err)));
        }
      }
      if (failed === 0) {
        cb(null, {});
        return;
      }
      cb(grpcError(batchError(outcomes)));
    } catch (err) {
      cb(grpcError(toRpc(err)));
    }
  }

  private read(call: grpc.ServerWritableStream<ReadRequest, ReadResponse>): void {
    try {
      const req = call.request;
      this.requireDevice(req.deviceId);
      const target = this.entityTarget();
      // Each request of the batch is read on its own: the entities of those
      // that succeed are sent, and if any failed the status is UNKNOWN with
      // one p4.Error per request, in order (as a Write batch reports).
      const out: Entity[] = [];
      const outcomes: BatchOutcome[] = [];
      let failed = 0;
      for (const ent of req.entities) {
        const mark = out.length;
        try {
          readEntity(target, ent, out);
          outcomes.push(ok());
        } catch (err) {
          out.length = mark;
          failed++;
          outcomes.push(failure(toRpc(err)));
        }
      }
      for (let i = 0; i < out.length; i += 1000) call.write({ entities: out.slice(i, i + 1000) });
      if (failed) call.emit("error", grpcError(batchError(outcomes, "requests")));
      else call.end();
    } catch (err) {
      call.emit("error", grpcError(toRpc(err)));
    }
  }

  private streamChannel(stream: Stream): void {
    let me: Controller | undefined;
    const close = () => {
      if (me) this.arbitration.drop(me);
      me = undefined;
    };
    stream.on("data", (msg: StreamMessageRequest) => {
      const u = msg.update;
      if (!u) return;
      if (u.$case === "arbitration") {
        const a = u.value;
        const next = this.arbitration.arbitrate(stream, me, a.deviceId, a.role?.name ?? "", fromUint128(a.electionId), a.role?.config);
        if (next) me = next;
        else close();
        return;
      }
      if (!me) {
        stream.emit("error", { code: grpc.status.FAILED_PRECONDITION, details: "the first stream message must be an arbitration update" });
        return;
      }
      if (u.$case === "digestAck") {
        this.sw.digests.ack(u.value.digestId, u.value.listId);
      } else if (u.$case === "packet") {
        if (this.arbitration.primary(me.role) !== me) {
          stream.write({ update: { $case: "error", value: { canonicalCode: GRPC_CODE.PERMISSION_DENIED, message: "only the primary controller may send packets", space: "", code: 0, details: { $case: "packetOut", value: { packetOut: u.value } } } } });
          return;
        }
        this.sw.process({ port: this.options.cpuPort, data: u.value.payload, unixNs: this.sw.nowUnixNs() });
      }
    });
    stream.on("end", () => {
      close();
      stream.end();
    });
    stream.on("error", close);
    stream.on("close", close);
    stream.on("cancelled", close);
  }
}

/** An update's outcome: OK, or its error's code and message. */
const ok = (): BatchOutcome => ({ code: 0, message: "" });
const failure = (e: RpcError): BatchOutcome => ({ code: GRPC_CODE[e.code], message: e.message });

/**
 * A batch with failed updates (or requests): UNKNOWN, with a p4.v1.Error per
 * update in the status details, kept within gRPC's default 8 KB of trailers
 * (batch-status.ts in the p4runtime package says how).
 */
function batchError(outcomes: BatchOutcome[], what: "updates" | "requests" = "updates"): RpcError {
  // The status in the details carries the same message as the gRPC status.
  const message = batchMessage(outcomes, what);
  return new RpcError("UNKNOWN", message, encodeBatchStatus(outcomes, message));
}

/** A request whose bytes did not decode: answered INVALID_ARGUMENT with the reason (grpc-js itself would say INTERNAL). */
class MalformedRequest {
  constructor(readonly message: string) {}
}

function tolerant<D extends { requestDeserialize: (b: Buffer) => unknown }>(d: D): D {
  return {
    ...d,
    requestDeserialize: (b: Buffer) => {
      try {
        return d.requestDeserialize(b);
      } catch (err) {
        return new MalformedRequest((err as Error).message);
      }
    },
  };
}

function malformed(request: unknown): Partial<grpc.StatusObject> | undefined {
  return request instanceof MalformedRequest ? grpcError(new RpcError("INVALID_ARGUMENT", `the request does not decode: ${request.message}`)) : undefined;
}

function refuseMalformed<Req, Res>(handler: (call: grpc.ServerUnaryCall<Req, Res>, cb: grpc.sendUnaryData<Res>) => void) {
  return (call: grpc.ServerUnaryCall<Req, Res>, cb: grpc.sendUnaryData<Res>): void => {
    const bad = malformed(call.request);
    if (bad) cb(bad, null);
    else handler(call, cb);
  };
}

function refuseMalformedStream<Req, Res>(handler: (call: grpc.ServerWritableStream<Req, Res>) => void) {
  return (call: grpc.ServerWritableStream<Req, Res>): void => {
    const bad = malformed(call.request);
    if (bad) call.emit("error", bad);
    else handler(call);
  };
}
