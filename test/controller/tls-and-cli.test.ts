// TLS and mutual TLS between the client and a P4Runtime server, and the
// `controller` / `mode` commands against a running software switch.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, test } from "vitest";
import { P4RuntimeClient } from "../../p4runtime/src/client.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { decodeTableEntry } from "../../p4runtime/src/entities.js";
import { P4Schema } from "../../p4runtime/src/schema.js";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "tls-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const openssl = (...args: string[]) => {
  const r = spawnSync("openssl", args, { cwd: dir, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`);
};

function makePki() {
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca", "-keyout", "ca.key", "-out", "ca.pem");
  for (const name of ["server", "client"]) {
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", `/CN=${name === "server" ? "switch.test" : "controller"}`, "-keyout", `${name}.key`, "-out", `${name}.csr`);
    writeFileSync(join(dir, `${name}.ext`), name === "server" ? "subjectAltName=DNS:switch.test\n" : "extendedKeyUsage=clientAuth\n");
    openssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1", "-extfile", `${name}.ext`, "-out", `${name}.pem`);
  }
  const f = (n: string) => readFileSync(join(dir, n));
  return { ca: f("ca.pem"), serverCert: f("server.pem"), serverKey: f("server.key"), clientCert: f("client.pem"), clientKey: f("client.key") };
}

const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;

describe.skipIf(!hasOpenssl)("TLS", () => {
  test("the client talks TLS and mutual TLS, and refuses a server it cannot verify", async () => {
    const pki = makePki();
    const sw = new SoftwareSwitch();
    const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
    // Mutual TLS: the server checks the client's certificate against the CA.
    const port = await server.listen("127.0.0.1:0", grpc.ServerCredentials.createSsl(pki.ca, [{ cert_chain: pki.serverCert, private_key: pki.serverKey }], true));
    try {
      const good = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n, timeoutMs: 5000, tls: { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey, serverName: "switch.test" } });
      expect((await good.capabilities()).p4runtimeApiVersion).toBe("1.5.0");
      good.close();
      const noClientCert = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n, timeoutMs: 5000, tls: { ca: pki.ca, serverName: "switch.test" } });
      await expect(noClientCert.capabilities()).rejects.toMatchObject({ code: "UNAVAILABLE" });
      noClientCert.close();
      const wrongName = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n, timeoutMs: 5000, tls: { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey, serverName: "other.test" } });
      await expect(wrongName.capabilities()).rejects.toMatchObject({ code: "UNAVAILABLE" });
      wrongName.close();
    } finally {
      await server.close();
    }
  });
});

describe("command line", () => {
  test("`controller` configures a switch; `mode polling` switches it by a table write; bad config exits 2", async () => {
    const sw = new SoftwareSwitch();
    const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
    const port = await server.listen("127.0.0.1:0");
    const controlPort = 19000 + Math.floor(Math.random() * 1000);
    const config = join(dir, "controller.json");
    writeFileSync(config, JSON.stringify({
      switch: { address: `127.0.0.1:${port}`, switch_id: "cli", timestamp_unit_ns: 1 },
      ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }, { port: 2, role: "storage", prefixes: ["10.0.2.0/24"] }],
      control_port: controlPort,
    }));
    const bin = [join(root, "bin/rdma-telemetry.ts")];
    const ctl = spawn(process.execPath, ["--conditions=source", "--import", "tsx", ...bin, "controller", "--config", config, "--log-level", "warn"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    ctl.stdout.on("data", (d: Buffer) => (out += d.toString()));
    try {
      const deadline = Date.now() + 30_000;
      while (!out.includes("primary on") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain("primary on");
      const schema = P4Schema.fromJson(readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8"));
      const mode = () => {
        const t = server.binding!.tables.get(schema.tables.get("config.telemetry_config").preamble!.id)!;
        return decodeTableEntry(schema, server.binding!.encodeDefault(t, false)).action?.params.mode;
      };
      expect(mode()).toBe(1n);
      // Asynchronously: the switch answering the controller's writes runs in this process.
      const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const c = spawn(process.execPath, ["--conditions=source", "--import", "tsx", ...bin, "mode", "polling", "--control", `127.0.0.1:${controlPort}`], { cwd: root });
        let stdout = "";
        let stderr = "";
        c.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
        c.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        c.on("close", (status) => resolve({ status, stdout, stderr }));
      });
      expect(r.status, r.stderr).toBe(0);
      // The epoch moves on (a controller starts at a random one, SPEC §5 takeover).
      const answer = JSON.parse(r.stdout) as { mode: string; epoch: number };
      expect(answer.mode).toBe("polling");
      expect(answer.epoch).toBeGreaterThan(0);
      expect(answer.epoch).toBeLessThan(0x10000);
      expect(mode()).toBe(2n);
    } finally {
      ctl.kill("SIGTERM");
      await new Promise((r) => ctl.once("exit", r));
      await server.close();
    }
    writeFileSync(config, JSON.stringify({ ports: [{ port: 1, role: "computer" }] }));
    const bad = spawnSync(process.execPath, ["--conditions=source", "--import", "tsx", ...bin, "controller", "--config", config], { cwd: root, encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/ports\[0\]\.role: must be compute, storage or fabric/);
  }, 90_000);
});
