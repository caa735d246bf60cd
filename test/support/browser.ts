// Headless Chromium driven over the Chrome DevTools Protocol (Node's own
// WebSocket, no driver library): open a page, evaluate in it, screenshot it.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The Chromium binary: $CHROMIUM, or Debian's. Undefined when there is none. */
export function findChromium(): string | undefined {
  for (const p of [process.env.CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]) if (p && existsSync(p)) return p;
  return undefined;
}

export interface Page {
  /** Evaluates an expression in the page; resolves with its value (JSON-able; promises awaited). */
  evaluate<T>(expression: string): Promise<T>;
  /** Polls `expression` until it is truthy; resolves with its value. */
  waitFor<T>(expression: string, timeoutMs?: number, what?: string): Promise<T>;
  screenshot(path: string): Promise<void>;
  /** Console messages and uncaught exceptions of the page. */
  errors: string[];
}

export interface Browser {
  open(url: string, size?: { width: number; height: number }): Promise<Page>;
  close(): Promise<void>;
}

/**
 * Starts Chromium and waits for its DevTools endpoint. Now and then (once in
 * the CI runs of two sessions, on a loaded 2-core machine) Chromium prints
 * nothing at all for more than 30 s; that start is killed and another made,
 * up to three in all, each with a fresh profile.
 */
async function startChromium(binary: string): Promise<{ child: ChildProcess; profile: string; endpoint: string }> {
  const failures: string[] = [];
  for (let attempt = 1; attempt <= 3; attempt++) {
    const profile = mkdtempSync(join(tmpdir(), "chromium-"));
    const child: ChildProcess = spawn(binary, [
      "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
      "--remote-debugging-port=0", `--user-data-dir=${profile}`, "about:blank",
    ], { stdio: ["ignore", "ignore", "pipe"], detached: true });
    try {
      const endpoint = await new Promise<string>((resolve, reject) => {
        let err = "";
        const t = setTimeout(() => reject(new Error(`no DevTools endpoint in 30 s: ${err.trim().split("\n").slice(-3).join(" | ")}`)), 30_000);
        child.stderr!.on("data", (d: Buffer) => {
          err += d.toString();
          const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
          if (m) {
            clearTimeout(t);
            resolve(m[1]!);
          }
        });
        child.once("exit", (code) => {
          clearTimeout(t);
          reject(new Error(`exited (${code}): ${err}`));
        });
      });
      return { child, profile, endpoint };
    } catch (e) {
      failures.push(`start ${attempt}: ${(e as Error).message}`);
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
      rmSync(profile, { recursive: true, force: true });
    }
  }
  throw new Error(`chromium gave no DevTools endpoint in three starts: ${failures.join("; ")}`);
}

export async function launchBrowser(binary: string): Promise<Browser> {
  const { child, profile, endpoint } = await startChromium(binary);
  const ws = new WebSocket(endpoint);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`cannot connect to ${endpoint}`));
  });
  let nextId = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const listeners: Array<(m: { method: string; params: Record<string, unknown>; sessionId?: string }) => void> = [];
  ws.onmessage = (e) => {
    const m = JSON.parse(String(e.data)) as { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: Record<string, unknown>; sessionId?: string };
    if (m.id !== undefined) {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.error) w?.reject(new Error(m.error.message));
      else w?.resolve(m.result);
    } else if (m.method) for (const l of listeners) l({ method: m.method, params: m.params ?? {}, sessionId: m.sessionId });
  };
  const send = <T>(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      ws.send(JSON.stringify({ id, method, params, sessionId }));
    });

  return {
    async open(url, size = { width: 1400, height: 1800 }) {
      const { targetId } = await send<{ targetId: string }>("Target.createTarget", { url: "about:blank" });
      const { sessionId } = await send<{ sessionId: string }>("Target.attachToTarget", { targetId, flatten: true });
      const errors: string[] = [];
      listeners.push((m) => {
        if (m.sessionId !== sessionId) return;
        if (m.method === "Runtime.exceptionThrown") errors.push(JSON.stringify((m.params.exceptionDetails as { exception?: { description?: string } })?.exception?.description ?? m.params));
        if (m.method === "Runtime.consoleAPICalled" && m.params.type === "error") errors.push(JSON.stringify(m.params.args));
      });
      await send("Runtime.enable", {}, sessionId);
      await send("Page.enable", {}, sessionId);
      await send("Emulation.setDeviceMetricsOverride", { ...size, deviceScaleFactor: 1, mobile: false }, sessionId);
      const loaded = new Promise<void>((resolve) => listeners.push((m) => m.sessionId === sessionId && m.method === "Page.loadEventFired" && resolve()));
      await send("Page.navigate", { url }, sessionId);
      await loaded;
      const evaluate = async <T>(expression: string): Promise<T> => {
        const r = await send<{ result: { value?: T }; exceptionDetails?: { text: string; exception?: { description?: string } } }>("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true }, sessionId);
        if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
        return r.result.value as T;
      };
      return {
        errors,
        evaluate,
        async waitFor<T>(expression: string, timeoutMs = 60_000, what = expression): Promise<T> {
          const until = Date.now() + timeoutMs;
          for (;;) {
            const v = await evaluate<T>(expression);
            if (v) return v;
            if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
            await new Promise((r) => setTimeout(r, 200));
          }
        },
        async screenshot(path: string) {
          const { data } = await send<{ data: string }>("Page.captureScreenshot", { format: "png", captureBeyondViewport: true }, sessionId);
          writeFileSync(path, Buffer.from(data, "base64"));
        },
      };
    },
    async close() {
      // A loaded machine can leave Browser.close unanswered: after 5 s the process is killed.
      const exited = new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())));
      const grace = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
      await Promise.race([send("Browser.close").catch(() => undefined), grace(5000)]);
      ws.close();
      await Promise.race([exited, grace(5000)]);
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          child.kill("SIGKILL");
        }
        await exited;
      }
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
