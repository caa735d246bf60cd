// Counter values past 2^53. The packet path counts in doubles, which are exact
// integers up to 2^53; P4Runtime counters are 64-bit. Every read, every write
// and a sweep once a second of switch time fold a double at or above 2^48
// into a bigint kept beside it, so a count never loses a unit: between two
// sweeps no port could add the 2^53 - 2^48 that would make a double inexact.
import type { CounterArray } from "./state.js";
import type { CounterCell, CounterValue } from "./table.js";

export type { CounterCell, CounterValue };

export const FOLD_AT = 2 ** 48;

export function foldCell(c: CounterCell): void {
  if (c.packets < FOLD_AT && c.bytes < FOLD_AT) return;
  const h = (c.high ??= { packets: 0n, bytes: 0n });
  h.packets += BigInt(c.packets);
  h.bytes += BigInt(c.bytes);
  c.packets = 0;
  c.bytes = 0;
}

export function readCell(c: CounterCell): CounterValue {
  foldCell(c);
  const h = c.high;
  return h ? { packets: h.packets + BigInt(c.packets), bytes: h.bytes + BigInt(c.bytes) } : { packets: BigInt(c.packets), bytes: BigInt(c.bytes) };
}

export function writeCell(c: CounterCell, v: CounterValue): void {
  if (v.packets < FOLD_AT && v.bytes < FOLD_AT) {
    c.packets = Number(v.packets);
    c.bytes = Number(v.bytes);
    c.high = undefined;
  } else {
    c.packets = 0;
    c.bytes = 0;
    c.high = { packets: v.packets, bytes: v.bytes };
  }
}

function foldIndex(arr: CounterArray, i: number): void {
  const p = arr.packets[i]!;
  const b = arr.bytes[i]!;
  if (p < FOLD_AT && b < FOLD_AT) return;
  const h = arr.high.get(i) ?? { packets: 0n, bytes: 0n };
  h.packets += BigInt(p);
  h.bytes += BigInt(b);
  arr.high.set(i, h);
  arr.packets[i] = 0;
  arr.bytes[i] = 0;
}

export function readIndex(arr: CounterArray, i: number): CounterValue {
  foldIndex(arr, i);
  const h = arr.high.get(i);
  const p = BigInt(arr.packets[i]!);
  const b = BigInt(arr.bytes[i]!);
  return h ? { packets: h.packets + p, bytes: h.bytes + b } : { packets: p, bytes: b };
}

export function writeIndex(arr: CounterArray, i: number, v: CounterValue): void {
  if (v.packets < FOLD_AT && v.bytes < FOLD_AT) {
    arr.packets[i] = Number(v.packets);
    arr.bytes[i] = Number(v.bytes);
    arr.high.delete(i);
  } else {
    arr.packets[i] = 0;
    arr.bytes[i] = 0;
    arr.high.set(i, { packets: v.packets, bytes: v.bytes });
  }
}

/** The once-a-second sweep over every indirect counter cell. */
export function foldArray(arr: CounterArray): void {
  const { packets, bytes } = arr;
  for (let i = 0; i < arr.size; i++) if (packets[i]! >= FOLD_AT || bytes[i]! >= FOLD_AT) foldIndex(arr, i);
}
