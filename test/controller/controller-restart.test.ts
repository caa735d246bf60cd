// The controller SIGKILLed mid-traffic and started again on its digest
// journal, writing a JSON-lines file: every I/O whose digests the switch
// delivered before the kill is in the file, none twice, and what the switch
// sent while no controller listened is counted as lost.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, test } from "vitest";
import type { RecordJson } from "../../contract/src/records.js";
import { checkRestartRecords, killAndRestartController } from "../support/controller-restart.js";

const dir = mkdtempSync(join(tmpdir(), "controller-restart-"));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("SIGKILL of the controller mid-traffic: after a restart on its journal, every delivered I/O is recorded once, the gap counted", async () => {
  const out = join(dir, "records.jsonl");
  await killAndRestartController({ dir, switchId: "tor", children, env: { KAFKA_BROKERS: "" }, args: (first) => ["--out", out, ...(first ? [] : ["--append"])] });
  checkRestartRecords(readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson));
}, 60_000);
