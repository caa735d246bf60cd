// Threshold alerts on interval aggregates, per metric and scope, raised when
// a value crosses `raise` and cleared when it falls back below `clear`
// (hysteresis: clear < raise, so a value hovering at the line does not flap).
import type { AlertJson, FlowAggregateJson, IoAggregateJson, RecordJson, StatsJson } from "@rdma-telemetry/contract";

export type AlertScope = "host" | "target" | "pair" | "flow";

export interface AlertRule {
  /** "dal_ns.p99", "rtt_ns.p99", "dpl_ns.p99", "e2e_c_ns.p99", "fnr", "fct_ns.p99", "gap_ns.p50", "incomplete", ... */
  metric: string;
  scope: AlertScope;
  raise: number;
  clear: number;
}

export const DEFAULT_ALERT_RULES: readonly AlertRule[] = [
  { metric: "dal_ns.p99", scope: "target", raise: 250_000, clear: 180_000 },
  { metric: "rtt_ns.p99", scope: "pair", raise: 40_000, clear: 25_000 },
  { metric: "dpl_ns.p99", scope: "host", raise: 40_000, clear: 25_000 },
  { metric: "incomplete", scope: "pair", raise: 1, clear: 0.5 },
  { metric: "fnr", scope: "flow", raise: 0.01, clear: 0.002 },
  { metric: "gap_ns.p50", scope: "flow", raise: 8_000_000, clear: 6_000_000 },
];

export function validateRules(rules: readonly AlertRule[]): void {
  rules.forEach((r, i) => {
    if (!(r.clear < r.raise)) throw new Error(`alert rule ${i} (${r.metric}): clear (${r.clear}) must be below raise (${r.raise})`);
    if (!["host", "target", "pair", "flow"].includes(r.scope)) throw new Error(`alert rule ${i} (${r.metric}): unknown scope '${r.scope}'`);
  });
}

function metricValue(rec: IoAggregateJson | FlowAggregateJson, metric: string): number | undefined {
  const [field, stat] = metric.split(".") as [string, keyof StatsJson | undefined];
  const v = (rec as unknown as Record<string, unknown>)[field];
  if (typeof v === "number") return v;
  if (v && typeof v === "object" && stat) {
    const s = (v as StatsJson)[stat];
    return typeof s === "number" ? s : undefined;
  }
  return undefined;
}

/** Characters of one alert's hash in alertHash's encoding (6 bits each: 42 bits). */
export const ALERT_HASH_CHARS = 7;
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/**
 * A compact name of one alert (rule and scope key), for carrying which alerts
 * are raised where space is short (an exporter group's offset metadata):
 * 42 bits of two FNV-1a hashes, ALERT_HASH_CHARS characters of base64url.
 */
export function alertHash(key: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x050c5d1f;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x01000193) ^ (h2 >>> 13);
  }
  h1 >>>= 0;
  h2 >>>= 0;
  let out = "";
  for (let i = 0; i < 5; i++) out += B64[(h1 >>> (i * 6)) & 63];
  out += B64[((h1 >>> 30) | ((h2 & 15) << 2)) & 63];
  out += B64[(h2 >>> 4) & 63];
  return out;
}

export class AlertEngine {
  private readonly active = new Map<string, boolean>();
  /** hashes (alertHash) of alerts raised per an earlier engine's state (restoreRaised) and not raised or cleared here since */
  private restored = new Set<string>();
  /** worst value per (rule, scope key) within the interval being evaluated */
  private pending = new Map<string, { rule: AlertRule; key: string; value: number; switchId: string; interval: string; at: string }>();
  private currentInterval: string | undefined;

  constructor(private readonly rules: readonly AlertRule[], private readonly emit: (a: AlertJson) => void) {
    validateRules(rules);
  }

  /** Feeds every record; aggregates of one interval are evaluated when the next interval begins (or on flush). */
  observe(rec: RecordJson): void {
    if (rec.type !== "io_interval" && rec.type !== "flow_interval") return;
    if (this.currentInterval !== undefined && rec.interval_start_unix_ns !== this.currentInterval) this.flush();
    this.currentInterval = rec.interval_start_unix_ns;
    for (const rule of this.rules) {
      const isFlow = rec.type === "flow_interval";
      if ((rule.scope === "flow") !== isFlow) continue;
      const value = metricValue(rec, rule.metric);
      if (value === undefined) continue;
      let key: string;
      if (rec.type === "flow_interval") key = `${rec.src}|${rec.dst}|${rec.dest_qp}`;
      else key = rule.scope === "host" ? rec.host : rule.scope === "target" ? rec.target : `${rec.host}|${rec.target}`;
      const k = `${rule.metric}@${rule.scope}:${key}`;
      const prev = this.pending.get(k);
      if (!prev || value > prev.value) this.pending.set(k, { rule, key, value, switchId: rec.switch_id, interval: rec.interval_start_unix_ns, at: rec.interval_end_unix_ns });
    }
  }

  /** Evaluates the pending interval: raises and clears. */
  flush(): void {
    for (const [k, p] of this.pending) {
      const on = this.active.get(k) ?? (this.restored.size > 0 && this.restored.has(alertHash(k)));
      if (!on && p.value > p.rule.raise) this.fire(k, p, "raised");
      else if (on && p.value < p.rule.clear) this.fire(k, p, "cleared");
    }
    this.pending = new Map();
  }

  private fire(k: string, p: { rule: AlertRule; key: string; value: number; switchId: string; interval: string; at: string }, state: "raised" | "cleared"): void {
    this.active.set(k, state === "raised");
    if (this.restored.size) this.restored.delete(alertHash(k));
    this.emit({
      type: "alert",
      switch_id: p.switchId,
      interval_start_unix_ns: p.interval,
      metric: p.rule.metric,
      scope: p.rule.scope,
      scope_key: p.key,
      state,
      value: p.value,
      raise_threshold: p.rule.raise,
      clear_threshold: p.rule.clear,
      at_unix_ns: p.at,
    });
  }

  /**
   * The alerts raised now, as alertHash values (restoreRaised takes them):
   * an engine restored from them raises and clears as this one would.
   */
  raisedHashes(): string[] {
    const out = new Set(this.restored);
    for (const [k, on] of this.active) if (on) out.add(alertHash(k));
    return [...out];
  }

  /** Takes the alerts an earlier engine had raised (its raisedHashes), before any record is observed. */
  restoreRaised(hashes: Iterable<string>): void {
    this.restored = new Set(hashes);
  }

  activeAlerts(): string[] {
    return [...this.active].filter(([, on]) => on).map(([k]) => k);
  }
}
