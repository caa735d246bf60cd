// The command line's start: @platformatic/kafka (0.65 s to import: it
// compiles its options' schemas) is loaded only by a command that makes a
// Kafka client, so that a bad option, --help or a run without Kafka answers
// at once. (Every start of the command imported it: 0.9 s before the first
// line, 0.3 s now.)
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { CLI } from "../support/cli.js";

const dir = mkdtempSync(join(tmpdir(), "startup-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hook = join(import.meta.dirname, "../support/loaded-modules.mjs");
function run(args: string[]): { status: number | null; loaded: boolean; out: string } {
  const r = spawnSync(process.execPath, ["--import", hook, ...CLI, ...args], { cwd: dir, encoding: "utf8", env: { ...process.env, KAFKA_BROKERS: "" }, timeout: 60_000 });
  const loaded = /^@platformatic\/kafka loaded: (true|false)$/m.exec(r.stderr)?.[1];
  expect(loaded, r.stderr).toBeDefined();
  return { status: r.status, loaded: loaded === "true", out: r.stdout + r.stderr };
}

test("a bad option, --help and generate do not load the Kafka client; a demo that publishes does", () => {
  expect(run(["demo", "--duration-ms", "abc"])).toMatchObject({ status: 2, loaded: false });
  expect(run(["--help"])).toMatchObject({ status: 0, loaded: false });
  expect(run(["generate", "--out-dir", "g", "--duration-ms", "20", "--load", "0.1", "--snaplen", "146"])).toMatchObject({ status: 0, loaded: false });
  // The same run publishing (Kafka unreachable: its records go to the spill) loads it.
  const published = run(["demo", "--duration-ms", "50", "--load", "0.1", "--snaplen", "146", "--out-dir", "d", "--kafka-brokers", "127.0.0.1:1"]);
  expect(published.out).toMatch(/are kept in .*kafka-spill/);
  expect(published).toMatchObject({ status: 0, loaded: true });
});
