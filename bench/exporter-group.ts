// `npm run bench -- exporter-group`: digests/s that exporter group members
// consume from Kafka, join and publish (in transactions, until committed),
// with 1 and 2 members (each a process of its own), beside the in-process
// exporter's digests/s on the same digests (joined and encoded, and joined
// and published to Kafka as `controller` and `demo` run it), and beside the
// member's partition engines without Kafka; gzip and uncompressed digest
// topics. Also prints digests per I/O and per message of the workload, the
// inputs of docs/capacity.md.
//
// The digests are those of a two-ToR fabric workload (BENCH_GROUP_MS of
// traffic at BENCH_GROUP_LOAD, default 2000 ms at load 0.25, with
// BENCH_GROUP_HOSTS hosts, BENCH_GROUP_TARGETS targets and
// BENCH_GROUP_QUEUES I/O queues per host, default 32, 8 and 4: 256
// host-target pairs, so that digests spread over the partitions as a
// fabric's do; `generate --hosts --targets --queues-per-host` makes the same
// layout), made by replaying it through both switches and controllers in
// process, and published on a digest topic of 8 partitions once the members
// share its partitions. Prints how the digests spread over the partitions,
// and each member's digests/s. The demo's own workload (4 hosts, 2 targets:
// 8 pairs, on few partitions) is BENCH_GROUP_HOSTS=4 BENCH_GROUP_TARGETS=2
// BENCH_GROUP_LOAD=1.
//
// Environment: KAFKA_BROKERS (use that broker; otherwise one is started),
// BENCH_GROUP_MS, BENCH_GROUP_LOAD, BENCH_GROUP_HOSTS, BENCH_GROUP_TARGETS,
// BENCH_GROUP_QUEUES, BENCH_GROUP_MEMBERS (default 1,2),
// BENCH_GROUP_COMPRESSION (gzip, none or both; default both), BENCH_GROUP_THREADS
// (the members' engine threads, --threads; default 0,1: each setting with
// the engines in the member's thread, then on one thread of their own),
// BENCH_GROUP_FEED (digests/s, comma-separated: one member fed at each steady
// rate, its transactions and CPU; default 20000),
// BENCH_CPU_PROF (a
// directory: CPU profiles of the members), BENCH_GROUP_WARMUP (warm-up runs of
// one member before the rounds, not counted, default 1), BENCH_GROUP_RUNS (rounds, default 1:
// each round measures the in-process exporter and then every setting, and
// more than one round ends with each setting's median share of its round's
// in-process rate).
import { fork } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { encodeRecord, rawDigestBatch, Exporter, KafkaSink, PartitionEngine, partitionOf, rawDigestMessages, type KafkaMessageOut, type TopicNames } from "@rdma-telemetry/exporter";
import { generateTraffic, loadOptions } from "@rdma-telemetry/traffic";
import { replaySwitches } from "../app/replay.js";
import { Topology } from "../app/topology.js";
import { compiled, here, print } from "./common.js";

const PARTITIONS = 8;

/** The pids of this machine's Kafka brokers (their command line names kafka.Kafka); none where /proc is not there. */
function brokerPids(): string[] {
  try {
    return readdirSync("/proc").filter((pid) => {
      if (!/^\d+$/.test(pid)) return false;
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "latin1").includes("kafka.Kafka");
      } catch {
        return false; // gone meanwhile
      }
    });
  } catch {
    return [];
  }
}

/** CPU time (µs, user and system) of those processes so far; undefined when there are none or one is gone. */
function cpuUsOf(pids: readonly string[]): number | undefined {
  if (pids.length === 0) return undefined;
  let us = 0;
  for (const pid of pids) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, "latin1").split(") ")[1]!.split(" ");
      // utime and stime (fields 14 and 15) in clock ticks of 10 ms
      us += (Number(f[11]) + Number(f[12])) * 10_000;
    } catch {
      return undefined;
    }
  }
  return us;
}

/** The best rate and least CPU a digest of three runs of `run` over the workload's digests (its JIT warm after the first). */
function bestOfThree(w: Workload, run: () => void): { perS: number; cpuUsPerDigest: number } {
  let best = 0;
  let cpuUs = Infinity;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    run();
    const c = process.cpuUsage(c0);
    best = Math.max(best, w.messages.length / ((performance.now() - t0) / 1000));
    cpuUs = Math.min(cpuUs, (c.user + c.system) / w.messages.length);
  }
  return { perS: best, cpuUsPerDigest: cpuUs };
}
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const topicsOf = (id: string): TopicNames => ({ io: `${id}.io.v1`, flow: `${id}.flow.v1`, alert: `${id}.alert.v1`, digest: `${id}.digest.v1` });

interface Workload {
  messages: KafkaMessageOut[];
  ios: number;
  rdmaMessages: number;
  ioDigests: number;
  msgDigests: number;
  /** host-target pairs of the fabric */
  pairs: number;
}

async function workload(): Promise<Workload> {
  const durationNs = Number(process.env.BENCH_GROUP_MS ?? 2000) * 1e6;
  const scale = { hosts: Number(process.env.BENCH_GROUP_HOSTS ?? 32), targets: Number(process.env.BENCH_GROUP_TARGETS ?? 8), queuesPerHost: Number(process.env.BENCH_GROUP_QUEUES ?? 4) };
  const traffic = generateTraffic({ seed: 1, durationNs, ...scale, ...loadOptions(Number(process.env.BENCH_GROUP_LOAD ?? 0.25)) });
  const messages: KafkaMessageOut[] = [];
  const topics = topicsOf("x");
  let ioDigests = 0;
  let msgDigests = 0;
  await replaySwitches(traffic.switches.map((s) => ({ name: s.name, topology: Topology.parse(s.topology), packets: s.packets })), {
    exporter: { perEventRecords: false },
    beforeFeed: (rigs) => {
      for (const r of rigs) {
        r.controller.on("digests", (b) => {
          for (const d of b.digests) {
            if (d.kind === "io") ioDigests++;
            else if (d.kind === "msg") msgDigests++;
          }
          messages.push(...rawDigestMessages(b, topics));
        });
      }
    },
  });
  return { messages, ios: traffic.ios.length, rdmaMessages: traffic.messages.length, ioDigests, msgDigests, pairs: scale.hosts * scale.targets };
}

/** Digests per partition of the digest topic, as Kafka's default partitioner places them by key. */
function spread(w: Workload): number[] {
  const n = new Array<number>(PARTITIONS).fill(0);
  for (const m of w.messages) n[partitionOf(m.key, PARTITIONS)]!++;
  return n;
}

/** The in-process exporter on the same digests: decoded from their Kafka values, joined, records encoded. */
function inProcess(w: Workload): { perS: number; cpuUsPerDigest: number } {
  const topics = topicsOf("x");
  return bestOfThree(w, () => {
    const exporter = new Exporter();
    exporter.addSink((r) => void encodeRecord(r, topics, "protobuf", exporter.metrics.options.intervalNs));
    for (const m of w.messages) exporter.onBatch(rawDigestBatch(m.value).batch);
    exporter.finish();
  });
}

/**
 * The in-process exporter as `controller` and `demo` run it: the same
 * digests joined, and its records published to Kafka (the default client,
 * uncompressed), until Kafka has them all. Sends records only, as those
 * commands do: the digests come from the switch, not from Kafka.
 */
async function inProcessToKafka(brokers: string, w: Workload): Promise<{ perS: number; records: number; takenMs: number; flushMs: number }> {
  const topics = topicsOf(`bench-inproc-${Date.now()}`);
  const sink = new KafkaSink({ brokers: [brokers], topics, partitions: PARTITIONS, compression: "none", maxBuffered: w.messages.length + 1 });
  await sink.start();
  const exporter = new Exporter();
  let records = 0;
  exporter.addSink((r) => {
    sink.push(encodeRecord(r, topics, "protobuf", exporter.metrics.options.intervalNs));
    records++;
  });
  const t0 = performance.now();
  for (const m of w.messages) exporter.onBatch(rawDigestBatch(m.value).batch);
  exporter.finish();
  const t1 = performance.now();
  await sink.flush(600_000);
  const t2 = performance.now();
  const perS = w.messages.length / ((t2 - t0) / 1000);
  await sink.close();
  return { perS, records, takenMs: t1 - t0, flushMs: t2 - t1 };
}

/**
 * The group's partition engines on the same digests, without Kafka: each
 * partition's digests in batches of `batch` (about what one Kafka fetch
 * gives a partition), a commit's snapshot after each, in the member's thread.
 * What a member's engines cost beside the in-process exporter.
 */
function enginesOnly(w: Workload, batch = 3000): { perS: number; cpuUsPerDigest: number } {
  const topics = topicsOf("x");
  const byPartition = Array.from({ length: PARTITIONS }, () => [] as KafkaMessageOut[]);
  for (const m of w.messages) byPartition[partitionOf(m.key, PARTITIONS)]!.push(m);
  return bestOfThree(w, () => {
    const engines = byPartition.map((_, partition) => new PartitionEngine({ partition, topics, engine: {}, withRecords: false }));
    const next = byPartition.map(() => 0);
    for (let more = true; more; ) {
      more = false;
      for (let p = 0; p < PARTITIONS; p++) {
        const ms = byPartition[p]!.slice(next[p], next[p]! + batch);
        if (ms.length === 0) continue;
        more = true;
        const offsets = ms.map((_, i) => BigInt(next[p]! + i));
        engines[p]!.take({ offsets, timestamps: ms.map(() => 0), values: ms.map((m) => m.value) }, 0n);
        next[p]! += ms.length;
        engines[p]!.snapshot(BigInt(next[p]!));
      }
    }
    for (const e of engines) e.exporter.finish();
  });
}

/**
 * `members` group members, each a process, on a digest topic of their own.
 * One member: the whole workload is published first, then the member
 * starts and takes it from the topic, with nothing else running beside it
 * but the broker (as the in-process figure has no producer beside it).
 * More: once the group is settled (every member holds partitions, all of
 * them held), the whole workload is published at once, faster than members
 * take it (the producer's rate is ten times theirs), so that no rebalance
 * falls inside the time measured; the benchmark's producer shares the cores
 * with them meanwhile. Digests/s is counted, for one member, from its report
 * that it holds every partition to its last report of a digest committed;
 * for more, from the first report of a digest committed to the last (the
 * digests of that first report not counted).
 */
async function measureGroup(brokers: string, w: Workload, compression: "gzip" | "none", members: number, threads: number, feedPerS?: number): Promise<{ perS: number; perMember: number[]; assigned: number[]; transactions: number; busy: number[]; cpuUsPerDigest: number; brokerUsPerDigest: number | undefined; drainMs: number }> {
  const topics = topicsOf(`bench-group-${compression}-${members}-${Date.now()}`);
  const total = w.messages.length;
  // Creates the topics (8 partitions) before the members join: they share the digest topic's partitions.
  const sink = new KafkaSink({ brokers: [brokers], topics, partitions: PARTITIONS, compression, maxBuffered: total + 1 });
  await sink.start();
  const group = `bench-group-${Date.now()}`;
  let publishedAt = 0;
  const publish = async () => {
    if (feedPerS) {
      // A steady feed, as a fabric's controllers publish: a slice every 10 ms.
      const slice = Math.max(1, Math.round(feedPerS / 100));
      const t0 = performance.now();
      for (let i = 0; i < w.messages.length; i += slice) {
        for (const m of w.messages.slice(i, i + slice)) sink.push({ ...m, topic: topics.digest });
        const due = t0 + ((i + slice) / feedPerS) * 1000;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    } else for (const m of w.messages) sink.push({ ...m, topic: topics.digest });
    await sink.flush(600_000);
    publishedAt = Date.now();
    await sink.close();
  };
  if (members === 1 && !feedPerS) await publish();
  const workers = Array.from({ length: members }, () =>
    fork(join(here, `exporter-group-worker.${compiled ? "js" : "ts"}`), [brokers, JSON.stringify(topics), group, String(threads)], {
      execArgv: [...(compiled ? [] : ["--conditions=source", "--import", "tsx"]), ...(process.env.BENCH_CPU_PROF ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_CPU_PROF] : [])],
    }));
  // The brokers' processes, found once: each report reads only their CPU time.
  const brokerProcesses = brokerPids();
  const digests = workers.map(() => 0);
  const assigned = workers.map(() => 0);
  const transactions = workers.map(() => 0);
  // Each member's report (time, event loop time active and idle, CPU time, digests committed): its first with a
  // digest, and its last with new digests.
  type Sample = { at: number; active: number; idle: number; cpuUs: number; digests: number; brokerUs: number | undefined };
  const fromFirst = workers.map(() => undefined as Sample | undefined);
  // Each member's latest report, and its report when the group settled (every partition held).
  const latest = workers.map(() => undefined as Sample | undefined);
  let atSettle: Array<Sample | undefined> | undefined;
  const lastNew = workers.map(() => undefined as Sample | undefined);
  let onSettled: (() => void) | undefined;
  const settled = new Promise<void>((resolve) => (onSettled = resolve));
  const done = new Promise<void>((resolve, reject) => {
    workers.forEach((wk, i) => {
      wk.on("message", (m: { digests: number; transactions: number; assigned: number; at: number; active: number; idle: number; cpuUs: number }) => {
        assigned[i] = m.assigned;
        transactions[i] = m.transactions;
        const sample: Sample = { at: m.at, active: m.active, idle: m.idle, cpuUs: m.cpuUs, digests: m.digests, brokerUs: cpuUsOf(brokerProcesses) };
        if (m.digests > 0) fromFirst[i] ??= sample;
        if (m.digests > digests[i]!) lastNew[i] = sample;
        latest[i] = sample;
        if (!atSettle && assigned.every((a) => a > 0) && assigned.reduce((a, b) => a + b, 0) === PARTITIONS) {
          atSettle = [...latest];
          onSettled?.();
        }
        digests[i] = m.digests;
        if (digests.reduce((a, b) => a + b, 0) >= total) resolve();
      });
      wk.on("exit", (code) => code && reject(new Error(`exporter group worker exited (${code})`)));
    });
  });
  await settled;
  if (members > 1 || feedPerS) await publish();
  await done;
  const drainedAt = Math.max(...lastNew.map((x) => x?.at ?? 0));
  for (const wk of workers) wk.kill("SIGTERM");
  await Promise.all(workers.map((wk) => new Promise((r) => wk.once("exit", r))));
  // One member: from when it held the partitions (the workload on the topic already) to its last commit. More: from
  // the first digest committed (the workload published once they held the partitions).
  const starts = members === 1 && !feedPerS ? (atSettle ?? fromFirst) : fromFirst;
  const spans = lastNew.map((l, i) => {
    const f = starts[i] ?? l;
    return l && f ? { f, l } : undefined;
  });
  // From the earliest start to the latest end (the rate, and the broker's CPU).
  const measured = spans.flatMap((x) => (x ? [x] : []));
  const first = measured.reduce((a, b) => (b.f.at < a.f.at ? b : a)).f;
  const last = measured.reduce((a, b) => (b.l.at > a.l.at ? b : a)).l;
  const taken = sum(spans.map((x) => (x ? x.l.digests - x.f.digests : 0)));
  const brokerUsPerDigest = first.brokerUs !== undefined && last.brokerUs !== undefined ? (last.brokerUs - first.brokerUs) / Math.max(1, taken) : undefined;
  return { perS: taken / ((last.at - first.at) / 1000), perMember: spans.map((x) => (x && x.l.at > x.f.at ? (x.l.digests - x.f.digests) / ((x.l.at - x.f.at) / 1000) : 0)), assigned, transactions: transactions.reduce((a, b) => a + b, 0),
    busy: spans.map((x) => {
      if (!x) return 0;
      const active = x.l.active - x.f.active;
      return active / Math.max(1e-9, active + x.l.idle - x.f.idle);
    }),
    cpuUsPerDigest: sum(spans.map((x) => (x ? x.l.cpuUs - x.f.cpuUs : 0))) / Math.max(1, taken),
    brokerUsPerDigest,
    drainMs: drainedAt - publishedAt,
  };
}

export async function benchExporterGroup(): Promise<void> {
  let brokers = process.env.KAFKA_BROKERS;
  let stop: (() => Promise<void>) | undefined;
  if (!brokers) {
    // The broker script sits beside the sources, not in dist/ (a compiled run is one level deeper).
    const { startBroker } = (await import(pathToFileURL(join(here, compiled ? "../.." : "..", "scripts/kafka/broker.mjs")).href)) as { startBroker: () => Promise<{ brokers: string; stop(): Promise<void> }> };
    const b = await startBroker();
    brokers = b.brokers;
    stop = b.stop;
  }
  try {
    const w = await workload();
    print(`exporter group: ${w.messages.length} digests (${w.ioDigests} I/O, ${w.msgDigests} message) for ${w.ios} I/Os and ${w.rdmaMessages} messages: ${(w.ioDigests / w.ios).toFixed(2)} I/O digests per I/O, ${(w.msgDigests / Math.max(1, w.rdmaMessages)).toFixed(2)} message digests per message`);
    const bytes = w.messages.reduce((a, m) => a + m.value.length + m.key.length, 0);
    print(`  ${Math.round(bytes / w.messages.length)} bytes per digest message (key and value)`);
    const perPartition = spread(w);
    print(`  ${w.pairs} host-target pairs; digests per partition (of ${PARTITIONS}): ${perPartition.join(", ")} (largest ${(Math.max(...perPartition) / w.messages.length * 100).toFixed(0)} % of all)`);
    const compressions = (process.env.BENCH_GROUP_COMPRESSION ?? "both") === "both" ? (["none", "gzip"] as const) : ([process.env.BENCH_GROUP_COMPRESSION as "none" | "gzip"] as const);
    const counts = (process.env.BENCH_GROUP_MEMBERS ?? "1,2").split(",").map(Number).filter((n) => n > 0);
    const threadCounts = (process.env.BENCH_GROUP_THREADS ?? "0,1").split(",").map(Number);
    const rounds = Math.max(1, Number(process.env.BENCH_GROUP_RUNS ?? 1));
    // Per setting, each round's share of that round's in-process rate and the members' CPU a digest.
    const shares = new Map<string, Array<{ share: number; shareKafka: number; cpu: number }>>();
    const inProcessRuns: Array<{ perS: number; cpu: number }> = [];
    // A broker fresh from its start runs its fetch, produce and transaction paths interpreted until its JIT has
    // compiled them (the first round's broker took 2-3× the CPU a digest of the later ones): warm-up rounds
    // of one member, not counted, as a deployed broker has long been warm.
    const warmups = Math.max(0, Number(process.env.BENCH_GROUP_WARMUP ?? 1));
    for (let i = 0; i < warmups; i++) {
      const r = await measureGroup(brokers, w, compressions[0]!, 1, threadCounts[0]!);
      print(`  warm-up (not counted): 1 member, ${Math.round(r.perS).toLocaleString("en")} digests/s${r.brokerUsPerDigest === undefined ? "" : `, ${r.brokerUsPerDigest.toFixed(1)} µs of the broker's CPU a digest`}`);
    }
    for (let round = 1; round <= rounds; round++) {
      if (rounds > 1) print(`  round ${round} of ${rounds}`);
      const { perS: local, cpuUsPerDigest: localCpu } = inProcess(w);
      inProcessRuns.push({ perS: local, cpu: localCpu });
      print(`  in process (decode, join, encode records): ${Math.round(local).toLocaleString("en")} digests/s, ${localCpu.toFixed(1)} µs of CPU a digest`);
      const toKafka = await inProcessToKafka(brokers, w);
      print(`  in process, records published to Kafka (as controller and demo run it; ${toKafka.records.toLocaleString("en")} records): ${Math.round(toKafka.perS).toLocaleString("en")} digests/s (digests taken in ${Math.round(toKafka.takenMs)} ms, the records' last acknowledged ${Math.round(toKafka.flushMs)} ms after)`);
      const engines = enginesOnly(w);
      print(`  a member's partition engines without Kafka (${PARTITIONS}, batches of 3,000, a snapshot each): ${Math.round(engines.perS).toLocaleString("en")} digests/s (${(engines.perS / local * 100).toFixed(0)} % of in process), ${engines.cpuUsPerDigest.toFixed(1)} µs of CPU a digest`);
      for (const compression of compressions) {
        for (const threads of threadCounts) for (const n of counts) {
          const r = await measureGroup(brokers, w, compression, n, threads);
          const setting = `${n} member${n > 1 ? "s" : ""}${threads ? `, ${threads} engine thread${threads > 1 ? "s" : ""} each` : ""}, digests ${compression === "gzip" ? "gzip" : "uncompressed"}`;
          shares.set(setting, [...(shares.get(setting) ?? []), { share: r.perS / local, shareKafka: r.perS / toKafka.perS, cpu: r.cpuUsPerDigest }]);
          print(`  ${setting}: ${Math.round(r.perS).toLocaleString("en")} digests/s (${(r.perS / local * 100).toFixed(0)} % of in process, ${(r.perS / toKafka.perS * 100).toFixed(0)} % of in process to Kafka; per member ${r.perMember.map((x, i) => `${Math.round(x).toLocaleString("en")} (${r.assigned[i]} partitions at the end, event loop busy ${(r.busy[i]! * 100).toFixed(0)} %)`).join(", ")}; ${r.transactions.toLocaleString("en")} transactions; ${r.cpuUsPerDigest.toFixed(1)} µs of the members' CPU a digest${r.brokerUsPerDigest === undefined ? "" : `, ${r.brokerUsPerDigest.toFixed(1)} µs of the broker's`})`);
        }
      }
    }
    // Digests fed at a steady rate, as a fabric's controllers publish them: the transactions that costs (each one
    // costs the broker its requests and a marker in every partition it wrote) and how soon the member is done.
    for (const feed of (process.env.BENCH_GROUP_FEED ?? "20000").split(",").map(Number).filter((n) => n > 0)) {
      const r = await measureGroup(brokers, w, "none", 1, 0, feed);
      const seconds = w.messages.length / feed;
      print(`  1 member, fed ${feed.toLocaleString("en")} digests/s for ${seconds.toFixed(1)} s: ${r.transactions.toLocaleString("en")} transactions (${(r.transactions / seconds / PARTITIONS).toFixed(1)} a second per partition), ${Math.round(w.messages.length / Math.max(1, r.transactions)).toLocaleString("en")} digests each; ${r.cpuUsPerDigest.toFixed(1)} µs of the member's CPU a digest${r.brokerUsPerDigest === undefined ? "" : `, ${r.brokerUsPerDigest.toFixed(1)} µs of the broker's`}; the last committed ${r.drainMs} ms after the feed's last digest was acknowledged`);
    }
    if (rounds > 1) {
      // Medians over the rounds: the in-process rate moves by over 1.5× between runs on a shared machine, each round's share is taken against its own.
      const median = (xs: number[]) => {
        const o = [...xs].sort((a, b) => a - b);
        return o.length % 2 ? o[(o.length - 1) / 2]! : (o[o.length / 2 - 1]! + o[o.length / 2]!) / 2;
      };
      const range = (xs: number[], f: (x: number) => string) => `${f(Math.min(...xs))}–${f(Math.max(...xs))}`;
      const pct = (x: number) => `${(x * 100).toFixed(0)} %`;
      print(`  over ${rounds} rounds: in process ${Math.round(median(inProcessRuns.map((x) => x.perS))).toLocaleString("en")} digests/s (median; ${range(inProcessRuns.map((x) => x.perS), (x) => Math.round(x).toLocaleString("en"))}), ${median(inProcessRuns.map((x) => x.cpu)).toFixed(1)} µs of CPU a digest`);
      for (const [setting, xs] of shares) print(`  over ${rounds} rounds: ${setting}: ${pct(median(xs.map((x) => x.share)))} of in process (median; ${range(xs.map((x) => x.share), pct)}), ${pct(median(xs.map((x) => x.shareKafka)))} of in process to Kafka (${range(xs.map((x) => x.shareKafka), pct)}), ${median(xs.map((x) => x.cpu)).toFixed(1)} µs of the members' CPU a digest`);
    }
  } finally {
    await stop?.();
  }
}
