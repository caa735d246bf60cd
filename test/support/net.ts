// Ports and connections for tests: a free port read back from the system
// (never a random guess), and a TCP proxy that can cut a live connection
// while both ends keep running.
import { createServer, connect, type Server, type Socket } from "node:net";

export { freePort, waitForPort } from "../../tools/net.js";

/**
 * Forwards 127.0.0.1:`port` (bound on port 0) to `target`. `cut()` breaks
 * every open connection, as a network failure would; while `refusing`, new
 * connections are closed at once (the far end stays up: the client cannot reach it).
 */
export class TcpProxy {
  refusing = false;
  /** connections accepted (and forwarded) so far */
  accepted = 0;
  private readonly sockets = new Set<Socket>();
  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(targetPort: number, targetHost = "127.0.0.1"): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = createServer((inbound) => {
      if (!proxy || proxy.refusing) {
        inbound.destroy();
        return;
      }
      proxy.accepted++;
      const outbound = connect(targetPort, targetHost);
      for (const s of [inbound, outbound]) {
        proxy.sockets.add(s);
        s.on("close", () => proxy!.sockets.delete(s));
        s.on("error", () => undefined);
      }
      inbound.pipe(outbound).on("close", () => inbound.destroy());
      outbound.pipe(inbound).on("close", () => outbound.destroy());
      inbound.on("close", () => outbound.destroy());
      outbound.on("close", () => inbound.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    proxy = new TcpProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  /** Breaks every open connection; returns how many there were. */
  cut(): number {
    const n = this.sockets.size;
    for (const s of this.sockets) s.destroy();
    return n;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((r) => this.server.close(r));
  }
}
