// Records as JSON lines (SPEC §7): one object a line, each with a `type`.
//
// An existing file is never truncated by surprise: by default the sink
// refuses a file that already holds data (`append` adds to it, `replace`
// starts it anew, for output the caller owns, like the demo's). A lock file
// beside it refuses a second writer. Lines are buffered and written in
// blocks; `sync()` (called when an interval closes) writes and fsyncs them.
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
import type { RecordJson } from "@rdma-telemetry/contract";
import { ExporterError } from "./errors.js";

/** An output file that cannot be written as asked (exists, locked, unwritable). */
export class OutputError extends ExporterError {
  override readonly name = "OutputError";
  constructor(message: string) {
    super(message, "BAD_OUTPUT");
  }
}

export type OutputMode = "create" | "append" | "replace";

const BLOCK = 1 << 20;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export class JsonlSink {
  private fd: number | undefined;
  private readonly lock: string;
  private buffered: string[] = [];
  private bufferedBytes = 0;
  written = 0;

  /** Opens `path` at once: a path that cannot be written, or a file in use, is an OutputError before any work starts. */
  constructor(readonly path: string, mode: OutputMode = "create") {
    this.lock = `${path}.lock`;
    this.takeLock();
    try {
      if (mode === "create" && existsSync(path) && statSync(path).size > 0) {
        throw new OutputError(`${path} already holds records: choose another file, or append to it`);
      }
      this.fd = openSync(path, mode === "replace" ? "w" : "a");
    } catch (err) {
      this.releaseLock();
      if (err instanceof OutputError) throw err;
      throw new OutputError(`cannot write ${path}: ${(err as Error).message}`);
    }
  }

  private takeLock(): void {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(this.lock, `${process.pid}\n`, { flag: "wx" });
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== "EEXIST") throw new OutputError(`cannot write ${this.path}: ${(err as Error).message}`);
        const pid = Number(readFileSync(this.lock, "utf8").trim());
        if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
          throw new OutputError(`${this.path} is being written by process ${pid} (lock ${this.lock})`);
        }
        unlinkSync(this.lock); // left by a process that is gone
      }
    }
    throw new OutputError(`cannot lock ${this.path} (${this.lock})`);
  }

  private releaseLock(): void {
    try {
      unlinkSync(this.lock);
    } catch {
      // already gone
    }
  }

  write(rec: RecordJson): void {
    const line = JSON.stringify(rec) + "\n";
    this.buffered.push(line);
    this.bufferedBytes += line.length;
    this.written++;
    if (this.bufferedBytes >= BLOCK) this.flush();
  }

  /** Writes the buffered lines. */
  flush(): void {
    if (this.fd === undefined || this.buffered.length === 0) return;
    writeSync(this.fd, this.buffered.join(""));
    this.buffered = [];
    this.bufferedBytes = 0;
  }

  /** Writes the buffered lines and makes them durable. */
  sync(): void {
    this.flush();
    if (this.fd !== undefined) fsyncSync(this.fd);
  }

  async close(): Promise<void> {
    if (this.fd === undefined) return;
    this.sync();
    closeSync(this.fd);
    this.fd = undefined;
    this.releaseLock();
  }
}
