// Records as JSON lines (SPEC §7): one object a line, each with a `type`.
//
// An existing file is never truncated by surprise: by default the sink
// refuses a file that already holds data (`append` adds to it, `replace`
// starts it anew, for output the caller owns, like the demo's). A lock file
// beside it refuses a second writer. Lines are buffered and written in
// blocks; `sync()` (called when an interval closes) writes and fsyncs them.
// A write that fails (the disk is full) keeps the whole lines already in the
// file, cuts off a partial one, and counts every record not written from
// then on; `close()` then throws an OutputError that says how many of each.
import { closeSync, existsSync, fstatSync, fsyncSync, ftruncateSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
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
  /** the file's length: where the next block lands */
  private size = 0;
  private failure: NodeJS.ErrnoException | undefined;
  /** records given to the sink */
  written = 0;
  /** records in the file */
  inFile = 0;
  /** records not written because the file could not be written */
  lost = 0;

  /** Opens `path` at once: a path that cannot be written, or a file in use, is an OutputError before any work starts. */
  constructor(readonly path: string, mode: OutputMode = "create") {
    this.lock = `${path}.lock`;
    this.takeLock();
    try {
      if (mode === "create" && existsSync(path) && statSync(path).size > 0) {
        throw new OutputError(`${path} already holds records: choose another file, or append to it`);
      }
      this.fd = openSync(path, mode === "replace" ? "w" : "a");
      this.size = fstatSync(this.fd).size;
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

  /** The write error that stopped the output (then every later record is lost), if any. */
  get failed(): NodeJS.ErrnoException | undefined {
    return this.failure;
  }

  /** Writes the buffered lines; after a failed write, counts them as lost. */
  flush(): void {
    if (this.fd === undefined || this.buffered.length === 0) return;
    const lines = this.buffered;
    this.buffered = [];
    this.bufferedBytes = 0;
    if (this.failure) {
      this.lost += lines.length;
      return;
    }
    const data = Buffer.from(lines.join(""));
    let done = 0;
    try {
      while (done < data.length) done += writeSync(this.fd, data, done, data.length - done);
      this.size += data.length;
      this.inFile += lines.length;
    } catch (err) {
      this.failure = err as NodeJS.ErrnoException;
      // The whole lines that landed stay; a partial last line is cut off.
      let whole = 0;
      let end = 0;
      for (let i = data.indexOf(0x0a); i >= 0 && i < done; i = data.indexOf(0x0a, i + 1)) {
        whole++;
        end = i + 1;
      }
      try {
        if (end < done) ftruncateSync(this.fd, this.size + end);
      } catch {
        // not a regular file: nothing to cut
      }
      this.size += end;
      this.inFile += whole;
      this.lost += lines.length - whole;
    }
  }

  /** Writes the buffered lines and makes them durable. */
  sync(): void {
    this.flush();
    if (this.fd === undefined || this.failure) return;
    try {
      fsyncSync(this.fd);
    } catch (err) {
      this.failure = err as NodeJS.ErrnoException;
    }
  }

  /** Writes what is buffered and closes the file; throws an OutputError if a write failed, with what was kept and lost. */
  async close(): Promise<void> {
    if (this.fd === undefined) return;
    try {
      this.sync();
      closeSync(this.fd);
    } finally {
      this.fd = undefined;
      this.releaseLock();
    }
    if (this.failure) {
      const { code, message } = this.failure;
      throw new OutputError(`cannot write ${this.path}: ${code === "ENOSPC" ? "no space left on device (ENOSPC)" : message}; ${this.inFile} records written before it are kept, ${this.lost} records were not written`);
    }
  }
}
