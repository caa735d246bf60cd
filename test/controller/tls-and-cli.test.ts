// TLS and mutual TLS between the client and a P4Runtime server, and the
// `controller` / `mode` commands against a running software switch.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, test } from "vitest";
import { buildTableEntry, decodeTableEntry, P4RuntimeClient, P4Schema, type TlsOptions } from "../../p4runtime/src/index.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { freePort } from "../support/net.js";
import { exited, outputMatching } from "../support/wait.js";
import { CLI } from "../support/cli.js";

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
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other-ca", "-keyout", "other-ca.key", "-out", "other-ca.pem");
  const f = (n: string) => readFileSync(join(dir, n));
  return { otherCa: f("other-ca.pem"), ca: f("ca.pem"), serverCert: f("server.pem"), serverKey: f("server.key"), clientCert: f("client.pem"), clientKey: f("client.key") };
}

const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;

describe.skipIf(!hasOpenssl)("TLS", () => {
  test("the client talks TLS and mutual TLS, and refuses a server it cannot verify", async () => {
    const pki = makePki();
    const sw = new SoftwareSwitch();
    const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
    // Mutual TLS: the server checks the client's certificate against the CA.
    const port = await server.listen("127.0.0.1:0", grpc.ServerCredentials.createSsl(pki.ca, [{ cert_chain: pki.serverCert, private_key: pki.serverKey }], true));
    const address = `127.0.0.1:${port}`;
    const capabilities = async (tls: TlsOptions) => {
      const c = new P4RuntimeClient({ address, deviceId: 1n, timeoutMs: 5000, tls });
      try {
        return await c.capabilities();
      } finally {
        c.close();
      }
    };
    const goodTls = { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey, serverName: "switch.test" };
    // A server that is not there also answers UNAVAILABLE: each refusal below
    // must name the TLS failure, and the same server must answer the right
    // credentials right after it.
    const live = async () => expect((await capabilities(goodTls)).p4runtimeApiVersion).toBe("1.5.0");
    const tlsFailure = /certificate|altnames|SSL|TLS|handshake/i;
    try {
      await live();
      // Mutual TLS: no client certificate, and the server sends the TLS alert "certificate required".
      await expect(capabilities({ ca: pki.ca, serverName: "switch.test" })).rejects.toMatchObject({ code: "UNAVAILABLE", message: expect.stringMatching(/certificate required/) });
      await live();
      // The server's certificate is not for the name the client expects.
      await expect(capabilities({ ...goodTls, serverName: "other.test" })).rejects.toMatchObject({ code: "UNAVAILABLE", message: expect.stringMatching(/does not match certificate's altnames.*other\.test/) });
      await live();
      // A CA that did not sign the server's certificate.
      await expect(capabilities({ ...goodTls, ca: pki.otherCa })).rejects.toMatchObject({ code: "UNAVAILABLE", message: expect.stringMatching(/certificate/i) });
      await live();
    } finally {
      await server.close();
    }
    // The same client against the closed server: UNAVAILABLE too, but the connection is refused, with no word of TLS.
    const dead = await capabilities(goodTls).then(() => undefined, (e: unknown) => e as Error);
    expect(dead).toMatchObject({ code: "UNAVAILABLE", message: expect.stringMatching(/ECONNREFUSED/) });
    expect(dead!.message).not.toMatch(tlsFailure);
  });
});

describe("command line", () => {
  test("`controller` configures a switch; `mode polling` switches it by a table write; bad config exits 2", async () => {
    const sw = new SoftwareSwitch();
    const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
    const port = await server.listen("127.0.0.1:0");
    const controlPort = await freePort();
    const config = join(dir, "controller.json");
    writeFileSync(config, JSON.stringify({
      switch: { address: `127.0.0.1:${port}`, switch_id: "cli", timestamp_unit_ns: 1 },
      ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }, { port: 2, role: "storage", prefixes: ["10.0.2.0/24"] }],
      control_port: controlPort,
    }));
        const ctl = spawn(process.execPath, [...CLI, "controller", "--config", config, "--log-level", "warn"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    const primary = outputMatching(ctl.stdout, "primary on", 30_000, ctl);
    const reader = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n, timeoutMs: 5000 });
    try {
      await primary;
      const schema = P4Schema.fromJson(readFileSync(join(root, "p4/build/telemetry.p4info.json"), "utf8"));
      // The mode as the switch has it: a P4Runtime Read of the config table's default entry.
      const mode = async () => {
        const [e] = await reader.readAll([{ entity: { $case: "tableEntry", value: buildTableEntry(schema, { table: "config.telemetry_config", isDefault: true }) } }]);
        return e?.entity?.$case === "tableEntry" ? decodeTableEntry(schema, e.entity.value).action?.params.mode : undefined;
      };
      expect(await mode()).toBe(1n);
      // Asynchronously: the switch answering the controller's writes runs in this process.
      const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const c = spawn(process.execPath, [...CLI, "mode", "polling", "--control", `127.0.0.1:${controlPort}`], { cwd: root });
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
      expect(await mode()).toBe(2n);
    } finally {
      reader.close();
      ctl.kill("SIGTERM");
      await exited(ctl);
      await server.close();
    }
    writeFileSync(config, JSON.stringify({ ports: [{ port: 1, role: "computer" }] }));
    const bad = spawnSync(process.execPath, [...CLI, "controller", "--config", config], { cwd: root, encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/ports\[0\]\.role: must be compute, storage or fabric/);
  }, 90_000);
});
