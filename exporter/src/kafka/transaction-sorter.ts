// A partition's records sorted by their transactions' control markers, for
// readers that fetch read_uncommitted and decide themselves what is
// committed (committed-reader.ts, tail.ts).
import type { KafkaRecord, RecordsBatch } from "@platformatic/kafka";

const IS_TRANSACTIONAL = 0x10;
const IS_CONTROL = 0x20;
/** A control record's key: version (int16), then type: 0 abort, 1 commit. */
const COMMIT = 1;

/** Whether a control batch's marker commits its producer's transaction (false: aborts it). */
export function commitsTransaction(batch: RecordsBatch): boolean {
  const key = batch.records[0]?.key;
  return !!key && key.length >= 4 && key.readInt16BE(2) === COMMIT;
}

const OPEN = 0;
const DELIVER = 1;
const DROP = 2;

interface Held<M> {
  offset: bigint;
  m: M;
  size: number;
  state: typeof OPEN | typeof DELIVER | typeof DROP;
}

/**
 * One partition's records sorted by their transactions' markers, batch by
 * batch in offset order. A transactional record is held until its producer's
 * marker: commit delivers it, abort drops it. In order (a read_committed
 * consumer's order), a record after the first record of a transaction still
 * open waits for that transaction to end; otherwise a committed transaction
 * is delivered when its marker comes, and other records at once.
 */
export class TransactionSorter<M> {
  private queue: Held<M>[] = [];
  private head = 0;
  private readonly open = new Map<bigint, Held<M>[]>();
  /** bytes (keys and values) of the records held */
  heldBytes = 0;

  constructor(private readonly inOrder: boolean) {}

  /**
   * Takes a fetched batch: its records at or after `from` that `make` turns
   * into messages (undefined: skipped); calls `deliver` with each message
   * this makes deliverable. Returns how many were delivered.
   */
  take(batch: RecordsBatch, from: bigint, make: (record: KafkaRecord, offset: bigint) => M | undefined, deliver: (m: M) => void): number {
    let delivered = 0;
    if (batch.attributes & IS_CONTROL) {
      const list = this.open.get(batch.producerId);
      this.open.delete(batch.producerId);
      if (list) {
        const commit = commitsTransaction(batch);
        for (const h of list) {
          h.state = commit ? DELIVER : DROP;
          if (!this.inOrder) {
            this.heldBytes -= h.size;
            if (commit) {
              deliver(h.m);
              delivered++;
            }
          }
        }
      }
    } else {
      const transactional = (batch.attributes & IS_TRANSACTIONAL) !== 0;
      for (const record of batch.records) {
        const offset = batch.firstOffset + BigInt(record.offsetDelta);
        if (offset < from) continue;
        const m = make(record, offset);
        if (m === undefined) continue;
        if (transactional) {
          const h: Held<M> = { offset, m, size: (record.key?.length ?? 0) + (record.value?.length ?? 0), state: OPEN };
          this.heldBytes += h.size;
          const list = this.open.get(batch.producerId);
          if (list) list.push(h);
          else this.open.set(batch.producerId, [h]);
          if (this.inOrder) this.queue.push(h);
        } else if (this.inOrder && this.head < this.queue.length) {
          const size = (record.key?.length ?? 0) + (record.value?.length ?? 0);
          this.heldBytes += size;
          this.queue.push({ offset, m, size, state: DELIVER });
        } else {
          deliver(m);
          delivered++;
        }
      }
    }
    if (this.inOrder) delivered += this.drain(deliver);
    return delivered;
  }

  private drain(deliver: (m: M) => void): number {
    let delivered = 0;
    while (this.head < this.queue.length && this.queue[this.head]!.state !== OPEN) {
      const h = this.queue[this.head++]!;
      this.heldBytes -= h.size;
      if (h.state === DELIVER) {
        deliver(h.m);
        delivered++;
      }
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return delivered;
  }

  /** In order: the offset of the first record held (a consumer that stops here and starts again from it misses nothing). */
  firstHeld(): bigint | undefined {
    return this.head < this.queue.length ? this.queue[this.head]!.offset : undefined;
  }

  /** Forgets every record held (the partition is read again from elsewhere). */
  clear(): void {
    this.queue = [];
    this.head = 0;
    this.open.clear();
    this.heldBytes = 0;
  }
}
