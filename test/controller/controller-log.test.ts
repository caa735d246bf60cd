// What a controller tells the operator about its switch, on real processes
// (the software switch, `rdma-telemetry controller`): that it is retrying a
// switch it cannot reach, once per change and with the next attempt's delay
// (each attempt only at debug level); that it is backup, in its log and in
// /metrics (rdma_telemetry_controller_role).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { startCli } from "../support/cli.js";
import { startSwitch } from "../support/controller-restart.js";
import { freePort } from "../support/net.js";
import { until } from "../support/wait.js";
import { scratch } from "../support/scratch.js";

const { dir, children } = scratch("controller-log-");

function config(name: string, sw: Record<string, unknown>): string {
  const f = join(dir, `${name}.json`);
  writeFileSync(f, JSON.stringify({ switch: { timestamp_unit_ns: 1, ...sw }, ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }] }));
  return f;
}

/** The JSON log lines of a process's output. */
const logLines = (out: string) =>
  out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { level: string; msg: string; retry_in_ms?: number; error?: string });

const role = async (url: string) => {
  const text = await (await fetch(url)).text();
  return /rdma_telemetry_controller_role\{switch="[^"]+",role="(\w+)"\} 1/.exec(text)?.[1];
};

test("a switch that cannot be reached: one warning that the controller is retrying, with the delay, per change of state", async () => {
  const port = await freePort();
  const c = startCli(["controller", "--config", config("retry", { address: `127.0.0.1:${port}`, switch_id: "retry" }), "--log-level", "debug", "--metrics-listen", "127.0.0.1:0"], dir, children);
  const attempts = () => logLines(c.out()).filter((l) => l.msg === "still cannot reach the switch; retrying").length;
  await until(() => attempts() >= 3, 30_000, () => `three attempts at the switch; printed: ${c.out()}`);
  const retrying = logLines(c.out()).filter((l) => l.level === "warn");
  expect(retrying, c.out()).toHaveLength(1);
  expect(retrying[0]).toMatchObject({ msg: "cannot reach the switch; retrying", error: expect.stringMatching(/ECONNREFUSED/), retry_in_ms: expect.any(Number) });
  const metrics = /metrics: (http:\/\/\S+)/.exec(c.out())![1]!;
  expect(await role(metrics)).toBe("disconnected");

  // The switch comes: said once; the controller is primary.
  const sw = await startSwitch(children, port);
  await until(() => c.out().includes("primary on"), 30_000, () => `the controller to be primary; printed: ${c.out()}`);
  expect(logLines(c.out()).filter((l) => l.msg === "reached the switch again")).toHaveLength(1);
  expect(await role(metrics)).toBe("primary");

  // The switch goes: the loss is a warning with the delay; the attempts that follow are one more warning at most (their error differs).
  const before = logLines(c.out()).length;
  sw.child.kill("SIGKILL");
  await until(() => logLines(c.out()).slice(before).filter((l) => l.msg === "still cannot reach the switch; retrying").length >= 3, 30_000, () => `three attempts after the switch went; printed: ${c.out()}`);
  const after = logLines(c.out()).slice(before).filter((l) => l.level === "warn" && /switch; re/.test(l.msg));
  expect(after[0], c.out()).toMatchObject({ msg: "lost the switch; reconnecting", retry_in_ms: expect.any(Number) });
  expect(after.slice(1).map((l) => l.msg), c.out()).toEqual(["cannot reach the switch; retrying"]);
  expect(await role(metrics)).toBe("disconnected");
}, 120_000);

test("a backup controller says so in its log and in /metrics", async () => {
  const sw = await startSwitch(children);
  const address = `127.0.0.1:${sw.port}`;
  const a = startCli(["controller", "--config", config("a", { address, election_id: 2, switch_id: "a" }), "--metrics-listen", "127.0.0.1:0"], dir, children);
  await until(() => a.out().includes("primary on"), 30_000, () => `controller a to be primary; printed: ${a.out()}`);
  const b = startCli(["controller", "--config", config("b", { address, election_id: 1, switch_id: "b" }), "--metrics-listen", "127.0.0.1:0"], dir, children);
  // At the default log level (warn): the log says it, not only stdout.
  await until(() => logLines(b.out()).some((l) => l.msg.startsWith("backup: another controller is primary")), 30_000, () => `a backup line in b's log; printed: ${b.out()}`);
  expect(logLines(b.out()).find((l) => l.msg.startsWith("backup"))).toMatchObject({ level: "warn", primary_election_id: "2" });
  expect(await role(/metrics: (http:\/\/\S+)/.exec(b.out())![1]!)).toBe("backup");
  expect(await role(/metrics: (http:\/\/\S+)/.exec(a.out())![1]!)).toBe("primary");
}, 120_000);
