// Table entries: written (INSERT, MODIFY, DELETE; the default entry only
// modified or reset) and read (one entry, a table, or every table; the
// default entry; with direct counters if asked).
import { Update_Type, type Entity, type TableEntry } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import type { MeterArray } from "../../bmv2/meters.js";
import type { ActionCall, TableEntry as BmTableEntry } from "../../bmv2/table.js";
import { meterCell } from "../meter-config.js";
import type { PipelineBinding } from "../binding.js";
import type { TableWrite } from "../fast-write.js";
import { RpcError } from "../rpc.js";

/** A checked table write, from either decoder. */
export function applyTableWrite(w: TableWrite): void {
  const t = w.table.table;
  const members = t.actionProfile?.members;
  if (w.type === Update_Type.DELETE) {
    const e = t.delete(w.match, w.priority);
    if (members && e.memberId !== undefined) members.get(e.memberId)!.refs--;
  } else if (w.type === Update_Type.INSERT) {
    t.insert({ match: w.match, priority: w.priority, action: w.action!, packets: 0, bytes: 0, metadata: w.metadata, controllerMetadata: w.controllerMetadata, idleTimeoutNs: w.idleTimeoutNs ?? 0n, meter: w.meter, memberId: w.memberId });
    if (members && w.memberId !== undefined) members.get(w.memberId)!.refs++;
  } else {
    const before = t.get(w.match, w.priority)?.memberId;
    const e = t.modify(w.match, w.priority, w.action!, w.metadata, w.controllerMetadata);
    // A MODIFY sets the direct meter's config, or resets it when none is given (spec 9.1.4).
    e.meter = w.meter;
    if (members) {
      if (before !== undefined) members.get(before)!.refs--;
      e.memberId = w.memberId;
      if (w.memberId !== undefined) members.get(w.memberId)!.refs++;
    }
  }
}

/** A table-entry update decoded by the generated decoder (`type` is INSERT, MODIFY or DELETE); `originalDefaults` by P4Info table id. */
export function writeTableEntry(b: PipelineBinding, originalDefaults: ReadonlyMap<number, ActionCall>, type: Update_Type, te: TableEntry): void {
  const T = Update_Type;
  const t = b.table(te.tableId);
  const name = t.info.preamble!.name;
  // is_const is the switch's to say (on reads), never a client's to write.
  if (te.isConst) throw new RpcError("INVALID_ARGUMENT", `table '${name}': is_const cannot be written`);
  if (te.isDefaultAction) {
    if (te.match.length) throw new RpcError("INVALID_ARGUMENT", `table '${name}': a default entry has no match`);
    if (te.priority) throw new RpcError("INVALID_ARGUMENT", `table '${name}': a default entry has no priority`);
    if (type === T.INSERT) throw new RpcError("INVALID_ARGUMENT", `table '${name}': the default entry cannot be inserted, only modified`);
    if (type === T.DELETE) throw new RpcError("INVALID_ARGUMENT", `table '${name}': the default entry cannot be deleted; a MODIFY without an action resets it`);
    if (t.table.defaultConst) throw new RpcError("PERMISSION_DENIED", `table '${name}' has a const default action`);
    if (t.table.actionProfile) throw new RpcError("UNIMPLEMENTED", `table '${name}': the default entry of a table with an action profile cannot be set (as on BMv2)`);
    // A MODIFY without an action resets the default entry to the program's initial one.
    t.table.defaultAction = te.action?.type ? b.decodeAction(t, te.action, true) : (originalDefaults.get(te.tableId) ?? t.table.defaultAction);
    return;
  }
  if (t.table.constEntries) throw new RpcError("PERMISSION_DENIED", `table '${name}' has const entries and cannot be changed`);
  if (t.info.matchFields.length === 0) throw new RpcError("INVALID_ARGUMENT", `table '${name}' has no match key: only its default entry can be written`);
  if (te.idleTimeoutNs && t.info.idleTimeoutBehavior === 0) throw new RpcError("INVALID_ARGUMENT", `table '${name}' does not support idle timeout: idle_timeout_ns must be 0`);
  const match = b.decodeMatch(t, te.match);
  const problem = t.table.validate(match, te.priority);
  if (problem) throw new RpcError("INVALID_ARGUMENT", problem);
  let action: ActionCall | undefined;
  let memberId: number | undefined;
  const profile = t.table.actionProfile;
  if (type === T.DELETE) action = undefined;
  else if (profile) {
    // A table with an action profile: entries point to members (groups need a selector, which the switch lacks).
    const at = te.action?.type;
    if (at?.$case === "actionProfileGroupId") throw new RpcError("INVALID_ARGUMENT", `table '${name}': action profile '${profile.name}' has no selector: no groups`);
    if (at?.$case !== "actionProfileMemberId") throw new RpcError("INVALID_ARGUMENT", `table '${name}' takes an action profile member, not ${at ? at.$case : "no action"}`);
    const m = profile.members.get(at.value);
    if (!m) throw new RpcError("NOT_FOUND", `action profile '${profile.name}' has no member ${at.value}`);
    action = m.action;
    memberId = m.id;
  } else action = b.decodeAction(t, te.action, false);
  if (te.meterCounterData) throw new RpcError("UNIMPLEMENTED", `table '${name}': meter color counters are not supported`);
  let meter: MeterArray | undefined;
  if (te.meterConfig && type !== T.DELETE) {
    const dm = t.table.directMeter;
    if (!dm) throw new RpcError("INVALID_ARGUMENT", `table '${name}' has no direct meter: meter_config must be unset`);
    meter = meterCell(dm, te.meterConfig);
  }
  applyTableWrite({ type: type as TableWrite["type"], table: t, match, priority: te.priority, action, metadata: te.metadata.length ? te.metadata : undefined, controllerMetadata: te.controllerMetadata || undefined, idleTimeoutNs: te.idleTimeoutNs, meter, memberId });
}

/**
 * The entries a TableEntry read asks for. Table id 0 is every table, and then
 * no other filter may be set; a match (checked as a write's would be) is one
 * entry; is_default_action the default entry. The action id, priority,
 * controller_metadata and metadata, when set, filter the entries read.
 */
export function readTableEntries(b: PipelineBinding, q: TableEntry, out: Entity[]): void {
  const withCounters = q.counterData !== undefined;
  const actionFilter = q.action?.type;
  if (actionFilter && actionFilter.$case !== "action") throw new RpcError("INVALID_ARGUMENT", "a table read filters on an action id only, not on action profile members or groups");
  const actionId = actionFilter?.value.actionId ?? 0;
  if (q.tableId === 0 && (q.match.length || actionId || q.priority || q.controllerMetadata || q.metadata.length || q.isDefaultAction)) {
    throw new RpcError("INVALID_ARGUMENT", "a read of every table (table id 0) takes no other filter");
  }
  const withMeter = q.meterConfig !== undefined;
  const tables = q.tableId === 0 ? [...b.tables.values()] : [b.table(q.tableId)];
  for (const t of tables) {
    const name = t.info.preamble!.name;
    let programAction: number | undefined;
    if (actionId) {
      if (!t.info.actionRefs.some((r) => r.id === actionId)) throw new RpcError("INVALID_ARGUMENT", `action id ${actionId} is not an action of table '${name}'`);
      programAction = t.programActions.get(actionId) ?? b.actions.get(actionId)?.programId;
    }
    if (q.isDefaultAction) {
      if (q.match.length || q.priority) throw new RpcError("INVALID_ARGUMENT", `table '${name}': a default entry has no match and no priority`);
      if (programAction === undefined || t.table.defaultAction.actionId === programAction) out.push({ entity: { $case: "tableEntry", value: b.encodeDefault(t, withCounters) } });
      continue;
    }
    const keep = (e: BmTableEntry) =>
      (programAction === undefined || e.action.actionId === programAction) &&
      (!q.priority || e.priority === q.priority) &&
      (!q.controllerMetadata || e.controllerMetadata === q.controllerMetadata) &&
      (!q.metadata.length || (e.metadata !== undefined && Buffer.from(e.metadata).equals(Buffer.from(q.metadata))));
    if (q.match.length > 0) {
      const match = b.decodeMatch(t, q.match);
      const problem = t.table.validate(match, q.priority);
      if (problem) throw new RpcError("INVALID_ARGUMENT", problem);
      const hit = t.table.get(match, q.priority);
      if (hit && keep(hit)) out.push({ entity: { $case: "tableEntry", value: b.encodeEntry(t, hit, withCounters, withMeter) } });
      continue;
    }
    for (const e of t.table.entries()) if (keep(e)) out.push({ entity: { $case: "tableEntry", value: b.encodeEntry(t, e, withCounters, withMeter) } });
  }
}
