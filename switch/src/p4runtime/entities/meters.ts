// Indirect meters: one cell or all configured (MODIFY only), read back as
// configured (an unconfigured cell reads with no config: GREEN for all).
import { Update_Type, type DirectMeterEntry, type Entity, type MeterEntry } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import type { MeterArray } from "../../bmv2/meters.js";
import type { PipelineBinding } from "../binding.js";
import { configure, meterCell, p4MeterConfig, toMeterConfig } from "../meter-config.js";
import { RpcError } from "../rpc.js";

export function writeMeterEntry(b: PipelineBinding, type: Update_Type, e: MeterEntry): void {
  if (type !== Update_Type.MODIFY) throw new RpcError("INVALID_ARGUMENT", "meter entries can only be modified");
  if (e.counterData) throw new RpcError("UNIMPLEMENTED", "meter color counters are not supported");
  const arr = b.meters.get(e.meterId);
  if (!arr) throw new RpcError("NOT_FOUND", `no meter with id ${e.meterId}`);
  const config = e.config ? toMeterConfig(arr.name, e.config) : undefined;
  const indices = e.index ? [cell(arr, e.index.index)] : [...Array(arr.size).keys()];
  for (const i of indices) configure(arr, i, config);
}

/** Meter id 0 is every meter; no index is every cell. */
export function readMeterEntries(b: PipelineBinding, q: MeterEntry, out: Entity[]): void {
  if (q.counterData) throw new RpcError("UNIMPLEMENTED", "meter color counters are not supported");
  const ids = q.meterId === 0 ? [...b.meters.keys()] : [q.meterId];
  for (const id of ids) {
    const arr = b.meters.get(id);
    if (!arr) throw new RpcError("NOT_FOUND", `no meter with id ${id}`);
    const indices = q.index ? [cell(arr, q.index.index)] : [...Array(arr.size).keys()];
    for (const i of indices) {
      out.push({ entity: { $case: "meterEntry", value: { meterId: id, index: { index: BigInt(i) }, config: p4MeterConfig(arr.config[i]), counterData: undefined } } });
    }
  }
}

function cell(arr: MeterArray, index: bigint): number {
  if (index < 0n) throw new RpcError("INVALID_ARGUMENT", `meter '${arr.name}': index ${index} is negative`);
  if (index >= BigInt(arr.size)) throw new RpcError("OUT_OF_RANGE", `meter '${arr.name}' has ${arr.size} cells, index ${index}`);
  return Number(index);
}

/** A table entry's direct meter: MODIFY only, the entry must exist; no config resets it (GREEN for all). */
export function writeDirectMeterEntry(b: PipelineBinding, type: Update_Type, e: DirectMeterEntry): void {
  if (type !== Update_Type.MODIFY) throw new RpcError("INVALID_ARGUMENT", "direct meter entries can only be modified");
  if (e.counterData) throw new RpcError("UNIMPLEMENTED", "meter color counters are not supported");
  const { entry, dm } = directEntry(b, e);
  entry.meter = e.config ? meterCell(dm, e.config) : undefined;
}

export function readDirectMeterEntry(b: PipelineBinding, q: DirectMeterEntry, out: Entity[]): void {
  if (q.counterData) throw new RpcError("UNIMPLEMENTED", "meter color counters are not supported");
  const { entry } = directEntry(b, q);
  out.push({ entity: { $case: "directMeterEntry", value: { tableEntry: q.tableEntry, config: p4MeterConfig(entry.meter?.config[0]), counterData: undefined } } });
}

function directEntry(b: PipelineBinding, e: DirectMeterEntry) {
  const te = e.tableEntry;
  if (!te) throw new RpcError("INVALID_ARGUMENT", "direct meter entry without a table entry");
  const t = b.table(te.tableId);
  const dm = t.table.directMeter;
  if (!dm) throw new RpcError("INVALID_ARGUMENT", `table '${t.info.preamble!.name}' has no direct meter`);
  if (te.isDefaultAction) throw new RpcError("INVALID_ARGUMENT", `table '${t.info.preamble!.name}': the default entry has no direct meter (as on BMv2)`);
  const entry = t.table.get(b.decodeMatch(t, te.match), te.priority);
  if (!entry) throw new RpcError("NOT_FOUND", `table '${t.info.preamble!.name}': no such entry`);
  return { entry, dm };
}
