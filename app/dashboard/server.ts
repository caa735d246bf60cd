// The dashboard's web server: the page and its assets (uPlot from the
// package's node_modules, no CDN), the store's snapshot as JSON, and live
// updates by server-sent events: a snapshot on (re)connect, then the changed
// points every `updateMs`.
import { existsSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { DashboardStore } from "./store.js";

export interface ListenAddress {
  host: string;
  port: number;
}

/** "HOST:PORT", ":PORT" or "PORT" (host 127.0.0.1); "[::1]:PORT" for IPv6. */
export function parseListen(text: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(text) ?? (/^\d+$/.test(text) ? [text, undefined, "", text] : null);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) throw new Error(`--listen must be HOST:PORT (got '${text}')`);
  return { host: m[1] ?? (m[2] || "127.0.0.1"), port };
}

/** The address given cannot be listened on (taken, not this machine's, not allowed). */
export class ListenError extends Error {
  override readonly name = "ListenError";
}

export interface DashboardServerOptions {
  store: DashboardStore;
  listen: ListenAddress;
  /** how often changes go out to the pages (default 250 ms) */
  updateMs?: number;
}

export interface DashboardServer {
  url: string;
  close(): Promise<void>;
}

/** The page's files: beside this module in the sources, in app/dashboard/static of the package when built. */
function staticDir(): string {
  for (const rel of ["./static/", "../../../app/dashboard/static/"]) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(`${dir}index.html`)) return dir;
  }
  throw new Error("dashboard: its static files (app/dashboard/static) are missing from the package");
}

interface Asset {
  body: Buffer;
  type: string;
}

function assets(): Map<string, Asset> {
  const dir = staticDir();
  const require = createRequire(import.meta.url);
  const file = (path: string, type: string): Asset => ({ body: readFileSync(path), type });
  return new Map([
    ["/", file(`${dir}index.html`, "text/html; charset=utf-8")],
    ["/app.js", file(`${dir}app.js`, "text/javascript; charset=utf-8")],
    ["/alert-charts.js", file(`${dir}alert-charts.js`, "text/javascript; charset=utf-8")],
    ["/app.css", file(`${dir}app.css`, "text/css; charset=utf-8")],
    ["/vendor/uPlot.iife.min.js", file(require.resolve("uplot/dist/uPlot.iife.min.js"), "text/javascript; charset=utf-8")],
    ["/vendor/uPlot.min.css", file(require.resolve("uplot/dist/uPlot.min.css"), "text/css; charset=utf-8")],
  ]);
}

/** A page that has not taken what was sent to it for this long is cut (its EventSource reconnects, to a fresh snapshot). */
const MAX_STALL_MS = 30_000;

export async function startDashboardServer(o: DashboardServerOptions): Promise<DashboardServer> {
  const files = assets();
  /** the pages' event streams, with since when each has been unable to take more (0: it is keeping up) */
  const clients = new Map<ServerResponse, number>();
  const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  const send = (res: ServerResponse, text: string) => {
    const stalled = clients.get(res) ?? 0;
    if (stalled && Date.now() - stalled > MAX_STALL_MS) {
      res.destroy();
      clients.delete(res);
      return;
    }
    if (!res.write(text) && !stalled) clients.set(res, Date.now());
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    if (path === "/api/events") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" });
      res.write("retry: 2000\n\n");
      clients.set(res, 0);
      res.on("drain", () => clients.has(res) && clients.set(res, 0));
      send(res, frame("snapshot", o.store.snapshot()));
      req.on("close", () => clients.delete(res));
      return;
    }
    if (path === "/api/snapshot") {
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(o.store.snapshot()));
      return;
    }
    const f = files.get(path === "/index.html" ? "/" : path);
    if (!f) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    res.writeHead(200, { "content-type": f.type, "content-length": f.body.length, "cache-control": "no-cache" }).end(req.method === "HEAD" ? undefined : f.body);
  });

  let lastStatus = "";
  const tick = setInterval(() => {
    const u = o.store.takeUpdate();
    if (u && clients.size) {
      const text = frame("update", u);
      for (const c of [...clients.keys()]) send(c, text);
    }
    const status = JSON.stringify(o.store.status);
    if (status !== lastStatus) {
      lastStatus = status;
      const text = frame("status", o.store.status);
      for (const c of [...clients.keys()]) send(c, text);
    }
  }, o.updateMs ?? 250);
  // A comment now and then keeps proxies from closing an idle stream.
  const ping = setInterval(() => {
    for (const c of clients.keys()) c.write(": ping\n\n");
  }, 15_000);

  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      clearInterval(tick);
      clearInterval(ping);
      reject(new ListenError(`dashboard: cannot listen on ${o.listen.host}:${o.listen.port}: ${err.code ?? err.message}${err.code === "EADDRINUSE" ? " (the port is taken; --listen another)" : ""}`));
    });
    server.listen(o.listen.port, o.listen.host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const host = a.family === "IPv6" ? `[${a.address}]` : a.address;
  return {
    url: `http://${host}:${a.port}/`,
    close: async () => {
      clearInterval(tick);
      clearInterval(ping);
      for (const c of clients.keys()) c.end();
      clients.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
