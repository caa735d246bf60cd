// Progress of long work (replaying a capture), on a terminal only: a bar on
// stderr, so that stdout stays the command's output.
import cliProgress from "cli-progress";

export interface Progress {
  update(done: number, total: number): void;
  stop(): void;
}

/** A progress bar when stderr is a terminal; undefined otherwise (pipes, CI, logs). */
export function terminalProgress(what: string, unit: string, stream: NodeJS.WriteStream = process.stderr): Progress | undefined {
  if (!stream.isTTY) return undefined;
  const bar = new cliProgress.SingleBar(
    { format: `${what} [{bar}] {percentage}% | {value}/{total} ${unit} | {eta_formatted} left`, stream, hideCursor: true, etaBuffer: 50, fps: 5 },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(done, total) {
      if (!started) {
        bar.start(total, done);
        started = true;
      } else {
        bar.setTotal(total);
        bar.update(done);
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
