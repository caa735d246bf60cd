// The `mode` command's side of the control endpoint: one JSON request with
// the control token, over HTTP or HTTPS (verified by the system's CAs, or by `ca`).
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

export interface ControlRequest {
  /** HOST:PORT (HTTP), or http:// or https:// URL */
  target: string;
  token: string;
  /** PEM CA that signed the controller's control_tls certificate (implies HTTPS) */
  ca?: Buffer;
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  timeoutMs?: number;
}

/** The controller could not be reached at all. */
export class ControlUnreachableError extends Error {
  override readonly name = "ControlUnreachableError";
}

export function controlUrl(target: string, ca?: unknown): URL {
  let url: URL;
  try {
    url = new URL(/^[a-z]+:\/\//i.test(target) ? target : `${ca ? "https" : "http"}://${target}`);
  } catch {
    // e.g. a port beyond 65535
    throw new RangeError(`--control must be HOST:PORT (a port 1-65535) or an http(s):// URL (got '${target}')`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new RangeError(`--control must be HOST:PORT or an http(s):// URL (got '${target}')`);
  if (ca && url.protocol !== "https:") throw new RangeError(`--control-ca is for an https:// control endpoint (got '${target}')`);
  return url;
}

export function controlRequest(r: ControlRequest): Promise<{ status: number; body: string }> {
  const url = new URL(r.path, controlUrl(r.target, r.ca));
  const body = r.body === undefined ? undefined : JSON.stringify(r.body);
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, {
      method: r.method,
      headers: { authorization: `Bearer ${r.token}`, ...(body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) }) },
      ...(r.ca ? { ca: r.ca } : {}),
      timeout: r.timeoutMs ?? 30_000,
    }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text.trim() }));
    });
    req.on("timeout", () => req.destroy(new Error("no answer in time")));
    req.on("error", (err) => reject(new ControlUnreachableError(`no controller answers at ${url.host}: ${err.message}`)));
    req.end(body);
  });
}
