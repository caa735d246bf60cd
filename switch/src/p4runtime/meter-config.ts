// Meter configurations between P4Runtime (MeterConfig) and the switch: the
// checks of a two-rate meter's config, and direct meter cells.
import type { MeterConfig as P4MeterConfig } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { configureMeter, MeterConfigError, newMeterArray } from "../bmv2/meters.js";
import type { DirectMeterInfo, MeterArray, MeterConfig } from "../bmv2/meters.js";
import { RpcError } from "./rpc.js";

/** trTCM: eburst must be unset; rates and bursts are non-negative, the committed rate at most the peak. */
export function toMeterConfig(name: string, c: P4MeterConfig): MeterConfig {
  if (c.eburst !== 0n) throw new RpcError("INVALID_ARGUMENT", `meter '${name}' is a two-rate meter: eburst must be unset`);
  for (const [k, v] of [["cir", c.cir], ["cburst", c.cburst], ["pir", c.pir], ["pburst", c.pburst]] as const) {
    if (v < 0n) throw new RpcError("INVALID_ARGUMENT", `meter '${name}': ${k} ${v} is negative`);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new RpcError("INVALID_ARGUMENT", `meter '${name}': ${k} ${v} is too large`);
  }
  if (c.cir > c.pir) throw new RpcError("INVALID_ARGUMENT", `meter '${name}': the committed rate ${c.cir} exceeds the peak rate ${c.pir}`);
  return { cir: Number(c.cir), cburst: Number(c.cburst), pir: Number(c.pir), pburst: Number(c.pburst) };
}

export function p4MeterConfig(c: MeterConfig | undefined): P4MeterConfig | undefined {
  return c ? { cir: BigInt(c.cir), cburst: BigInt(c.cburst), pir: BigInt(c.pir), pburst: BigInt(c.pburst), eburst: 0n } : undefined;
}

/** A table entry's direct meter cell configured as `c`. */
export function meterCell(dm: DirectMeterInfo, c: P4MeterConfig): MeterArray {
  const cell = newMeterArray(dm.name, dm.id, 1, dm.bytes);
  configure(cell, 0, toMeterConfig(dm.name, c));
  return cell;
}

/** configureMeter, its refusals as INVALID_ARGUMENT. */
export function configure(m: MeterArray, index: number, c: MeterConfig | undefined): void {
  try {
    configureMeter(m, index, c);
  } catch (err) {
    if (err instanceof MeterConfigError) throw new RpcError("INVALID_ARGUMENT", err.message);
    throw err;
  }
}
