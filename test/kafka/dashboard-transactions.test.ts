// The dashboard's feed on a record topic as the exporter group leaves it
// after a member was killed -9: aborted transactions overlapping one another
// and committed ones (test/support/aborted-transactions.ts). The dashboard
// (the command, as it ships) shows exactly the committed records: none of an
// aborted transaction, which kafkajs's read_committed let through.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, inject, test } from "vitest";
import type { IoAggregateJson } from "../../contract/src/records.js";
import type { Snapshot } from "../../app/dashboard/store.js";
import { encodeRecord } from "../../exporter/src/kafka/encode.js";
import { writeAbortedTransactions } from "../support/aborted-transactions.js";
import { startCli } from "../support/cli.js";
import { waitFor } from "../support/wait.js";
import { createTopics } from "../support/topics.js";

const dir = mkdtempSync(join(tmpdir(), "dashboard-tx-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

const start = (i: number) => String(1_800_000_000_000_000_000n + BigInt(i) * 1_000_000_000n);
const interval = (i: number): IoAggregateJson => ({
  type: "io_interval", switch_id: "tor-c", interval_start_unix_ns: start(i), interval_end_unix_ns: start(i + 1), host: "10.0.1.1", target: "10.0.2.1", op: "read",
  count: 10, incomplete: 0, bytes: 40960, errors: 0, e2e_c_ns: null, e2e_s_ns: null, rtt_ns: null, mode: "full", dpl_ns: null, coverage: null,
  dal_ns: { count: 10, min: 1000, mean: 2000, p50: 1000 * (i + 1), p99: 3000 * (i + 1), max: 4000 * (i + 1) },
});

test("the dashboard shows exactly the committed records where aborted transactions overlap one another and committed ones", async () => {
  const brokers = inject("kafkaBrokers");
  const prefix = `dashboard-tx-${Date.now()}`;
  const topics = { io: `${prefix}.io.v1`, flow: `${prefix}.flow.v1`, alert: `${prefix}.alert.v1`, digest: `${prefix}.digest.v1` };
  await createTopics(brokers, [topics.io, topics.flow, topics.alert], 1, false);
  const written = await writeAbortedTransactions(brokers, topics.io, (i) => {
    const m = encodeRecord(interval(i), topics, "protobuf", 1_000_000_000n);
    return { key: m.key, value: m.value, headers: m.headers };
  });
  expect(written.end, "every marker written").toBe(19n);

  const board = startCli(["dashboard", "--kafka-brokers", brokers, "--kafka-topic-prefix", prefix, "--listen", "127.0.0.1:0", "--group", prefix, "--from-beginning"], dir, children);
  const url = await waitFor(() => /dashboard: (http:\/\/\S+\/)/.exec(board.out())?.[1], 30_000, "the dashboard's address");
  const snapshot = async () => (await (await fetch(new URL("/api/snapshot", url))).json()) as Snapshot;
  const shown = (snap: Snapshot) => snap.intervals.map((s) => Number((BigInt(s) - 1_800_000_000_000_000_000n) / 1_000_000_000n)).sort((a, b) => a - b);
  await waitFor(async () => shown(await snapshot()).includes(12) || undefined, 60_000, "the last committed interval on the dashboard");
  // What a record behind the last one would take to arrive.
  await new Promise((r) => setTimeout(r, 500));
  const snap = await snapshot();
  expect(shown(snap), "the committed intervals only").toEqual(written.committed);
  expect(Object.values(snap.pairs).flat().map((p) => p.dal_p50).sort((a, b) => a! - b!)).toEqual(written.committed.map((i) => 1000 * (i + 1)));
  board.child.kill("SIGINT");
  expect(await board.exited, board.out()).toBe(0);
}, 90_000);
