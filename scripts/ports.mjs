// Ports for programs the tests, benchmarks and demo start (brokers,
// switches, controllers): free when picked, below the system's ephemeral
// range, and held for the picking process's life.
//
// - Below the ephemeral range: while a program restarts on its port, no
//   connection's local end and no `listen(0)` can take the port, and a client
//   retrying it cannot connect to itself.
// - Held: a reservation file per port (its pid inside) in the system's
//   temporary directory; another process's pick skips a port whose holder
//   lives, so two programs never share one even while the first is down.
//   A test broker that restarted on a port a switch had meanwhile been given
//   answered kafkajs with HTTP/2 frames, which kafkajs died decoding.
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const held = join(tmpdir(), "rdma-telemetry-ports");

/** The first port of the range the system gives connections' local ends and `listen(0)` from. */
const ephemeralLow = (() => {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 2048 ? low : 32768;
  } catch {
    return 32768;
  }
})();

/**
 * Ports programs take when not told otherwise, never picked, so that a
 * program a test starts on its default cannot meet a port picked for another:
 * the switch's and BMv2's gRPC 9559, BMv2's Thrift and Prometheus 9090,
 * Kafka 9092 and 9093, the controller's control port 9660, the dashboard's
 * 8080, and 9464, the deployment files' metrics port.
 */
const DEFAULTS = new Set([8080, 9090, 9092, 9093, 9464, 9559, 9660]);

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
};

/** Takes `port` for this process unless a living process holds it (the file, pid inside, made whole by a link). */
function hold(port) {
  const file = join(held, String(port));
  const mine = join(held, `.${process.pid}`);
  if (!existsSync(mine)) writeFileSync(mine, String(process.pid));
  try {
    linkSync(mine, file);
    return true;
  } catch {
    let pid;
    try {
      pid = Number(readFileSync(file, "utf8"));
    } catch {
      return false;
    }
    if (pid === process.pid || (pid > 0 && alive(pid))) return false;
    // A holder that died: its port is taken over.
    renameSync(mine, file);
    return true;
  }
}

/** A port that was free a moment ago, below the ephemeral range, held by this process from now on. */
export async function freePort(host = "127.0.0.1") {
  mkdirSync(held, { recursive: true });
  for (;;) {
    const port = 1024 + Math.floor(Math.random() * (ephemeralLow - 1024));
    if (DEFAULTS.has(port) || !hold(port)) continue;
    const s = createServer();
    const ok = await new Promise((resolve) => {
      s.once("error", () => resolve(false));
      s.listen(port, host, () => resolve(true));
    });
    if (!ok) continue;
    await new Promise((r) => s.close(r));
    return port;
  }
}
