// The operator's view: per interval, where the time went for storage I/O
// (per host-target pair: e2e, RTT, DAL, DPL) and how gradient-sync flows did
// (per flow: FCT, FET, FNR, gap), plus alerts as they fire.
import type { AlertJson, FlowAggregateJson, IoAggregateJson, RecordJson, StatsJson } from "@rdma-telemetry/contract";

const us = (ns: number | undefined) => (ns === undefined ? "-" : ns >= 1e6 ? `${(ns / 1e6).toFixed(2)}ms` : `${(ns / 1e3).toFixed(1)}us`);
const gbps = (bps: number | undefined) => (bps === undefined ? "-" : `${(bps / 1e9).toFixed(1)}G`);
const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
const p = (s: StatsJson | null, k: "p50" | "p99") => (s ? s[k] : undefined);

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")).join("\n");
}

/** A silent-switch time for a summary line: whole seconds as "60 s", anything else in ms ("1500 ms"). */
export function durationText(ns: bigint): string {
  return ns % 1_000_000_000n === 0n ? `${ns / 1_000_000_000n} s` : `${ns / 1_000_000n} ms`;
}

export class SummaryView {
  private io = new Map<string, IoAggregateJson[]>();
  private flows = new Map<string, FlowAggregateJson[]>();
  readonly alerts: AlertJson[] = [];

  constructor(private readonly print: (text: string) => void) {}

  observe(r: RecordJson): void {
    if (r.type === "io_interval") this.push(this.io, r.interval_start_unix_ns, r);
    else if (r.type === "flow_interval") this.push(this.flows, r.interval_start_unix_ns, r);
    else if (r.type === "alert") {
      this.alerts.push(r);
      this.print(`ALERT ${r.state.toUpperCase()} ${r.metric} ${r.scope} ${r.scope_key}: ${r.metric.includes("ns") ? us(r.value) : r.value.toFixed(4)} (raise > ${r.metric.includes("ns") ? us(r.raise_threshold) : r.raise_threshold})`);
    }
  }

  private push<T>(m: Map<string, T[]>, k: string, v: T): void {
    const list = m.get(k) ?? [];
    list.push(v);
    m.set(k, list);
  }

  /** Renders every interval collected so far, oldest first, and forgets them. */
  render(): void {
    const intervals = [...new Set([...this.io.keys(), ...this.flows.keys()])].sort();
    for (const start of intervals) {
      const t = new Date(Number(BigInt(start) / 1_000_000n)).toISOString();
      this.print(`\n== interval ${t} ==`);
      const io = this.mergePairs(this.io.get(start) ?? []);
      if (io.length) {
        const rows = [["storage I/O (host > target, op)", "count", "incompl", "e2e p99", "RTT p50", "RTT p99", "DAL p50", "DAL p99", "DPL p99"]];
        for (const r of io) {
          rows.push([`${r.host} > ${r.target} ${r.op}`, String(r.count), String(r.incomplete), us(p(r.e2e_c_ns ?? r.e2e_s_ns, "p99")), us(p(r.rtt_ns, "p50")), us(p(r.rtt_ns, "p99")), us(p(r.dal_ns, "p50")), us(p(r.dal_ns, "p99")), us(p(r.dpl_ns, "p99"))]);
        }
        this.print(table(rows));
      }
      const flows = this.flows.get(start) ?? [];
      if (flows.length) {
        const rows = [["RDMA WRITE flow (src > dst qp)", "msgs", "FCT p50", "FCT p99", "FET p50 (bit/s)", "FNR", "ECN", "pair CNP", "gap p50"]];
        for (const r of flows.sort((a, b) => (a.src + a.dst).localeCompare(b.src + b.dst))) {
          rows.push([`${r.src} > ${r.dst} ${r.dest_qp}`, String(r.messages), us(p(r.fct_ns, "p50")), us(p(r.fct_ns, "p99")), gbps(p(r.fet_bps, "p50")), pct(r.fnr), String(r.ecn_ce_packets), String(r.cnp_packets), us(p(r.gap_ns, "p50"))]);
        }
        this.print(table(rows));
      }
    }
    this.io.clear();
    this.flows.clear();
  }

  /** One row per (host, target, op): the C-side switch's aggregate carries RTT, the S side's DAL. */
  private mergePairs(list: IoAggregateJson[]): IoAggregateJson[] {
    const by = new Map<string, IoAggregateJson>();
    for (const r of list) {
      const k = `${r.host}|${r.target}|${r.op}`;
      const have = by.get(k);
      if (!have) by.set(k, { ...r });
      else {
        have.count = Math.max(have.count, r.count);
        have.incomplete = Math.max(have.incomplete, r.incomplete);
        for (const f of ["e2e_c_ns", "e2e_s_ns", "rtt_ns", "dal_ns", "dpl_ns"] as const) have[f] ??= r[f];
      }
    }
    return [...by.values()].sort((a, b) => `${a.host}${a.target}${a.op}`.localeCompare(`${b.host}${b.target}${b.op}`));
  }
}
