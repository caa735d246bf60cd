// The test broker counts as up when it answers a Kafka request whole, not
// when its port accepts a connection: a restarted broker's port accepted,
// before the broker was back, a connection that answered with the
// HTTP/2 frames of a switch that had meanwhile been given its port, and
// kafkajs died decoding them. Test ports are now picked below the ephemeral
// range and held for the picking process's life (scripts/ports.mjs).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createServer, type Server } from "node:net";
import { expect, inject, test, vi } from "vitest";
import { freePort } from "../support/net.js";

// @ts-expect-error -- plain ESM script without types
const { waitForKafka } = (await import("../../scripts/kafka/broker.mjs")) as { waitForKafka: (port: number, timeoutMs: number) => Promise<void> };

const listen = async (onData: (s: import("node:net").Socket, b: Buffer) => void): Promise<{ server: Server; port: number }> => {
  const server = createServer((s) => s.on("data", (b) => onData(s, b)));
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return { server, port };
};

test("a port that echoes the request (a socket connected to itself) or answers a short frame is not a broker; the suite's broker is", async () => {
  const echo = await listen((s, b) => s.write(b));
  const short = await listen((s) => s.write(Buffer.from([0, 0, 0, 0])));
  try {
    await expect(waitForKafka(echo.port, 1500)).rejects.toThrow(/did not answer ApiVersions within 1500 ms \(correlation 1179648, error 0\)/);
    await expect(waitForKafka(short.port, 1500)).rejects.toThrow(/a frame of 0 bytes/);
  } finally {
    echo.server.close();
    short.server.close();
  }
  const broker = inject("kafkaBrokers").split(",")[0]!;
  await waitForKafka(Number(broker.split(":")[1]), 10_000);
});

test("test ports are below the ephemeral range, and one a living process picked is never picked again", async () => {
  const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
  // Another process picks 1,000 ports and lives on; this one picks 1,000 more.
  const other = spawn(process.execPath, ["--input-type=module", "-e",
    `const { freePort } = await import(${JSON.stringify(join(import.meta.dirname, "../../scripts/ports.mjs"))});
     const ps = []; for (let i = 0; i < 1000; i++) ps.push(await freePort());
     console.log(JSON.stringify(ps)); setInterval(() => {}, 1000);`], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    const theirs = await new Promise<number[]>((resolve) => {
      let out = "";
      other.stdout.on("data", (b: Buffer) => {
        out += b.toString();
        if (out.includes("\n")) resolve(JSON.parse(out) as number[]);
      });
    });
    const mine: number[] = [];
    for (let i = 0; i < 1000; i++) mine.push(await freePort());
    for (const p of [...theirs, ...mine]) {
      expect(p).toBeGreaterThanOrEqual(1024);
      expect(p).toBeLessThan(low);
    }
    expect(new Set([...theirs, ...mine]).size).toBe(2000);
  } finally {
    other.kill("SIGKILL");
  }
});

test("the benchmarks' ports, from dist/tools/net.js, come from the same picker", async () => {
  // (It imported scripts/ports.mjs relative to itself, which dist/ has not: every benchmark failed to start.)
  const net = (await import(join(import.meta.dirname, "../../dist/tools/net.js"))) as typeof import("../../tools/net.js");
  const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
  expect(await net.freePort()).toBeLessThan(low);
});

test("a port a program takes by default (9559, 9090, 9092, ...) is never picked for another", async () => {
  const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
  // The picker's first draws land on 9559 and 9090; a port picked is neither.
  const at = (port: number) => (port - 1024 + 0.5) / (low - 1024);
  const random = vi.spyOn(Math, "random").mockReturnValueOnce(at(9559)).mockReturnValueOnce(at(9090));
  try {
    expect([9559, 9090]).not.toContain(await freePort());
    // Both drawn and passed over; a third draw at least (more when the port it lands on is busy: other suites run beside).
    expect(random.mock.calls.length).toBeGreaterThanOrEqual(3);
  } finally {
    random.mockRestore();
  }
});
