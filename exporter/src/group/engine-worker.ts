// An engine thread of an exporter group member (engine-threads.ts): runs the
// engines of the partitions given to it, one request at a time.
import { parentPort } from "node:worker_threads";
import { packSnapshot, unpackDigests, type EngineAnswer, type EngineRequest } from "./engine-threads.js";
import { PartitionEngine } from "./partition-engine.js";

const engines = new Map<number, PartitionEngine>();

function of(partition: number): PartitionEngine {
  const e = engines.get(partition);
  if (!e) throw new Error(`partition ${partition} has no engine`);
  return e;
}

parentPort!.on("message", (r: EngineRequest) => {
  let a: EngineAnswer;
  const transfer: ArrayBuffer[] = [];
  try {
    switch (r.op) {
      case "open":
        engines.set(r.o.partition, new PartitionEngine(r.o));
        a = { id: r.id };
        break;
      case "restore":
        of(r.partition).restore(r.s);
        a = { id: r.id };
        break;
      case "committed":
        of(r.partition).setCommitted(new Set(r.keys));
        a = { id: r.id };
        break;
      case "take": {
        const e = of(r.partition);
        e.take(unpackDigests(r), r.committedOffset);
        const snapshot = packSnapshot(e.snapshot(r.offset));
        transfer.push(snapshot.lengths.buffer as ArrayBuffer, snapshot.bytes.buffer as ArrayBuffer);
        a = { id: r.id, snapshot };
        break;
      }
      case "idle": {
        const s = of(r.partition).idle(r.nowMs, r.offset);
        const snapshot = s ? packSnapshot(s) : undefined;
        if (snapshot) transfer.push(snapshot.lengths.buffer as ArrayBuffer, snapshot.bytes.buffer as ArrayBuffer);
        a = { id: r.id, snapshot };
        break;
      }
      case "close":
        engines.delete(r.partition);
        a = { id: r.id };
        break;
    }
  } catch (err) {
    a = { id: r.id, error: (err as Error).message };
  }
  parentPort!.postMessage(a, transfer);
});
