// Meters as BMv2 runs them (bm_sim/meters.cpp): two token buckets a cell,
// peak then committed, filled at their rate since the switch started; a
// packet the peak bucket cannot pay for is RED (2), one the committed
// bucket cannot pay for YELLOW (1), else GREEN (0). Time is the packet's
// arrival (the switch's clock), in whole µs as BMv2 counts it.
import { SwitchError } from "./errors.js";
import type { FieldInfo } from "./layout.js";

/** A meter array (two-rate three-color, as BMv2's): the peak bucket first, then the committed one, per cell. */
export interface MeterArray {
  name: string;
  id: number;
  size: number;
  /** bytes (the packet's length on the wire) or packets */
  bytes: boolean;
  /** per cell: 1 when configured (an unconfigured meter marks every packet GREEN) */
  configured: Uint8Array;
  /** per cell and bucket (cell * 2: peak, cell * 2 + 1: committed): tokens a µs, burst, tokens, tokens counted up to the last packet */
  rate: Float64Array;
  burst: Float64Array;
  tokens: Float64Array;
  last: Float64Array;
  /** per cell: the configuration as written (for reads) */
  config: Array<MeterConfig | undefined>;
}

/** A direct meter: bound to a table, its color written to `target` on every hit, each entry a cell of its own. */
export interface DirectMeterInfo {
  name: string;
  id: number;
  bytes: boolean;
  target: FieldInfo;
}

/** A meter cell's rates: committed and peak, in units (bytes or packets) a second, and bursts in units. */
export interface MeterConfig {
  cir: number;
  cburst: number;
  pir: number;
  pburst: number;
}

export const GREEN = 0;
export const YELLOW = 1;
export const RED = 2;

export function newMeterArray(name: string, id: number, size: number, bytes: boolean): MeterArray {
  return {
    name, id, size, bytes,
    configured: new Uint8Array(size),
    rate: new Float64Array(size * 2),
    burst: new Float64Array(size * 2),
    tokens: new Float64Array(size * 2),
    last: new Float64Array(size * 2),
    config: new Array<MeterConfig | undefined>(size).fill(undefined),
  };
}

/** A meter configuration the switch cannot take. */
export class MeterConfigError extends SwitchError {
  override readonly name = "MeterConfigError";
  constructor(message: string) {
    super(message, "METER_CONFIG");
  }
}

/** Configures one cell (undefined: back to unconfigured, every packet GREEN); its buckets start full. */
export function configureMeter(m: MeterArray, index: number, c: MeterConfig | undefined): void {
  if (!Number.isInteger(index) || index < 0 || index >= m.size) throw new MeterConfigError(`meter '${m.name}' has ${m.size} cells, index ${index}`);
  if (!c) {
    m.configured[index] = 0;
    m.config[index] = undefined;
    return;
  }
  for (const [k, v] of Object.entries(c)) if (!Number.isFinite(v) || v < 0) throw new MeterConfigError(`meter '${m.name}': ${k} ${v} is not a count`);
  if (c.cir > c.pir) throw new MeterConfigError(`meter '${m.name}': the committed rate ${c.cir} exceeds the peak rate ${c.pir}`);
  const k = index * 2;
  m.rate[k] = c.pir / 1e6;
  m.burst[k] = c.pburst;
  m.rate[k + 1] = c.cir / 1e6;
  m.burst[k + 1] = c.cburst;
  m.tokens[k] = c.pburst;
  m.tokens[k + 1] = c.cburst;
  m.last[k] = 0;
  m.last[k + 1] = 0;
  m.configured[index] = 1;
  m.config[index] = { ...c };
}

/** The color of a packet of `length` bytes at `nowNs` through cell `index` (the generated code calls it). */
export function executeMeter(m: MeterArray, index: number, length: number, nowNs: number): number {
  if (m.configured[index] !== 1) return GREEN;
  const micros = Math.floor(nowNs / 1000);
  const input = m.bytes ? length : 1;
  for (let b = 0; b < 2; b++) {
    const k = index * 2 + b;
    const since = Math.floor(micros * m.rate[k]!);
    const fresh = since - m.last[k]!;
    if (fresh > 0) m.last[k] = since;
    const tokens = Math.min(m.tokens[k]! + Math.max(0, fresh), m.burst[k]!);
    if (tokens < input) {
      m.tokens[k] = tokens;
      return b === 0 ? RED : YELLOW;
    }
    m.tokens[k] = tokens - input;
  }
  return GREEN;
}
