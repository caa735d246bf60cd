// Ports for programs started by the tests and benchmarks (scripts/ports.mjs
// picks and holds them), and a wait until one listens.
import { createConnection } from "node:net";

export { freePort } from "../scripts/ports.mjs";

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
