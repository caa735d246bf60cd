// Arbitration (P4Runtime spec, "Client Arbitration and Controller
// Replication"): the controllers on stream channels, by role and election
// id; the primary of a role is the one with the highest election id, and
// every controller of the role hears when that changes.
import * as grpc from "@grpc/grpc-js";
import type { Any } from "@rdma-telemetry/p4runtime/proto/google/protobuf/any";
import type { StreamMessageRequest, StreamMessageResponse, Uint128 } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { fromUint128, GRPC_CODE, toUint128 } from "@rdma-telemetry/p4runtime";
import { RpcError, type ServerLogger } from "./rpc.js";

export type Stream = grpc.ServerDuplexStream<StreamMessageRequest, StreamMessageResponse>;

export interface Controller {
  stream: Stream;
  role: string;
  /** the role's config as the controller sent it, echoed in every answer */
  roleConfig?: Any;
  electionId: bigint | undefined;
}

export class Arbitration {
  private readonly controllers = new Set<Controller>();

  constructor(private readonly deviceId: bigint, private readonly log: ServerLogger) {}

  primary(role: string): Controller | undefined {
    let best: Controller | undefined;
    for (const c of this.controllers) {
      if (c.role !== role || c.electionId === undefined) continue;
      if (!best || c.electionId > best.electionId!) best = c;
    }
    return best;
  }

  /** Where digest lists and packet-ins go: the primary of role "" if it has controllers, else the primary of each role. */
  primaries(): Controller[] {
    const roles = new Set([...this.controllers].map((c) => c.role));
    const targets = roles.has("") ? [this.primary("")] : [...roles].map((r) => this.primary(r));
    return targets.filter((t): t is Controller => t !== undefined);
  }

  private notify(c: Controller): void {
    const p = this.primary(c.role);
    const isPrimary = p === c;
    const highest = p?.electionId;
    c.stream.write({
      update: {
        $case: "arbitration",
        value: {
          deviceId: this.deviceId,
          role: c.role ? { id: 0n, name: c.role, config: c.roleConfig } : undefined,
          electionId: highest === undefined ? undefined : toUint128(highest),
          status: isPrimary
            ? { code: GRPC_CODE.OK, message: "primary", details: [] }
            : p
              ? { code: GRPC_CODE.ALREADY_EXISTS, message: "a controller with a higher election id is primary", details: [] }
              : { code: GRPC_CODE.NOT_FOUND, message: "no primary controller for this role", details: [] },
        },
      },
    });
  }

  /**
   * A MasterArbitrationUpdate on `stream` (whose controller is `current`, if
   * it sent one before): the controller as it now stands, or undefined after
   * the stream was failed with the reason.
   */
  arbitrate(stream: Stream, current: Controller | undefined, deviceId: bigint, role: string, electionId: bigint | undefined, roleConfig?: Any): Controller | undefined {
    if (deviceId !== this.deviceId) {
      // A stream's first arbitration names a device this switch is not: NOT_FOUND; a later one changes the device: FAILED_PRECONDITION.
      stream.emit("error", current
        ? { code: grpc.status.FAILED_PRECONDITION, details: `this stream arbitrated for device ${this.deviceId}; it cannot change to device ${deviceId}` }
        : { code: grpc.status.NOT_FOUND, details: `no device with id ${deviceId} (this switch is device ${this.deviceId})` });
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
    c.roleConfig = roleConfig;
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

  /** A controller's stream has ended. */
  drop(c: Controller): void {
    const wasPrimary = this.primary(c.role) === c;
    if (!this.controllers.delete(c)) return;
    if (!wasPrimary) return;
    // The next highest election id takes over; every controller of the role hears of it.
    this.log("info", "primary controller left", { role: c.role });
    for (const x of this.controllers) if (x.role === c.role) this.notify(x);
  }

  /** Throws PERMISSION_DENIED unless `electionId` is the primary's of `role` (for Write and SetForwardingPipelineConfig). */
  requirePrimary(role: string, electionId: Uint128 | undefined): void {
    if (role && ![...this.controllers].some((c) => c.role === role)) throw new RpcError("NOT_FOUND", `no controller has arbitrated for role '${role}'`);
    const p = this.primary(role);
    const id = fromUint128(electionId);
    if (!p || id === undefined || p.electionId !== id) {
      throw new RpcError("PERMISSION_DENIED", `not the primary controller of role '${role}' (election id ${id ?? "absent"}, primary ${p?.electionId ?? "none"})`);
    }
  }

  /** Ends every stream. */
  close(): void {
    for (const c of this.controllers) c.stream.end();
    this.controllers.clear();
  }
}
