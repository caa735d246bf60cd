// The digests of one partition that may still count for what an exporter
// group member holds open (I/O halves waiting for their other vantage,
// commands waiting for their response, intervals not yet closed): the
// offset to re-read from when the partition moves to another member, and the
// digests seen recently (a digest published twice is taken once).
//
// A digest whose list time is more than `slackNs` before the engine's
// settled time (MetricsEngine.settledBefore) is reflected in records already
// made; the others may not be. The oldest offset among the others is where a
// member taking over starts re-reading.

/** Which (sequence number, list time) of one switch's digest are open: a list time, or several after the switch restarted. */
type Ids = Map<number, bigint | bigint[]>;

interface Seen {
  offset: bigint;
  listNs: bigint;
  /** when it was taken, ms (PartitionEngine: no later than its Kafka timestamp nor than any member took it) */
  takenMs: number;
  /** where its identity is kept: by switch and digest, its sequence number and list time; or its key, for a sequence number beyond 2^53 */
  ids: Ids | undefined;
  seq: number;
  list: bigint;
  key: string | undefined;
}

export class OpenDigests {
  /** digests in offset order; the front is pruned once settled */
  private readonly list: Seen[] = [];
  private head = 0;
  /** the open digests' identities, by switch and digest name (numbers and bigints: no key string to build and hash a digest) */
  private readonly streams = new Map<string, Map<string, Ids>>();
  private readonly wide = new Set<string>();

  constructor(readonly slackNs: bigint) {}

  /**
   * Notes a digest (open until its list time `listNs` is settled); false when the same digest (switch, name, list
   * time `listTimestampNs`, sequence number) is still among the open ones: a duplicate.
   */
  add(offset: bigint, listNs: bigint, takenMs: number, switchId: string, digest: string, listTimestampNs: bigint, seq: bigint): boolean {
    if (seq > MAX_SAFE) {
      const key = `${switchId}|${digest}|${listTimestampNs}|${seq}`;
      if (this.wide.has(key)) return false;
      this.wide.add(key);
      this.list.push({ offset, listNs, takenMs, ids: undefined, seq: 0, list: listTimestampNs, key });
      return true;
    }
    let byDigest = this.streams.get(switchId);
    if (!byDigest) this.streams.set(switchId, (byDigest = new Map()));
    let ids = byDigest.get(digest);
    if (!ids) byDigest.set(digest, (ids = new Map()));
    const n = Number(seq);
    const had = ids.get(n);
    if (had === undefined) ids.set(n, listTimestampNs);
    else if (typeof had === "bigint") {
      if (had === listTimestampNs) return false;
      ids.set(n, [had, listTimestampNs]);
    } else {
      if (had.includes(listTimestampNs)) return false;
      had.push(listTimestampNs);
    }
    this.list.push({ offset, listNs, takenMs, ids, seq: n, list: listTimestampNs, key: undefined });
    return true;
  }

  private forget(s: Seen): void {
    if (!s.ids) {
      this.wide.delete(s.key!);
      return;
    }
    const had = s.ids.get(s.seq);
    if (had === s.list) s.ids.delete(s.seq);
    else if (Array.isArray(had)) {
      const rest = had.filter((x) => x !== s.list);
      if (rest.length === 1) s.ids.set(s.seq, rest[0]!);
      else s.ids.set(s.seq, rest);
    }
  }

  /** Lets go of the digests at the front that are settled (list time before settledNs - slack). */
  prune(settledNs: bigint): void {
    const before = settledNs - this.slackNs;
    while (this.head < this.list.length && this.list[this.head]!.listNs < before) this.forget(this.list[this.head++]!);
    if (this.head > 4096 && this.head * 2 > this.list.length) {
      this.list.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Where to re-read from (the oldest open digest), or undefined when none is open; with when it was taken. */
  oldest(): { offset: bigint; takenMs: number } | undefined {
    const s = this.list[this.head];
    return s ? { offset: s.offset, takenMs: s.takenMs } : undefined;
  }

  get size(): number {
    return this.list.length - this.head;
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
