// A write-ahead journal of digest lists, so that a controller killed at any
// moment loses nothing the switch had delivered: a list is acknowledged to
// the switch only once it is in the journal and fsync'd, and a controller
// that starts on the journal feeds what is not yet settled to its exporter
// again. Records that were already written are recognised by their keys
// and not written twice (RecordDedupe).
//
// Layout: DIR/NNNNNNNNNN.journal, one JSON object a line per digest list.
// A segment is closed at every checkpoint (an interval closing); segments
// whose lists are all settled are deleted.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { decodeDigest } from "@rdma-telemetry/contract";
import { recordKey, type RawDigestJson, type SwitchPosition } from "@rdma-telemetry/exporter";
import type { RecordJson } from "@rdma-telemetry/contract";
import { memberBytes, type DigestMember } from "@rdma-telemetry/p4runtime";
import type { DigestBatch } from "@rdma-telemetry/contract";

interface Entry {
  s: string; // switch id
  t: string; // list timestamp, ns
  d: string; // digest name
  v: string[][]; // samples, members as hex
  n?: number; // switch session
  h?: number; // when this host first journaled the list, ms (the list's time is the switch's clock)
  e?: Array<[number, string]>; // endpoint keys the list uses, with their IPv6 addresses
}

/**
 * A polling rotation's window notes (window_left, window_joined or
 * window_bound for each pair), journaled in order with the lists so that a controller killed
 * before Kafka took them hands them on again, the same (time, sequence
 * numbers and endpoint addresses): a member that had them drops the copies
 * as duplicates.
 */
export interface JournaledNotes {
  switchId: string;
  joined: boolean;
  /** a bound (window_bound) */
  bound?: boolean;
  pairs: Array<{ host: number; target: number; gen?: number }>;
  /** the notes' time (this host's clock, ns) and the first one's sequence number */
  atNs: bigint;
  seq: bigint;
  endpoints: Array<{ key: number; address: string }>;
  /** a bound's (and a departure's with a join written behind it): the newest switch time (48-bit ns) the controller had from the switch before that join's write */
  seenTs?: number;
}

interface NoteEntry {
  w: "left" | "joined" | "bound";
  s: string;
  a: string; // notes' time, ns
  q: string; // first sequence number
  p: Array<[number, number] | [number, number, number]>; // host, target (, window occurrence)
  e: Array<[number, string]>;
  z?: number; // the newest switch time seen before a join's write
}

/** Where a switch's digest sequence and totals stood after its latest record (see MetricsEngine.sequencePositions). */
export type SequencePosition = SwitchPosition;

const SEQUENCE_FILE = "sequence.json";

export class DigestJournal {
  private fd: number | undefined;
  private segment = 0;
  private lines: string[] = [];
  /** per open segment: the newest list timestamp in it */
  private readonly newest = new Map<string, bigint>();
  private acks: Array<() => void> = [];
  /** the newest list timestamp appended (window notes concern the lists before them) */
  private lastListNs: bigint | undefined;
  private flushing: NodeJS.Immediate | undefined;
  entries = 0;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    const have = this.segments();
    this.segment = have.length ? Number(have[have.length - 1]!.replace(".journal", "")) + 1 : 0;
  }

  private segments(): string[] {
    return readdirSync(this.dir).filter((f) => /^\d{10}\.journal$/.test(f)).sort();
  }

  private segmentName(n: number): string {
    return `${String(n).padStart(10, "0")}.journal`;
  }

  /**
   * Feeds the lists of earlier runs that are not yet settled to `feed`,
   * oldest first, and takes them into this run's journal (so that a crash
   * now loses nothing either); then drops the earlier runs' segments. A
   * list found twice (in a segment and in the replay that took it) is fed
   * once. Returns the number of lists replayed.
   */
  replayInto(feed: (b: DigestBatch) => void, feedNotes: (n: JournaledNotes) => void = () => undefined): number {
    const old = this.segments();
    let n = 0;
    // A crash after the replayed lists were taken into this run's segment, before the old ones were removed, leaves them twice.
    const replayed = new Set<string>();
    for (const f of old) {
      const text = readFileSync(join(this.dir, f), "utf8");
      for (const line of text.split("\n")) {
        if (!line) continue;
        let e: Entry | NoteEntry;
        try {
          e = JSON.parse(line) as Entry | NoteEntry;
        } catch {
          continue; // a line cut short by the crash: its list was never acknowledged
        }
        if ("w" in e) {
          const key = `${e.s}|${e.w}|${e.a}|${e.q}`;
          if (replayed.has(key)) continue;
          replayed.add(key);
          const notes: JournaledNotes = { switchId: e.s, joined: e.w === "joined", ...(e.w === "bound" ? { bound: true } : {}), pairs: e.p.map(([host, target, gen]) => ({ host, target, ...(gen === undefined ? {} : { gen }) })), atNs: BigInt(e.a), seq: BigInt(e.q), endpoints: e.e.map(([key, address]) => ({ key, address })), ...(e.z === undefined ? {} : { seenTs: e.z }) };
          feedNotes(notes);
          this.appendNotes(notes);
          continue;
        }
        const key = `${e.s}|${e.t}|${e.d}|${e.n ?? 0}|${e.v.map((m) => m.join(",")).join(";")}`;
        if (replayed.has(key)) continue;
        replayed.add(key);
        const samples = e.v.map((m) => m.map((h) => Buffer.from(h, "hex")));
        const batch: DigestBatch = { switchId: e.s, listTimestampNs: BigInt(e.t), digests: samples.map((m) => decodeDigest(e.d, m)), badDigests: 0, session: e.n ?? 0, raw: { digest: e.d, samples }, ...(e.e?.length ? { endpoints: e.e.map(([key, address]) => ({ key, address })) } : {}) };
        feed(batch);
        this.append(batch, e.h);
        n++;
      }
    }
    this.commit();
    for (const f of old) rmSync(join(this.dir, f), { force: true });
    return n;
  }

  /** Journals a list; `batch.ack` is called once it is fsync'd (group commit, within one event-loop turn). */
  append(batch: DigestBatch, journaledAtMs = Date.now()): void {
    const e: Entry = { s: batch.switchId, t: batch.listTimestampNs.toString(), d: batch.raw.digest, v: batch.raw.samples.map((m: DigestMember[]) => m.map((x) => memberBytes(x).toString("hex"))), n: batch.session, h: journaledAtMs, ...(batch.endpoints?.length ? { e: batch.endpoints.map((x): [number, string] => [x.key, x.address]) } : {}) };
    this.lines.push(JSON.stringify(e) + "\n");
    const seg = this.segmentName(this.segment);
    if ((this.newest.get(seg) ?? -1n) < batch.listTimestampNs) this.newest.set(seg, batch.listTimestampNs);
    if (this.lastListNs === undefined || this.lastListNs < batch.listTimestampNs) this.lastListNs = batch.listTimestampNs;
    this.entries++;
    if (batch.ack) this.acks.push(batch.ack);
    this.flushing ??= setImmediate(() => this.commit());
  }

  /**
   * Journals a rotation's notes after the lists appended before them, and
   * makes them durable now (the rotation is written to the switch already).
   */
  appendNotes(n: JournaledNotes): void {
    if (!n.pairs.length) return;
    const e: NoteEntry = { w: n.bound ? "bound" : n.joined ? "joined" : "left", s: n.switchId, a: n.atNs.toString(), q: n.seq.toString(), p: n.pairs.map((x): [number, number] | [number, number, number] => (x.gen === undefined ? [x.host, x.target] : [x.host, x.target, x.gen])), e: n.endpoints.map((x): [number, string] => [x.key, x.address]), ...(n.seenTs === undefined ? {} : { z: n.seenTs }) };
    this.lines.push(JSON.stringify(e) + "\n");
    // Its segment goes once the lists before it are settled (a segment of notes alone, with them).
    const seg = this.segmentName(this.segment);
    const before = this.lastListNs ?? -1n;
    if ((this.newest.get(seg) ?? -1n) < before || !this.newest.has(seg)) this.newest.set(seg, before);
    this.entries++;
    this.commit();
  }

  /** Writes and fsyncs what was appended, then acknowledges those lists. */
  commit(): void {
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = undefined;
    if (this.lines.length) {
      this.fd ??= openSync(join(this.dir, this.segmentName(this.segment)), "a");
      writeSync(this.fd, this.lines.join(""));
      fsyncSync(this.fd);
      this.lines = [];
    }
    const acks = this.acks;
    this.acks = [];
    for (const a of acks) a();
  }

  /**
   * An interval closed: the open segment is closed, so that what it holds
   * can be let go once settled (see release).
   */
  rotate(): void {
    this.commit();
    if (this.fd !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
      this.segment++;
    }
  }

  /**
   * Everything before `settledBefore` is in the records, and the records are
   * safe (written and synced, delivered to Kafka): the closed segments whose
   * lists are all older are deleted.
   */
  release(settledBefore: bigint): void {
    for (const [f, newest] of this.newest) {
      if (f !== this.segmentName(this.segment) && newest < settledBefore) {
        rmSync(join(this.dir, f), { force: true });
        this.newest.delete(f);
      }
    }
  }

  /** Keeps where each switch's digest sequence and totals stand (written whole, then renamed into place). */
  saveSequence(positions: SequencePosition[]): void {
    const tmp = join(this.dir, `${SEQUENCE_FILE}.tmp`);
    writeFileSync(tmp, JSON.stringify(positions));
    renameSync(tmp, join(this.dir, SEQUENCE_FILE));
  }

  /** Where the digest sequences and totals stood after the last run's latest records, cleanly stopped or not ([] when unknown). */
  loadSequence(): SequencePosition[] {
    try {
      const v = JSON.parse(readFileSync(join(this.dir, SEQUENCE_FILE), "utf8")) as SequencePosition[];
      return Array.isArray(v) ? v.filter((p) => typeof p.switchId === "string" && Number.isSafeInteger(p.session) && Number.isSafeInteger(p.next)).map(checkedTotals) : [];
    } catch {
      return [];
    }
  }

  /** rotate, then release */
  checkpoint(settledBefore: bigint): void {
    this.rotate();
    this.release(settledBefore);
  }

  /**
   * The oldest list timestamp (ns since the epoch) in the segments an earlier
   * run left, or undefined when it left none: its records were published
   * after that time.
   */
  oldestUnsettled(): bigint | undefined {
    let oldest: bigint | undefined;
    for (const f of this.segments()) {
      const m = /"t":"(\d+)"/.exec(firstListLine(join(this.dir, f)));
      if (m && (oldest === undefined || BigInt(m[1]!) < oldest)) oldest = BigInt(m[1]!);
    }
    return oldest;
  }

  /**
   * When this host first journaled the oldest list an earlier run left
   * (ms since the epoch, on this host's clock, as Kafka's timestamps are),
   * or undefined (none left, or journaled by a version that did not say).
   */
  oldestUnsettledJournaledAtMs(): number | undefined {
    let oldest: number | undefined;
    for (const f of this.segments()) {
      const m = /"h":(\d+)/.exec(firstListLine(join(this.dir, f)));
      if (m && (oldest === undefined || Number(m[1]) < oldest)) oldest = Number(m[1]);
    }
    return oldest;
  }

  close(): void {
    this.commit();
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

export { recordKey };

/**
 * The records an earlier run already wrote to one sink, by key, so that a
 * run replaying the journal does not write them to that sink again: each
 * key is written at most once while the replayed lists settle (lists an
 * earlier replay took into the journal may be replayed again), then the
 * dedupe is retired (a key can come back in time: a PSN wraps).
 */
export class RecordDedupe {
  private readonly seen = new Set<string>();
  private retired = false;
  suppressed = 0;

  add(key: string): void {
    this.seen.add(key);
  }

  /** Takes the records of the last `tailBytes` of a JSON-lines file. */
  addJsonlTail(file: string | undefined, tailBytes = 256 << 20): this {
    if (!file || !existsSync(file)) return this;
    const size = statSync(file).size;
    const start = Math.max(0, size - tailBytes);
    const fd = openSync(file, "r");
    try {
      const buf = Buffer.alloc(size - start);
      let off = 0;
      while (off < buf.length) off += readSyncAt(fd, buf, off, start + off);
      const lines = buf.toString("utf8").split("\n");
      if (start > 0) lines.shift(); // a partial first line
      for (const line of lines) {
        if (!line) continue;
        try {
          this.seen.add(recordKey(JSON.parse(line) as RecordJson));
        } catch {
          // a line cut short by the crash
        }
      }
    } finally {
      closeSync(fd);
    }
    return this;
  }

  get size(): number {
    return this.seen.size;
  }

  /** True when the record was written before (and is dropped); otherwise it is taken as written now. */
  written(r: RecordJson | RawDigestJson): boolean {
    if (this.retired) return false;
    const k = recordKey(r);
    if (!this.seen.has(k)) {
      this.seen.add(k);
      return false;
    }
    this.suppressed++;
    return true;
  }

  /** Everything replayed is settled: records from here on are new, and pass. */
  retire(): void {
    this.retired = true;
    this.seen.clear();
  }
}

const DIGITS = /^\d+$/;

/** A position's totals as far as they are well formed (a position written by an older version has none). */
function checkedTotals(p: SequencePosition): SequencePosition {
  const intervals = Array.isArray(p.intervals)
    ? p.intervals.filter((i) => DIGITS.test(String(i?.start_unix_ns)) && typeof i.totals === "object" && i.totals !== null && Object.values(i.totals).every((n) => Number.isSafeInteger(n)))
    : [];
  return { switchId: p.switchId, session: p.session, next: p.next, since_unix_ns: DIGITS.test(String(p.since_unix_ns)) ? p.since_unix_ns : undefined, intervals };
}

function readSyncAt(fd: number, buf: Buffer, off: number, pos: number): number {
  const n = readSync(fd, buf, off, buf.length - off, pos);
  if (n === 0) throw new Error("unexpected end of file");
  return n;
}

/** The first line of a file, read in blocks until its end: a journal segment can hold hundreds of MB. */
/** A segment's first list line (window notes, which begin `{"w":`, passed over), or "". */
function firstListLine(path: string): string {
  const fd = openSync(path, "r");
  try {
    const block = Buffer.alloc(64 << 10);
    let parts: Buffer[] = [];
    for (let pos = 0; ; ) {
      const n = readSync(fd, block, 0, block.length, pos);
      if (n === 0) break;
      let at = 0;
      while (at < n) {
        const nl = block.subarray(at, n).indexOf(10);
        parts.push(Buffer.from(block.subarray(at, nl >= 0 ? at + nl : n)));
        if (nl < 0) break;
        const line = Buffer.concat(parts).toString("utf8");
        parts = [];
        if (!line.startsWith('{"w":')) return line;
        at += nl + 1;
      }
      pos += n;
    }
    return Buffer.concat(parts).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
