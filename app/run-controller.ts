// The controller and exporter against a live switch, until SIGINT/SIGTERM.
import { Exporter } from "@rdma-telemetry/exporter";
import { JsonlSink } from "@rdma-telemetry/exporter";
import { givenUpMessage, partitionOf, rawDigestMessages, switchClockMessages, switchClockTime, windowNoteMessages } from "@rdma-telemetry/exporter";
import { encodeRecord } from "@rdma-telemetry/exporter";
import { KafkaSink } from "@rdma-telemetry/exporter";
import type { KafkaClientName, KafkaCompression, KafkaSecurity, TopicNames } from "@rdma-telemetry/exporter";
import type { Logger } from "@rdma-telemetry/p4runtime";
import { join } from "node:path";
import { recordFromMessage } from "@rdma-telemetry/exporter";
import { readTopicTails } from "@rdma-telemetry/exporter";
import type { RecordJson } from "@rdma-telemetry/contract";
import type { DigestBatch } from "@rdma-telemetry/contract";
import { DigestJournal, recordKey, RecordDedupe, type JournaledNotes } from "./digest-journal.js";
import { TelemetryMetrics } from "./prometheus.js";
import { ConfigError, loadConfig } from "@rdma-telemetry/controller";
import { modeCode, TelemetryController, WindowJoinGate, type WindowEvent } from "@rdma-telemetry/controller";
import { openControlServer } from "./control-server.js";
import { defaultTokenFile, type TokenSource } from "./control-token.js";
import { closeKafka } from "./kafka-close.js";

export interface RunControllerOptions {
  configFile: string;
  out?: string;
  /** add to an `out` file that already holds records (otherwise refused) */
  append?: boolean;
  /**
   * A directory for the digest journal: lists are acknowledged to the switch
   * once journaled and fsync'd, and a restart replays what is not settled.
   */
  journal?: string;
  brokers?: string[];
  /** TLS and SASL for Kafka */
  kafkaSecurity?: KafkaSecurity;
  /** Prometheus metrics on HOST:PORT */
  metricsListen?: string;
  /** the Kafka client (default: KAFKA_CLIENT, else kafkajs) */
  kafkaClient?: KafkaClientName;
  kafkaCompression?: KafkaCompression;
  /** the topics to publish on (default rdma.io.v1, ...) */
  topics?: TopicNames;
  /** the control endpoint's token (config control_port): the variable's value, or a file made at first start */
  controlToken?: TokenSource;
  /**
   * Publish the raw digests and the switch's switch_stats only: the records
   * made from digests come from an exporter group (`rdma-telemetry exporter`).
   */
  digestsOnly?: boolean;
  /** how long the switch may send nothing before the commands it holds go out without its figures (default: the config's timeouts.silent_switch_ms) */
  silentSwitchMs?: number;
  logger: Logger;
  print: (t: string) => void;
}

/** Runs until SIGINT/SIGTERM; the exit code: 1 when records could be neither delivered to Kafka nor spilled. */
export async function runController(o: RunControllerOptions): Promise<number> {
  // What is up when a failure ends the run is closed, newest first, before the error goes on.
  const opened: Array<() => unknown> = [];
  try {
    return await run(o, opened);
  } catch (err) {
    for (const close of opened.reverse()) await Promise.resolve().then(close).catch(() => undefined);
    throw err;
  }
}

async function run(o: RunControllerOptions, opened: Array<() => unknown>): Promise<number> {
  const config = loadConfig(o.configFile);
  if (o.digestsOnly && !o.brokers?.length) throw new ConfigError("--digests-only publishes on Kafka: it needs --kafka-brokers (or KAFKA_BROKERS)");
  if (o.digestsOnly && o.out) throw new ConfigError("--digests-only writes no records: drop --out (the exporter group makes the records)");
  const controller = new TelemetryController(config, { logger: o.logger, deferAck: o.journal !== undefined });
  // Everything that can be refused is checked before any work starts.
  const control = config.controlPort ? await openControlServer(controller, config, o.controlToken ?? { file: defaultTokenFile({}) }, o.logger, o.print) : undefined;
  const metrics = o.metricsListen ? new TelemetryMetrics() : undefined;
  const served = metrics
    ? await metrics.listen(o.metricsListen!).catch((err: unknown) => {
        control?.close();
        throw new ConfigError(`--metrics-listen ${o.metricsListen}: ${(err as NodeJS.ErrnoException).code === "EADDRINUSE" ? "already in use" : (err as Error).message}`);
      })
    : undefined;
  if (control) opened.push(control.close);
  if (served) opened.push(served.close);
  if (served) o.print(`metrics: ${served.url}`);
  metrics?.watchController(config.switch.switchId, controller);
  // Digests only: this controller still tracks its switch's sequence, losses and
  // counters (it alone sees the whole sequence) and publishes them as switch_stats.
  // Its switch silent (the controller not primary, the switch gone) for this long, the commands it holds go out without its figures.
  const silentSwitchNs = BigInt(o.silentSwitchMs ?? config.timeouts.silentSwitchMs) * 1_000_000n;
  const exporter = new Exporter(o.digestsOnly ? { perEventRecords: false, silentSwitchNs } : { silentSwitchNs });
  // Its records' engine (digests only: the exporter group's).
  if (!o.digestsOnly) metrics?.watchEngine(exporter.metrics);
  exporter.metrics.coverage = () => controller.coverage();
  exporter.metrics.pairCoverage = () => controller.pairCoverage();
  // A rotation that takes pairs out of the window: the responses of their commands handed on before it (and of
  // those still on their way) go unwatched, until a rotation puts the pairs back. Digests only, the exporter group
  // is told as well: window_left and window_joined notes on the digest topic, in the pairs' partitions, after
  // every digest this controller had received (the order decides, not the time: `at`, this host's, is for reading).
  // A rotation's notes go where the digest stream passes its write on the switch's clock (window-gate.ts): a command
  // from before its pair left, still on its way, must not be taken as watched, nor marked with a later leave.
  let windowNotes = 0n;
  /** The IPv6 addresses of the pairs' endpoint keys, as the controller gave them. */
  const endpointsOf = (pairs: ReadonlyArray<{ host: number; target: number }>) =>
    [...new Set(pairs.flatMap((p) => [p.host, p.target]))].flatMap((key) => {
      const address = controller.endpoints.addressOf(key);
      return address === undefined ? [] : [{ key, address }];
    });
  const gate = new WindowJoinGate();
  // The switch is taken on before the slow part of a start (reading back what an earlier run published, replaying
  // the journal: seconds on a loaded host), so that its digest lists meanwhile reach a primary instead of being
  // dropped for want of one. What the controller hears until the replay is done is held, in order, and handled
  // after it; lists held beyond HELD_LISTS_MAX are dropped (unacknowledged; their digests' numbers count them lost).
  let held: Array<() => void> | undefined = [];
  let heldDropped = 0;
  const orHold = <E>(handle: (e: E) => void) => (e: E) => {
    if (held) held.push(() => handle(e));
    else handle(e);
  };
  // Notes are journaled in order with the lists (a controller killed before Kafka took them hands them on again,
  // the same: a member that had them drops the copies); replayed, they come back with their time and numbers.
  const handOn = (pairs: ReadonlyArray<{ host: number; target: number; gen?: number }>, joined: boolean, replayed?: JournaledNotes, seenTs?: number, bound?: boolean) => {
    if (!pairs.length) return;
    let notes = replayed;
    if (!notes) {
      const endpoints = endpointsOf(pairs);
      notes = { switchId: config.switch.switchId, joined, pairs: pairs.map(({ host, target, gen }) => ({ host, target, ...(gen === undefined ? {} : { gen }) })), atNs: BigInt(Date.now()) * 1_000_000n, seq: windowNotes, endpoints, ...(seenTs === undefined ? {} : { seenTs }), ...(bound ? { bound } : {}) };
      windowNotes += BigInt(pairs.length);
      journal?.appendNotes(notes);
    }
    if (notes.bound) exporter.metrics.windowBound(config.switch.switchId, pairs, notes.seenTs ?? 0, notes.endpoints);
    else if (joined) exporter.metrics.windowJoined(config.switch.switchId, pairs, notes.endpoints);
    else exporter.metrics.windowLeft(config.switch.switchId, pairs, notes.endpoints, notes.seenTs);
    if (!o.digestsOnly || !kafka) return;
    const addresses = new Map(notes.endpoints.map((e) => [e.key, e.address]));
    for (const m of windowNoteMessages(config.switch.switchId, pairs, notes.atNs, notes.seq, (k) => addresses.get(k), kafka.topicNames, notes.bound ? "bound" : joined, notes.seenTs)) kafka.push(m);
  };
  /** Notes in order, those alike in a row together. */
  const handOnEvents = (events: readonly WindowEvent[]) => {
    for (let i = 0; i < events.length; ) {
      const a = events[i]!;
      let j = i + 1;
      while (j < events.length && events[j]!.joined === a.joined && events[j]!.seenTs === a.seenTs && events[j]!.bound === a.bound) j++;
      handOn(events.slice(i, j).map((e) => e.pair), a.joined, undefined, a.seenTs, a.bound);
      i = j;
    }
  };
  controller.on("rotated", orHold((e) => handOnEvents(gate.rotated(e.leftPairs, e.joinedPairs, e.sentNs))));
  // Taking the switch, the pairs an earlier controller's window left on it are deleted: told as a rotation's leaves.
  controller.on("watch-left", orHold((e) => handOnEvents(gate.rotated(e.pairs, [], e.sentNs))));
  // Pairs learned into the window's room join it as a rotation's joins do: told, so that an occurrence an earlier
  // controller's window left (and this one, starting elsewhere, may give again) is not taken as ended.
  controller.on("watch-joined", orHold((e) => handOnEvents(gate.rotated([], e.pairs, e.sentNs))));
  // The first take of the switch, after the journal's replay: commands of an earlier controller's window whose pairs
  // the switch no longer watches left it unseen (that controller was killed before its rotation's note was journaled).
  controller.once("watch-observed", orHold((e) => {
    const n = exporter.metrics.leftUnheld(config.switch.switchId, e.pairs, endpointsOf(e.pairs));
    if (n) o.logger.info("commands of pairs the switch no longer watched when taken on: their responses go unwatched", { commands: n });
    exporter.metrics.releaseVerdicts(config.switch.switchId);
  }));
  let jsonl: JsonlSink | undefined;
  try {
    jsonl = o.out ? new JsonlSink(o.out, o.append ? "append" : "create") : undefined;
  } catch (err) {
    control?.close();
    throw err;
  }
  if (jsonl) opened.push(() => jsonl.close());
  const journal = o.journal ? new DigestJournal(o.journal) : undefined;
  if (journal) opened.push(() => journal.close());
  // What an earlier run left unsettled is replayed below; the records it had
  // already written (to the file, or to Kafka) are recognised and not written again.
  const oldest = journal?.oldestUnsettled();
  const jsonlDedupe = oldest !== undefined ? new RecordDedupe().addJsonlTail(o.out) : undefined;
  let kafka: KafkaSink | undefined;
  let kafkaDedupe: RecordDedupe | undefined;
  if (o.brokers?.length) {
    // With a journal, the spill lives beside it: both are replayed by the next run on that directory.
    // One produce request at a time: a request that fails (a broker restarting) is sent again before any later one,
    // so that a partition holds the switch's digests in the order they came. With several in flight, one acknowledged
    // after an earlier one failed put a response before its command, and the exporter group made two records of the I/O.
    kafka = new KafkaSink({ brokers: o.brokers, client: o.kafkaClient, compression: o.kafkaCompression, ...o.kafkaSecurity, topics: o.topics, logger: o.logger, spillDir: o.journal ? join(o.journal, "kafka-spill") : ".cache/kafka-spill", maxInFlight: 1 });
    const sink = kafka;
    opened.push(() => sink.close());
  }
  let session: number | undefined;
  /** The newest list from the switch (its time) and when it came (this host's clock). */
  let newestList: { ns: bigint; atMs: number } | undefined;
  const onDigests = (b: DigestBatch, arrivedAt: bigint, arrivedAtMs: number) => {
    if (b.session !== session) gate.resetClock();
    session = b.session;
    newestList = { ns: b.listTimestampNs, atMs: arrivedAtMs };
    // A rotation's notes are handed on before the pair's first digest from after it (the list cut there).
    for (const { before, part } of gate.pass(b, arrivedAt)) {
      handOnEvents(before);
      journal?.append(part); // acknowledged to the switch once fsync'd
      exporter.onBatch(part);
      publishDigests(part);
    }
  };
  controller.on("digests", (b) => {
    const [at, atMs] = [process.hrtime.bigint(), Date.now()];
    if (!held) return onDigests(b, at, atMs);
    if (held.length < HELD_LISTS_MAX) held.push(() => onDigests(b, at, atMs));
    else heldDropped++;
  });
  controller.on("bad-digest", ({ message }) => o.logger.warn("bad digest", { message }));
  /** When this controller first became primary (this host's clock): from then on it listened to the switch. */
  let primaryAtMs: number | undefined;
  controller.on("primary", () => {
    primaryAtMs ??= Date.now();
    o.print(`primary on ${config.switch.address}; mode ${controller.currentMode}`);
  });
  controller.on("backup", ({ primaryElectionId }) => {
    o.print(`backup on ${config.switch.address}`);
    // A backup receives no digests: it writes no records until it takes over.
    o.logger.warn("backup: another controller is primary; no records until this one takes over", { switch: config.switch.switchId, address: config.switch.address, election_id: config.switch.electionId, primary_election_id: primaryElectionId });
  });
  controller.start();
  opened.push(() => controller.stop());
  if (kafka) {
    if (oldest !== undefined) kafkaDedupe = await publishedSince(kafka, oldest, journal?.oldestUnsettledJournaledAtMs(), o);
    await kafka.start();
  }
  /** the newest list replayed from the journal, until the records of what was replayed are settled */
  let replayedTo: bigint | undefined;
  // A journal segment is let go once the records of its lists are in the file (synced) and delivered to Kafka.
  const releases: Array<{ settledBefore: bigint; kafkaMark: number }> = [];
  const release = () => {
    while (!jsonl?.failed && releases.length && (!kafka || kafka.settled >= releases[0]!.kafkaMark)) journal?.release(releases.shift()!.settledBefore);
  };
  if (kafka) metrics?.watchKafka(kafka);
  // An --out file that can no longer be written (disk full) stops the controller.
  let stop = () => {};
  exporter.addSink((r) => {
    metrics?.onRecord(r);
    if (jsonl && !jsonlDedupe?.written(r)) jsonl.write(r);
    // Digests only: the exporter group makes the records, but not the switch's own ones (its counters: stats and histograms).
    if (kafka && !kafkaDedupe?.written(r) && (!o.digestsOnly || r.type === "switch_stats" || r.type === "io_histogram" || r.type === "flow_histogram")) kafka.push(encodeRecord(r, kafka.topicNames, "protobuf", exporter.metrics.options.intervalNs));
    if (r.type === "switch_stats" && journal) {
      // An interval closed: its records are made durable, and what they settle can leave the journal.
      jsonl?.sync();
      journal.rotate();
      journal.saveSequence(exporter.metrics.sequencePositions());
      releases.push({ settledBefore: exporter.metrics.settledBefore, kafkaMark: kafka?.accepted ?? 0 });
      release();
      // What was replayed is settled: the records from here on are new.
      if (replayedTo !== undefined && exporter.metrics.settledBefore > replayedTo) {
        jsonlDedupe?.retire();
        kafkaDedupe?.retire();
        replayedTo = undefined;
      }
    }
    if (jsonl?.failed) stop();
  });
  /** Digests only: when this controller last published a digest to each partition of the digest topic (this host's ms). */
  let lastDigestMs: number[] = [];
  const publishDigests = (b: DigestBatch) => {
    if (!kafka) return;
    const partitions = o.digestsOnly ? kafka.partitionsOf(kafka.topicNames.digest) : undefined;
    if (partitions && lastDigestMs.length !== partitions) lastDigestMs = new Array<number>(partitions).fill(0);
    const now = Date.now();
    for (const m of rawDigestMessages(b, kafka.topicNames)) {
      if (kafkaDedupe && kafkaDedupe.written(recordFromMessage(m.headers.type, m.value))) continue;
      kafka.push(m);
      if (partitions) lastDigestMs[partitionOf(m.key, partitions)] = now;
    }
  };
  // Digests only: each command given up with no response seen, and whether digests after it were lost (its answer
  // unknown), goes to the member holding its I/O, which sees a share of the sequence (IO_GIVEN_UP).
  if (o.digestsOnly && kafka) {
    const k = kafka;
    exporter.metrics.onGivenUp = (sw, d, cmdUnixNs, lost) => {
      const m = givenUpMessage(sw, d, cmdUnixNs, lost, (key) => exporter.metrics.endpointAddress(key), k.topicNames);
      if (!kafkaDedupe?.written(recordFromMessage(m.headers.type, m.value))) k.push(m);
    };
  }
  if (journal) {
    // Continue each switch's totals and digest sequence from the earlier run's latest records (stopped cleanly or not): the gap counts as lost.
    for (const p of journal.loadSequence()) exporter.metrics.resumeSequence(p);
    // No verdict on a replayed command until the switch is taken on (its watchlist read): see the watch-observed handler.
    exporter.metrics.holdVerdicts(config.switch.switchId);
    const n = journal.replayInto((b) => {
      if (replayedTo === undefined || b.listTimestampNs > replayedTo) replayedTo = b.listTimestampNs;
      exporter.onBatch(b);
      publishDigests(b);
    }, (notes) => handOn(notes.pairs, notes.joined, notes, notes.seenTs, notes.bound));
    // From its last list replayed until this controller took the switch on, no controller listened to it.
    exporter.metrics.unobserved(config.switch.switchId, BigInt(primaryAtMs ?? Date.now()) * 1_000_000n);
    // Lists the switch sent the controller before this one after its last journaled may be gone: told by the next number.
    if (n) exporter.metrics.tailMayBeLost(config.switch.switchId);
    if (n) o.logger.info("replayed the digest journal of an earlier run", { lists: n, dir: o.journal, already_written: (jsonlDedupe?.size ?? 0) + (kafkaDedupe?.size ?? 0) });
  }
  // What the switch sent meanwhile, in the order it came.
  const heard = held;
  held = undefined;
  if (heldDropped) o.logger.warn("digest lists dropped while the start replayed (more than a start holds): counted lost by their numbers", { lists: heldDropped, held: heard.length });
  for (const handle of heard) handle();
  /** The switch's RoCEv2 packet count as last read, and the host times it has read the same between (clock notes). */
  let roce: { count: number; sameSinceMs: number; sameUntilMs: number } | undefined;
  // Digests only: each partition of the digest topic hears the switch's clock every second, after the digests
  // published before it, so that a member moves on a partition the switch sends nothing to (SWITCH_CLOCK): a note to
  // each partition that had no digest of the switch (whose list time tells the same) for a second. Not while the last
  // notes are still on their way (Kafka away: they would only pile up).
  let clockDue = 0;
  let clockMark = 0;
  const clockNotes = () => {
    const now = Date.now();
    if (!o.digestsOnly || !kafka || !newestList || !controller.stats.primary || now < clockDue || kafka.settled < clockMark) return;
    const partitions = kafka.partitionsOf(kafka.topicNames.digest);
    if (!partitions) return;
    // Idle since the newest list for as long as the switch's RoCEv2 packet count has read the same, from then on.
    const quietMs = roce ? Math.max(0, roce.sameUntilMs - Math.max(roce.sameSinceMs, newestList.atMs)) : 0;
    const at = switchClockTime(newestList.ns, now - newestList.atMs, quietMs);
    const quiet = [...Array(partitions).keys()].filter((p) => !(now - (lastDigestMs[p] ?? 0) < CLOCK_NOTE_MS));
    for (const m of switchClockMessages(config.switch.switchId, at, partitions, kafka.topicNames, quiet)) kafka.push(m);
    clockMark = kafka.accepted;
    clockDue = now + CLOCK_NOTE_MS;
  };
  const tick = setInterval(() => {
    clockNotes();
    // Connected, the switch's intervals close with time, digests or none.
    if (controller.stats.primary) exporter.metrics.switchAlive(config.switch.switchId, BigInt(Date.now()) * 1_000_000n);
    exporter.metrics.advance(BigInt(Date.now()) * 1_000_000n);
    release();
  }, 250);
  // The switch's own counters (untracked I/Os and flows, parser errors, ...) ride on every interval's switch_stats.
  const intervalMs = Number(exporter.metrics.options.intervalNs / 1_000_000n);
  let reading = false;
  const counters = setInterval(() => {
    if (!controller.stats.primary || reading) return;
    reading = true;
    const startedMs = Date.now();
    controller.readCounters()
      .then((c) => {
        exporter.metrics.setSwitchCounters(config.switch.switchId, c);
        // The count was the same from (at latest) the read that first saw it to (at least) this read's start.
        if (roce?.count === c.roce_packets) roce.sameUntilMs = startedMs;
        else roce = { count: c.roce_packets, sameSinceMs: Date.now(), sameUntilMs: startedMs };
      })
      .catch((err: unknown) => o.logger.warn("reading the switch counters failed", { error: (err as Error).message }))
      .finally(() => (reading = false));
    exporter.metrics.setSwitchMode(config.switch.switchId, modeCode(controller.currentMode));
  }, Math.max(100, intervalMs / 2));
  // The data plane's histograms, read just after every interval boundary: what they counted in the interval that ended.
  // One read at a time (each takes deltas against the last): the stop waits for the one under way.
  let histogramTimer: NodeJS.Timeout | undefined;
  let histogramRead: Promise<void> | undefined;
  let stopping = false;
  const readHistograms = () => {
    if (stopping) return;
    const delayMs = intervalMs - (Date.now() % intervalMs) + HISTOGRAM_READ_DELAY_MS;
    histogramTimer = setTimeout(() => {
      const at = BigInt(Date.now() - HISTOGRAM_READ_DELAY_MS) * 1_000_000n;
      const done = () => {
        histogramRead = undefined;
        readHistograms();
      };
      if (!controller.stats.primary || !controller.histograms) return done();
      histogramRead = controller.readHistograms()
        .then((h) => void (h && exporter.metrics.addHistograms(config.switch.switchId, h, at)))
        .catch((err: unknown) => o.logger.warn("reading the switch's histograms failed", { error: (err as Error).message }))
        .finally(done);
    }, delayMs);
    histogramTimer.unref();
  };
  readHistograms();
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
    stop = resolve;
  });
  await drainOpenCommands(exporter.metrics, () => controller.stats.primary, exporter.metrics.options.ioTimeoutNs, o.print);
  clearInterval(tick);
  clearInterval(counters);
  stopping = true;
  clearTimeout(histogramTimer);
  await histogramRead;
  control?.close();
  // What the histograms counted since the last interval's read goes out with the last records.
  if (controller.stats.primary && controller.histograms) {
    await controller.readHistograms()
      .then((h) => h && exporter.metrics.addHistograms(config.switch.switchId, h, BigInt(Date.now()) * 1_000_000n))
      .catch((err: unknown) => o.logger.warn("reading the switch's histograms failed", { error: (err as Error).message }));
  }
  await controller.stop();
  handOnEvents(gate.flush());
  // The commands still open as the controller stops were not seen through their timeout: no verdict goes out for
  // them (the member holding one says its answer is unknown).
  exporter.metrics.onGivenUp = undefined;
  exporter.finish();
  journal?.rotate();
  journal?.saveSequence(exporter.metrics.sequencePositions());
  const outError = await jsonl?.close().then(() => undefined, (err: unknown) => err);
  const kept = !kafka || (await closeKafka(kafka, o.print));
  // Stopped cleanly with everything written and delivered: the journal holds nothing to replay.
  if ((!kafka || kafka.pending + kafka.stats.dropped === 0) && !outError) journal?.release(END_OF_TIME);
  journal?.close();
  await served?.close();
  if (outError) throw outError;
  return kept ? 0 : 1;
}

const END_OF_TIME = 1n << 64n;
/** The most digest lists a starting controller holds until its journal is replayed (about 64 MB at 64 samples a list). */
const HELD_LISTS_MAX = 10_000;
/** How long after an interval's end its histograms are read (the read counts in the interval that ended). */
const HISTOGRAM_READ_DELAY_MS = 20;
/** How often a controller publishing digests tells every partition its switch's clock (SWITCH_CLOCK). */
const CLOCK_NOTE_MS = 1000;

/**
 * The records an earlier run published: those Kafka has from a little before
 * the oldest unsettled digest list on, and those waiting in the spill.
 */
async function publishedSince(kafka: KafkaSink, oldestListNs: bigint, journaledAtMs: number | undefined, o: RunControllerOptions): Promise<RecordDedupe> {
  const dedupe = new RecordDedupe();
  const add = (m: { headers: Record<string, string>; value: Buffer }) => {
    try {
      const r = m.headers.encoding === "json" ? (JSON.parse(m.value.toString("utf8")) as RecordJson) : recordFromMessage(m.headers.type, m.value);
      dedupe.add(recordKey(r));
    } catch {
      // not a record of ours
    }
  };
  for (const m of kafka.spilledMessages()) add(m);
  // Records are published after their lists arrive, stamped by this host's clock: from when the oldest list was
  // journaled here (its own time is the switch's clock, which may be a capture's), less a margin for the broker's
  // clock; a journal that did not say when, from the list's time, the margin covering the clocks disagreeing.
  const sinceMs = (journaledAtMs ?? Number(oldestListNs / 1_000_000n)) - 120_000;
  try {
    const n = await readTopicTails({ brokers: o.brokers!, ...o.kafkaSecurity, topics: [...new Set(Object.values(kafka.topicNames))], sinceMs, onMessage: add });
    o.logger.info("read back what an earlier run published", { messages: n, since: new Date(sinceMs).toISOString() });
  } catch (err) {
    o.logger.warn("could not read back what an earlier run published: records replayed from the journal may reach Kafka twice", { error: (err as Error).message });
  }
  return dedupe;
}

/** The longest a stopping controller waits for the commands still open. */
const DRAIN_MAX_MS = 5_000;

/**
 * Before a controller stops, the commands open at the signal get their
 * response or their I/O timeout (and the digest list delay after it) while
 * the switch is connected, at most DRAIN_MAX_MS: their records say what the
 * switch saw, not "answer unknown" (which those still open then say, and
 * those sent meanwhile: traffic that goes on does not hold the stop). A
 * second signal stops at once.
 */
async function drainOpenCommands(engine: { openCommands(): ReadonlySet<object>; stillOpen(commands: ReadonlySet<object>): number }, connected: () => boolean, ioTimeoutNs: bigint, print: (line: string) => void): Promise<void> {
  const open = engine.openCommands();
  if (!open.size || !connected()) return;
  const startedAt = Date.now();
  const deadline = startedAt + Math.min(DRAIN_MAX_MS, Number(ioTimeoutNs / 1_000_000n) + 1_250);
  let again = false;
  const now = () => (again = true);
  process.once("SIGINT", now);
  process.once("SIGTERM", now);
  while (!again && connected() && engine.stillOpen(open) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  process.off("SIGINT", now);
  process.off("SIGTERM", now);
  print(`stopping: waited ${Date.now() - startedAt} ms for ${open.size} open I/O commands (${engine.stillOpen(open)} still open: answer unknown)`);
}
