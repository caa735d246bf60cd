// A two-ToR fabric as real processes: the captures of a generated workload
// (`rdma-telemetry generate`), a software switch per ToR replaying its
// capture (`rdma-telemetry switch --pcap-in --capture-clock`), a controller
// per switch publishing digests only, and `rdma-telemetry exporter` members
// of one group. Committed records are read back and checked against
// the workload's ground truth.
import type { ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CommittedReader } from "../../exporter/src/kafka/committed-reader.js";
import type { IoRecordJson, RecordJson } from "../../contract/src/records.js";
import { recordFromMessage } from "../../exporter/src/kafka/decode.js";
import { readTruth } from "../../traffic/src/generator.js";
import type { IoTruth } from "../../traffic/src/types.js";
import { ioMismatches, ioRecordKey, ioTruthKey, onlyReferenceLost } from "../../app/self-check.js";
import { startCli, type CliProcess } from "./cli.js";
import { until } from "./wait.js";

export const TORS = ["tor-c", "tor-s"] as const;

/** Generates the workload with the command; resolves with its directory. */
export async function generateWorkload(dir: string, children: ChildProcess[], durationMs = 300, ip: "4" | "6" | "mixed" = "4", extra: string[] = []): Promise<string> {
  const out = join(dir, "workload");
  const g = startCli(["generate", "--out-dir", out, "--duration-ms", String(durationMs), "--seed", "3", "--ip", ip, ...extra], dir, children);
  const code = await g.exited;
  if (code !== 0) throw new Error(`generate failed: ${g.out()}`);
  return out;
}

/** The I/Os of the ground truth that must give a record. */
export function truthIos(workload: string): IoTruth[] {
  const out: IoTruth[] = [];
  for (const t of readTruth(join(workload, "ground-truth.jsonl"))) if (t.type === "io" && t.truth.record) out.push(t.truth);
  return out;
}

/** Resolves once the process printed `pattern`; rejects if it exits first. */
export async function printed(p: CliProcess, pattern: RegExp, timeoutMs = 90_000): Promise<RegExpExecArray> {
  let m: RegExpExecArray | null = null;
  await until(() => (m = pattern.exec(p.out())) !== null || p.child.exitCode !== null, timeoutMs, () => `${pattern} in: ${p.out().slice(-2000)}`, 50);
  if (!m) throw new Error(`exited (${p.child.exitCode}) before printing ${pattern}: ${p.out().slice(-2000)}`);
  return m;
}

export interface Fabric {
  switches: CliProcess[];
  controllers: CliProcess[];
  configs: string[];
  journals: string[];
}

export function exporter(dir: string, brokers: string, prefix: string, children: ChildProcess[], extra: string[] = []): CliProcess {
  return startCli(["exporter", "--kafka-brokers", brokers, "--kafka-topic-prefix", prefix, "--group", `${prefix}-exporters`, "--log-level", "info", ...extra], dir, children);
}

export function controller(dir: string, brokers: string, prefix: string, config: string, journal: string, children: ChildProcess[]): CliProcess {
  return startCli(["controller", "--config", config, "--journal", journal, "--digests-only", "--kafka-brokers", brokers, "--kafka-topic-prefix", prefix, "--log-level", "info"], dir, children);
}

/**
 * Starts both switches (their captures wait for a pipeline, then `delayMs`)
 * and a controller for each; resolves once both controllers are primary.
 */
export async function startFabric(o: { dir: string; workload: string; brokers: string; prefix: string; children: ChildProcess[]; delayMs?: number; config?: Record<string, unknown>; tors?: readonly string[] }): Promise<Fabric> {
  const tors = o.tors ?? TORS;
  const switches = tors.map((t) => startCli(["switch", "--listen", "127.0.0.1:0", "--topology", join(o.workload, `${t}.topology.json`), "--pcap-in", join(o.workload, `${t}.pcap`), "--capture-clock", "--pcap-delay-ms", String(o.delayMs ?? 1500)], o.dir, o.children));
  const ports = await Promise.all(switches.map(async (s) => Number((await printed(s, /P4Runtime on 127\.0\.0\.1:(\d+)/))[1])));
  const topologies = tors.map((t) => JSON.parse(readFileSync(join(o.workload, `${t}.topology.json`), "utf8")) as { ports: { prefixes: string[] }[] });
  // As deployed: every IPv6 host of the fabric listed, so that each has its endpoint key before its first packet.
  const endpoints = [...new Set(topologies.flatMap((t) => t.ports.flatMap((p) => p.prefixes.filter((x) => x.includes(":") && x.endsWith("/128")).map((x) => x.slice(0, -4)))))];
  const configs = tors.map((t, i) => {
    const file = join(o.dir, `${o.prefix}-${t}.json`);
    writeFileSync(file, JSON.stringify({ switch: { address: `127.0.0.1:${ports[i]}`, switch_id: t, timestamp_unit_ns: 1 }, ports: topologies[i]!.ports, endpoints, digest: { max_list_size: 64, max_timeout_us: 2000 }, ...o.config }));
    return file;
  });
  const journals = tors.map((t) => join(o.dir, `${o.prefix}-${t}-journal`));
  const controllers = tors.map((_, i) => controller(o.dir, o.brokers, o.prefix, configs[i]!, journals[i]!, o.children));
  await Promise.all(controllers.map((c) => printed(c, /primary on/)));
  return { switches, controllers, configs, journals };
}

/**
 * Every I/O record on the io topic (committed records only: the
 * committed-record reader, which no aborted transaction of a killed member
 * gets through), with its count per key, read until `done` holds or `timeoutMs`.
 */
/** Where each I/O record read by readIoRecords lies on its topic (partition@offset), for what a failed check prints. */
export const placed = new WeakMap<object, string>();

export async function readIoRecords(brokers: string, topic: string, done: (ios: IoRecordJson[]) => boolean, timeoutMs: number): Promise<IoRecordJson[]> {
  const ios: IoRecordJson[] = [];
  const deadline = Date.now() + timeoutMs;
  const make = () => new CommittedReader({
    brokers: brokers.split(","), clientId: "test-reader", maxWaitMs: 200, retries: 10,
    onMessage: (m) => {
      const r = recordFromMessage(m.headers.type, m.value!) as RecordJson;
      if (r.type === "io") {
        ios.push(r);
        placed.set(r, `${m.partition}@${m.offset}`);
      }
    },
  });
  // A broker just restarted may fail a request or two before its partitions are served again (listOffsets failed
  // there once in CI, on a loaded host): the reader starts again, and reads on, until the deadline.
  let reader = make();
  for (;;) {
    try {
      await reader.follow(topic, "earliest");
      break;
    } catch (err) {
      await reader.close().catch(() => undefined);
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
      reader = make();
    }
  }
  const ac = new AbortController();
  const running = (async () => {
    while (!ac.signal.aborted) {
      await reader.run(ac.signal).catch(() => undefined);
      if (!ac.signal.aborted) await new Promise((r) => setTimeout(r, 500));
    }
  })();
  try {
    // What is there by the deadline is returned: the caller's checks say what is missing.
    await until(() => done(ios), Math.max(0, deadline - Date.now()), "", 200).catch(() => undefined);
  } finally {
    ac.abort();
    await running.catch(() => undefined);
    await reader.close();
  }
  return ios;
}

export interface IoCheck {
  ios: number;
  duplicates: number;
  lost: number;
  /** records equal to the truth in every duration, RTT included */
  exact: number;
  withRtt: number;
  /** records whose only difference is a DAL or DPL the switch could not measure (it counts them) */
  referenceLost: number;
  /**
   * Of the exact records, the commands unanswered when the traffic stopped
   * (the truth's unanswered_at_end, per vantage): a command whose I/O
   * timeout never passes on a clock that stops is given up once its switch
   * counts as silent, joined with the other vantage's half: "answer
   * unknown" there, as the truth says.
   */
  unansweredAtEnd: number;
  /** records of an I/O the truth says is incomplete that say "answer unknown" instead (less, never more) */
  saidLess: number;
  /** records of keys the truth does not have */
  extra: number;
  mismatches: string[];
}

/** The records against the truth: each I/O once, its figures equal (the command's wall-clock time is placed from digest list times, so it is not compared). */
export function checkIos(truth: IoTruth[], records: IoRecordJson[]): IoCheck {
  const byKey = new Map<string, IoRecordJson>();
  let duplicates = 0;
  const dupDetails: string[] = [];
  for (const r of records) {
    const k = ioRecordKey(r);
    if (byKey.has(k)) {
      if (duplicates++ < 5) {
        const copy = (x: IoRecordJson) => `${placed.get(x) ?? "?"} ${x.switch_id} c=${x.c_switch_id} s=${x.s_switch_id} incomplete=${x.incomplete} rtt=${x.rtt_ns}`;
        dupDetails.push(`${k}: twice [${copy(byKey.get(k)!)}] and [${copy(r)}]`);
      }
    } else byKey.set(k, r);
  }
  let exact = 0;
  let withRtt = 0;
  let referenceLost = 0;
  let lost = 0;
  let unansweredAtEnd = 0;
  let saidLess = 0;
  const keys = new Set(truth.map(ioTruthKey));
  const extra = [...byKey.keys()].filter((k) => !keys.has(k)).length;
  const mismatches: string[] = [...dupDetails];
  for (const t of truth) {
    const r = byKey.get(ioTruthKey(t));
    if (!r) {
      if (lost++ < 5) mismatches.push(`${ioTruthKey(t)}: no record (truth: ${JSON.stringify(t, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))})`);
      continue;
    }
    if (r.rtt_ns !== null) withRtt++;
    const m = ioMismatches(t, r).filter((x) => !x.startsWith("cmd_unix_ns"));
    if (m.length === 0) {
      exact++;
      unansweredAtEnd += t.unanswered_at_end;
    } else if (onlyReferenceLost(m)) referenceLost++;
    else if (t.incomplete && m.every((x) => x === "incomplete: got false, want true")) saidLess++;
    else if (mismatches.length < 10) mismatches.push(`${ioTruthKey(t)}: ${m.join("; ")} [records of the key: ${records.filter((x) => ioRecordKey(x) === ioTruthKey(t)).map((x) => `${x.switch_id} c=${x.c_switch_id} s=${x.s_switch_id} incomplete=${x.incomplete}`).join(", ")}]`);
  }
  return { ios: byKey.size, duplicates, lost, exact, withRtt, referenceLost, unansweredAtEnd, saidLess, extra, mismatches };
}

/**
 * What polling records say other than the truth. Polling says less than full
 * mode (figures absent where a window did not hold the pair; an I/O without
 * that switch's figures rather than incomplete), never more or other:
 * `absent` counts the records that say less.
 */
export function pollingMismatches(truth: IoTruth[], ios: IoRecordJson[]): { wrong: string[]; absent: number } {
  const byKey = new Map(truth.map((t) => [ioTruthKey(t), t]));
  const wrong: string[] = [];
  let absent = 0;
  for (const r of ios) {
    const t = byKey.get(ioRecordKey(r));
    if (!t) {
      wrong.push(`${ioRecordKey(r)}: no such I/O`);
      continue;
    }
    const m = ioMismatches(t, r).filter((x) => !x.startsWith("cmd_unix_ns"));
    // (A record with neither e2e saw no response: its NVMe status is 0, not the response's.)
    const noResponse = r.e2e_c_ns === null && r.e2e_s_ns === null;
    const said = m.filter((x) => !/: got null, want /.test(x) && !/^(compute|storage)_side: got false, want true$/.test(x) && !/^host_qp: got 0, want /.test(x) && !(noResponse && /^nvme_status: got 0, want /.test(x)) && x !== "incomplete: got false, want true");
    if (said.length) wrong.push(`${ioRecordKey(r)}: ${said.join("; ")} (record at ${r.switch_id}: c ${r.c_switch_id}, s ${r.s_switch_id})`);
    else if (m.length) absent++;
  }
  return { wrong, absent };
}
