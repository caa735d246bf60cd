// An engine thread of an exporter group member (engine-threads.ts): runs the
// engines of the partitions given to it, one request at a time.
import { parentPort } from "node:worker_threads";
import { packSnapshot, PartitionEngines, unpackDigests, type EngineAnswer, type EngineRequest } from "./engine-threads.js";
import type { CommitSnapshot } from "./partition-engine.js";

const engines = new PartitionEngines();

parentPort!.on("message", (r: EngineRequest) => {
  let snapshot: CommitSnapshot | undefined;
  let a: EngineAnswer;
  try {
    switch (r.op) {
      case "open":
        engines.open(r.o);
        break;
      case "restore":
        engines.restore(r.partition, r.s);
        break;
      case "committed":
        engines.setCommitted(r.partition, new Set(r.keys));
        break;
      case "expect":
        engines.expect(r.partition, r.ids);
        break;
      case "take":
        snapshot = engines.take(r.partition, unpackDigests(r), r.committedOffset, r.offset);
        break;
      case "idle":
        snapshot = engines.idle(r.partition, r.nowMs, r.offset);
        break;
      case "close":
        engines.close(r.partition);
        break;
    }
    a = { id: r.id, snapshot: snapshot && packSnapshot(snapshot) };
  } catch (err) {
    a = { id: r.id, error: (err as Error).message };
  }
  // The snapshot's buffers move to the member's thread, not copied.
  parentPort!.postMessage(a, a.snapshot ? [a.snapshot.lengths.buffer as ArrayBuffer, a.snapshot.bytes.buffer as ArrayBuffer] : []);
});
