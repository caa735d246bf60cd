// The forwarding pipeline config (SetForwardingPipelineConfig and
// GetForwardingPipelineConfig): a P4Info and a BMv2 JSON checked against each
// other, saved or committed. Committing loads the program into the switch
// and resets its state: tables, digest configs, default actions.
import type { P4Info } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import {
  GetForwardingPipelineConfigRequest_ResponseType,
  SetForwardingPipelineConfigRequest_Action,
  type ForwardingPipelineConfig,
  type GetForwardingPipelineConfigResponse,
} from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { P4Schema } from "@rdma-telemetry/p4runtime";
import type { Bmv2Json } from "../bmv2/json.js";
import { CompiledProgram } from "../bmv2/program.js";
import type { ActionCall } from "../bmv2/table.js";
import type { SoftwareSwitch } from "../software-switch.js";
import { PipelineBinding } from "./binding.js";
import { RpcError, type ServerLogger } from "./rpc.js";

/** A config that passed VERIFY: what it was given, and the program bound to its P4Info. */
export interface Committed {
  p4info: P4Info;
  deviceConfig: Buffer;
  cookie: bigint | undefined;
  binding: PipelineBinding;
  /** each table's default action as the program sets it (P4Info table id): what a DELETE of the default entry restores */
  originalDefaults: ReadonlyMap<number, ActionCall>;
}

export class PipelineConfig {
  private current: Committed | undefined;
  private saved: Committed | undefined;

  constructor(private readonly sw: SoftwareSwitch, private readonly log: ServerLogger) {}

  get committed(): Committed | undefined {
    return this.current;
  }

  /** The committed config; FAILED_PRECONDITION before there is one. */
  require(): Committed {
    if (!this.current) throw new RpcError("FAILED_PRECONDITION", "no forwarding pipeline config has been set");
    return this.current;
  }

  /** SetForwardingPipelineConfig's action, once the caller is known to be the primary. */
  set(action: SetForwardingPipelineConfigRequest_Action, config: ForwardingPipelineConfig | undefined): void {
    const A = SetForwardingPipelineConfigRequest_Action;
    switch (action) {
      case A.VERIFY:
        this.prepare(config);
        break;
      case A.VERIFY_AND_SAVE:
        this.saved = this.prepare(config);
        break;
      case A.VERIFY_AND_COMMIT:
        this.commit(this.prepare(config));
        break;
      case A.COMMIT:
        if (!this.saved) throw new RpcError("FAILED_PRECONDITION", "COMMIT without a config saved by VERIFY_AND_SAVE");
        this.commit(this.saved);
        this.saved = undefined;
        break;
      case A.RECONCILE_AND_COMMIT:
        throw new RpcError("UNIMPLEMENTED", "RECONCILE_AND_COMMIT is not supported: use VERIFY_AND_COMMIT (state is reset)");
      default:
        throw new RpcError("INVALID_ARGUMENT", `unknown action ${action}`);
    }
  }

  /** GetForwardingPipelineConfig: the parts `responseType` asks for, and the cookie. */
  get(responseType: GetForwardingPipelineConfigRequest_ResponseType): GetForwardingPipelineConfigResponse {
    const c = this.current;
    const T = GetForwardingPipelineConfigRequest_ResponseType;
    const t = responseType;
    if (!c) throw new RpcError("FAILED_PRECONDITION", "No forwarding pipeline config set for this device");
    return {
      config: {
        p4info: t === T.ALL || t === T.P4INFO_AND_COOKIE ? c.p4info : undefined,
        p4DeviceConfig: t === T.ALL || t === T.DEVICE_CONFIG_AND_COOKIE ? c.deviceConfig : Buffer.alloc(0),
        cookie: c.cookie === undefined ? undefined : { cookie: c.cookie },
      },
    };
  }

  /** VERIFY: the device config loads, and the P4Info describes it. */
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
    // Nothing writes to a program's tables before it is committed: these are the program's own defaults.
    const originalDefaults = new Map([...binding.tables].map(([id, t]) => [id, t.table.defaultAction]));
    return { p4info: config.p4info, deviceConfig: config.p4DeviceConfig, cookie: config.cookie?.cookie, binding, originalDefaults };
  }

  private commit(c: Committed): void {
    this.sw.load(c.binding.program);
    // A new pipeline starts with no forwarding state: multicast groups and clone sessions included.
    this.sw.replication.clear();
    for (const [id] of this.sw.digests.configured()) this.sw.digests.configure(id, undefined);
    this.sw.digestIdOfList = (listId) => c.binding.digestsByListId.get(listId)?.id;
    this.current = c;
    this.log("info", "pipeline committed", { cookie: c.cookie?.toString() });
  }
}
