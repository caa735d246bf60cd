// Ports for programs started by the tests and benchmarks (scripts/ports.mjs
// picks and holds them), and a wait until one listens.
import { createConnection } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

// From the sources (tests) or compiled into dist/tools (benchmarks): the repository's scripts/ports.mjs either way.
const ports = join(import.meta.dirname, import.meta.url.endsWith(".js") ? "../.." : "..", "scripts/ports.mjs");

/** A port that was free a moment ago, below the ephemeral range, held by this process from now on (scripts/ports.mjs). */
export async function freePort(host?: string): Promise<number> {
  const m = (await import(pathToFileURL(ports).href)) as typeof import("../scripts/ports.mjs");
  return m.freePort(host);
}

/** Resolves once 127.0.0.1:`port` accepts connections; rejects after `timeoutMs`, or when `dead()` says why it never will. */
export function waitForPort(port: number, timeoutMs: number, dead: () => string | undefined = () => undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const s = createConnection({ host: "127.0.0.1", port }, () => {
        s.end();
        resolve();
      });
      s.on("error", () => {
        s.destroy();
        const why = dead();
        if (why) reject(new Error(why));
        else if (Date.now() > deadline) reject(new Error(`nothing listens on ${port} after ${timeoutMs} ms`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}
