// A loopback HTTP endpoint on a running controller, for the command line:
//   GET  /status         controller statistics as JSON
//   POST /mode {"mode"}  switch the measurement mode (table writes only)
import { createServer, type Server } from "node:http";
import type { TelemetryController } from "@rdma-telemetry/controller";

export function startControlServer(controller: TelemetryController, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    const reply = (code: number, body: unknown) => {
      res.writeHead(code, { "content-type": "application/json" });
      res.end(JSON.stringify(body, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) + "\n");
    };
    if (req.method === "GET" && req.url === "/status") {
      reply(200, { ...controller.stats, coverage: controller.coverage() });
      return;
    }
    if (req.method === "POST" && req.url === "/mode") {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        let mode: unknown;
        try {
          mode = (JSON.parse(body) as { mode?: unknown }).mode;
        } catch {
          reply(400, { error: "body must be JSON: {\"mode\": \"full\" | \"polling\"}" });
          return;
        }
        if (mode !== "full" && mode !== "polling") {
          reply(400, { error: `mode must be full or polling (got ${JSON.stringify(mode)})` });
          return;
        }
        controller.setMode(mode).then(
          () => reply(200, { mode, epoch: controller.stats.epoch }),
          (err: unknown) => reply(500, { error: (err as Error).message }),
        );
      });
      return;
    }
    reply(404, { error: "GET /status or POST /mode" });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}
