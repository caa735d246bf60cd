// Jittered exponential backoff that honours an error's `retriable`: a
// failure that retrying cannot mend by itself (a refused pipeline, a
// permission) waits the long delay, so that it is retried for an operator
// to fix without flooding the switch or the log.

export interface BackoffOptions {
  /** first delay, ms */
  initialMs: number;
  /** longest delay for a retriable failure, ms */
  maxMs: number;
  /** delay after a failure that is not retriable, ms (default 30 s) */
  notRetriableMs?: number;
}

/** True unless the error says it is not retriable (errors that say nothing are retried). */
export function isRetriable(err: unknown): boolean {
  return !(err && typeof err === "object" && "retriable" in err && (err as { retriable: unknown }).retriable === false);
}

export class Backoff {
  private delay: number;

  constructor(private readonly o: BackoffOptions) {
    this.delay = o.initialMs;
  }

  /** A success: the next failure starts from the first delay again. */
  reset(): void {
    this.delay = this.o.initialMs;
  }

  /** The wait before the next attempt after `err` (jittered to 50-100 %). */
  next(err?: unknown): number {
    if (err !== undefined && !isRetriable(err)) return this.o.notRetriableMs ?? 30_000;
    const wait = Math.min(this.o.maxMs, this.delay) * (0.5 + Math.random() / 2);
    this.delay = Math.min(this.o.maxMs, this.delay * 2);
    return wait;
  }
}

/** Waits `ms`, or less if `signal` aborts first (resolves either way, never rejects). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
