// The entries a controller wants on a switch, and what it believes is there.
// Writes are the difference between the two, so that applying the same state
// twice writes nothing, and after a reconnect the switch is brought back to
// the desired state from what a Read shows (nothing duplicated, nothing left
// behind in the tables this state manages).
import { TableEntry, Update_Type, type CloneSessionEntry, type DigestEntry, type Replica, type Update } from "./generated/p4/v1/p4runtime.js";

function matchKey(te: TableEntry): string {
  const m = [...te.match].sort((a, b) => a.fieldId - b.fieldId).map((f) => {
    const t = f.fieldMatchType;
    if (!t) return `${f.fieldId}:*`;
    switch (t.$case) {
      case "exact":
      case "optional":
        return `${f.fieldId}:${t.$case}:${canon(t.value.value)}`;
      case "lpm":
        return `${f.fieldId}:lpm:${canon(t.value.value)}/${t.value.prefixLen}`;
      case "ternary":
        return `${f.fieldId}:ternary:${canon(t.value.value)}&${canon(t.value.mask)}`;
      case "range":
        return `${f.fieldId}:range:${canon(t.value.low)}-${canon(t.value.high)}`;
      default:
        return `${f.fieldId}:${t.$case}`;
    }
  });
  return `${te.tableId}|${te.isDefaultAction ? "default" : m.join(",")}|${te.priority}`;
}

function canon(b: Uint8Array): string {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  return Buffer.from(b.subarray(i)).toString("hex");
}

function actionKey(te: TableEntry): string {
  const t = te.action?.type;
  if (t?.$case !== "action") return "none";
  return `${t.value.actionId}(${[...t.value.params].sort((a, b) => a.paramId - b.paramId).map((p) => `${p.paramId}=${canon(p.value)}`).join(",")})`;
}

export interface DigestConfigSpec {
  maxTimeoutNs: bigint;
  maxListSize: number;
  ackTimeoutNs: bigint;
}

/** A replica's port as a number, whichever way it was written (uint32 egress_port or bytes). */
function replicaPort(r: Replica): number | undefined {
  const k = r.portKind;
  if (!k) return undefined;
  if (k.$case === "egressPort") return k.value;
  let port = 0;
  for (const b of k.value) port = port * 256 + b;
  return port;
}

/** A clone session as compared: replicas (port, instance), class of service, truncation. */
function cloneKey(s: CloneSessionEntry): string {
  return `${s.replicas.map((r) => `${replicaPort(r)}/${r.instance}`).join(",")}|${s.classOfService}|${s.packetLengthBytes}`;
}

export class DesiredState {
  private readonly desired = new Map<string, TableEntry>();
  private readonly installed = new Map<string, TableEntry>();
  private readonly desiredDigests = new Map<number, DigestConfigSpec>();
  private readonly installedDigests = new Map<number, DigestConfigSpec>();
  private readonly desiredClones = new Map<number, CloneSessionEntry>();
  private readonly installedClones = new Map<number, CloneSessionEntry>();
  /** tables whose entries this state owns (extra entries there are deleted) */
  readonly managedTables = new Set<number>();
  /**
   * Called with every table entry a Read found, before the difference is
   * written: the owner may take entries the switch holds into the desired
   * state (e.g. keys a controller before it gave out).
   */
  onObserve: ((entries: readonly TableEntry[]) => void) | undefined;

  /** Wants `te` on the switch (replacing any entry with the same match key). */
  set(te: TableEntry): void {
    if (!te.isDefaultAction) this.managedTables.add(te.tableId);
    this.desired.set(matchKey(te), te);
  }

  /** No longer wants the entry with `te`'s match key. */
  remove(te: TableEntry): void {
    this.desired.delete(matchKey(te));
  }

  /** Removes every desired entry of a table for which `pred` holds. */
  removeWhere(tableId: number, pred: (te: TableEntry) => boolean): void {
    for (const [k, te] of this.desired) if (te.tableId === tableId && pred(te)) this.desired.delete(k);
  }

  setDigest(digestId: number, cfg: DigestConfigSpec): void {
    this.desiredDigests.set(digestId, cfg);
  }

  digestIds(): number[] {
    return [...this.desiredDigests.keys()];
  }

  /** Wants a clone session (packet replication engine) on the switch, replacing one with the same id. */
  setCloneSession(s: CloneSessionEntry): void {
    this.desiredClones.set(s.sessionId, s);
  }

  /** The clone sessions wanted, by id. */
  cloneSessions(): ReadonlyMap<number, CloneSessionEntry> {
    return this.desiredClones;
  }

  entries(): IterableIterator<TableEntry> {
    return this.desired.values();
  }

  /** Forgets what is installed; the next diff re-creates everything (use after a pipeline push). */
  resetInstalled(): void {
    this.installed.clear();
    this.installedDigests.clear();
    this.installedClones.clear();
  }

  /** Replaces the belief about the switch with what a Read returned (clone sessions: those of the wanted ids). */
  observe(entries: Iterable<TableEntry>, digests: Iterable<DigestEntry>, clones: Iterable<CloneSessionEntry> = []): void {
    if (this.onObserve) {
      entries = [...entries];
      this.onObserve(entries as TableEntry[]);
    }
    this.installedClones.clear();
    for (const c of clones) this.installedClones.set(c.sessionId, c);
    this.installed.clear();
    for (const te of entries) {
      if (te.isDefaultAction || this.managedTables.has(te.tableId)) this.installed.set(matchKey(te), te);
    }
    this.installedDigests.clear();
    for (const d of digests) {
      if (d.config) this.installedDigests.set(d.digestId, { maxTimeoutNs: d.config.maxTimeoutNs, maxListSize: d.config.maxListSize, ackTimeoutNs: d.config.ackTimeoutNs });
    }
  }

  /** Whether the switch (as last observed or written) holds an entry with `te`'s match key. */
  isInstalled(te: TableEntry): boolean {
    return this.installed.has(matchKey(te));
  }

  /** Whether the switch (as last observed or written) holds any of the desired entries that are not a table's default. */
  holdsAny(): boolean {
    for (const [k, te] of this.desired) if (!te.isDefaultAction && this.installed.has(k)) return true;
    return false;
  }

  /** The updates that take the switch from `installed` to `desired`: deletes first, then modifies, then inserts. */
  diff(): Update[] {
    const deletes: Update[] = [];
    const modifies: Update[] = [];
    const inserts: Update[] = [];
    const ent = (te: TableEntry) => ({ entity: { $case: "tableEntry" as const, value: te } });
    for (const [k, te] of this.installed) {
      if (!this.desired.has(k) && !te.isDefaultAction) deletes.push({ type: Update_Type.DELETE, entity: ent(TableEntry.fromPartial({ tableId: te.tableId, match: te.match, priority: te.priority })) });
    }
    for (const [k, te] of this.desired) {
      const have = this.installed.get(k);
      if (te.isDefaultAction) {
        if (!have || actionKey(have) !== actionKey(te)) modifies.push({ type: Update_Type.MODIFY, entity: ent(te) });
      } else if (!have) inserts.push({ type: Update_Type.INSERT, entity: ent(te) });
      else if (actionKey(have) !== actionKey(te)) modifies.push({ type: Update_Type.MODIFY, entity: ent(te) });
    }
    const digests: Update[] = [];
    for (const [id, cfg] of this.desiredDigests) {
      const have = this.installedDigests.get(id);
      if (!have || have.maxListSize !== cfg.maxListSize || have.maxTimeoutNs !== cfg.maxTimeoutNs || have.ackTimeoutNs !== cfg.ackTimeoutNs) {
        digests.push({ type: have ? Update_Type.MODIFY : Update_Type.INSERT, entity: { entity: { $case: "digestEntry", value: { digestId: id, config: cfg } } } });
      }
    }
    for (const [id, s] of this.desiredClones) {
      const have = this.installedClones.get(id);
      if (!have || cloneKey(have) !== cloneKey(s)) {
        digests.push({ type: have ? Update_Type.MODIFY : Update_Type.INSERT, entity: { entity: { $case: "packetReplicationEngineEntry", value: { type: { $case: "cloneSessionEntry", value: s } } } } });
      }
    }
    return [...deletes, ...modifies, ...inserts, ...digests];
  }

  /** Records that `updates` were applied (all of them succeeded). */
  applied(updates: readonly Update[]): void {
    for (const u of updates) {
      const e = u.entity?.entity;
      if (e?.$case === "tableEntry") {
        const k = matchKey(e.value);
        if (u.type === Update_Type.DELETE) this.installed.delete(k);
        else this.installed.set(k, e.value);
      } else if (e?.$case === "digestEntry" && e.value.config) {
        if (u.type === Update_Type.DELETE) this.installedDigests.delete(e.value.digestId);
        else this.installedDigests.set(e.value.digestId, e.value.config);
      } else if (e?.$case === "packetReplicationEngineEntry" && e.value.type?.$case === "cloneSessionEntry") {
        const c = e.value.type.value;
        if (u.type === Update_Type.DELETE) this.installedClones.delete(c.sessionId);
        else this.installedClones.set(c.sessionId, c);
      }
    }
  }

  /** Records a partial success: updates whose index is in `ok`. */
  appliedSome(updates: readonly Update[], ok: (index: number) => boolean): void {
    this.applied(updates.filter((_, i) => ok(i)));
  }
}
