// The dashboard's page outlives the broker and the dashboard itself: a broker
// of the test's own goes away and comes back, then the dashboard is restarted
// on the same address; the open page shows each outage and charts the
// intervals published after it, without a reload. The restarted dashboard
// reads the window before its start again (not what is older), so the page
// still shows what was published before the restart; its bounds are flags.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import "../../exporter/src/kafka/kafkajs-codecs.js"; // kafkajs reads gzip only without these plugins
import { afterAll, expect, inject, test } from "vitest";
import type { IoAggregateJson } from "../../contract/src/records.js";
import type { Snapshot } from "../../app/dashboard/store.js";
import { DEFAULT_TOPICS, encodeRecord } from "../../exporter/src/kafka/encode.js";
import { findChromium, launchBrowser, type Browser } from "../support/browser.js";
import { startCli, type CliProcess } from "../support/cli.js";
import { waitFor } from "../support/wait.js";

const chromium = findChromium();
const dir = mkdtempSync(join(tmpdir(), "dashboard-restart-"));
const children: ChildProcess[] = [];
let browser: Browser | undefined;
let broker: { brokers: string; restart(o?: { downMs?: number }): Promise<void>; stop(): Promise<void> } | undefined;
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  await browser?.close();
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function dashboard(brokers: string, listen: string, ...flags: string[]): CliProcess {
  return startCli(["dashboard", "--kafka-brokers", brokers, "--listen", listen, "--group", "dashboard-restart-test", ...flags], dir, children);
}

const start = (i: number) => String(1_800_000_000_000_000_000n + BigInt(i) * 1_000_000_000n);
const interval = (i: number): IoAggregateJson => ({
  type: "io_interval", switch_id: "tor-c", interval_start_unix_ns: start(i), interval_end_unix_ns: start(i + 1), host: "10.0.1.1", target: "10.0.2.1", op: "read",
  count: 10, incomplete: 0, bytes: 40960, errors: 0, e2e_c_ns: null, e2e_s_ns: null, rtt_ns: null, mode: "full", dpl_ns: null, coverage: null,
  dal_ns: { count: 10, min: 1000, mean: 2000, p50: 1000 * (i + 1), p99: 3000 * (i + 1), max: 4000 * (i + 1) },
});

/** Publishes interval `i` (to `topics`); `timestampMs` sets the message's time (default: now). */
async function publish(brokers: string, i: number, timestampMs?: number, topics = DEFAULT_TOPICS): Promise<void> {
  const producer = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING, clientId: "dashboard-restart-test", retry: { retries: 10 } }).producer();
  await producer.connect();
  const m = encodeRecord(interval(i), topics, "protobuf", 1_000_000_000n);
  await producer.send({ topic: m.topic, messages: [{ key: m.key, value: m.value, headers: m.headers, ...(timestampMs === undefined ? {} : { timestamp: String(timestampMs) }) }] });
  await producer.disconnect();
}

test.skipIf(!chromium)(
  chromium ? "dashboard: the open page carries on through a broker restart and a dashboard restart" : "dashboard restarts: skipped, no Chromium (apt-get install chromium, or set CHROMIUM)",
  async () => {
    // @ts-expect-error -- plain ESM script without types
    const { startBroker } = (await import("../../scripts/kafka/broker.mjs")) as { startBroker: () => Promise<NonNullable<typeof broker>> };
    broker = await startBroker();
    const admin = new Kafka({ brokers: [broker.brokers], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [DEFAULT_TOPICS.io, DEFAULT_TOPICS.flow, DEFAULT_TOPICS.alert].map((topic) => ({ topic, numPartitions: 1 })) });
    await admin.disconnect();
    // A message from an hour ago: older than any window the dashboards read again.
    await publish(broker.brokers, 9, Date.now() - 3_600_000);

    let board = dashboard(broker.brokers, "127.0.0.1:0");
    const url = await waitFor(() => /dashboard: (http:\/\/\S+\/)/.exec(board.out())?.[1], 30_000, "the dashboard's address");
    browser = await launchBrowser(chromium!);
    const page = await browser.open(url!);
    await page.evaluate("window.notReloaded = true");
    const charted = (i: number) => `(() => { const d = dashboard.charts.dal.data; const k = d[0].indexOf(${Number(BigInt(start(i)) / 1_000_000n) / 1000}); return k >= 0 && d[1][k] === ${i + 1}; })()`;
    await page.waitFor(`dashboard.state.status && dashboard.state.status.state === "consuming"`, 60_000, "the dashboard consuming");
    await publish(broker.brokers, 0);
    await page.waitFor(charted(0), 30_000, "interval 0 charted");

    // The broker away for a while: the page tells it, then goes on with what comes after.
    const states = new Set<string>();
    const watch = setInterval(() => void page.evaluate<string>("dashboard.state.status.state").then((s) => states.add(s), () => undefined), 200);
    await broker.restart({ downMs: 2_000 });
    await publish(broker.brokers, 1);
    await page.waitFor(charted(1), 90_000, "interval 1, published after the broker restart, charted");
    clearInterval(watch);
    expect([...states], "the page showed the outage").toContain("reconnecting");

    // The dashboard restarted on the same address: the page's event stream reconnects by itself.
    const port = new URL(url!).port;
    board.child.kill("SIGINT");
    expect(await board.exited, board.out()).toBe(0);
    await page.waitFor(`!document.getElementById("live").classList.contains("live")`, 10_000, "the page noticing the dashboard gone");
    board = dashboard(broker.brokers, `127.0.0.1:${port}`, "--max-pairs", "7", "--intervals", "120");
    await page.waitFor(`document.getElementById("live").classList.contains("live") && dashboard.state.status.state === "consuming"`, 60_000, "the page reconnected to the new dashboard");
    // Not empty: the window before its start read again from the topics (its group's offsets were past them), bounded.
    await page.waitFor(`${charted(0)} && ${charted(1)}`, 30_000, "intervals 0 and 1, published before the dashboard restart, charted by the new dashboard");
    expect(await page.evaluate("dashboard.state.bounds.pairSeries")).toBe(7);
    expect(await page.evaluate("dashboard.state.bounds.intervals")).toBe(120);
    await publish(broker.brokers, 2);
    await page.waitFor(charted(2), 60_000, "interval 2, published after the dashboard restart, charted");
    expect(await page.evaluate(charted(9)), "the message older than the window read again").toBe(false);
    expect(await page.evaluate("window.notReloaded")).toBe(true);
    expect(page.errors).toEqual([]);
    board.child.kill("SIGINT");
    expect(await board.exited, board.out()).toBe(0);
  },
  240_000,
);

test("a restarted dashboard reads the window before its start again from the topics, and nothing older", async () => {
  const brokers = inject("kafkaBrokers");
  const prefix = `dashboard-reread-${Date.now()}`;
  const topics = { io: `${prefix}.io.v1`, flow: `${prefix}.flow.v1`, alert: `${prefix}.alert.v1`, digest: `${prefix}.digest.v1` };
  const admin = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.createTopics({ topics: [topics.io, topics.flow, topics.alert].map((topic) => ({ topic, numPartitions: 2 })) });
  await admin.disconnect();
  const start = (...flags: string[]) => startCli(["dashboard", "--kafka-brokers", brokers, "--kafka-topic-prefix", prefix, "--listen", "127.0.0.1:0", "--group", prefix, ...flags], dir, children);
  const snapshot = async (url: string) => (await (await fetch(new URL("/api/snapshot", url))).json()) as Snapshot;
  const dalP50s = (snap: Snapshot) => Object.values(snap.pairs).flat().map((p) => p.dal_p50).sort((a, b) => a! - b!);
  const consuming = async (board: CliProcess) => {
    const url = await waitFor(() => /dashboard: (http:\/\/\S+\/)/.exec(board.out())?.[1], 30_000, "the dashboard's address");
    await waitFor(async () => (await snapshot(url)).status.state === "consuming", 60_000, "the dashboard consuming");
    return url;
  };

  // An interval from two hours ago, then two of now, the second with a dashboard reading.
  await publish(brokers, 7, Date.now() - 7_200_000, topics);
  await publish(brokers, 0, undefined, topics);
  let board = start();
  let url = await consuming(board);
  await publish(brokers, 1, undefined, topics);
  await waitFor(async () => dalP50s(await snapshot(url)).length === 2 || undefined, 30_000, "intervals 0 and 1 in the dashboard");
  expect(dalP50s(await snapshot(url))).toEqual([1000, 2000]);
  board.child.kill("SIGINT");
  expect(await board.exited, board.out()).toBe(0);

  // Restarted (its group's offsets are past every message): the last hour again, not the two-hour-old interval.
  board = start("--reread-seconds", "3600", "--max-pairs", "5");
  url = await consuming(board);
  await waitFor(async () => dalP50s(await snapshot(url)).length === 2 || undefined, 30_000, "intervals 0 and 1 read again");
  const snap = await snapshot(url);
  expect(dalP50s(snap)).toEqual([1000, 2000]);
  expect(snap.bounds.pairSeries).toBe(5);
  board.child.kill("SIGINT");
  expect(await board.exited, board.out()).toBe(0);
}, 120_000);
