// The P4Runtime client library stands alone: `npm pack` of its folder gives a
// tarball that a scratch project outside the repository installs, and with
// only the package's public exports that project arbitrates, pushes a
// pipeline and reads table entries back from the software switch.
import { execFileSync, fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";

const root = new URL("../..", import.meta.url).pathname;
const tmp = mkdtempSync(join(tmpdir(), "p4runtime-pack-"));
let sw: ChildProcess | undefined;
afterAll(() => {
  sw?.kill("SIGKILL");
  rmSync(tmp, { recursive: true, force: true });
});

const SCRATCH = `
import { readFileSync } from "node:fs";
import { P4RuntimeClient, P4Schema, tableEntity, toUint128 } from "@rdma-telemetry/p4runtime";
import { P4Info } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import { SetForwardingPipelineConfigRequest_Action, Update_Type } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";

const [address, p4infoFile, jsonFile] = process.argv.slice(2);
const p4infoText = readFileSync(p4infoFile, "utf8");
const schema = P4Schema.fromJson(p4infoText);
const client = new P4RuntimeClient({ address, deviceId: 1n, timeoutMs: 10000 });
const stream = client.streamChannel();
stream.send({ update: { $case: "arbitration", value: { deviceId: 1n, electionId: toUint128(1n), role: undefined, status: undefined } } });
for await (const m of stream) if (m.update?.$case === "arbitration") break;
await client.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT,
  config: { p4info: P4Info.fromJSON(JSON.parse(p4infoText)), p4DeviceConfig: readFileSync(jsonFile), cookie: { cookie: 7n } } });
await client.write([{ type: Update_Type.INSERT, entity: tableEntity(schema, { table: "ipv4_routes", match: { dst_addr: "10.9.0.0/16" }, action: { name: "forwarding.route", params: { port: 5 } } }) }], 1n);
const tableId = schema.tables.get("ipv4_routes").preamble.id;
const read = await client.readAll([{ entity: { $case: "tableEntry", value: { tableId, match: [], priority: 0, isDefaultAction: false } } }]);
console.log(JSON.stringify(read.map((e) => ({ table: e.entity.value.tableId === tableId, action: e.entity.value.action?.type?.value?.params?.map((p) => [...p.value]) }))));
stream.close();
client.close();
`;

test("npm pack of the client library installs into a scratch project that reads from the software switch with the public exports only", async () => {
  execFileSync("npx", ["tsc", "-b", "p4runtime"], { cwd: root, stdio: "inherit" });
  const packed = execFileSync("npm", ["pack", "--pack-destination", tmp, "--json"], { cwd: join(root, "p4runtime"), encoding: "utf8" });
  const [pack] = JSON.parse(packed) as Array<{ filename: string; files: Array<{ path: string }> }>;
  expect(pack).toBeDefined();
  const { filename, files } = pack!;
  const paths = files.map((f) => f.path);
  expect(paths).toContain("dist/index.js");
  expect(paths).toContain("dist/index.d.ts");
  expect(paths).toContain("proto/p4/v1/p4runtime.proto");
  expect(paths.some((p) => p.startsWith("src/"))).toBe(false);

  const scratch = join(tmp, "scratch");
  execFileSync("mkdir", ["-p", scratch]);
  writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(tmp, filename)], { cwd: scratch, stdio: "inherit" });
  expect(readdirSync(join(scratch, "node_modules/@rdma-telemetry"))).toEqual(["p4runtime"]);
  writeFileSync(join(scratch, "read.mjs"), SCRATCH);

  sw = fork(join(root, "test/support/switch-process.ts"), ["0"], { execArgv: ["--conditions=source", "--import", "tsx"], stdio: ["ignore", "ignore", "inherit", "ipc"] });
  const port = await new Promise<number>((r) => sw!.once("message", (m: { port: number }) => r(m.port)));
  // Plain node, in the scratch project: no tsx, no source condition, nothing of this repository but the tarball.
  const out = execFileSync(process.execPath, ["read.mjs", `127.0.0.1:${port}`, join(root, "p4/build/telemetry.p4info.json"), join(root, "p4/build/telemetry.json")], { cwd: scratch, encoding: "utf8", timeout: 60_000 });
  expect(JSON.parse(out.trim())).toEqual([{ table: true, action: [[5]] }]);
  expect(readFileSync(join(scratch, "node_modules/@rdma-telemetry/p4runtime/package.json"), "utf8")).toContain('"name": "@rdma-telemetry/p4runtime"');
}, 180_000);
