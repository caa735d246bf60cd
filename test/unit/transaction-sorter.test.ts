// The sorting of a partition's records by their transactions' markers, on
// record batches as a read_uncommitted fetch returns them.
import type { KafkaRecord, RecordsBatch } from "@platformatic/kafka";
import { expect, test } from "vitest";
import { TransactionSorter } from "../../exporter/src/kafka/transaction-sorter.js";

const TRANSACTIONAL = 0x10;
const CONTROL = 0x20;

function record(offsetDelta: number, value: string): KafkaRecord {
  return { length: 0, attributes: 0, timestampDelta: 0n, offsetDelta, key: null, value: Buffer.from(value), headers: [] };
}
function batch(firstOffset: number, producerId: number, attributes: number, records: KafkaRecord[]): RecordsBatch {
  return { firstOffset: BigInt(firstOffset), length: 0, partitionLeaderEpoch: 0, magic: 2, crc: 0, attributes, lastOffsetDelta: records.length - 1, firstTimestamp: 0n, maxTimestamp: 0n, producerId: BigInt(producerId), producerEpoch: 0, firstSequence: 0, records };
}
const data = (offset: number, pid: number, ...values: string[]) => batch(offset, pid, TRANSACTIONAL, values.map((v, i) => record(i, v)));
const plain = (offset: number, value: string) => batch(offset, -1, 0, [record(0, value)]);
const marker = (offset: number, pid: number, commit: boolean) => batch(offset, pid, TRANSACTIONAL | CONTROL, [{ ...record(0, ""), key: Buffer.from([0, 0, 0, commit ? 1 : 0]), value: Buffer.from([0, 0, 0, 0, 0, 0]) }]);

function sorted(inOrder: boolean, batches: RecordsBatch[], from = 0n) {
  const sorter = new TransactionSorter<string>(inOrder);
  const out: string[] = [];
  const held: Array<bigint | undefined> = [];
  for (const b of batches) {
    sorter.take(b, from, (r) => r.value!.toString(), (m) => out.push(m));
    held.push(sorter.firstHeld());
  }
  return { out, held, sorter };
}

test("in order: a partition is held at its first open transaction; aborted ones dropped, however they interleave", () => {
  const { out, held, sorter } = sorted(true, [
    data(0, 1, "a0"), data(1, 2, "b1"), plain(2, "p2"), data(3, 3, "c3"), data(4, 1, "a4"),
    marker(5, 3, false), // c aborted: a still holds the partition at 0
    marker(6, 2, true), // b committed: behind a
    marker(7, 1, false), // a aborted: b1, p2 go out; c3 and a4 are dropped
    plain(8, "p8"),
  ]);
  expect(out).toEqual(["b1", "p2", "p8"]);
  expect(held).toEqual([0n, 0n, 0n, 0n, 0n, 0n, 0n, undefined, undefined]);
  expect(sorter.heldBytes).toBe(0);
});

test("one producer's transactions, two aborted in a row then one committed: only the committed one", () => {
  const { out } = sorted(true, [data(0, 7, "x0", "x1"), marker(2, 7, false), data(3, 7, "y3"), marker(4, 7, false), data(5, 7, "z5"), marker(6, 7, true)]);
  expect(out).toEqual(["z5"]);
});

test("not in order: a committed transaction is delivered at its marker, other records at once; a marker of records before the start decides nothing", () => {
  const { out } = sorted(false, [data(0, 1, "a0"), data(1, 2, "b1"), plain(2, "p2"), marker(3, 2, true), marker(4, 1, true), marker(5, 9, true)], 1n);
  expect(out).toEqual(["p2", "b1"]);
});
