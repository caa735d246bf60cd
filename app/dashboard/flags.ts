// `rdma-telemetry dashboard`'s bounds as command-line flags, checked: what
// it keeps in memory (DashboardBounds) and how far back a dashboard that
// starts reads the topics.
import { DEFAULT_BOUNDS, type DashboardBounds } from "./store.js";

/** The flags, by the bound each sets, with the most each takes. */
export const DASHBOARD_BOUND_FLAGS: ReadonlyArray<readonly [flag: string, bound: keyof DashboardBounds, max: number]> = [
  ["intervals", "intervals", 100_000],
  ["max-pairs", "pairSeries", 100_000],
  ["max-flows", "flowSeries", 100_000],
  ["max-switches", "switches", 10_000],
  ["max-alerts", "alerts", 1_000_000],
];

/** The exporter's default interval: the window a starting dashboard re-reads is `intervals` of them unless --reread-seconds says. */
const DEFAULT_INTERVAL_SECONDS = 1;

export class DashboardFlagError extends Error {}

export interface DashboardFlags {
  bounds: DashboardBounds;
  /** how far back, in ms, a starting dashboard reads the topics present (0: from now) */
  rereadMs: number;
}

/** Reads the flags (values as given, undefined when absent); throws DashboardFlagError naming the first bad one. */
export function dashboardFlags(values: Readonly<Record<string, unknown>>): DashboardFlags {
  const bounds: DashboardBounds = { ...DEFAULT_BOUNDS };
  const int = (flag: string, min: number, max: number): number | undefined => {
    const v = values[flag];
    if (v === undefined) return undefined;
    const n = typeof v === "string" && /^\d+$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new DashboardFlagError(`--${flag} must be an integer from ${min} to ${max} (got '${String(v)}')`);
    return n;
  };
  for (const [flag, bound, max] of DASHBOARD_BOUND_FLAGS) bounds[bound] = int(flag, 1, max) ?? bounds[bound];
  const reread = int("reread-seconds", 0, 7 * 24 * 3600) ?? bounds.intervals * DEFAULT_INTERVAL_SECONDS;
  return { bounds, rereadMs: reread * 1000 };
}
