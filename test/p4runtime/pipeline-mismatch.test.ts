// A pipeline whose P4Info is not its device config's is refused, naming what
// does not match: over P4Runtime (SetForwardingPipelineConfig answers
// INVALID_ARGUMENT and the switch keeps its pipeline) and at
// `rdma-telemetry switch` start (one line, exit 2), as is a CPU port past
// 9 bits.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { P4Info } from "../../p4runtime/src/generated/p4/config/v1/p4info.js";
import { GetForwardingPipelineConfigRequest_ResponseType, SetForwardingPipelineConfigRequest_Action } from "../../p4runtime/src/generated/p4/v1/p4runtime.js";
import { P4RuntimeClient, P4RuntimeError, toUint128 } from "../../p4runtime/src/index.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { CLI } from "../support/cli.js";

const root = new URL("../..", import.meta.url).pathname;
const BMV2 = join(root, "p4/build/telemetry.json");
/** P4Infos of other builds of the program, each with what the BMv2 device config has otherwise */
const MISMATCHED: Array<[string, RegExp]> = [
  ["p4/build/compact/telemetry.p4info.json", /digest 'io_digest_t' does not match .*16 fields against 20; field 3 'flags' is 4 bits in the P4Info, 8 in the device config/],
  // Tofino 2's histogram tables hold fewer ids than BMv2's: the first difference found.
  ["p4/build/t2na/telemetry.p4info.json", /table 'TelemetryIngress\.io_tracker\.histograms\.io_pairs': P4Info says 256 entries, the device config 1024/],
  ["p4/build/tna/telemetry.p4info.json", /register '[\w.]+' is not in the device config/],
];
const p4info = (f: string) => P4Info.fromJSON(JSON.parse(readFileSync(join(root, f), "utf8")));

describe("SetForwardingPipelineConfig", () => {
  let server: P4RuntimeServer;
  let client: P4RuntimeClient;
  let stream: ReturnType<P4RuntimeClient["streamChannel"]>;
  beforeAll(async () => {
    server = new P4RuntimeServer(new SoftwareSwitch({ clock: "virtual" }), { deviceId: 1n, cpuPort: 510 });
    client = new P4RuntimeClient({ address: `127.0.0.1:${await server.listen("127.0.0.1:0")}`, deviceId: 1n, timeoutMs: 10_000 });
    stream = client.streamChannel();
    stream.send({ update: { $case: "arbitration", value: { deviceId: 1n, role: undefined, electionId: toUint128(1n), status: undefined } } });
    await stream[Symbol.asyncIterator]().next();
  });
  afterAll(async () => {
    stream.close();
    client.close();
    await server.close();
  });
  const set = (info: string, cookie: bigint) =>
    client.setPipeline({ role: "", electionId: toUint128(1n), action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT, config: { p4info: p4info(info), p4DeviceConfig: readFileSync(BMV2), cookie: { cookie } } });

  for (const [info, reason] of MISMATCHED) {
    test(`${info} with the BMv2 device config: INVALID_ARGUMENT naming the mismatch; the committed pipeline stays`, async () => {
      await set("p4/build/telemetry.p4info.json", 5n);
      const err = await set(info, 6n).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(P4RuntimeError);
      expect((err as P4RuntimeError).code).toBe("INVALID_ARGUMENT");
      expect((err as P4RuntimeError).message).toMatch(/does not match the device config/);
      expect((err as P4RuntimeError).message).toMatch(reason);
      const got = await client.getPipeline(GetForwardingPipelineConfigRequest_ResponseType.COOKIE_ONLY);
      expect(got.config?.cookie?.cookie).toBe(5n);
    });
  }
});

describe("rdma-telemetry switch", () => {
  const run = (...args: string[]) => spawnSync(process.execPath, [...CLI, "switch", "--listen", "127.0.0.1:0", ...args], { cwd: root, encoding: "utf8", timeout: 60_000 });
  const cases: Array<[string[], RegExp]> = [
    ...MISMATCHED.slice(0, 2).map(([info, reason]): [string[], RegExp] => [["--p4info", join(root, info), "--device-config", BMV2], reason]),
    [["--cpu-port", "9999"], /--cpu-port must be .*0 to 510.*9999/],
  ];
  test("a mismatched pipeline or a CPU port past 9 bits: one line naming it, exit 2", () => {
    for (const [args, reason] of cases) {
      const r = run(...args);
      expect(r.status, `${args.join(" ")}: ${r.stdout}${r.stderr}`).toBe(2);
      expect(r.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(r.stderr, args.join(" ")).toMatch(reason);
    }
  }, 120_000);
});
