// Ports for programs started by the tests and benchmarks: a free port read
// back from the system (never a random guess), and a wait until it listens.
import { createConnection, createServer } from "node:net";

/** A port that was free a moment ago (simple_switch_grpc must be told its port). */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve, reject) => {
    s.once("error", reject);
    s.listen(0, host, resolve);
  });
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
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
