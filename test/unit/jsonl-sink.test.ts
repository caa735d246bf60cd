import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { JsonlSink, OutputError } from "../../exporter/src/jsonl-sink.js";
import type { RecordJson } from "../../contract/src/records.js";

const dir = mkdtempSync(join(tmpdir(), "jsonl-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const rec = (n: number) => ({ type: "alert", n }) as unknown as RecordJson;

describe("JSON lines output", () => {
  test("an existing file is refused, appended to only when asked, and never truncated", async () => {
    const f = join(dir, "a.jsonl");
    const a = new JsonlSink(f);
    a.write(rec(1));
    await a.close();
    expect(() => new JsonlSink(f)).toThrow(OutputError);
    expect(() => new JsonlSink(f)).toThrow(/already holds records/);
    const b = new JsonlSink(f, "append");
    b.write(rec(2));
    await b.close();
    expect(readFileSync(f, "utf8")).toBe('{"type":"alert","n":1}\n{"type":"alert","n":2}\n');
  });

  test("a second writer is refused while the first runs; a lock left by a dead process is taken over", async () => {
    const f = join(dir, "b.jsonl");
    const a = new JsonlSink(f);
    expect(() => new JsonlSink(f, "append")).toThrow(/being written by process/);
    a.write(rec(1));
    a.sync();
    expect(readFileSync(f, "utf8")).toBe('{"type":"alert","n":1}\n');
    await a.close();
    expect(existsSync(`${f}.lock`)).toBe(false);
    writeFileSync(`${f}.lock`, "999999999\n");
    const c = new JsonlSink(f, "append");
    await c.close();
  });

  test("a path that cannot be written is refused at once, naming it", () => {
    expect(() => new JsonlSink(join(dir, "no/such/dir/x.jsonl"))).toThrow(/cannot write .*no\/such\/dir/);
  });

  test.skipIf(!existsSync("/dev/full"))("a full disk: the write fails once, every record after it is counted, close says how many and lets the lock go", async () => {
    let sink: JsonlSink;
    try {
      sink = new JsonlSink("/dev/full", "append");
    } catch {
      return; // no right to lock beside /dev/full (not root): refused at once, as any unwritable path
    }
    sink.write(rec(1));
    sink.write(rec(2));
    sink.sync(); // an interval closed: ENOSPC
    expect(sink.failed?.code).toBe("ENOSPC");
    sink.write(rec(3));
    await expect(sink.close()).rejects.toThrow("cannot write /dev/full: no space left on device (ENOSPC); 0 records written before it are kept, 3 records were not written");
    expect(existsSync("/dev/full.lock")).toBe(false);
  });
});
