// Counters: indirect counter cells written (MODIFY only) and read, one cell
// or all; direct counters read through their table entry.
import { Update_Type, type CounterEntry, type DirectCounterEntry, type Entity } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import type { PipelineBinding } from "../binding.js";
import { RpcError } from "../rpc.js";

export function writeCounterEntry(b: PipelineBinding, type: Update_Type, c: CounterEntry): void {
  if (type !== Update_Type.MODIFY) throw new RpcError("INVALID_ARGUMENT", "counter entries can only be modified");
  const arr = b.counters.get(c.counterId);
  if (!arr) throw new RpcError("NOT_FOUND", `no counter with id ${c.counterId}`);
  const indices = c.index ? [Number(c.index.index)] : [...Array(arr.size).keys()];
  for (const i of indices) if (i < 0 || i >= arr.size) throw new RpcError("OUT_OF_RANGE", `counter '${arr.name}' has ${arr.size} cells, index ${i}`);
  // A MODIFY without data leaves the cells as they are.
  if (!c.data) return;
  for (const i of indices) {
    arr.packets[i] = Number(c.data.packetCount);
    arr.bytes[i] = Number(c.data.byteCount);
  }
}

/** Counter id 0 is every counter; no index is every cell. */
export function readCounterEntries(b: PipelineBinding, q: CounterEntry, out: Entity[]): void {
  const ids = q.counterId === 0 ? [...b.counters.keys()] : [q.counterId];
  for (const id of ids) {
    const arr = b.counters.get(id);
    if (!arr) throw new RpcError("NOT_FOUND", `no counter with id ${id}`);
    const indices = q.index ? [Number(q.index.index)] : [...Array(arr.size).keys()];
    for (const i of indices) {
      if (i < 0 || i >= arr.size) throw new RpcError("OUT_OF_RANGE", `counter '${arr.name}' has ${arr.size} cells, index ${i}`);
      out.push({ entity: { $case: "counterEntry", value: { counterId: id, index: { index: BigInt(i) }, data: { packetCount: BigInt(arr.packets[i]!), byteCount: BigInt(arr.bytes[i]!) } } } });
    }
  }
}

export function readDirectCounterEntry(b: PipelineBinding, q: DirectCounterEntry, out: Entity[]): void {
  const te = q.tableEntry;
  if (!te) throw new RpcError("INVALID_ARGUMENT", "direct counter read without a table entry");
  const t = b.table(te.tableId);
  const hit = t.table.get(b.decodeMatch(t, te.match), te.priority);
  if (!hit) throw new RpcError("NOT_FOUND", `table '${t.info.preamble!.name}': no such entry`);
  out.push({ entity: { $case: "directCounterEntry", value: { tableEntry: te, data: { packetCount: BigInt(hit.packets), byteCount: BigInt(hit.bytes) } } } });
}
