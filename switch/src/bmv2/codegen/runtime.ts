// The generated source made into functions: what it is given (H: the bit
// and hash helpers, S: the field slots, X: tables, registers, counters) and
// the helpers only generated code calls.
import * as bits from "../bits.js";
import { HASH_ALGORITHMS } from "../crc.js";
import { executeMeter } from "../meters.js";
import type { CompiledFunctions, CounterArray } from "../state.js";
import type { MeterArray } from "../meters.js";
import type { MatchTable } from "../table.js";

/** The slots of a packet's fields: numbers (up to 53 bits), bigints, and header validity. */
export interface Slots {
  N: Float64Array;
  B: bigint[];
  V: Uint8Array;
}

/** What the generated code reaches by id: tables, register values and counter arrays. */
export interface Externs {
  tables: MatchTable[];
  registers: Array<Float64Array | bigint[]>;
  counters: CounterArray[];
  /** by id (meter ids are dense from 0, as p4c numbers them) */
  meters: MeterArray[];
}

/** Runs the source that generateSource() wrote, once: the compiled functions, bound to `slots` and `externs`. */
export function instantiate(source: string, slots: Slots, externs: Externs): CompiledFunctions {
  const factory = new Function("H", "S", "X", source) as (h: unknown, s: Slots, x: Externs) => CompiledFunctions;
  return factory({ ...bits, HASH: HASH_ALGORITHMS, tcm, satCast, usatCast, shr, oob, executeMeter }, slots, externs);
}

/** Two's complement of the low `w` bits of `x` (a signed cast). */
function tcm(x: number, w: number): number {
  const m = bits.mod2k(x, w);
  return m >= 2 ** (w - 1) ? m - 2 ** w : m;
}

/** Saturating cast to a signed `w`-bit integer. */
function satCast(x: bigint, w: number): bigint {
  const max = (1n << BigInt(w - 1)) - 1n;
  const min = -(1n << BigInt(w - 1));
  return x > max ? max : x < min ? min : x;
}

/** Saturating cast to an unsigned `w`-bit integer. */
function usatCast(x: bigint, w: number): bigint {
  const max = (1n << BigInt(w)) - 1n;
  return x > max ? max : x < 0n ? 0n : x;
}

/** Arithmetic right shift of a number by `s` bits. */
function shr(x: number, s: number): number {
  return s >= 53 ? (x < 0 ? -1 : 0) : Math.floor(x / 2 ** s);
}

/** A header stack index out of range (simple_switch stops on it): the packet fails. */
function oob(stack: string, index: number): never {
  throw new Error(`header stack '${stack}': index ${index} is out of range`);
}
