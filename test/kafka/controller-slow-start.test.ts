// A controller restarted on its journal takes its switch on before the slow
// part of its start: reading back what its predecessor published (here Kafka
// answers only after a few seconds, through a proxy that holds connections)
// and replaying the journal. The digest lists the switch sends meanwhile
// reach a primary, are held and handled after the replay: every I/O the
// switch saw while the restarted controller was starting is recorded, once.
// (Before, the controller connected to its switch only after the replay: on
// a loaded host 5 to 7 s without a primary, and the switch dropped what it
// sent.)
import { createConnection, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { expect, inject, test } from "vitest";
import type { IoRecordJson } from "../../contract/src/records.js";
import { digestsSettled, ioFeeder, startSwitch, stop, writeControllerConfig } from "../support/controller-restart.js";
import { startCli } from "../support/cli.js";
import { printed } from "../support/fabric.js";
import { readAllRecords } from "../support/kafka-tools.js";
import { scratch } from "../support/scratch.js";

const brokers = inject("kafkaBrokers");
const { dir, children } = scratch("controller-slow-start-");

/** A TCP proxy to `target` that holds every connection until `holdUntil()` (ms since the epoch) has passed. */
async function holdingProxy(target: string, holdUntil: () => number): Promise<{ address: string; close: () => void }> {
  const [host, port] = [target.slice(0, target.lastIndexOf(":")), Number(target.slice(target.lastIndexOf(":") + 1))];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.pause();
    setTimeout(() => {
      if (client.destroyed) return;
      const upstream = createConnection({ host, port }, () => {
        client.pipe(upstream).pipe(client);
        client.resume();
      });
      sockets.add(upstream);
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    }, Math.max(0, holdUntil() - Date.now()));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port: bound } = server.address() as { port: number };
  return { address: `127.0.0.1:${bound}`, close: () => { server.close(); for (const s of sockets) s.destroy(); } };
}

test("a controller restarted on its journal is primary while Kafka is slow to answer: what the switch sends meanwhile is recorded once", async () => {
  const switchId = `tor-slow-start-${Date.now()}`;
  const prefix = `slow-start-${Date.now()}`;
  const sw = await startSwitch(children);
  const config = writeControllerConfig(dir, sw.port, switchId);
  const journal = join(dir, "journal");
  const feed = ioFeeder();
  const args = (broker: string) => ["controller", "--config", config, "--journal", journal, "--kafka-brokers", broker, "--kafka-topic-prefix", prefix, "--log-level", "info"];
  const first = startCli(args(brokers), dir, children);
  await printed(first, /primary on/);
  await feed(sw.child, 200);
  await digestsSettled(sw.child);
  await stop(first.child, "SIGKILL");

  // Kafka answers the restarted controller only 18 s after it starts (its start took up to 7 s in a loaded CI run).
  let holdUntil = 0;
  const proxy = await holdingProxy(brokers.split(",")[0]!, () => holdUntil);
  try {
    holdUntil = Date.now() + 18_000;
    const second = startCli(args(proxy.address), dir, children);
    await printed(second, /primary on/);
    const primaryAt = Date.now();
    await feed(sw.child, 100); // while the controller reads back what the first published
    const fedBy = Date.now();
    await printed(second, /read back what an earlier run published/, 150_000);
    const readBackAt = Date.now();
    await digestsSettled(sw.child, 30_000);
    console.log(`restarted controller primary ${holdUntil - primaryAt} ms before Kafka answered; 100 I/Os fed by ${holdUntil - fedBy} ms before; read back ${readBackAt - holdUntil} ms after`);
    expect(fedBy).toBeLessThan(holdUntil);
    await new Promise((r) => setTimeout(r, 3500)); // the correlation window and the I/O timeout pass, intervals close
    await stop(second.child, "SIGTERM");
  } finally {
    proxy.close();
    await stop(sw.child, "SIGKILL");
  }

  // Every I/O on the topic once: the 200 before the kill and the 100 the switch sent while the controller started.
  const ios = (await readAllRecords(brokers, [`${prefix}.io.v1`], 4000, 300)).filter((r): r is IoRecordJson => r.type === "io" && r.c_switch_id === switchId);
  const psns = ios.map((r) => r.cmd_psn).sort((a, b) => a - b);
  expect(psns).toEqual([...Array(300).keys()]);
  // Those the switch sent while the controller started, answered: each with its figures. (The first I/Os of the
  // first run may be slow at the software switch's first packets on a loaded host: their figures are not checked.)
  expect(ios.filter((r) => r.cmd_psn >= 200 && (r.e2e_c_ns === null || r.incomplete)).map((r) => `${r.cmd_psn}: e2e ${String(r.e2e_c_ns)}, incomplete ${r.incomplete}`)).toEqual([]);
}, 240_000);
