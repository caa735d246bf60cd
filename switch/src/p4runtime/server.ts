// The P4Runtime gRPC service (p4runtime v1.5) in front of a SoftwareSwitch:
// capabilities, arbitration (roles, election ids, primary and backups),
// forwarding pipeline config, batched writes with per-update errors, reads
// with wildcards, and the stream channel (digest lists with acks, packet-out).
import * as grpc from "@grpc/grpc-js";
import { Any } from "@rdma-telemetry/p4runtime/proto/google/protobuf/any";
import { Status } from "@rdma-telemetry/p4runtime/proto/google/rpc/status";
import { P4Info } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import {
  Error as P4Error,
  GetForwardingPipelineConfigRequest_ResponseType,
  P4RuntimeService,
  SetForwardingPipelineConfigRequest_Action,
  Update_Type,
  WriteRequest_Atomicity,
  type CapabilitiesRequest,
  type CapabilitiesResponse,
  type Entity,
  type ForwardingPipelineConfig,
  type GetForwardingPipelineConfigRequest,
  type GetForwardingPipelineConfigResponse,
  type ReadRequest,
  type ReadResponse,
  type SetForwardingPipelineConfigRequest,
  type SetForwardingPipelineConfigResponse,
  StreamMessageResponse,
  type StreamMessageRequest,
  type Uint128,
  type Update,
  type WriteResponse,
} from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { GRPC_CODE, P4RuntimeError, type ErrorCode } from "@rdma-telemetry/p4runtime";
import { P4Schema } from "@rdma-telemetry/p4runtime";
import { CompiledProgram } from "../bmv2/program.js";
import type { Bmv2Json } from "../bmv2/json.js";
import { TableError } from "../bmv2/table.js";
import type { DigestList } from "../digest-engine.js";
import type { SoftwareSwitch } from "../software-switch.js";
import { PipelineBinding } from "./binding.js";
import { encodeDigestListMessage } from "./digest-encoding.js";
import { decodeWriteRequest, type LazyWriteRequest, type TableWrite } from "./fast-write.js";

export const P4RUNTIME_API_VERSION = "1.5.0";

type Stream = grpc.ServerDuplexStream<StreamMessageRequest, StreamMessageResponse>;

interface Controller {
  stream: Stream;
  role: string;
  electionId: bigint | undefined;
}

interface Committed {
  p4info: P4Info;
  deviceConfig: Buffer;
  cookie: bigint | undefined;
  binding: PipelineBinding;
}

export interface P4RuntimeServerOptions {
  deviceId: bigint;
  /** port that packet-out is injected on and packet-in is taken from */
  cpuPort: number;
  logger?: (level: "debug" | "info" | "warn", msg: string, fields?: Record<string, unknown>) => void;
  /** decode every update with the generated decoder (tests compare both paths) */
  genericWrites?: boolean;
}

const u128 = (v: Uint128 | undefined): bigint | undefined => (v === undefined ? undefined : (v.high << 64n) | v.low);
const toU128 = (v: bigint): Uint128 => ({ high: v >> 64n, low: v & 0xffffffffffffffffn });

class RpcError extends Error {
  constructor(readonly code: ErrorCode, message: string, readonly details?: Buffer) {
    super(message);
  }
}

function toRpc(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  if (err instanceof P4RuntimeError) return new RpcError(err.code, err.message);
  if (err instanceof TableError) return new RpcError(err.code, err.message);
  return new RpcError("INTERNAL", (err as Error)?.message ?? String(err));
}

function grpcError(e: RpcError): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  if (e.details) metadata.set("grpc-status-details-bin", e.details);
  return { code: GRPC_CODE[e.code], details: e.message, metadata };
}

export class P4RuntimeServer {
  private readonly grpcServer = new grpc.Server({ "grpc.max_receive_message_length": 64 << 20, "grpc.max_send_message_length": 64 << 20 });
  private readonly controllers = new Set<Controller>();
  private committed: Committed | undefined;
  private saved: Committed | undefined;
  private originalDefaults = new Map<number, ReturnType<PipelineBinding["table"]>["table"]["defaultAction"]>();
  digestListsDropped = 0;
  /** updates applied as read from the request bytes (fast-write.ts) */
  fastWrites = 0;

  constructor(readonly sw: SoftwareSwitch, readonly options: P4RuntimeServerOptions) {
    // Digest lists are written pre-encoded (digest-encoding.ts); everything else through the generated encoder.
    const service = {
      ...P4RuntimeService,
      streamChannel: {
        ...P4RuntimeService.streamChannel,
        responseSerialize: (v: StreamMessageResponse | Buffer): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(StreamMessageResponse.encode(v).finish())),
      },
      // Table writes are read from the request's bytes as they are applied (fast-write.ts).
      write: { ...P4RuntimeService.write, requestDeserialize: decodeWriteRequest },
    };
    this.grpcServer.addService(service, {
      capabilities: this.capabilities.bind(this),
      setForwardingPipelineConfig: this.setPipeline.bind(this),
      getForwardingPipelineConfig: this.getPipeline.bind(this),
      write: this.write.bind(this),
      read: this.read.bind(this),
      streamChannel: this.streamChannel.bind(this),
    });
    sw.on("digest", (list) => this.sendDigest(list));
    sw.on("packet", (pkt) => {
      if (pkt.port === this.options.cpuPort) this.toPrimaries({ update: { $case: "packet", value: { payload: pkt.data, metadata: [] } } });
    });
  }

  private log(level: "debug" | "info" | "warn", msg: string, fields?: Record<string, unknown>): void {
    this.options.logger?.(level, msg, fields);
  }

  /** Binds to `address` ("127.0.0.1:0" picks a port); returns the port. */
  listen(address: string, credentials = grpc.ServerCredentials.createInsecure()): Promise<number> {
    return new Promise((resolve, reject) => {
      this.grpcServer.bindAsync(address, credentials, (err, port) => (err ? reject(err) : resolve(port)));
    });
  }

  /** Stops serving: streams are cancelled, the switch keeps its state. */
  async close(): Promise<void> {
    for (const c of this.controllers) c.stream.end();
    this.controllers.clear();
    await new Promise<void>((resolve) => this.grpcServer.tryShutdown(() => resolve()));
    this.grpcServer.forceShutdown();
  }

  get pipelineCookie(): bigint | undefined {
    return this.committed?.cookie;
  }

  get binding(): PipelineBinding | undefined {
    return this.committed?.binding;
  }

  // ---- arbitration ------------------------------------------------------------

  private primary(role: string): Controller | undefined {
    let best: Controller | undefined;
    for (const c of this.controllers) {
      if (c.role !== role || c.electionId === undefined) continue;
      if (!best || c.electionId > best.electionId!) best = c;
    }
    return best;
  }

  private highestElectionId(role: string): bigint | undefined {
    return this.primary(role)?.electionId;
  }

  private notify(c: Controller): void {
    const p = this.primary(c.role);
    const isPrimary = p === c;
    const highest = this.highestElectionId(c.role);
    c.stream.write({
      update: {
        $case: "arbitration",
        value: {
          deviceId: this.options.deviceId,
          role: c.role ? { id: 0n, name: c.role, config: undefined } : undefined,
          electionId: highest === undefined ? undefined : toU128(highest),
          status: isPrimary
            ? { code: GRPC_CODE.OK, message: "primary", details: [] }
            : p
              ? { code: GRPC_CODE.ALREADY_EXISTS, message: "a controller with a higher election id is primary", details: [] }
              : { code: GRPC_CODE.NOT_FOUND, message: "no primary controller for this role", details: [] },
        },
      },
    });
  }

  private arbitrate(stream: Stream, current: Controller | undefined, deviceId: bigint, role: string, electionId: bigint | undefined): Controller | undefined {
    if (deviceId !== this.options.deviceId) {
      stream.emit("error", { code: grpc.status.NOT_FOUND, details: `no device with id ${deviceId} (this switch is device ${this.options.deviceId})` });
      return undefined;
    }
    if (current && current.role !== role) {
      stream.emit("error", { code: grpc.status.FAILED_PRECONDITION, details: "a stream cannot change its role" });
      return undefined;
    }
    if (electionId !== undefined) {
      for (const c of this.controllers) {
        if (c !== current && c.role === role && c.electionId === electionId) {
          stream.emit("error", { code: grpc.status.INVALID_ARGUMENT, details: `election id ${electionId} is already used by another controller of role '${role}'` });
          return undefined;
        }
      }
    }
    const before = this.primary(role);
    const c = current ?? { stream, role, electionId };
    c.electionId = electionId;
    this.controllers.add(c);
    const after = this.primary(role);
    if (after !== before) {
      this.log("info", "primary controller changed", { role, electionId: after?.electionId?.toString() });
      for (const x of this.controllers) if (x.role === role) this.notify(x);
    } else {
      this.notify(c);
    }
    return c;
  }

  private drop(c: Controller): void {
    const wasPrimary = this.primary(c.role) === c;
    if (!this.controllers.delete(c)) return;
    if (!wasPrimary) return;
    // The next highest election id takes over; every controller of the role hears of it.
    this.log("info", "primary controller left", { role: c.role });
    for (const x of this.controllers) if (x.role === c.role) this.notify(x);
  }

  private requirePrimary(role: string, electionId: Uint128 | undefined): void {
    const p = this.primary(role);
    const id = u128(electionId);
    if (!p || id === undefined || p.electionId !== id) {
      throw new RpcError("PERMISSION_DENIED", `not the primary controller of role '${role}' (election id ${id ?? "absent"}, primary ${p?.electionId ?? "none"})`);
    }
  }

  private requireDevice(deviceId: bigint): void {
    if (deviceId !== this.options.deviceId) throw new RpcError("NOT_FOUND", `no device with id ${deviceId} (this switch is device ${this.options.deviceId})`);
  }

  private requirePipeline(): Committed {
    if (!this.committed) throw new RpcError("FAILED_PRECONDITION", "no forwarding pipeline config has been set");
    return this.committed;
  }

  private toPrimaries(msg: StreamMessageResponse | Buffer): boolean {
    const roles = new Set([...this.controllers].map((c) => c.role));
    const targets = roles.has("") ? [this.primary("")] : [...roles].map((r) => this.primary(r));
    let sent = false;
    for (const t of targets) {
      if (!t) continue;
      t.stream.write(msg as StreamMessageResponse);
      sent = true;
    }
    return sent;
  }

  private sendDigest(list: DigestList): void {
    const b = this.committed?.binding.digests.get(list.digestId);
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
      this.requirePrimary(req.role, req.electionId);
      const A = SetForwardingPipelineConfigRequest_Action;
      switch (req.action) {
        case A.VERIFY:
          this.prepare(req.config);
          break;
        case A.VERIFY_AND_SAVE:
          this.saved = this.prepare(req.config);
          break;
        case A.VERIFY_AND_COMMIT:
          this.commit(this.prepare(req.config));
          break;
        case A.COMMIT:
          if (!this.saved) throw new RpcError("FAILED_PRECONDITION", "COMMIT without a config saved by VERIFY_AND_SAVE");
          this.commit(this.saved);
          this.saved = undefined;
          break;
        case A.RECONCILE_AND_COMMIT:
          throw new RpcError("UNIMPLEMENTED", "RECONCILE_AND_COMMIT is not supported: use VERIFY_AND_COMMIT (state is reset)");
        default:
          throw new RpcError("INVALID_ARGUMENT", `unknown action ${req.action}`);
      }
      cb(null, {});
    } catch (err) {
      cb(grpcError(toRpc(err)));
    }
  }

  private prepare(config: ForwardingPipelineConfig | undefined): Committed {
    if (!config?.p4info) throw new RpcError("INVALID_ARGUMENT", "the config has no P4Info");
    let json: Bmv2Json;
    try {
      json = JSON.parse(config.p4DeviceConfig.toString("utf8")) as Bmv2Json;
    } catch (err) {
      throw new RpcError("INVALID_ARGUMENT", `the device config is not a BMv2 JSON: ${(err as Error).message}`);
    }
    let program: CompiledProgram;
    try {
      program = new CompiledProgram(json);
    } catch (err) {
      throw new RpcError("INVALID_ARGUMENT", `the device config cannot be loaded: ${(err as Error).message}`);
    }
    let binding: PipelineBinding;
    try {
      binding = new PipelineBinding(new P4Schema(config.p4info), program);
    } catch (err) {
      throw new RpcError("INVALID_ARGUMENT", `the P4Info does not match the device config: ${(err as Error).message}`);
    }
    return { p4info: config.p4info, deviceConfig: config.p4DeviceConfig, cookie: config.cookie?.cookie, binding };
  }

  private commit(c: Committed): void {
    this.sw.load(c.binding.program);
    for (const [id] of this.sw.digests.configured()) this.sw.digests.configure(id, undefined);
    this.sw.digestIdOfList = (listId) => c.binding.digestsByListId.get(listId)?.id;
    this.originalDefaults = new Map([...c.binding.tables].map(([id, t]) => [id, t.table.defaultAction]));
    this.committed = c;
    this.log("info", "pipeline committed", { cookie: c.cookie?.toString() });
  }

  private getPipeline(call: grpc.ServerUnaryCall<GetForwardingPipelineConfigRequest, GetForwardingPipelineConfigResponse>, cb: grpc.sendUnaryData<GetForwardingPipelineConfigResponse>): void {
    try {
      this.requireDevice(call.request.deviceId);
      const c = this.committed;
      const T = GetForwardingPipelineConfigRequest_ResponseType;
      const t = call.request.responseType;
      if (!c) throw new RpcError("FAILED_PRECONDITION", "No forwarding pipeline config set for this device");
      cb(null, {
        config: {
          p4info: t === T.ALL || t === T.P4INFO_AND_COOKIE ? c.p4info : undefined,
          p4DeviceConfig: t === T.ALL || t === T.DEVICE_CONFIG_AND_COOKIE ? c.deviceConfig : Buffer.alloc(0),
          cookie: c.cookie === undefined ? undefined : { cookie: c.cookie },
        },
      });
    } catch (err) {
      cb(grpcError(toRpc(err)));
    }
  }

  private write(call: grpc.ServerUnaryCall<LazyWriteRequest, WriteResponse>, cb: grpc.sendUnaryData<WriteResponse>): void {
    try {
      const req = call.request;
      this.requireDevice(req.deviceId);
      this.requirePrimary(req.role, req.electionId);
      const pipeline = this.requirePipeline();
      if (req.atomicity !== WriteRequest_Atomicity.CONTINUE_ON_ERROR) {
        throw new RpcError("UNIMPLEMENTED", `atomicity ${WriteRequest_Atomicity[req.atomicity]} is not supported (use CONTINUE_ON_ERROR)`);
      }
      const errors: P4Error[] = [];
      let failed = 0;
      for (let i = 0; i < req.count; i++) {
        try {
          const w = this.options.genericWrites ? undefined : req.fast(i, pipeline.binding);
          if (w) {
            this.applyTableWrite(w);
            this.fastWrites++;
          } else this.applyUpdate(pipeline.binding, req.update(i));
          errors.push({ canonicalCode: 0, message: "", space: "", code: 0, details: undefined });
        } catch (err) {
          failed++;
          const e = toRpc(err);
          errors.push({ canonicalCode: GRPC_CODE[e.code], message: e.message, space: "", code: 0, details: undefined });
        }
      }
      if (failed === 0) {
        cb(null, {});
        return;
      }
      const status = Status.encode({
        code: GRPC_CODE.UNKNOWN,
        message: `${failed} of ${req.count} updates failed`,
        details: errors.map((e) => Any.fromPartial({ typeUrl: "type.googleapis.com/p4.v1.Error", value: Buffer.from(P4Error.encode(e).finish()) })),
      }).finish();
      cb(grpcError(new RpcError("UNKNOWN", `${failed} of ${req.count} updates failed: ${errors.find((e) => e.canonicalCode !== 0)!.message}`, Buffer.from(status))));
    } catch (err) {
      cb(grpcError(toRpc(err)));
    }
  }

  /** A table write the fast path read: what applyUpdate does for the same update. */
  /** A checked table write, from either decoder. */
  private applyTableWrite(w: TableWrite): void {
    const t = w.table.table;
    if (w.type === Update_Type.DELETE) t.delete(w.match, w.priority);
    else if (w.type === Update_Type.INSERT) t.insert({ match: w.match, priority: w.priority, action: w.action!, packets: 0, bytes: 0, metadata: w.metadata, idleTimeoutNs: w.idleTimeoutNs ?? 0n });
    else t.modify(w.match, w.priority, w.action!, w.metadata);
  }

  private applyUpdate(b: PipelineBinding, u: Update): void {
    const e = u.entity?.entity;
    if (!e) throw new RpcError("INVALID_ARGUMENT", "update without an entity");
    const T = Update_Type;
    if (u.type !== T.INSERT && u.type !== T.MODIFY && u.type !== T.DELETE) throw new RpcError("INVALID_ARGUMENT", `update type ${u.type} is not INSERT, MODIFY or DELETE`);
    switch (e.$case) {
      case "tableEntry": {
        const te = e.value;
        const t = b.table(te.tableId);
        const name = t.info.preamble!.name;
        if (te.isDefaultAction) {
          if (te.match.length) throw new RpcError("INVALID_ARGUMENT", `table '${name}': a default entry has no match`);
          if (u.type === T.INSERT) throw new RpcError("INVALID_ARGUMENT", `table '${name}': the default entry cannot be inserted, only modified`);
          if (t.table.defaultConst) throw new RpcError("PERMISSION_DENIED", `table '${name}' has a const default action`);
          if (u.type === T.MODIFY) t.table.defaultAction = b.decodeAction(t, te.action, true);
          else t.table.defaultAction = this.originalDefaults.get(te.tableId) ?? t.table.defaultAction;
          return;
        }
        if (t.table.constEntries) throw new RpcError("PERMISSION_DENIED", `table '${name}' has const entries and cannot be changed`);
        const match = b.decodeMatch(t, te.match);
        const problem = t.table.validate(match, te.priority);
        if (problem) throw new RpcError("INVALID_ARGUMENT", problem);
        const action = u.type === T.DELETE ? undefined : b.decodeAction(t, te.action, false);
        this.applyTableWrite({ type: u.type, table: t, match, priority: te.priority, action, metadata: te.metadata.length ? te.metadata : undefined, idleTimeoutNs: te.idleTimeoutNs });
        return;
      }
      case "digestEntry": {
        const d = e.value;
        if (!b.digests.has(d.digestId)) throw new RpcError("NOT_FOUND", `no digest with id ${d.digestId}`);
        const exists = this.sw.digests.config(d.digestId) !== undefined;
        if (u.type === T.DELETE) {
          if (!exists) throw new RpcError("NOT_FOUND", `digest ${d.digestId} is not configured`);
          this.sw.digests.configure(d.digestId, undefined);
          return;
        }
        if (u.type === T.INSERT && exists) throw new RpcError("ALREADY_EXISTS", `digest ${d.digestId} is already configured (use MODIFY)`);
        if (u.type === T.MODIFY && !exists) throw new RpcError("NOT_FOUND", `digest ${d.digestId} is not configured (use INSERT)`);
        if (!d.config) throw new RpcError("INVALID_ARGUMENT", `digest ${d.digestId}: no config`);
        if (d.config.maxListSize < 0 || d.config.maxTimeoutNs < 0n || d.config.ackTimeoutNs < 0n) throw new RpcError("INVALID_ARGUMENT", `digest ${d.digestId}: negative config value`);
        this.sw.digests.configure(d.digestId, { maxListSize: d.config.maxListSize, maxTimeoutNs: d.config.maxTimeoutNs, ackTimeoutNs: d.config.ackTimeoutNs });
        return;
      }
      case "counterEntry": {
        if (u.type !== T.MODIFY) throw new RpcError("INVALID_ARGUMENT", "counter entries can only be modified");
        const c = e.value;
        const arr = b.counters.get(c.counterId);
        if (!arr) throw new RpcError("NOT_FOUND", `no counter with id ${c.counterId}`);
        const indices = c.index ? [Number(c.index.index)] : [...Array(arr.size).keys()];
        for (const i of indices) {
          if (i < 0 || i >= arr.size) throw new RpcError("OUT_OF_RANGE", `counter '${arr.name}' has ${arr.size} cells, index ${i}`);
          arr.packets[i] = Number(c.data?.packetCount ?? 0n);
          arr.bytes[i] = Number(c.data?.byteCount ?? 0n);
        }
        return;
      }
      case "registerEntry":
        throw new RpcError("UNIMPLEMENTED", "registers cannot be written over P4Runtime on this target (as on BMv2): configure through tables");
      default:
        throw new RpcError("UNIMPLEMENTED", `${e.$case} entities are not supported`);
    }
  }

  private read(call: grpc.ServerWritableStream<ReadRequest, ReadResponse>): void {
    try {
      const req = call.request;
      this.requireDevice(req.deviceId);
      const b = this.requirePipeline().binding;
      const out: Entity[] = [];
      for (const ent of req.entities) {
        const e = ent.entity;
        if (!e) throw new RpcError("INVALID_ARGUMENT", "read of an empty entity");
        switch (e.$case) {
          case "tableEntry": {
            const q = e.value;
            const withCounters = q.counterData !== undefined;
            const tables = q.tableId === 0 ? [...b.tables.values()] : [b.table(q.tableId)];
            for (const t of tables) {
              if (q.isDefaultAction) {
                out.push({ entity: { $case: "tableEntry", value: b.encodeDefault(t, withCounters) } });
                continue;
              }
              if (q.tableId !== 0 && q.match.length > 0) {
                const hit = t.table.get(b.decodeMatch(t, q.match), q.priority);
                if (hit) out.push({ entity: { $case: "tableEntry", value: b.encodeEntry(t, hit, withCounters) } });
                continue;
              }
              for (const te of t.table.entries()) out.push({ entity: { $case: "tableEntry", value: b.encodeEntry(t, te, withCounters) } });
            }
            break;
          }
          case "counterEntry": {
            const q = e.value;
            const ids = q.counterId === 0 ? [...b.counters.keys()] : [q.counterId];
            for (const id of ids) {
              const arr = b.counters.get(id);
              if (!arr) throw new RpcError("NOT_FOUND", `no counter with id ${id}`);
              const indices = q.index ? [Number(q.index.index)] : [...Array(arr.size).keys()];
              for (const i of indices) {
                if (i < 0 || i >= arr.size) throw new RpcError("OUT_OF_RANGE", `counter '${arr.name}' has ${arr.size} cells, index ${i}`);
                out.push({ entity: { $case: "counterEntry", value: { counterId: id, index: { index: BigInt(i) }, data: { packetCount: BigInt(arr.packets[i]!), byteCount: BigInt(arr.bytes[i]!) } } } });
              }
            }
            break;
          }
          case "directCounterEntry": {
            const te = e.value.tableEntry;
            if (!te) throw new RpcError("INVALID_ARGUMENT", "direct counter read without a table entry");
            const t = b.table(te.tableId);
            const hit = t.table.get(b.decodeMatch(t, te.match), te.priority);
            if (!hit) throw new RpcError("NOT_FOUND", `table '${t.info.preamble!.name}': no such entry`);
            out.push({ entity: { $case: "directCounterEntry", value: { tableEntry: te, data: { packetCount: BigInt(hit.packets), byteCount: BigInt(hit.bytes) } } } });
            break;
          }
          case "digestEntry": {
            if (e.value.digestId === 0) throw new RpcError("UNIMPLEMENTED", "digest_id must be set when reading DigestEntry");
            const ids = [e.value.digestId];
            for (const id of ids) {
              if (!b.digests.has(id)) throw new RpcError("NOT_FOUND", `no digest with id ${id}`);
              const cfg = this.sw.digests.config(id);
              if (cfg) out.push({ entity: { $case: "digestEntry", value: { digestId: id, config: { maxListSize: cfg.maxListSize, maxTimeoutNs: cfg.maxTimeoutNs, ackTimeoutNs: cfg.ackTimeoutNs } } } });
            }
            break;
          }
          case "registerEntry":
            throw new RpcError("UNIMPLEMENTED", "registers cannot be read over P4Runtime on this target (as on BMv2): results leave by digest");
          default:
            throw new RpcError("UNIMPLEMENTED", `reading ${e.$case} entities is not supported`);
        }
      }
      for (let i = 0; i < out.length; i += 1000) call.write({ entities: out.slice(i, i + 1000) });
      call.end();
    } catch (err) {
      call.emit("error", grpcError(toRpc(err)));
    }
  }

  private streamChannel(stream: Stream): void {
    let me: Controller | undefined;
    const close = () => {
      if (me) this.drop(me);
      me = undefined;
    };
    stream.on("data", (msg: StreamMessageRequest) => {
      const u = msg.update;
      if (!u) return;
      if (u.$case === "arbitration") {
        const a = u.value;
        const next = this.arbitrate(stream, me, a.deviceId, a.role?.name ?? "", u128(a.electionId));
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
        if (this.primary(me.role) !== me) {
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
