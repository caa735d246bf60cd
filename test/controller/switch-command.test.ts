// `rdma-telemetry switch` as a standalone P4Runtime target, as a real
// process: started with its pipeline, a controller (the client library)
// arbitrates, writes a route and sends a packet out; the packet comes out of
// the routed port into that port's capture. Captures given per port are
// replayed in. Bad options are refused with one line and exit 2.
import { spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { ipv4 } from "../../contract/src/ipv4.js";
import { P4RuntimeClient, P4Schema, tableEntity, toUint128 } from "../../p4runtime/src/index.js";
import { GetForwardingPipelineConfigRequest_ResponseType, Update_Type } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { openCapture, writePcap } from "../../traffic/src/pcap.js";
import { buildFrame, Opcode } from "../../traffic/src/roce.js";
import { outputMatching } from "../support/wait.js";
import { CLI } from "../support/cli.js";
import { scratch } from "../support/scratch.js";

const root = new URL("../..", import.meta.url).pathname;
const { dir, children } = scratch("switch-command-");

const cli = [...CLI, "switch"];
const pipeline = ["--p4info", join(root, "p4/build/telemetry.p4info.json"), "--device-config", join(root, "p4/build/telemetry.json")];
const frame = (dst: string) => buildFrame({ src: ipv4("10.0.1.1"), dst: ipv4(dst), opcode: Opcode.SEND_ONLY, destQp: 17, psn: 1, payloadLength: 64 }).data;

test("a controller writes a route and sends a packet out; it leaves by the routed port into that port's capture; captures are replayed in", async () => {
  const input = join(dir, "in.pcap");
  writePcap(input, [0n, 1000n].map((t) => ({ timestampNs: 1_800_000_000_000_000_000n + t, data: frame("10.7.0.1") })));
  const out = join(dir, "out");
  const sw = spawn(process.execPath, [...cli, "--listen", "127.0.0.1:0", ...pipeline, "--pcap-in", `1=${input}`, "--pcap-out", out], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  children.push(sw);
  const text = await outputMatching(sw.stdout!, /2 packets of .*in\.pcap sent in on port 1/, 30_000, sw);
  const port = /P4Runtime on 127\.0\.0\.1:(\d+)/.exec(text)![1];
  const client = new P4RuntimeClient({ address: `127.0.0.1:${port}`, deviceId: 1n, timeoutMs: 5000 });
  const ch = client.streamChannel();
  ch.send({ update: { $case: "arbitration", value: { deviceId: 1n, electionId: toUint128(1n), role: undefined, status: undefined } } });
  for await (const m of ch) if (m.update?.$case === "arbitration") break;
  // The pipeline it was started with.
  const got = await client.getPipeline(GetForwardingPipelineConfigRequest_ResponseType.P4INFO_AND_COOKIE);
  const schema = new P4Schema(got.config!.p4info!);
  await client.write([{ type: Update_Type.INSERT, entity: tableEntity(schema, { table: "ipv4_routes", match: { dst_addr: "10.2.0.0/16" }, action: { name: "forwarding.route", params: { port: 3 } } }) }], 1n);
  const data = frame("10.2.0.5");
  ch.send({ update: { $case: "packet", value: { payload: data, metadata: [] } } });
  await new Promise((r) => setTimeout(r, 300));
  ch.close();
  client.close();
  sw.kill("SIGTERM");
  await new Promise((r) => sw.once("exit", r));
  const packets = [...openCapture(join(out, "port-3.pcap"))];
  expect(packets).toHaveLength(1);
  expect(packets[0]!.data.equals(data)).toBe(true);
}, 60_000);

test("a capture cut short in its last packet is sent in up to the cut, which is said in one line; another port's capture plays on, and the switch goes on serving", async () => {
  const whole = join(dir, "whole.pcap");
  writePcap(whole, [0n, 1000n, 2000n].map((t) => ({ timestampNs: 1_800_000_000_000_000_000n + t, data: frame("10.7.0.1") })));
  const cut = join(dir, "cut.pcap");
  const bytes = readFileSync(whole);
  writeFileSync(cut, bytes.subarray(0, bytes.length - 20));
  // Still playing when the other ends: 5 packets 200 ms apart.
  const other = join(dir, "other.pcap");
  writePcap(other, [0, 1, 2, 3, 4].map((i) => ({ timestampNs: 1_800_000_000_000_000_000n + BigInt(i) * 200_000_000n, data: frame("10.7.0.2") })));
  const sw = spawn(process.execPath, [...cli, "--listen", "127.0.0.1:0", ...pipeline, "--pcap-in", `1=${cut}`, "--pcap-in", `2=${other}`], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  children.push(sw);
  let err = "";
  sw.stderr!.on("data", (b: Buffer) => (err += b.toString()));
  const text = await outputMatching(sw.stdout!, /5 packets of .*other\.pcap sent in on port 2/, 30_000, sw);
  expect(text).toMatch(/2 packets of .*cut\.pcap sent in on port 1/);
  const damage = /cut\.pcap: packet record 3 at byte \d+ claims \d+ bytes, only \d+ remain: the capture ends there; its 2 packets before it were sent in/;
  const deadline = Date.now() + 10_000;
  while (!damage.test(err) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(err).toMatch(damage);
  expect(err.trim().split("\n")).toHaveLength(1);
  await new Promise((r) => setTimeout(r, 300));
  expect(sw.exitCode).toBeNull();
}, 60_000);

test("bad options are refused with one line and exit 2", () => {
  const run = (...args: string[]) => spawnSync(process.execPath, [...cli, ...args], { cwd: root, encoding: "utf8", timeout: 30_000 });
  const cases: Array<[string[], RegExp]> = [
    [["--p4info", join(root, "p4/build/telemetry.p4info.json")], /--p4info and --device-config go together/],
    [["--pcap-in", "x.pcap"], /--pcap-in must be PORT=FILE/],
    [["--pcap-in", `1=${join(dir, "missing.pcap")}`], /missing\.pcap/],
    [["--p4info", join(root, "p4/build/telemetry.json"), "--device-config", join(root, "p4/build/telemetry.json")], /--device-config .*(P4Info|does not match|cannot)/],
  ];
  for (const [args, message] of cases) {
    const r = run(...args);
    expect(r.status, args.join(" ")).toBe(2);
    expect(r.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
    expect(r.stderr, args.join(" ")).toMatch(message);
  }
});
