// Action profile members: written (INSERT, MODIFY, DELETE) and read (one,
// a profile's, or every profile's). Entries of the profile's tables point to
// members; a MODIFY of a member changes what they run, and a member they
// point to cannot be deleted. Groups need a selector, which the switch lacks.
import { Update_Type, type ActionProfileGroup as P4Group, type ActionProfileMember as P4Member, type Entity } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import type { PipelineBinding } from "../binding.js";
import { RpcError } from "../rpc.js";

export function writeMember(b: PipelineBinding, type: Update_Type, m: P4Member): void {
  const p = profileOf(b, m.actionProfileId);
  const { profile } = p;
  const existing = profile.members.get(m.memberId);
  if (type === Update_Type.DELETE) {
    if (!existing) throw new RpcError("NOT_FOUND", `action profile '${profile.name}' has no member ${m.memberId}`);
    if (existing.refs > 0) throw new RpcError("FAILED_PRECONDITION", `action profile '${profile.name}': member ${m.memberId} is used by ${existing.refs} table entries`);
    profile.members.delete(m.memberId);
    return;
  }
  if (type === Update_Type.INSERT && existing) throw new RpcError("ALREADY_EXISTS", `action profile '${profile.name}' has a member ${m.memberId}`);
  if (type === Update_Type.MODIFY && !existing) throw new RpcError("NOT_FOUND", `action profile '${profile.name}' has no member ${m.memberId}`);
  // The action must be one of the profile's tables' (they share their actions).
  const call = b.decodeAction(p.tables[0]!, m.action ? { type: { $case: "action", value: m.action } } : undefined, false);
  if (existing) {
    existing.action.actionId = call.actionId;
    existing.action.data = call.data;
    return;
  }
  if (profile.members.size >= profile.maxSize) throw new RpcError("RESOURCE_EXHAUSTED", `action profile '${profile.name}' is full (${profile.maxSize} members)`);
  profile.members.set(m.memberId, { id: m.memberId, action: call, refs: 0 });
}

/** Profile id 0 is every profile; member id 0 is every member. */
export function readMembers(b: PipelineBinding, q: P4Member, out: Entity[]): void {
  const ids = q.actionProfileId === 0 ? [...b.actionProfiles.keys()] : [q.actionProfileId];
  for (const id of ids) {
    const p = profileOf(b, id);
    const members = q.memberId === 0 ? [...p.profile.members.values()].sort((x, y) => x.id - y.id) : [p.profile.members.get(q.memberId)];
    for (const m of members) {
      if (!m) throw new RpcError("NOT_FOUND", `action profile '${p.profile.name}' has no member ${q.memberId}`);
      const a = b.encodeAction(m.action, p.tables[0]);
      out.push({ entity: { $case: "actionProfileMember", value: { actionProfileId: id, memberId: m.id, action: a.type?.$case === "action" ? a.type.value : undefined } } });
    }
  }
}

/**
 * Groups: the switch's profiles have no selector, so none holds a group. A
 * read finds nothing (a wildcard, or a profile's: what clients such as finsy's
 * delete_all() send); a named group is NOT_FOUND; an unknown profile too.
 */
export function readGroups(b: PipelineBinding, q: P4Group, _out: Entity[]): void {
  if (q.actionProfileId === 0) {
    if (q.groupId !== 0) throw new RpcError("INVALID_ARGUMENT", "a group read with a group id needs an action profile id");
    return;
  }
  const p = profileOf(b, q.actionProfileId);
  if (q.groupId !== 0) throw new RpcError("NOT_FOUND", `action profile '${p.profile.name}' has no group ${q.groupId} (it has no selector)`);
}

function profileOf(b: PipelineBinding, id: number) {
  const p = b.actionProfiles.get(id);
  if (!p) throw new RpcError("NOT_FOUND", `no action profile with id ${id}`);
  return p;
}
