// Where an exporter group member's partition engines run: in the member's
// own thread (EngineHost's default), or spread over engine threads
// (`threads` > 0), each running the engines of the partitions given to it
// (partition mod threads). With engine threads, the member's thread does
// Kafka only (fetches, transactions) and the engines decode, join and encode
// beside it, on another core. Either way a partition's steps run one at a
// time, in the order the member asks for them, so what is published and
// committed is the same.
import { Worker } from "node:worker_threads";
import { PartitionEngine, type CommitSnapshot, type DigestsIn, type PartitionEngineOptions, type RestoreState } from "./partition-engine.js";

export interface EngineHost {
  /** Makes the partition's engine (a new one in place of any earlier). */
  open(o: PartitionEngineOptions): Promise<void>;
  restore(partition: number, s: RestoreState): Promise<void>;
  setCommitted(partition: number, keys: Set<string>): Promise<void>;
  /** Switches the partition's engine is to await (PartitionEngine.expect). */
  expect(partition: number, ids: string[]): Promise<void>;
  /** Takes digests, then gives what the transaction committing `offset` publishes. */
  take(partition: number, d: DigestsIn, committedOffset: bigint, offset: bigint): Promise<CommitSnapshot>;
  idle(partition: number, nowMs: number, offset: bigint): Promise<CommitSnapshot | undefined>;
  /** Lets the partition's engine go. */
  close(partition: number): void;
  stop(): Promise<void>;
}

/** Partition engines by partition, called in their own thread: LocalEngines's, or an engine thread's (engine-worker.ts). */
export class PartitionEngines {
  private readonly engines = new Map<number, PartitionEngine>();

  private of(partition: number): PartitionEngine {
    const e = this.engines.get(partition);
    if (!e) throw new Error(`partition ${partition} has no engine`);
    return e;
  }

  open(o: PartitionEngineOptions): void {
    this.engines.set(o.partition, new PartitionEngine(o));
  }

  restore(partition: number, s: RestoreState): void {
    this.of(partition).restore(s);
  }

  setCommitted(partition: number, keys: Set<string>): void {
    this.of(partition).setCommitted(keys);
  }

  expect(partition: number, ids: string[]): void {
    this.of(partition).expect(ids);
  }

  take(partition: number, d: DigestsIn, committedOffset: bigint, offset: bigint): CommitSnapshot {
    const e = this.of(partition);
    e.take(d, committedOffset);
    return e.snapshot(offset);
  }

  idle(partition: number, nowMs: number, offset: bigint): CommitSnapshot | undefined {
    return this.of(partition).idle(nowMs, offset);
  }

  close(partition: number): void {
    this.engines.delete(partition);
  }
}

/** The engines in the member's own thread. */
export class LocalEngines implements EngineHost {
  private readonly engines = new PartitionEngines();

  open(o: PartitionEngineOptions): Promise<void> {
    return Promise.resolve(this.engines.open(o));
  }

  restore(partition: number, s: RestoreState): Promise<void> {
    return Promise.resolve(this.engines.restore(partition, s));
  }

  setCommitted(partition: number, keys: Set<string>): Promise<void> {
    return Promise.resolve(this.engines.setCommitted(partition, keys));
  }

  expect(partition: number, ids: string[]): Promise<void> {
    return Promise.resolve(this.engines.expect(partition, ids));
  }

  take(partition: number, d: DigestsIn, committedOffset: bigint, offset: bigint): Promise<CommitSnapshot> {
    return Promise.resolve(this.engines.take(partition, d, committedOffset, offset));
  }

  idle(partition: number, nowMs: number, offset: bigint): Promise<CommitSnapshot | undefined> {
    return Promise.resolve(this.engines.idle(partition, nowMs, offset));
  }

  close(partition: number): void {
    this.engines.close(partition);
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }
}

/** A request to an engine thread (engine-worker.ts answers it). */
export type EngineRequest =
  | { id: number; op: "open"; o: PartitionEngineOptions }
  | { id: number; op: "restore"; partition: number; s: RestoreState }
  | { id: number; op: "committed"; partition: number; keys: string[] }
  | { id: number; op: "expect"; partition: number; ids: string[] }
  | { id: number; op: "take"; partition: number; offsets: BigInt64Array; timestamps: Float64Array; lengths: Int32Array; bytes: Uint8Array; committedOffset: bigint; offset: bigint }
  | { id: number; op: "idle"; partition: number; nowMs: number; offset: bigint }
  | { id: number; op: "close"; partition: number };

/** An engine thread's answer: a snapshot's messages with their values in one buffer (`bytes`, `lengths`). */
export interface EngineAnswer {
  id: number;
  error?: string;
  snapshot?: Omit<CommitSnapshot, "messages"> & { messages: Array<{ topic: string; key: string; headers: Record<string, string> }>; lengths: Int32Array; bytes: Uint8Array };
}

/** The digests' values in one buffer (lengths, -1 for none), handed to an engine thread without copying it again. */
export function packDigests(d: DigestsIn): { offsets: BigInt64Array; timestamps: Float64Array; lengths: Int32Array; bytes: Uint8Array } {
  const n = d.offsets.length;
  const lengths = new Int32Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const v = d.values[i];
    lengths[i] = v ? v.length : -1;
    total += v ? v.length : 0;
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (let i = 0; i < n; i++) {
    const v = d.values[i];
    if (v) {
      bytes.set(v, at);
      at += v.length;
    }
  }
  return { offsets: BigInt64Array.from(d.offsets), timestamps: Float64Array.from(d.timestamps), lengths, bytes };
}

export function unpackDigests(p: { offsets: BigInt64Array; timestamps: Float64Array; lengths: Int32Array; bytes: Uint8Array }): DigestsIn {
  const values: Array<Uint8Array | null> = [];
  let at = 0;
  for (const l of p.lengths) {
    if (l < 0) values.push(null);
    else {
      values.push(p.bytes.subarray(at, at + l));
      at += l;
    }
  }
  return { offsets: [...p.offsets], timestamps: [...p.timestamps], values };
}

/** A snapshot's message values in one buffer, to hand back without a copy per message. */
export function packSnapshot(s: CommitSnapshot): NonNullable<EngineAnswer["snapshot"]> {
  const lengths = new Int32Array(s.messages.length);
  let total = 0;
  s.messages.forEach((m, i) => {
    lengths[i] = m.value.length;
    total += m.value.length;
  });
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const m of s.messages) {
    bytes.set(m.value, at);
    at += m.value.length;
  }
  return { ...s, messages: s.messages.map((m) => ({ topic: m.topic, key: m.key, headers: m.headers })), lengths, bytes };
}

function unpackSnapshot(s: NonNullable<EngineAnswer["snapshot"]>): CommitSnapshot {
  const buf = Buffer.from(s.bytes.buffer, s.bytes.byteOffset, s.bytes.byteLength);
  let at = 0;
  const messages = s.messages.map((m, i) => {
    const l = s.lengths[i]!;
    const value = buf.subarray(at, at + l);
    at += l;
    return { ...m, value };
  });
  const { lengths: _l, bytes: _b, ...rest } = s;
  return { ...rest, messages };
}

interface Pending {
  resolve: (a: EngineAnswer) => void;
  reject: (e: Error) => void;
}

/** One engine thread. */
class EngineThread {
  private worker: Worker;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  readonly partitions = new Set<number>();
  private stopped = false;

  constructor(private readonly onLost: (partitions: number[], err: Error) => void) {
    this.worker = this.spawn();
  }

  private spawn(): Worker {
    // From the sources (tests, benchmarks run with tsx), the worker is the .ts file beside this one.
    const fromSource = import.meta.url.endsWith(".ts");
    const w = new Worker(new URL(fromSource ? "./engine-worker.ts" : "./engine-worker.js", import.meta.url), fromSource ? { execArgv: ["--conditions=source", "--import", "tsx"] } : {});
    w.on("message", (a: EngineAnswer) => {
      const p = this.pending.get(a.id);
      if (!p) return;
      this.pending.delete(a.id);
      if (a.error !== undefined) p.reject(new Error(a.error));
      else p.resolve(a);
    });
    const lost = (err: Error) => {
      if (this.stopped || this.worker !== w) return;
      // Its engines are gone: their partitions are taken on again from their committed state.
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      const partitions = [...this.partitions];
      this.partitions.clear();
      this.worker = this.spawn();
      this.onLost(partitions, err);
    };
    w.on("error", (err) => lost(err));
    w.on("exit", (code) => lost(new Error(`an engine thread exited (${code})`)));
    w.unref();
    return w;
  }

  request(r: EngineRequest extends infer R ? (R extends unknown ? Omit<R, "id"> : never) : never, transfer: ArrayBuffer[] = []): Promise<EngineAnswer> {
    if (this.stopped) return Promise.reject(new Error("the engine threads are stopped"));
    const id = this.nextId++;
    return new Promise<EngineAnswer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...r, id }, transfer);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const p of this.pending.values()) p.reject(new Error("the engine threads are stopped"));
    this.pending.clear();
    await this.worker.terminate();
  }
}

/** The engines spread over `threads` engine threads. */
export class ThreadedEngines implements EngineHost {
  private readonly threads: EngineThread[];

  constructor(threads: number, onLost: (partitions: number[], err: Error) => void) {
    this.threads = Array.from({ length: threads }, () => new EngineThread(onLost));
  }

  private of(partition: number): EngineThread {
    return this.threads[partition % this.threads.length]!;
  }

  async open(o: PartitionEngineOptions): Promise<void> {
    const t = this.of(o.partition);
    t.partitions.add(o.partition);
    await t.request({ op: "open", o });
  }

  async restore(partition: number, s: RestoreState): Promise<void> {
    await this.of(partition).request({ op: "restore", partition, s });
  }

  async setCommitted(partition: number, keys: Set<string>): Promise<void> {
    await this.of(partition).request({ op: "committed", partition, keys: [...keys] });
  }

  async expect(partition: number, ids: string[]): Promise<void> {
    await this.of(partition).request({ op: "expect", partition, ids });
  }

  async take(partition: number, d: DigestsIn, committedOffset: bigint, offset: bigint): Promise<CommitSnapshot> {
    const p = packDigests(d);
    const a = await this.of(partition).request({ op: "take", partition, ...p, committedOffset, offset }, [p.offsets.buffer as ArrayBuffer, p.timestamps.buffer as ArrayBuffer, p.lengths.buffer as ArrayBuffer, p.bytes.buffer as ArrayBuffer]);
    return unpackSnapshot(a.snapshot!);
  }

  async idle(partition: number, nowMs: number, offset: bigint): Promise<CommitSnapshot | undefined> {
    const a = await this.of(partition).request({ op: "idle", partition, nowMs, offset });
    return a.snapshot ? unpackSnapshot(a.snapshot) : undefined;
  }

  close(partition: number): void {
    const t = this.of(partition);
    t.partitions.delete(partition);
    t.request({ op: "close", partition }).catch(() => undefined);
  }

  async stop(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.stop()));
  }
}
