// The controller's control port, on real processes (the software switch, two
// `rdma-telemetry controller`s, the `mode` command): a mode change needs the
// control token, JSON, a request not from a web page nor for a foreign host
// name, and a primary controller. Also: the token file, the refusal of a
// non-loopback address without TLS, HTTPS with control_tls.
import { spawnSync } from "node:child_process";
import { chmodSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { startCli, type CliProcess } from "../support/cli.js";
import { startSwitch } from "../support/controller-restart.js";
import { freePort } from "../support/net.js";
import { until } from "../support/wait.js";
import { CLI } from "../support/cli.js";
import { scratch } from "../support/scratch.js";

const { dir, children } = scratch("control-port-");

const ports = [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }, { port: 2, role: "storage", prefixes: ["10.0.2.0/24"] }];

function config(name: string, o: Record<string, unknown>): string {
  const f = join(dir, `${name}.json`);
  writeFileSync(f, JSON.stringify({ ports, ...o }));
  return f;
}

interface Answer {
  status: number;
  body: { error?: string; mode?: string; role?: string; [k: string]: unknown };
}

/** One HTTP request as curl would send it: the headers given, nothing else but content-length. */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // A connection per request, as curl makes (a kept-alive one may be closed by the server as it is reused).
    const req = request({ host: "127.0.0.1", port, method, path, agent: false, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text || "{}") as Answer["body"] }));
    });
    req.on("error", (err) => reject(new Error(`${method} ${path} ${JSON.stringify(headers)}: ${err.message}`)));
    req.end(body);
  });
}

const stateDir = () => process.env.XDG_STATE_HOME!;
const tokenFile = () => join(stateDir(), "rdma-telemetry", "control-token");

/** `rdma-telemetry ARGS` to its end: exit code and output. */
function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [...CLI, ...args], { cwd: dir, encoding: "utf8", env: { ...process.env, KAFKA_BROKERS: "", ...env }, timeout: 60_000 });
  return { status: r.status, out: r.stdout + r.stderr };
}

describe("control port", () => {
  test("refuses web pages, foreign hosts, no or a wrong token, non-JSON, and a backup; the mode command with the token switches the primary", async () => {
    const sw = await startSwitch(children);
    const [controlA, controlB] = [await freePort(), await freePort()];
    const address = `127.0.0.1:${sw.port}`;
    const a = startCli(["controller", "--config", config("a", { switch: { address, election_id: 2, switch_id: "a", timestamp_unit_ns: 1 }, control_port: controlA })], dir, children);
    await until(() => a.out().includes("primary on"), 30_000, () => `controller a to be primary; printed: ${a.out()}`);
    // Where the token is, said where the operator sees it; the file is the owner's alone.
    expect(a.out()).toContain(`control: http://127.0.0.1:${controlA} (token in ${tokenFile()}`);
    expect(statSync(tokenFile()).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile(), "utf8").trim();
    const auth = { authorization: `Bearer ${token}` };
    const json = { "content-type": "application/json" };
    const polling = '{"mode":"polling"}';
    const mode = async () => (await send(controlA, "GET", "/status", auth)).body.mode;

    // The probe's request: a page on evil.example, plain text (no CORS preflight), its own Host (DNS rebinding).
    const probe = await send(controlA, "POST", "/mode", { "content-type": "text/plain", origin: "http://evil.example", host: `evil.example:${controlA}` }, polling);
    expect(probe.status).toBe(403);
    // Each refusal alone, everything else right.
    expect((await send(controlA, "POST", "/mode", { ...auth, ...json, host: `evil.example:${controlA}` }, polling)).status).toBe(403);
    expect((await send(controlA, "POST", "/mode", { ...auth, ...json, origin: "http://evil.example" }, polling)).status).toBe(403);
    expect((await send(controlA, "POST", "/mode", { ...auth, ...json, origin: `http://127.0.0.1:${controlA}` }, polling)).status).toBe(403);
    expect((await send(controlA, "POST", "/mode", json, polling)).status).toBe(401);
    expect((await send(controlA, "POST", "/mode", { ...json, authorization: "Bearer not-the-token-at-all" }, polling)).status).toBe(401);
    expect((await send(controlA, "GET", "/status", {})).status).toBe(401);
    expect((await send(controlA, "POST", "/mode", { ...auth, "content-type": "text/plain" }, polling)).status).toBe(415);
    expect((await send(controlA, "POST", "/mode", { ...auth, "content-type": "application/x-www-form-urlencoded" }, "mode=polling")).status).toBe(415);
    const bad = await send(controlA, "POST", "/mode", { ...auth, ...json }, '{"mode":"fast"}');
    expect(bad).toMatchObject({ status: 400, body: { error: expect.stringMatching(/mode must be full, polling or summary/) } });
    expect(await mode()).toBe("full");

    // A backup takes no change (it would apply it later, when it takes over, unasked).
    const b = startCli(["controller", "--config", config("b", { switch: { address, election_id: 1, switch_id: "b", timestamp_unit_ns: 1 }, control_port: controlB })], dir, children);
    await until(() => b.out().includes("backup on"), 30_000, () => `controller b to be backup; printed: ${b.out()}`);
    const toBackup = await send(controlB, "POST", "/mode", { ...auth, ...json }, polling);
    expect(toBackup).toMatchObject({ status: 409, body: { error: expect.stringMatching(/not primary .*backup/) } });
    const cliToBackup = run(["mode", "polling", "--control", `127.0.0.1:${controlB}`]);
    expect(cliToBackup.status, cliToBackup.out).toBe(1);
    expect(cliToBackup.out.trim()).toMatch(/^rdma-telemetry: controller refused \(409\): not primary/);
    expect((await send(controlB, "GET", "/status", auth)).body).toMatchObject({ mode: "full", role: "backup" });

    // The operator's way: the mode command, with the token the controller wrote.
    const ok = run(["mode", "polling", "--control", `127.0.0.1:${controlA}`]);
    expect(ok.status, ok.out).toBe(0);
    expect(JSON.parse(ok.out)).toMatchObject({ mode: "polling" });
    expect(await mode()).toBe("polling");
    // The same request as curl would send it, back to full.
    expect((await send(controlA, "POST", "/mode", { ...auth, ...json }, '{"mode":"full"}')).status).toBe(200);
    expect(await mode()).toBe("full");
    // A wrong token on the command line's side: refused, nothing changed.
    const wrong = run(["mode", "polling", "--control", `127.0.0.1:${controlA}`], { RDMA_TELEMETRY_CONTROL_TOKEN: "0123456789abcdef-wrong" });
    expect(wrong.status, wrong.out).toBe(2);
    expect(wrong.out).toMatch(/controller refused \(401\): wrong control token/);
    expect(await mode()).toBe("full");
  }, 120_000);

  test("a token file others can read, and a non-loopback address without TLS, are refused before the controller starts", () => {
    const loose = join(dir, "loose-token");
    writeFileSync(loose, "0123456789abcdef0123456789\n");
    chmodSync(loose, 0o644);
    const c = config("loose", { switch: { address: "127.0.0.1:1" }, control_port: 1 });
    const r = run(["controller", "--config", c, "--control-token-file", loose]);
    expect(r.status, r.out).toBe(2);
    expect(r.out.trim()).toBe(`rdma-telemetry: control token file ${loose}: readable by other users (mode 644); chmod 600 ${loose}`);
    const open = run(["controller", "--config", config("open", { switch: { address: "127.0.0.1:1" }, control_port: 1, control_host: "0.0.0.0" })]);
    expect(open.status, open.out).toBe(2);
    expect(open.out.trim()).toMatch(/^rdma-telemetry: control_host: 0\.0\.0\.0 is not a loopback address: set control_tls/);
  }, 60_000);

  const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;
  test.skipIf(!hasOpenssl)("control_tls: HTTPS on a non-loopback address; the mode command verifies it with --control-ca", async () => {
    const openssl = (...args: string[]) => {
      const r = spawnSync("openssl", args, { cwd: dir, encoding: "utf8" });
      if (r.status !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`);
    };
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=controller.test", "-addext", "subjectAltName=DNS:controller.test,IP:127.0.0.1", "-keyout", "control.key", "-out", "control.pem");
    const sw = await startSwitch(children);
    const control = await freePort();
    const c = config("tls", { switch: { address: `127.0.0.1:${sw.port}`, switch_id: "tls", timestamp_unit_ns: 1 }, control_port: control, control_host: "0.0.0.0", control_tls: { cert: "control.pem", key: "control.key" } });
    const env = { RDMA_TELEMETRY_CONTROL_TOKEN: "a-token-from-the-environment-0001" };
    const p: CliProcess = startCli(["controller", "--config", c], dir, children, env);
    await until(() => p.out().includes("primary on"), 30_000, () => `the controller to be primary; printed: ${p.out()}`);
    expect(p.out()).toContain(`control: https://0.0.0.0:${control} (token from RDMA_TELEMETRY_CONTROL_TOKEN)`);
    // Plain HTTP to it gets no answer from the controller.
    await expect(send(control, "GET", "/status", { authorization: `Bearer ${env.RDMA_TELEMETRY_CONTROL_TOKEN}` })).rejects.toThrow();
    const unverified = run(["mode", "polling", "--control", `https://127.0.0.1:${control}`], env);
    expect(unverified.status, unverified.out).toBe(2);
    expect(unverified.out).toMatch(/no controller answers at 127\.0\.0\.1:\d+: .*(self-signed|certificate)/i);
    const ok = run(["mode", "polling", "--control", `https://127.0.0.1:${control}`, "--control-ca", join(dir, "control.pem")], env);
    expect(ok.status, ok.out).toBe(0);
    expect(JSON.parse(ok.out)).toMatchObject({ mode: "polling" });
  }, 120_000);
});
