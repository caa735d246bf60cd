// The desired state's clone sessions: written when missing or different
// from what the switch holds, not again when it holds them (whichever way
// the switch reports a replica's port), and again after a pipeline push.
import { describe, expect, test } from "vitest";
import { DesiredState } from "../../p4runtime/src/desired-state.js";
import { Update_Type, type CloneSessionEntry } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";

const session = (port: number, length = 64): CloneSessionEntry => ({
  sessionId: 1, replicas: [{ portKind: { $case: "egressPort", value: port }, instance: 0, backupReplicas: [] }], classOfService: 0, packetLengthBytes: length,
});
const kinds = (s: DesiredState) => s.diff().map((u) => [u.type, u.entity?.entity?.$case]);

describe("clone sessions in the desired state", () => {
  test("inserted when missing, left alone when the switch holds the same, modified when it holds another", () => {
    const s = new DesiredState();
    s.setCloneSession(session(68));
    expect(kinds(s)).toEqual([[Update_Type.INSERT, "packetReplicationEngineEntry"]]);
    s.applied(s.diff());
    expect(s.diff()).toEqual([]);
    // Read back with the port as bytes (P4Runtime 1.4's form): the same session.
    const asBytes: CloneSessionEntry = { ...session(68), replicas: [{ portKind: { $case: "port", value: Buffer.from([0, 68]) }, instance: 0, backupReplicas: [] }] };
    s.observe([], [], [asBytes]);
    expect(s.diff()).toEqual([]);
    for (const other of [session(6), session(68, 128)]) {
      s.observe([], [], [other]);
      expect(kinds(s)).toEqual([[Update_Type.MODIFY, "packetReplicationEngineEntry"]]);
    }
    s.observe([], [], []);
    expect(kinds(s)).toEqual([[Update_Type.INSERT, "packetReplicationEngineEntry"]]);
    s.applied(s.diff());
    s.resetInstalled();
    expect(kinds(s)).toEqual([[Update_Type.INSERT, "packetReplicationEngineEntry"]]);
  });

  test("a state without clone sessions writes none", () => {
    const s = new DesiredState();
    s.observe([], [], [session(68)]);
    expect(s.diff()).toEqual([]);
  });
});
