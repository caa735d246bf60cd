// The control endpoint of a running controller, for the command line:
//   GET  /status         controller statistics as JSON
//   POST /mode {"mode"}  switch the measurement mode (table writes only)
// Every request needs the control token (Authorization: Bearer TOKEN). A
// request from a web page (any Origin header) or for a host name that is not
// this controller's (DNS rebinding) is refused with 403; a POST must be
// application/json (a page cannot send that without a CORS preflight, which
// this endpoint never grants); a mode change is taken only while this
// controller is primary (409 otherwise). Loopback by default; a non-loopback
// address needs TLS (control_tls), or control_insecure_plaintext.
import { createHash, timingSafeEqual, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { isIP } from "node:net";
import { hostname } from "node:os";
import { ConfigError, type ControllerConfig, type TelemetryController } from "@rdma-telemetry/controller";
import type { Logger } from "@rdma-telemetry/p4runtime";
import { controllerToken, TOKEN_ENV, type TokenSource } from "./control-token.js";

export interface ControlServerOptions {
  port: number;
  /** the address to listen on (default 127.0.0.1) */
  host?: string;
  /** PEM files: serve HTTPS */
  tls?: { cert: string; key: string };
  /** the secret every request must carry */
  token: string;
  logger?: Logger;
}

export interface ControlServer {
  server: Server;
  /** http(s)://HOST:PORT */
  url: string;
  close(): Promise<void>;
}

/** A mode change's body is a few bytes; anything much larger is refused unread. */
const MAX_BODY_BYTES = 1024;

/** The names a request may address this controller by: IP addresses, localhost, this host's name, the listen host, the certificate's DNS names. */
function hostNames(o: ControlServerOptions): (name: string) => boolean {
  const names = new Set(["localhost", hostname().toLowerCase(), hostname().toLowerCase().split(".")[0]!, (o.host ?? "").toLowerCase()]);
  if (o.tls) {
    const san = new X509Certificate(readFileSync(o.tls.cert)).subjectAltName ?? "";
    for (const m of san.matchAll(/DNS:([^,\s]+)/g)) names.add(m[1]!.toLowerCase());
  }
  // An IP address cannot be rebound by DNS; a name must be one of this controller's.
  return (name) => isIP(name) !== 0 || names.has(name);
}

/** The host name of a Host header (without port; IPv6 without brackets). */
function hostOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(header) ?? /^([^:]+)(?::\d+)?$/.exec(header);
  return m?.[1]?.toLowerCase().replace(/\.$/, "");
}

const digest = (t: string) => createHash("sha256").update(t).digest();

export async function startControlServer(controller: TelemetryController, o: ControlServerOptions): Promise<ControlServer> {
  const knownHost = hostNames(o);
  const expected = digest(o.token);
  const address = controller.config.switch.address;
  const handler: RequestListener = (req: IncomingMessage, res: ServerResponse) => {
    const reply = (code: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(code, { "content-type": "application/json", "cache-control": "no-store", ...headers });
      res.end(JSON.stringify(body, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) + "\n");
    };
    const refuse = (code: number, error: string, headers?: Record<string, string>) => {
      o.logger?.warn("control request refused", { status: code, error, method: req.method, path: req.url, from: req.socket.remoteAddress });
      reply(code, { error }, headers);
      req.resume(); // the body, if any, is let go unread
    };
    const host = hostOf(req.headers.host);
    if (host === undefined || !knownHost(host)) return refuse(403, `Host ${JSON.stringify(req.headers.host ?? "")} is not this controller's address`);
    if (req.headers.origin !== undefined) return refuse(403, `requests from web pages are refused (Origin ${JSON.stringify(req.headers.origin)})`);
    const auth = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
    if (auth === undefined || !timingSafeEqual(digest(auth), expected)) {
      return refuse(401, auth === undefined ? "the control token is required (Authorization: Bearer TOKEN)" : "wrong control token", { "www-authenticate": "Bearer" });
    }
    const path = URL.parse(req.url ?? "/", "http://x")?.pathname;
    if (path === "/status") {
      if (req.method !== "GET") return refuse(405, "GET /status", { allow: "GET" });
      reply(200, { ...controller.stats, coverage: controller.coverage() });
      return;
    }
    if (path !== "/mode") return refuse(404, "GET /status or POST /mode");
    if (req.method !== "POST") return refuse(405, "POST /mode", { allow: "POST" });
    const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/json") return refuse(415, `content-type must be application/json (got ${JSON.stringify(req.headers["content-type"] ?? "")})`);
    if (Number(req.headers["content-length"] ?? 0) > MAX_BODY_BYTES) return refuse(413, `body larger than ${MAX_BODY_BYTES} bytes`);
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on("end", () => {
      if (size > MAX_BODY_BYTES) return refuse(413, `body larger than ${MAX_BODY_BYTES} bytes`);
      let mode: unknown;
      try {
        mode = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { mode?: unknown } | null)?.mode;
      } catch {
        return refuse(400, 'body must be JSON: {"mode": "full" | "polling" | "summary"}');
      }
      if (mode !== "full" && mode !== "polling" && mode !== "summary") return refuse(400, `mode must be full, polling or summary (got ${JSON.stringify(mode)})`);
      // Only the primary writes the switch: a change taken now by a backup would be applied later, unasked.
      const notPrimary = () => `not primary on ${address} (${controller.stats.role}): the mode is changed on the primary controller`;
      if (!controller.stats.primary) return refuse(409, notPrimary());
      controller.setMode(mode).then(
        () => {
          o.logger?.info("mode changed on request", { mode, epoch: controller.stats.epoch, from: req.socket.remoteAddress });
          reply(200, { mode, epoch: controller.stats.epoch });
        },
        // A mode the switch's program cannot run (summary without histograms) is refused by the controller, by name.
        (err: unknown) => (err instanceof ConfigError ? refuse(409, err.message) : controller.stats.primary ? reply(500, { error: (err as Error).message }) : refuse(409, notPrimary())),
      );
    });
  };
  const server: Server = o.tls ? createTlsServer({ cert: readFileSync(o.tls.cert), key: readFileSync(o.tls.key) }, handler) : createServer(handler);
  const host = o.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, host, () => resolve());
  });
  const bound = server.address();
  const port = typeof bound === "object" && bound ? bound.port : o.port;
  return {
    server,
    url: `${o.tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The controller's control endpoint as its config says, with its token (made
 * at first start when kept in a file); says where it listens and where the
 * token is. Refusals are ConfigErrors, naming the setting.
 */
export async function openControlServer(controller: TelemetryController, config: ControllerConfig, token: TokenSource, logger: Logger, print: (t: string) => void): Promise<ControlServer> {
  let t: ReturnType<typeof controllerToken>;
  try {
    t = controllerToken(token);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const server = await startControlServer(controller, { port: config.controlPort, host: config.control.host, tls: config.control.tls, token: t.token, logger }).catch((err: unknown) => {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(`control_port ${config.controlPort}: ${code === "EADDRINUSE" ? "already in use (another controller?)" : (err as Error).message}`);
  });
  if (t.created) logger.info("control token written", { file: t.from });
  print(`control: ${server.url} (token ${t.from === TOKEN_ENV ? `from ${TOKEN_ENV}` : `in ${t.from}`}${t.created ? ", new" : ""})`);
  return server;
}
