// PacketReplicationEngineEntry: multicast groups and clone sessions,
// written (INSERT, MODIFY, DELETE) and read (one by id, or all with id 0)
// as the P4Runtime spec (v1.5, "PacketReplicationEngineEntry") says.
import {
  Update_Type,
  type CloneSessionEntry,
  type Entity,
  type MulticastGroupEntry,
  type PacketReplicationEngineEntry,
  type Replica as P4Replica,
} from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { ReplicationError, type Replica, type ReplicationEngine } from "../../replication.js";
import { RpcError } from "../rpc.js";

/** How each replica's port was written (uint32 egress_port or bytes port), to read it back the same way. */
export interface ReplicaForms {
  groups: Map<number, P4Replica[]>;
  sessions: Map<number, P4Replica[]>;
  /** opaque controller metadata of each multicast group */
  metadata: Map<number, Buffer>;
}

export function newReplicaForms(): ReplicaForms {
  return { groups: new Map(), sessions: new Map(), metadata: new Map() };
}

export function writePreEntry(pre: ReplicationEngine, forms: ReplicaForms, type: Update_Type, e: PacketReplicationEngineEntry): void {
  const t = e.type;
  if (!t) throw new RpcError("INVALID_ARGUMENT", "packet replication engine entry without a multicast group or clone session");
  try {
    if (t.$case === "multicastGroupEntry") writeGroup(pre, forms, type, t.value);
    else writeSession(pre, forms, type, t.value);
  } catch (err) {
    if (err instanceof ReplicationError) throw new RpcError(err.reason, err.message);
    throw err;
  }
}

function writeGroup(pre: ReplicationEngine, forms: ReplicaForms, type: Update_Type, g: MulticastGroupEntry): void {
  const id = g.multicastGroupId;
  if (id === 0) throw new RpcError("INVALID_ARGUMENT", "multicast group id 0 is not valid in a write (0 is the wildcard of reads)");
  const exists = pre.groups.has(id);
  if (type === Update_Type.DELETE) {
    if (!exists) throw new RpcError("NOT_FOUND", `no multicast group ${id}`);
    pre.deleteMulticastGroup(id);
    forms.groups.delete(id);
    forms.metadata.delete(id);
    return;
  }
  if (type === Update_Type.INSERT && exists) throw new RpcError("ALREADY_EXISTS", `multicast group ${id} exists`);
  if (type === Update_Type.MODIFY && !exists) throw new RpcError("NOT_FOUND", `no multicast group ${id}`);
  pre.setMulticastGroup(id, replicas(g.replicas, `multicast group ${id}`));
  forms.groups.set(id, g.replicas.map(copyReplica));
  forms.metadata.set(id, Buffer.from(g.metadata));
}

function writeSession(pre: ReplicationEngine, forms: ReplicaForms, type: Update_Type, s: CloneSessionEntry): void {
  const id = s.sessionId;
  if (id === 0) throw new RpcError("INVALID_ARGUMENT", "clone session id 0 is not valid in a write (0 is the wildcard of reads)");
  const exists = pre.sessions.has(id);
  if (type === Update_Type.DELETE) {
    if (!exists) throw new RpcError("NOT_FOUND", `no clone session ${id}`);
    pre.deleteCloneSession(id);
    forms.sessions.delete(id);
    return;
  }
  if (type === Update_Type.INSERT && exists) throw new RpcError("ALREADY_EXISTS", `clone session ${id} exists`);
  if (type === Update_Type.MODIFY && !exists) throw new RpcError("NOT_FOUND", `no clone session ${id}`);
  pre.setCloneSession(id, { replicas: replicas(s.replicas, `clone session ${id}`), classOfService: s.classOfService, packetLengthBytes: s.packetLengthBytes });
  forms.sessions.set(id, s.replicas.map(copyReplica));
}

/** The replicas as the engine takes them: a port number each; backup replicas are refused. */
function replicas(rs: readonly P4Replica[], where: string): Replica[] {
  return rs.map((r, i) => {
    if (r.backupReplicas.length > 0) throw new RpcError("UNIMPLEMENTED", `${where}, replica ${i}: backup replicas are not supported`);
    return { egressPort: portOf(r, `${where}, replica ${i}`), instance: r.instance };
  });
}

function portOf(r: P4Replica, where: string): number {
  const k = r.portKind;
  if (!k) throw new RpcError("INVALID_ARGUMENT", `${where}: no port`);
  if (k.$case === "egressPort") return k.value;
  // A port as bytes: a big-endian number (no port translation on this target).
  if (k.value.length === 0) throw new RpcError("INVALID_ARGUMENT", `${where}: empty port`);
  if (k.value.length > 4) throw new RpcError("INVALID_ARGUMENT", `${where}: port of ${k.value.length} bytes (at most 4)`);
  let port = 0;
  for (const b of k.value) port = port * 256 + b;
  return port;
}

function copyReplica(r: P4Replica): P4Replica {
  return { portKind: r.portKind && (r.portKind.$case === "port" ? { $case: "port", value: Buffer.from(r.portKind.value) } : { ...r.portKind }), instance: r.instance, backupReplicas: [] };
}

export function readPreEntries(pre: ReplicationEngine, forms: ReplicaForms, q: PacketReplicationEngineEntry, out: Entity[]): void {
  const t = q.type;
  if (!t) throw new RpcError("INVALID_ARGUMENT", "read of a packet replication engine entry without a multicast group or clone session");
  if (t.$case === "multicastGroupEntry") {
    const ids = t.value.multicastGroupId === 0 ? [...pre.groups.keys()].sort((a, b) => a - b) : [t.value.multicastGroupId];
    for (const id of ids) {
      if (!pre.groups.has(id)) throw new RpcError("NOT_FOUND", `no multicast group ${id}`);
      const value: MulticastGroupEntry = { multicastGroupId: id, replicas: replicasOut(forms.groups.get(id), pre.groups.get(id)!), metadata: forms.metadata.get(id) ?? Buffer.alloc(0) };
      out.push({ entity: { $case: "packetReplicationEngineEntry", value: { type: { $case: "multicastGroupEntry", value } } } });
    }
    return;
  }
  const ids = t.value.sessionId === 0 ? [...pre.sessions.keys()].sort((a, b) => a - b) : [t.value.sessionId];
  for (const id of ids) {
    const s = pre.sessions.get(id);
    if (!s) throw new RpcError("NOT_FOUND", `no clone session ${id}`);
    const value: CloneSessionEntry = { sessionId: id, replicas: replicasOut(forms.sessions.get(id), s.replicas), classOfService: s.classOfService, packetLengthBytes: s.packetLengthBytes };
    out.push({ entity: { $case: "packetReplicationEngineEntry", value: { type: { $case: "cloneSessionEntry", value } } } });
  }
}

/** As written over P4Runtime; set through the switch's own API, as uint32 ports. */
function replicasOut(written: P4Replica[] | undefined, engine: readonly Replica[]): P4Replica[] {
  const same = (r: P4Replica, e: Replica) => r.instance === e.instance && r.portKind !== undefined && (r.portKind.$case === "egressPort" ? r.portKind.value : Number.parseInt(r.portKind.value.toString("hex"), 16)) === e.egressPort;
  if (written && written.length === engine.length && written.every((r, i) => same(r, engine[i]!))) return written.map(copyReplica);
  return engine.map((r) => ({ portKind: { $case: "egressPort", value: r.egressPort }, instance: r.instance, backupReplicas: [] }));
}
