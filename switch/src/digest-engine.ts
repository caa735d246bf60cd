// Digest lists with P4Runtime semantics (DigestEntry.Config):
//   - a list goes out when it holds max_list_size samples, or when
//     max_timeout_ns has passed since its first sample; with
//     max_timeout_ns 0 every sample goes out at once, in a list of its own
//     (the spec's "no buffering", as BMv2 does);
//   - until a list is acknowledged, or ack_timeout_ns passes, samples equal
//     to one in it are suppressed (the telemetry program's sequence numbers
//     make every sample unique, so none of its samples are lost to this);
//   - nothing is sent for a digest until its DigestEntry is written.
// Time is the switch's: wall clock live, the capture's clock in replay.
import type { Value } from "./bmv2/table.js";

export interface DigestConfig {
  maxTimeoutNs: bigint;
  maxListSize: number;
  ackTimeoutNs: bigint;
}

export interface DigestList {
  digestId: number;
  listId: bigint;
  samples: Value[][];
  /** time the list was sent, ns (switch clock mapped to the wall clock) */
  timestampNs: bigint;
}

/** 32-bit FNV-1a over a sample's members (low 64 bits of each); equal samples hash equal. */
export function sampleHash(s: readonly Value[]): number {
  let h = 0x811c9dc5;
  for (const v of s) {
    if (typeof v === "number") {
      h = Math.imul(h ^ (v | 0), 0x01000193);
      h = Math.imul(h ^ ((v / 4294967296) | 0), 0x01000193);
    } else {
      h = Math.imul(h ^ Number(BigInt.asIntN(32, v)), 0x01000193);
      h = Math.imul(h ^ Number(BigInt.asIntN(32, v >> 32n)), 0x01000193);
    }
  }
  return h;
}

function sameSample(a: readonly Value[], b: readonly Value[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Distinct samples by hash; equal hashes are told apart member by member. */
class SampleSet {
  readonly byHash = new Map<number, Value[] | Value[][]>();

  has(h: number, s: readonly Value[]): boolean {
    const e = this.byHash.get(h);
    if (e === undefined) return false;
    if (!Array.isArray(e[0])) return sameSample(e as Value[], s);
    return (e as Value[][]).some((x) => sameSample(x, s));
  }

  /** Adds `s`; false if an equal sample is already in. */
  add(h: number, s: Value[]): boolean {
    const e = this.byHash.get(h);
    if (e === undefined) {
      this.byHash.set(h, s);
      return true;
    }
    if (this.has(h, s)) return false;
    this.byHash.set(h, Array.isArray(e[0]) ? [...(e as Value[][]), s] : [e as Value[], s]);
    return true;
  }
}

interface Pending {
  samples: Value[][];
  set: SampleSet;
  firstNs: bigint;
}

interface Unacked {
  set: SampleSet;
  deadlineNs: bigint;
}

/** Unacknowledged lists of one digest, oldest first, and the hashes of the samples they hold. */
interface UnackedState {
  lists: Map<bigint, Unacked>;
  /** sample hash -> number of samples with it in unacknowledged lists */
  hashes: Map<number, number>;
}

export class DigestEngine {
  private readonly configs = new Map<number, DigestConfig>();
  private readonly pending = new Map<number, Pending>();
  private readonly unacked = new Map<number, UnackedState>();
  private nextListId = 1n;
  /** samples dropped because no DigestEntry was configured */
  unconfiguredDrops = 0;
  suppressed = 0;
  sentLists = 0;
  sentSamples = 0;

  constructor(private readonly send: (list: DigestList) => void) {}

  configure(digestId: number, config: DigestConfig | undefined): void {
    if (config === undefined) {
      this.configs.delete(digestId);
      this.pending.delete(digestId);
      this.unacked.delete(digestId);
      return;
    }
    this.configs.set(digestId, config);
  }

  config(digestId: number): DigestConfig | undefined {
    return this.configs.get(digestId);
  }

  configured(): IterableIterator<[number, DigestConfig]> {
    return this.configs.entries();
  }

  /** One sample from the data plane at time `nowNs`. */
  add(digestId: number, sample: Value[], nowNs: bigint): void {
    const cfg = this.configs.get(digestId);
    if (!cfg) {
      this.unconfiguredDrops++;
      return;
    }
    this.expireAcks(digestId, nowNs);
    const h = sampleHash(sample);
    if (this.inUnacked(digestId, h, sample)) {
      this.suppressed++;
      return;
    }
    let p = this.pending.get(digestId);
    if (!p) this.pending.set(digestId, (p = { samples: [], set: new SampleSet(), firstNs: nowNs }));
    if (!p.set.add(h, sample)) {
      this.suppressed++;
      return;
    }
    p.samples.push(sample);
    const max = cfg.maxListSize <= 0 ? 1 : cfg.maxListSize;
    if (p.samples.length >= max || cfg.maxTimeoutNs === 0n) this.flush(digestId, nowNs);
  }

  /** Sends lists whose timeout has passed at `nowNs`. */
  tick(nowNs: bigint): void {
    for (const [id, p] of this.pending) {
      const cfg = this.configs.get(id);
      if (!cfg) continue;
      if (p.samples.length > 0 && cfg.maxTimeoutNs > 0n && nowNs - p.firstNs >= cfg.maxTimeoutNs) this.flush(id, nowNs);
    }
  }

  /** Sends every pending list now (end of a replay, or shutdown). */
  flushAll(nowNs: bigint): void {
    for (const id of [...this.pending.keys()]) this.flush(id, nowNs);
  }

  ack(digestId: number, listId: bigint): boolean {
    const st = this.unacked.get(digestId);
    const u = st?.lists.get(listId);
    if (!st || !u) return false;
    this.release(st, listId, u);
    return true;
  }

  private inUnacked(digestId: number, h: number, sample: readonly Value[]): boolean {
    const st = this.unacked.get(digestId);
    if (!st?.hashes.has(h)) return false;
    for (const u of st.lists.values()) if (u.set.has(h, sample)) return true;
    return false;
  }

  private release(st: UnackedState, listId: bigint, u: Unacked): void {
    st.lists.delete(listId);
    for (const [h, e] of u.set.byHash) {
      const n = (st.hashes.get(h) ?? 0) - (Array.isArray(e[0]) ? e.length : 1);
      if (n <= 0) st.hashes.delete(h);
      else st.hashes.set(h, n);
    }
  }

  /** Lists whose ack timeout passed no longer suppress their samples (oldest first: stops at the first live one). */
  private expireAcks(digestId: number, nowNs: bigint): void {
    const st = this.unacked.get(digestId);
    if (!st) return;
    for (const [id, u] of st.lists) {
      if (nowNs < u.deadlineNs) break;
      this.release(st, id, u);
    }
  }

  /** Lists sent and not yet acknowledged. */
  get unackedLists(): number {
    let n = 0;
    for (const st of this.unacked.values()) n += st.lists.size;
    return n;
  }

  private flush(digestId: number, nowNs: bigint): void {
    const p = this.pending.get(digestId);
    const cfg = this.configs.get(digestId);
    this.pending.delete(digestId);
    if (!p || p.samples.length === 0 || !cfg) return;
    const listId = this.nextListId++;
    if (cfg.ackTimeoutNs > 0n) {
      let st = this.unacked.get(digestId);
      if (!st) this.unacked.set(digestId, (st = { lists: new Map(), hashes: new Map() }));
      st.lists.set(listId, { set: p.set, deadlineNs: nowNs + cfg.ackTimeoutNs });
      for (const [h, e] of p.set.byHash) st.hashes.set(h, (st.hashes.get(h) ?? 0) + (Array.isArray(e[0]) ? e.length : 1));
    }
    this.sentLists++;
    this.sentSamples += p.samples.length;
    this.send({ digestId, listId, samples: p.samples, timestampNs: nowNs });
  }
}
