// Indirect meters: one cell or all configured (MODIFY only), read back as
// configured (an unconfigured cell reads with no config: GREEN for all).
import { Update_Type, type Entity, type MeterConfig as P4MeterConfig, type MeterEntry } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { configureMeter, MeterConfigError } from "../../bmv2/meters.js";
import type { MeterArray, MeterConfig } from "../../bmv2/state.js";
import type { PipelineBinding } from "../binding.js";
import { RpcError } from "../rpc.js";

export function writeMeterEntry(b: PipelineBinding, type: Update_Type, e: MeterEntry): void {
  if (type !== Update_Type.MODIFY) throw new RpcError("INVALID_ARGUMENT", "meter entries can only be modified");
  if (e.counterData) throw new RpcError("UNIMPLEMENTED", "meter color counters are not supported");
  const arr = b.meters.get(e.meterId);
  if (!arr) throw new RpcError("NOT_FOUND", `no meter with id ${e.meterId}`);
  const config = e.config ? toConfig(arr, e.config) : undefined;
  const indices = e.index ? [cell(arr, e.index.index)] : [...Array(arr.size).keys()];
  try {
    for (const i of indices) configureMeter(arr, i, config);
  } catch (err) {
    if (err instanceof MeterConfigError) throw new RpcError("INVALID_ARGUMENT", err.message);
    throw err;
  }
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
      const c = arr.config[i];
      const config = c ? { cir: BigInt(c.cir), cburst: BigInt(c.cburst), pir: BigInt(c.pir), pburst: BigInt(c.pburst), eburst: 0n } : undefined;
      out.push({ entity: { $case: "meterEntry", value: { meterId: id, index: { index: BigInt(i) }, config, counterData: undefined } } });
    }
  }
}

function cell(arr: MeterArray, index: bigint): number {
  if (index < 0n) throw new RpcError("INVALID_ARGUMENT", `meter '${arr.name}': index ${index} is negative`);
  if (index >= BigInt(arr.size)) throw new RpcError("OUT_OF_RANGE", `meter '${arr.name}' has ${arr.size} cells, index ${index}`);
  return Number(index);
}

/** trTCM: eburst must be unset; rates and bursts are non-negative, the committed rate at most the peak. */
function toConfig(arr: MeterArray, c: P4MeterConfig): MeterConfig {
  if (c.eburst !== 0n) throw new RpcError("INVALID_ARGUMENT", `meter '${arr.name}' is a two-rate meter: eburst must be unset`);
  for (const [k, v] of [["cir", c.cir], ["cburst", c.cburst], ["pir", c.pir], ["pburst", c.pburst]] as const) {
    if (v < 0n) throw new RpcError("INVALID_ARGUMENT", `meter '${arr.name}': ${k} ${v} is negative`);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new RpcError("INVALID_ARGUMENT", `meter '${arr.name}': ${k} ${v} is too large`);
  }
  return { cir: Number(c.cir), cburst: Number(c.cburst), pir: Number(c.pir), pburst: Number(c.pburst) };
}
