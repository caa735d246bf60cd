// Counters: indirect counter cells written (MODIFY only) and read, one cell
// or all; direct counters read and modified through their table entry, one
// entry or a whole table. Values are 64-bit (counter-values.ts).
import { Update_Type, type CounterData, type CounterEntry, type DirectCounterEntry, type Entity, type TableEntry } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { readCell, readIndex, writeCell, writeIndex, type CounterValue } from "../../bmv2/counter-values.js";
import type { CounterArray } from "../../bmv2/state.js";
import { counterData, type PipelineBinding, type TableBinding } from "../binding.js";
import { RpcError } from "../rpc.js";

// CounterData's counts are int64.
const MAX = (1n << 63n) - 1n;

function valueOf(d: CounterData, what: string): CounterValue {
  for (const [name, v] of [["packet_count", d.packetCount], ["byte_count", d.byteCount]] as const) {
    if (v < 0n || v > MAX) throw new RpcError("INVALID_ARGUMENT", `${what}: ${name} ${v} is negative`);
  }
  return { packets: d.packetCount, bytes: d.byteCount };
}

/** The cells an index names: all of them without one; INVALID_ARGUMENT below 0, OUT_OF_RANGE past the end. */
function cells(arr: CounterArray, index: { index: bigint } | undefined): number[] {
  if (!index) return [...Array(arr.size).keys()];
  const i = index.index;
  if (i < 0n) throw new RpcError("INVALID_ARGUMENT", `counter '${arr.name}': negative index ${i}`);
  if (i >= BigInt(arr.size)) throw new RpcError("OUT_OF_RANGE", `counter '${arr.name}' has ${arr.size} cells, index ${i}`);
  return [Number(i)];
}

export function writeCounterEntry(b: PipelineBinding, type: Update_Type, c: CounterEntry): void {
  if (type !== Update_Type.MODIFY) throw new RpcError("INVALID_ARGUMENT", "counter entries can only be modified");
  const arr = b.counters.get(c.counterId);
  if (!arr) throw new RpcError("NOT_FOUND", `no counter with id ${c.counterId}`);
  const indices = cells(arr, c.index);
  // A MODIFY without data leaves the cells as they are.
  if (!c.data) return;
  const v = valueOf(c.data, `counter '${arr.name}'`);
  for (const i of indices) writeIndex(arr, i, v);
}

/** Counter id 0 is every counter; no index is every cell. */
export function readCounterEntries(b: PipelineBinding, q: CounterEntry, out: Entity[]): void {
  if (q.counterId === 0 && q.index) throw new RpcError("INVALID_ARGUMENT", "a counter read with an index needs a counter id");
  const ids = q.counterId === 0 ? [...b.counters.keys()] : [q.counterId];
  for (const id of ids) {
    const arr = b.counters.get(id);
    if (!arr) throw new RpcError("NOT_FOUND", `no counter with id ${id}`);
    for (const i of cells(arr, q.index)) {
      out.push({ entity: { $case: "counterEntry", value: { counterId: id, index: { index: BigInt(i) }, data: counterData(readIndex(arr, i)) } } });
    }
  }
}

function directTable(b: PipelineBinding, te: TableEntry): TableBinding {
  const t = b.table(te.tableId);
  if (!t.table.withCounters) throw new RpcError("INVALID_ARGUMENT", `table '${t.info.preamble!.name}' has no direct counter`);
  return t;
}

/** The entry a DirectCounterEntry names (not the default one); NOT_FOUND if there is none. */
function directEntry(b: PipelineBinding, t: TableBinding, te: TableEntry) {
  const hit = t.table.get(b.decodeMatch(t, te.match), te.priority);
  if (!hit) throw new RpcError("NOT_FOUND", `table '${t.info.preamble!.name}': no such entry`);
  return hit;
}

/** MODIFY sets one entry's direct counter (no data: unchanged); INSERT and DELETE are refused. */
export function writeDirectCounterEntry(b: PipelineBinding, type: Update_Type, d: DirectCounterEntry): void {
  if (type !== Update_Type.MODIFY) throw new RpcError("INVALID_ARGUMENT", "direct counter entries can only be modified");
  const te = d.tableEntry;
  if (!te || te.tableId === 0) throw new RpcError("INVALID_ARGUMENT", "a direct counter write names its table entry");
  const t = directTable(b, te);
  const cell = te.isDefaultAction ? t.table.defaultCounter : directEntry(b, t, te);
  if (d.data) writeCell(cell, valueOf(d.data, `direct counter of '${t.info.preamble!.name}'`));
}

/** One entry's direct counter, or with no match every entry's of the table (table id 0: of every table with one). */
export function readDirectCounterEntry(b: PipelineBinding, q: DirectCounterEntry, out: Entity[]): void {
  const te = q.tableEntry;
  if (!te) throw new RpcError("INVALID_ARGUMENT", "direct counter read without a table entry");
  const push = (entry: TableEntry, v: CounterValue) => out.push({ entity: { $case: "directCounterEntry", value: { tableEntry: entry, data: counterData(v) } } });
  if (te.tableId !== 0 && te.isDefaultAction) {
    const t = directTable(b, te);
    push(b.encodeDefault(t, false), readCell(t.table.defaultCounter));
  } else if (te.tableId !== 0 && te.match.length > 0) {
    const t = directTable(b, te);
    const e = directEntry(b, t, te);
    push(b.encodeEntry(t, e, false), readCell(e));
  } else {
    const tables = te.tableId === 0 ? [...b.tables.values()].filter((t) => t.table.withCounters) : [directTable(b, te)];
    for (const t of tables) for (const e of t.table.entries()) push(b.encodeEntry(t, e, false), readCell(e));
  }
}
