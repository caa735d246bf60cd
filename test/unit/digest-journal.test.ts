// The digest journal on its own: the oldest unsettled list is found from each
// segment's first line however long it is (a list of a thousand samples is
// hundreds of KB of hex), a line cut short by a crash is passed over on
// replay, and release keeps what is not settled.
import { appendFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { DigestJournal } from "../../app/digest-journal.js";

const dir = mkdtempSync(join(tmpdir(), "journal-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One journal line: a list of `samples` learn samples of the flow digest's width, at list time `t`. */
function line(t: bigint, samples: number): string {
  const sample = ["0a000101", "0a000102", "00002000", "0000002a", "00000007"];
  return JSON.stringify({ s: "tor", t: t.toString(), d: "no_such_digest", v: Array.from({ length: samples }, () => sample), n: 7 }) + "\n";
}

test("the oldest unsettled list comes from each segment's first line, a line longer than a read block included", () => {
  const d = join(dir, "oldest");
  const j0 = new DigestJournal(d);
  j0.close();
  writeFileSync(join(d, "0000000003.journal"), line(3_000n, 5000) + line(1n, 1)); // a first line of ~230 KB; a later, older one is not the segment's first
  writeFileSync(join(d, "0000000004.journal"), line(2_000n, 1));
  expect(new DigestJournal(d).oldestUnsettled()).toBe(2_000n);
  expect(new DigestJournal(join(dir, "empty")).oldestUnsettled()).toBeUndefined();
});

test("replay passes over a line cut short by a crash and keeps the lists before it", () => {
  const d = join(dir, "cut");
  new DigestJournal(d).close();
  const good = JSON.stringify({ s: "tor", t: "5", d: "flow_learn_digest", v: [], n: 7 }) + "\n";
  writeFileSync(join(d, "0000000000.journal"), good);
  appendFileSync(join(d, "0000000000.journal"), good.slice(0, 20));
  const fed: bigint[] = [];
  const n = new DigestJournal(d).replayInto((b) => fed.push(b.listTimestampNs));
  expect(n).toBe(1);
  expect(fed).toEqual([5n]);
  expect(readdirSync(d).filter((f) => f.endsWith(".journal"))).toEqual(["0000000001.journal"]);
});

test("a record an earlier run wrote is dropped every time it is replayed, and each new one is written once, until the dedupe is retired", async () => {
  const { RecordDedupe, recordKey } = await import("../../app/digest-journal.js");
  const rec = (cmd_psn: number) => ({ type: "io", host: "10.0.1.1", target: "10.0.2.1", target_qp: 8, cid: 1, cmd_psn }) as Parameters<typeof recordKey>[0];
  const d = new RecordDedupe();
  d.add(recordKey(rec(1)));
  expect([d.written(rec(1)), d.written(rec(1)), d.written(rec(1))]).toEqual([true, true, true]);
  expect([d.written(rec(2)), d.written(rec(2))]).toEqual([false, true]);
  d.retire();
  expect(d.written(rec(1))).toBe(false);
});

test("a list left twice by a crash during a replay (in the old segment and in the replay's) is fed once", () => {
  const d = join(dir, "twice");
  new DigestJournal(d).close();
  const list = (t: string) => JSON.stringify({ s: "tor", t, d: "flow_learn_digest", v: [], n: 7 }) + "\n";
  writeFileSync(join(d, "0000000000.journal"), list("5") + list("6"));
  writeFileSync(join(d, "0000000001.journal"), list("5") + list("6") + list("7"));
  const fed: bigint[] = [];
  expect(new DigestJournal(d).replayInto((b) => fed.push(b.listTimestampNs))).toBe(3);
  expect(fed).toEqual([5n, 6n, 7n]);
});

test("when this host journaled the oldest list is kept through a replay (Kafka's timestamps are this host's, the list's time is the switch's)", () => {
  const d = join(dir, "journaled-at");
  const batch = { switchId: "tor", listTimestampNs: 1_800_000_000_000_000_000n, digests: [], badDigests: 0, session: 7, raw: { digest: "no_such_digest", samples: [] } };
  const j0 = new DigestJournal(d);
  j0.append(batch, 1_700_000_000_123);
  j0.close();
  const j1 = new DigestJournal(d);
  expect(j1.oldestUnsettledJournaledAtMs()).toBe(1_700_000_000_123);
  expect(j1.replayInto(() => undefined)).toBe(1);
  j1.close();
  // The replay took the list into a segment of its own, with the time it was first journaled.
  expect(new DigestJournal(d).oldestUnsettledJournaledAtMs()).toBe(1_700_000_000_123);
  expect(new DigestJournal(join(dir, "empty")).oldestUnsettledJournaledAtMs()).toBeUndefined();
});

test("a list's endpoint entries (IPv6 addresses of its keys) come back with it from the journal", () => {
  const d = join(dir, "endpoints");
  const j0 = new DigestJournal(d);
  const endpoints = [{ key: 0xf0000001, address: "2001:db8:0:1::1" }, { key: 0xf0000002, address: "2001:db8:0:2::1" }];
  j0.append({ switchId: "tor", listTimestampNs: 9n, digests: [], badDigests: 0, session: 7, raw: { digest: "learn_digest_t", samples: [] }, endpoints }, 1);
  j0.close();
  const fed: Array<readonly unknown[] | undefined> = [];
  new DigestJournal(d).replayInto((b) => fed.push(b.endpoints));
  expect(fed).toEqual([endpoints]);
});

test("a polling rotation's window notes come back in order with the lists, with their time, sequence numbers and endpoint addresses", () => {
  const d = join(dir, "notes");
  const list = (t: bigint) => ({ switchId: "tor", listTimestampNs: t, digests: [], badDigests: 0, session: 7, raw: { digest: "learn_digest_t", samples: [] } });
  const left = { switchId: "tor", joined: false, pairs: [{ host: 0xf0000001, target: 0x0a000201 }, { host: 0x0a000102, target: 0x0a000201 }], atNs: 1_800_000_000_500_000_000n, seq: 4n, endpoints: [{ key: 0xf0000001, address: "2001:db8:0:1::1" }] };
  const joined = { ...left, joined: true, pairs: [left.pairs[0]!], atNs: 1_800_000_000_600_000_000n, seq: 6n };
  const j0 = new DigestJournal(d);
  j0.appendNotes(left); // a note before any list: its segment's first line
  j0.append(list(10n), 1);
  j0.appendNotes(joined);
  j0.append(list(11n), 1);
  // Killed: the notes were made durable when appended, the lists at the next commit (here, close).
  j0.close();
  const j1 = new DigestJournal(d);
  expect(j1.oldestUnsettled()).toBe(10n); // the first list's time, not a note's
  const fed: unknown[] = [];
  expect(j1.replayInto((b) => fed.push(b.listTimestampNs), (n) => fed.push(n))).toBe(2);
  expect(fed).toEqual([left, 10n, joined, 11n]);
  j1.close();
  // Replayed again (the replay's own segment): the same, once.
  const again: unknown[] = [];
  new DigestJournal(d).replayInto((b) => again.push(b.listTimestampNs), (n) => again.push(n));
  expect(again).toEqual([left, 10n, joined, 11n]);
});

test("a segment of window notes alone goes once the lists before them are settled", () => {
  const d = join(dir, "notes-release");
  const j = new DigestJournal(d);
  j.append({ switchId: "tor", listTimestampNs: 10n, digests: [], badDigests: 0, session: 7, raw: { digest: "learn_digest_t", samples: [] } }, 1);
  j.rotate();
  j.appendNotes({ switchId: "tor", joined: false, pairs: [{ host: 1, target: 2 }], atNs: 99n, seq: 0n, endpoints: [] });
  j.rotate();
  j.release(10n);
  expect(readdirSync(d).filter((f) => f.endsWith(".journal"))).toEqual(["0000000000.journal", "0000000001.journal"]);
  j.release(11n);
  expect(readdirSync(d).filter((f) => f.endsWith(".journal"))).toEqual([]);
  j.close();
});
