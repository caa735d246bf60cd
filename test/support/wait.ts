// Waiting in tests on what happens, not on the clock: a condition polled
// until it holds, an emitter's next event, a child's output. Each rejects
// after its timeout with what it was waiting for, and what it saw.
import type { ChildProcess } from "node:child_process";
import type { EventEmitter } from "node:events";
import type { Readable } from "node:stream";

/**
 * Resolves once `cond` holds (it may be async), checked every `everyMs`;
 * rejects after `timeoutMs` naming `what` (a function: evaluated then, to show
 * the state it timed out in).
 */
export async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string | (() => string), everyMs = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === "function" ? what() : what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * The arguments of the next `event` that `emitter` emits (and passes `accept`,
 * if given). Call it before doing what makes the event happen.
 */
export function nextEvent<A extends unknown[] = unknown[]>(emitter: EventEmitter, event: string, timeoutMs: number, accept?: (...args: A) => boolean): Promise<A> {
  return new Promise((resolve, reject) => {
    const on = (...args: unknown[]) => {
      if (accept && !accept(...(args as A))) return;
      clearTimeout(t);
      emitter.off(event, on);
      resolve(args as A);
    };
    const t = setTimeout(() => {
      emitter.off(event, on);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for '${event}'`));
    }, timeoutMs);
    emitter.on(event, on);
  });
}

/**
 * Collects a stream's text, and resolves once it matches `pattern`; rejects
 * after `timeoutMs`, or when `child` (if given) exits first, with what was seen.
 */
export function outputMatching(stream: Readable, pattern: string | RegExp, timeoutMs: number, child?: ChildProcess): Promise<string> {
  let seen = "";
  const matches = () => (typeof pattern === "string" ? seen.includes(pattern) : pattern.test(seen));
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      clearTimeout(t);
      stream.off("data", onData);
      child?.off("exit", onExit);
      if (err) reject(err);
      else resolve(seen);
    };
    const onData = (d: Buffer | string) => {
      seen += d.toString();
      if (matches()) done();
    };
    const onExit = (code: number | null) => done(new Error(`exited (${code}) before printing ${String(pattern)}; printed: ${seen}`));
    const t = setTimeout(() => done(new Error(`timed out after ${timeoutMs} ms waiting for ${String(pattern)}; printed: ${seen}`)), timeoutMs);
    stream.on("data", onData);
    child?.once("exit", onExit);
  });
}

/** Resolves with the exit code once `child` has exited (at once if it has). */
export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** Waits until `f` gives a truthy value and resolves with it; rejects after `timeoutMs`, naming `what`. */
export async function waitFor<T>(f: () => T | Promise<T>, timeoutMs: number, what: string, everyMs = 200): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
