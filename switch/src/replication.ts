// The packet replication engine's configuration, as simple_switch's PRE and
// mirroring sessions hold it: multicast groups (a list of (port, instance)
// replicas each) and clone sessions (replicas, class of service, truncation).
// The pipeline reads it after ingress and egress (bmv2/pipeline.ts); the
// P4Runtime server writes it (p4runtime/entities/replication.ts).
import { SwitchError } from "./bmv2/errors.js";
import { DROP_PORT } from "./bmv2/state.js";

export interface Replica {
  egressPort: number;
  instance: number;
}

export interface CloneSession {
  replicas: Replica[];
  classOfService?: number;
  packetLengthBytes?: number;
}

export interface ReplicationApi {
  /** Creates or replaces a multicast group. */
  setMulticastGroup(groupId: number, replicas: Replica[]): void;
  deleteMulticastGroup(groupId: number): void;
  /** Creates or replaces a clone session. */
  setCloneSession(sessionId: number, s: CloneSession): void;
  deleteCloneSession(sessionId: number): void;
}

/** A multicast group or clone session the switch cannot hold (bad id, port, instance, duplicate replica). */
export class ReplicationError extends SwitchError {
  override readonly name = "ReplicationError";
  constructor(
    message: string,
    /** "INVALID_ARGUMENT" for a value out of range or a duplicate; "NOT_FOUND" for a delete of nothing */
    readonly reason: "INVALID_ARGUMENT" | "NOT_FOUND" | "OUT_OF_RANGE",
  ) {
    super(message, "REPLICATION");
  }
}

/** standard_metadata.mcast_grp is 16 bits: groups 1..65535 (0 means no multicast). */
export const MAX_MULTICAST_GROUP = 0xffff;
/** simple_switch keeps 15 bits of the clone session id (the 16th marks "clone requested"). */
export const MAX_CLONE_SESSION = 0x7fff;
/** standard_metadata.egress_rid is 16 bits. */
export const MAX_INSTANCE = 0xffff;
/** standard_metadata.priority is 3 bits. */
export const MAX_CLASS_OF_SERVICE = 7;

export class ReplicationEngine implements ReplicationApi {
  readonly groups = new Map<number, readonly Replica[]>();
  readonly sessions = new Map<number, Readonly<Required<CloneSession>>>();

  setMulticastGroup(groupId: number, replicas: Replica[]): void {
    checkId(groupId, MAX_MULTICAST_GROUP, "multicast group", "OUT_OF_RANGE");
    this.groups.set(groupId, checkReplicas(replicas, `multicast group ${groupId}`));
  }

  deleteMulticastGroup(groupId: number): void {
    if (!this.groups.delete(groupId)) throw new ReplicationError(`no multicast group ${groupId}`, "NOT_FOUND");
  }

  setCloneSession(sessionId: number, s: CloneSession): void {
    checkId(sessionId, MAX_CLONE_SESSION, "clone session", "INVALID_ARGUMENT");
    const where = `clone session ${sessionId}`;
    const cos = s.classOfService ?? 0;
    if (!Number.isInteger(cos) || cos < 0 || cos > MAX_CLASS_OF_SERVICE) throw new ReplicationError(`${where}: class of service ${cos} is not in 0..${MAX_CLASS_OF_SERVICE}`, "INVALID_ARGUMENT");
    const len = s.packetLengthBytes ?? 0;
    if (!Number.isInteger(len) || len < 0 || len > 0xffffffff) throw new ReplicationError(`${where}: packet length ${len} is not a uint32`, "INVALID_ARGUMENT");
    this.sessions.set(sessionId, { replicas: checkReplicas(s.replicas, where), classOfService: cos, packetLengthBytes: len });
  }

  deleteCloneSession(sessionId: number): void {
    if (!this.sessions.delete(sessionId)) throw new ReplicationError(`no clone session ${sessionId}`, "NOT_FOUND");
  }

  /** Forgets every group and session (a new forwarding pipeline). */
  clear(): void {
    this.groups.clear();
    this.sessions.clear();
  }
}

/** An id past `max` is `tooHigh` (as PI answers: OUT_OF_RANGE for groups, INVALID_ARGUMENT for sessions); 0 is INVALID_ARGUMENT. */
function checkId(id: number, max: number, what: string, tooHigh: "OUT_OF_RANGE" | "INVALID_ARGUMENT"): void {
  if (!Number.isInteger(id) || id < 1 || id > max) throw new ReplicationError(`${what} id ${id} is not in 1..${max}`, id > max ? tooHigh : "INVALID_ARGUMENT");
}

function checkReplicas(replicas: readonly Replica[], where: string): Replica[] {
  const seen = new Set<number>();
  return replicas.map((r) => {
    if (!Number.isInteger(r.egressPort) || r.egressPort < 0 || r.egressPort >= DROP_PORT) throw new ReplicationError(`${where}: egress port ${r.egressPort} is not in 0..${DROP_PORT - 1}`, "INVALID_ARGUMENT");
    if (!Number.isInteger(r.instance) || r.instance < 0 || r.instance > MAX_INSTANCE) throw new ReplicationError(`${where}: instance ${r.instance} is not in 0..${MAX_INSTANCE}`, "INVALID_ARGUMENT");
    const key = r.egressPort * 0x10000 + r.instance;
    if (seen.has(key)) throw new ReplicationError(`${where}: replica (port ${r.egressPort}, instance ${r.instance}) appears twice`, "INVALID_ARGUMENT");
    seen.add(key);
    return { egressPort: r.egressPort, instance: r.instance };
  });
}
