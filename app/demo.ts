// The main job on the embedded default: generated RoCEv2 traffic (storage
// I/O and gradient sync, with injected faults) through two software switches
// (compute-side and storage-side ToR), their controllers and one exporter,
// with a live summary. The captures, topologies and ground truth are written
// beside the records, so the run can be replayed and checked.
import { join } from "node:path";
import { loadOptions, readTruth, TRUTH_FILE, writeTrafficStreamAsync, type Fault } from "@rdma-telemetry/traffic";
import type { RecordJson, SwitchStatsJson } from "@rdma-telemetry/contract";
import type { RecordSink } from "@rdma-telemetry/exporter";
import type { Logger } from "@rdma-telemetry/p4runtime";
import { replayCaptures, type ReplayOptions } from "./replay.js";
import { StreamingSelfCheck } from "./self-check.js";
import { durationText, SummaryView } from "./summary.js";
import { Topology } from "./topology.js";

export interface DemoOptions {
  seed: number;
  durationMs: number;
  /** share of the default traffic (see loadOptions) */
  load?: number;
  outDir: string;
  /** bytes of each packet the captures keep (default: whole packets) */
  snaplen?: number;
  /** the fabric's size: hosts, targets, I/O queues per host on each target, NCCL channels (the generator's defaults where omitted) */
  scale?: { hosts?: number; targets?: number; queuesPerHost?: number; gradientChannels?: number; jobTurnover?: number; responseLoss?: number; mtu?: number; ioSizes?: number[]; storageReorderShare?: number; storageReorderMaxDisplacement?: number };
  /** the address families of the hosts and targets: 4 (default), 6, or mixed */
  ip?: 4 | 6 | "mixed";
  /** reordering paths for a share of the RDMA WRITE messages (generate --reorder, --reorder-loss) */
  reorder?: { reorderShare?: number; reorderMaxDisplacement?: number; reorderLoss?: number };
  /** full or polling; from `deployed` when omitted */
  mode?: "full" | "polling" | "summary";
  /** a deployed controller's settings (its config file): mode, watchlists and rotation, timeouts, digest lists */
  deployed?: ReplayOptions["deployed"];
  /** how long a switch that sends nothing holds the commands it saw (default: `deployed`'s, else 60 s) */
  silentSwitchMs?: number;
  logger?: Logger;
  print: (text: string) => void;
  onRecord?: (r: RecordJson) => void;
  kafka?: RecordSink;
}

/** Faults spread over the run so that each shows in its own interval. */
export function demoFaults(durationNs: number): Fault[] {
  const at = (f: number) => Math.round(durationNs * f);
  return [
    { kind: "slow-target", target: 1, fromNs: at(0.2), toNs: at(0.45), extraNs: 400_000 },
    { kind: "congestion", fromNs: at(0.5), toNs: at(0.7), extraNs: 60_000, ecnFraction: 0.05 },
    { kind: "slow-host", host: 2, fromNs: at(0.75), toNs: at(0.95), extraNs: 90_000 },
    { kind: "gpu-idle", host: 3, fromNs: at(0.3), toNs: at(0.6), extraNs: 12_000_000 },
    { kind: "loss", host: 0, fromNs: at(0.6), toNs: at(0.9), probability: 0.003 },
  ];
}

/**
 * I/Os with no record (full mode) that the switches' own counters explain:
 * an I/O whose slot another live I/O holds is untracked at that switch
 * (untracked_ios), so one with no record at all was untracked at both.
 * When each switch counted at least that many untracked I/Os beyond those
 * the truth says it could not attribute, returns those excesses as text.
 */
export function missingUntracked(check: Pick<StreamingSelfCheck, "ioMissing" | "ioUnseenC" | "ioUnseenS">, stats: readonly SwitchStatsJson[]): string | undefined {
  if (!check.ioMissing) return undefined;
  const unseen: Record<string, number> = { "tor-c": check.ioUnseenC, "tor-s": check.ioUnseenS };
  const beyond = stats.map((s) => [s.switch_id, (s.untracked_ios ?? 0) - (unseen[s.switch_id] ?? Infinity)] as const);
  if (beyond.length !== 2 || beyond.some(([, n]) => !(n >= check.ioMissing))) return undefined;
  return beyond.map(([id, n]) => `${id} ${n}`).join(", ");
}

/** Packets a switch forwarded without measuring them, where there were any. */
function unmeasured(s: SwitchStatsJson): string {
  const parts = [
    [s.unknown_endpoint_packets, "IPv6 packets before their endpoint's key"],
    [s.ipv6_ext_header_packets, "IPv6 packets with extension headers"],
    [s.reserved_address_packets, "IPv4 packets from or to 240.0.0.0/4"],
  ] as const;
  return parts.filter(([n]) => n).map(([n, what]) => `, ${n} ${what} not measured`).join("");
}

export async function runDemo(o: DemoOptions): Promise<{ records: number; packets: number; digests: number; alerts: number }> {
  const durationNs = o.durationMs * 1_000_000;
  const mode = o.mode ?? o.deployed?.mode ?? "full";
  const t0 = Date.now();
  // Generated straight into the captures and the ground truth, then replayed
  // from them: memory holds what is in flight, however long the run.
  let lastGen = Date.now();
  // Generation gives the event loop a turn every few ms: /metrics answers meanwhile.
  const traffic = await writeTrafficStreamAsync(o.outDir, { seed: o.seed, durationNs, faults: demoFaults(durationNs), ...loadOptions(o.load ?? 1), ...(o.snaplen !== undefined ? { snaplen: o.snaplen } : {}), ...(o.ip !== undefined ? { ip: o.ip } : {}), ...o.scale, ...o.reorder }, (simNs) => {
    if (Date.now() - lastGen < 1000) return;
    lastGen = Date.now();
    o.print(`generating: ${(simNs / 1e9).toFixed(1)} of ${(durationNs / 1e9).toFixed(1)} s of traffic, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  });
  o.print(`generated ${traffic.switches.map((s) => `${s.packets} packets at ${s.name}`).join(", ")} (${traffic.ios} NVMe I/Os, ${traffic.messages} RDMA WRITE messages) in ${Date.now() - t0} ms; captures in ${o.outDir}/`);

  const view = new SummaryView(o.print);
  // Self-check: the generator knows the true figures of every I/O and message.
  const check = new StreamingSelfCheck(readTruth(join(o.outDir, TRUTH_FILE))[Symbol.iterator]());
  const lastStats = new Map<string, SwitchStatsJson>();
  /** per switch: digests dropped for an endpoint key without an address (switch_stats counts them per interval) */
  const unknownEndpoints = new Map<string, number>();
  let lastInterval: string | undefined;
  let lastProgress = 0;
  const result = await replayCaptures(
    traffic.switches.map((s) => ({ path: s.capture, topology: Topology.load(s.topology), switchId: s.name })),
    {
      mode: o.mode ?? (o.deployed ? undefined : "full"),
      deployed: o.deployed,
      out: join(o.outDir, "records.jsonl"),
      outMode: "replace", // the demo's own output directory
      silentSwitchMs: o.silentSwitchMs,
      kafka: o.kafka,
      logger: o.logger,
      onRecord: (r) => {
        o.onRecord?.(r);
        if (r.type === "switch_stats") {
          lastStats.set(r.switch_id, r);
          unknownEndpoints.set(r.switch_id, (unknownEndpoints.get(r.switch_id) ?? 0) + r.unknown_endpoint_digests);
        }
        if (r.type === "io") check.io(r);
        else if (r.type === "message") check.message(r);
        if ((r.type === "io_interval" || r.type === "flow_interval") && r.interval_start_unix_ns !== lastInterval) {
          if (lastInterval !== undefined) view.render();
          lastInterval = r.interval_start_unix_ns;
        }
        view.observe(r);
      },
      onProgress: (done, total) => {
        const now = Date.now();
        if (now - lastProgress > 1000 || done === total) {
          lastProgress = now;
          o.print(`progress: ${done}/${total} packets (${((100 * done) / total).toFixed(0)}%), ${((now - t0) / 1000).toFixed(1)} s`);
        }
      },
    },
  );
  view.render();
  check.finish();
  const switchStats = [...lastStats.values()];
  const windowed = mode === "polling" || mode === "summary";
  const untrackedAtBoth = windowed ? undefined : missingUntracked(check, switchStats);
  // Polling and summary modes: the I/Os without a record are those of pairs outside the watchlist (said below).
  const missing = windowed || untrackedAtBoth ? 0 : check.ioMissing;
  o.print(`\n${result.packets} packets, ${result.digests} digests, ${result.records} records (${[...result.exporter.counts].map(([k, v]) => `${v} ${k}`).join(", ")}) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  o.print(`self-check against the generator's ground truth: ${check.ioExact}/${check.ioExpected} I/O records and ${check.messageExact}/${check.messagesExpected} messages exact to the ns` +
    ` (${check.ioIncomplete} of the I/Os incomplete, as they must be: a response missing from a capture; ` +
    `${check.ioUntracked} I/Os that no switch could attribute to a queue, counted as untracked` +
    (check.ioReferenceLost
      ? `; ${check.ioReferenceLost} with figures absent (${windowed ? "a switch whose window did not hold the pair at the command or the response (the switches rotate on their own clocks), or " : ""}their state taken by a colliding key, or their data out of order, or a response with their CID on a queue the switch had no pairing of: answer unknown), counted as references lost, responses on unpaired queues or untracked I/Os${windowed ? ", or I/Os whose pair left the window" : ""}`
      : "") + ")" +
    // Polling and summary modes send I/O digests for the pairs of the current watchlist only: the
    // others give no record, by design (summary mode counts them in the histograms).
    (windowed && check.ioMissing ? `; ${check.ioMissing} I/Os of pairs outside the ${mode} watchlist not measured` : "") +
    (windowed && check.messagesMissing ? `; ${check.messagesMissing} messages of flows outside the ${mode} watchlist not measured` : "") +
    (check.messagesGapUnseen ? `; ${check.messagesGapUnseen} messages without a gap, their flow's message before not measured (outside the watchlist, or its end not seen)` : "") +
    (untrackedAtBoth ? `; ${check.ioMissing} untracked at both switches (an I/O slot held by another live I/O), within each switch's untracked I/Os beyond the unattributable (${untrackedAtBoth})` : "") +
    (check.ioWrong + check.ioUnexpected + missing
      ? `; ${check.ioWrong} records differ, ${check.ioUnexpected} unexpected${windowed ? "" : `, ${missing} missing`}: ${check.ioProblems.filter((p) => missing || !p.startsWith("no record")).join(" | ")}`
      : "") +
    (check.messagesWrong || (!windowed && check.messagesMissing)
      ? `; ${check.messagesWrong} messages differ${windowed ? "" : `, ${check.messagesMissing} missing`}${check.messageProblems.length ? `: ${check.messageProblems.join(" | ")}` : ""}`
      : "") +
    (switchStats.length ? `\ncounted by the switches: ${switchStats.map((s) => `${s.switch_id} ${s.untracked_ios ?? 0} I/Os untracked, ${s.io_unpaired_responses ?? 0} responses on unpaired queues, ${s.io_replaced ?? 0} I/Os closed by CID reuse, ${s.queue_pairs_learned ?? 0} queue pairings learned, ${s.untracked_flows ?? 0} flows not tracked (slot taken), ${s.io_references_lost ?? 0} data references lost (an I/O's data, or its own last data packet, not found)${unmeasured(s)}`).join("; ")}` : "") +
    (switchStats.length ? `\ncounted by the exporter: ${switchStats.map((s) => `${s.switch_id} ${s.digests_lost} digests lost, ${s.digests_duplicated} duplicated, ${s.late_responses} responses after their I/O was reported incomplete, ${s.late_records} records after their interval closed, ${result.exporter.metrics.givenUpSilent.get(s.switch_id) ?? 0} commands given up when the switch went silent (${durationText(result.exporter.metrics.options.silentSwitchNs)}) or the traffic ended within their I/O timeout, ${result.exporter.metrics.flowOnlyDigests.get(s.switch_id) ?? 0} digests of flow packets outside any message${unknownEndpoints.get(s.switch_id) ? `, ${unknownEndpoints.get(s.switch_id)} digests dropped for an endpoint key without an address` : ""}`).join("; ")}` : ""));
  o.print(`records: ${join(o.outDir, "records.jsonl")}`);
  return { records: result.records, packets: result.packets, digests: result.digests, alerts: view.alerts.length };
}
