// Records as JSON lines (SPEC §7): one object a line, each with a `type`.
import { createWriteStream, type WriteStream } from "node:fs";
import type { RecordJson } from "./records.js";

export class JsonlSink {
  private readonly out: WriteStream;
  written = 0;

  constructor(path: string) {
    this.out = createWriteStream(path, { encoding: "utf8" });
  }

  write(rec: RecordJson): void {
    this.out.write(JSON.stringify(rec) + "\n");
    this.written++;
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.out.once("error", reject);
      this.out.end(() => resolve());
    });
  }
}
