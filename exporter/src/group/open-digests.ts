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

interface Seen {
  offset: bigint;
  listNs: bigint;
  key: string;
  /** Kafka timestamp of the digest message, ms */
  timestampMs: number;
}

export class OpenDigests {
  /** digests in offset order; the front is pruned once settled */
  private readonly list: Seen[] = [];
  private head = 0;
  private readonly keys = new Set<string>();

  constructor(readonly slackNs: bigint) {}

  /** Notes a digest; false when the same digest (switch, name, list, sequence number) is still among the open ones: a duplicate. */
  add(offset: bigint, listNs: bigint, key: string, timestampMs: number): boolean {
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    this.list.push({ offset, listNs, key, timestampMs });
    return true;
  }

  /** Lets go of the digests at the front that are settled (list time before settledNs - slack). */
  prune(settledNs: bigint): void {
    const before = settledNs - this.slackNs;
    while (this.head < this.list.length && this.list[this.head]!.listNs < before) this.keys.delete(this.list[this.head++]!.key);
    if (this.head > 4096 && this.head * 2 > this.list.length) {
      this.list.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Where to re-read from (the oldest open digest), or undefined when none is open; with its Kafka timestamp. */
  oldest(): { offset: bigint; timestampMs: number } | undefined {
    const s = this.list[this.head];
    return s ? { offset: s.offset, timestampMs: s.timestampMs } : undefined;
  }

  get size(): number {
    return this.list.length - this.head;
  }
}
