// A test file's scratch space: a temporary directory, removed after the
// file's tests, and the child processes its tests start, killed after each
// test (a process a failed test left running must not hold a port or a
// consumer group in the next).
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach } from "vitest";

export function scratch(prefix: string): { dir: string; children: ChildProcess[] } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, children };
}
