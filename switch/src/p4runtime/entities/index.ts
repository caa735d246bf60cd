// The Write and Read rules of P4Runtime entities, one module a kind: what a
// generically decoded update does, and what a read of an entity returns.
// Registers, action profile groups (selectors) and the rest are refused with
// UNIMPLEMENTED.
import { Update_Type, type Entity, type Update } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import type { ActionCall } from "../../bmv2/table.js";
import type { SoftwareSwitch } from "../../software-switch.js";
import type { PipelineBinding } from "../binding.js";
import { RpcError } from "../rpc.js";
import { readCounterEntries, readDirectCounterEntry, writeCounterEntry, writeDirectCounterEntry } from "./counters.js";
import { readGroups, readMembers, writeMember } from "./action-profiles.js";
import { readDigestEntry, writeDigestEntry } from "./digests.js";
import { readDirectMeterEntry, readMeterEntries, writeDirectMeterEntry, writeMeterEntry } from "./meters.js";
import { readPreEntries, writePreEntry, type ReplicaForms } from "./replication.js";
import { readTableEntries, writeTableEntry } from "./tables.js";

/** What entities are written to and read from: the switch under the committed pipeline. */
export interface EntityTarget {
  readonly sw: SoftwareSwitch;
  readonly binding: PipelineBinding;
  /** each table's default action as the program sets it, by P4Info table id */
  readonly originalDefaults: ReadonlyMap<number, ActionCall>;
  /** how multicast group and clone session replicas were written, to read them back alike */
  readonly replicaForms: ReplicaForms;
}

/** An update as the generated decoder gives it. */
export function applyUpdate(target: EntityTarget, u: Update): void {
  const e = u.entity?.entity;
  if (!e) throw new RpcError("INVALID_ARGUMENT", "update without an entity");
  const T = Update_Type;
  if (u.type !== T.INSERT && u.type !== T.MODIFY && u.type !== T.DELETE) throw new RpcError("INVALID_ARGUMENT", `update type ${u.type} is not INSERT, MODIFY or DELETE`);
  switch (e.$case) {
    case "tableEntry":
      return writeTableEntry(target.binding, target.originalDefaults, u.type, e.value);
    case "digestEntry":
      return writeDigestEntry(target.sw, target.binding, u.type, e.value);
    case "counterEntry":
      return writeCounterEntry(target.binding, u.type, e.value);
    case "directCounterEntry":
      return writeDirectCounterEntry(target.binding, u.type, e.value);
    case "meterEntry":
      return writeMeterEntry(target.binding, u.type, e.value);
    case "actionProfileMember":
      return writeMember(target.binding, u.type, e.value);
    case "actionProfileGroup":
      throw new RpcError("UNIMPLEMENTED", "action profile groups need an action selector, which the switch does not support yet");
    case "directMeterEntry":
      return writeDirectMeterEntry(target.binding, u.type, e.value);
    case "packetReplicationEngineEntry":
      return writePreEntry(target.sw.replication, target.replicaForms, u.type, e.value);
    case "registerEntry":
      throw new RpcError("UNIMPLEMENTED", "registers cannot be written over P4Runtime on this target (as on BMv2): configure through tables");
    default:
      throw new RpcError("UNIMPLEMENTED", `${e.$case} entities are not supported`);
  }
}

/** The entities a read of `ent` returns, appended to `out`. */
export function readEntity(target: EntityTarget, ent: Entity, out: Entity[]): void {
  const e = ent.entity;
  if (!e) throw new RpcError("INVALID_ARGUMENT", "read of an empty entity");
  switch (e.$case) {
    case "tableEntry":
      return readTableEntries(target.binding, e.value, out);
    case "counterEntry":
      return readCounterEntries(target.binding, e.value, out);
    case "directCounterEntry":
      return readDirectCounterEntry(target.binding, e.value, out);
    case "digestEntry":
      return readDigestEntry(target.sw, target.binding, e.value, out);
    case "meterEntry":
      return readMeterEntries(target.binding, e.value, out);
    case "actionProfileMember":
      return readMembers(target.binding, e.value, out);
    case "actionProfileGroup":
      return readGroups(target.binding, e.value, out);
    case "directMeterEntry":
      return readDirectMeterEntry(target.binding, e.value, out);
    case "packetReplicationEngineEntry":
      return readPreEntries(target.sw.replication, target.replicaForms, e.value, out);
    case "registerEntry":
      throw new RpcError("UNIMPLEMENTED", "registers cannot be read over P4Runtime on this target (as on BMv2): results leave by digest");
    default:
      throw new RpcError("UNIMPLEMENTED", `reading ${e.$case} entities is not supported`);
  }
}
