// Every option of every command, given badly: a value missing or empty, a
// negative, garbage or out-of-range number. Each is one line on stderr naming
// the option, exit 2, and nothing else done (no directory made, no file
// touched). Real `rdma-telemetry` processes, a few at a time.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { generateTraffic, writeTraffic } from "../../traffic/src/generator.js";
import { digestsSettled, ioFeeder, startSwitch, stop, writeControllerConfig } from "../support/controller-restart.js";
import type { ChildProcess } from "node:child_process";
import { CLI } from "../support/cli.js";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "command-line-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `rdma-telemetry ARGS` in `cwd` (KAFKA_BROKERS cleared), its output gathered; written files limited to `limitFileBytes` if given. */
function run(args: string[], cwd = dir, limitFileBytes?: number): Promise<Run> {
  return new Promise((resolve) => {
    const node = [process.execPath, ...CLI, ...args];
    // prlimit: a file size limit, as a disk that fills up (writes past it fail with EFBIG).
    const [cmd, ...argv] = limitFileBytes === undefined ? node : ["prlimit", `--fsize=${limitFileBytes}`, ...node];
    const child = spawn(cmd!, argv, {
      cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KAFKA_BROKERS: "" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 240_000);
    child.once("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** Runs every case, a few processes at a time; the results in the cases' order. */
async function runAll(cases: string[][]): Promise<Run[]> {
  const results: Run[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const i = next++;
      results[i] = await run(cases[i]!);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return results;
}

const KAFKA = ["kafka-brokers", "kafka-client", "kafka-topic-prefix", "kafka-ca", "kafka-cert", "kafka-key", "kafka-sasl-mechanism", "kafka-sasl-username", "kafka-sasl-password-file"];

/**
 * Each command (with the positionals it needs) and the options that take a
 * value, as `--help` lists them. Options are parsed alike for every command:
 * each is tried once, with the first command that lists it.
 */
const COMMANDS: Array<{ command: string[]; options: string[] }> = [
  { command: ["demo"], options: ["duration-ms", "seed", "load", "out-dir", "mode", "listen", "metrics-listen", "log-level", ...KAFKA] },
  { command: ["replay", "x.pcap"], options: ["topology", "out", "mode", "switch-id", "forwarded", "metrics-listen", ...KAFKA] },
  { command: ["generate"], options: ["out-dir", "duration-ms", "seed", "load", "layout", "ip", "reorder", "reorder-loss", "job-turnover", "response-loss"] },
  { command: ["controller"], options: ["config", "out", "journal", "metrics-listen", ...KAFKA] },
  { command: ["switch"], options: ["listen", "p4info", "device-config", "device-id", "cpu-port", "pcap-in", "pcap-out"] },
  { command: ["mode", "full"], options: ["control"] },
  { command: ["consume"], options: ["topic", "kafka-brokers"] },
  { command: ["dashboard"], options: ["kafka-brokers", "listen", "group", "kafka-topic-prefix"] },
];

/** Numeric options and values each must refuse. */
const NUMBERS: Array<{ command: string[]; option: string; values: string[] }> = [
  { command: ["demo"], option: "duration-ms", values: ["-5", "abc", "1e30", "86400001"] },
  { command: ["generate", "--out-dir", "never-made"], option: "duration-ms", values: ["0", "9999999999"] },
  { command: ["generate", "--out-dir", "never-made"], option: "seed", values: ["-1", "1.5", "4294967296"] },
  { command: ["demo"], option: "load", values: ["-1", "abc", "11"] },
  { command: ["switch"], option: "device-id", values: ["-1", "18446744073709551616"] },
  { command: ["switch"], option: "cpu-port", values: ["-1", "0x10", "512"] },
];

function expectOneLineNaming(r: Run, what: string, label: string) {
  expect(r.status, `${label}: ${r.stdout}${r.stderr}`).toBe(2);
  const lines = r.stderr.trim().split("\n");
  expect(lines, label).toHaveLength(1);
  expect(lines[0], label).toContain(what);
  expect(r.stderr, label).not.toMatch(/\n\s+at /);
}

describe("the command line refuses bad values with one line and exit 2", () => {
  test("every option of every command, missing its value (last on the line, or followed by another option) or given an empty one", { timeout: 300_000 }, async () => {
    const cases: Array<{ args: string[]; option: string }> = [];
    const tried = new Set<string>();
    for (const { command, options } of COMMANDS) {
      for (const o of options) {
        if (tried.has(o)) continue;
        const form = tried.size % 3;
        tried.add(o);
        const args = form === 0 ? [`--${o}`] : form === 1 ? [`--${o}`, "--log-level", "warn"] : [`--${o}=`];
        cases.push({ args: [...command, ...args], option: `--${o}` });
      }
    }
    // A flag given a value, an unknown option.
    cases.push({ args: ["controller", "--append=yes"], option: "--append" }, { args: ["generate", "--out-dir", "never-made", "--frobnicate"], option: "--frobnicate" });
    const results = await runAll(cases.map((c) => c.args));
    cases.forEach((c, i) => expectOneLineNaming(results[i]!, c.option, c.args.join(" ")));
    expect(existsSync(join(dir, "never-made"))).toBe(false);
  });

  test("every numeric option, given a negative, garbage or out-of-range number, names the option and its limits", { timeout: 300_000 }, async () => {
    const cases: Array<{ args: string[]; option: string }> = [];
    for (const { command, option, values } of NUMBERS) {
      // A negative number as its own argument is the option's value, not another option.
      for (const v of values) cases.push({ args: [...command, `--${option}`, v], option: `--${option}` });
    }
    const results = await runAll(cases.map((c) => c.args));
    cases.forEach((c, i) => expectOneLineNaming(results[i]!, c.option, c.args.join(" ")));
    cases.forEach((c, i) => c.option === "--duration-ms" && expect(results[i]!.stderr).toContain("from 1 to 86400000 (24 h)"));
    expect(existsSync(join(dir, "never-made"))).toBe(false);
  });

  test("--ip, --reorder, --mtu, --io-sizes and --storage-reorder given bad values, to generate and to demo: one line saying so", { timeout: 300_000 }, async () => {
    const gen = ["generate", "--out-dir", "never-made"];
    const demo = ["demo", "--out-dir", "never-made"];
    const cases: Array<{ args: string[]; says: string }> = [
      { args: [...gen, "--ip", "5"], says: "--ip must be 4, 6 or mixed (got '5')" },
      { args: [...gen, "--reorder", "0"], says: "--reorder must be SHARE[:MAXDISP]" },
      { args: [...gen, "--reorder", "1.5"], says: "--reorder must be SHARE[:MAXDISP]" },
      { args: [...gen, "--reorder", "0.2:0"], says: "--reorder must be SHARE[:MAXDISP]" },
      { args: [...gen, "--reorder", "0.2:x"], says: "(got '0.2:x')" },
      { args: [...gen, "--reorder-loss", "0.5"], says: "--reorder-loss needs --reorder" },
      { args: [...gen, "--reorder", "0.2", "--reorder-loss", "2"], says: "--reorder-loss must be a share from 0 to 1" },
      { args: [...gen, "--job-turnover", "0.6x"], says: "--job-turnover must be a share of the hosts from 0 to 1" },
      { args: [...gen, "--response-loss", "0.6"], says: "--response-loss must be a share of the NVMe responses from 0 to 0.5 (got '0.6')" },
      { args: [...gen, "--compute-tors", "5"], says: "--compute-tors must be at most --hosts (4; got 5)" },
      // An option the command does not take is refused, not ignored.
      { args: [...demo, "--compute-tors", "2"], says: "demo does not take --compute-tors (rdma-telemetry demo --help)" },
      { args: [...gen, "--kafka-brokers", "127.0.0.1:9092"], says: "generate does not take --kafka-brokers" },
      { args: ["exporter", "--kafka-brokers", "127.0.0.1:9092", "--out", "r.jsonl"], says: "exporter does not take --out" },
      { args: ["mode", "full", "--topic", "rdma.io.v1"], says: "mode does not take --topic" },
      { args: [...gen, "--hosts", "8", "--targets", "3", "--storage-tors", "0"], says: "--storage-tors must be a whole number from 1 to 50 (and at most --targets) (got '0')" },
      { args: [...gen, "--layout", "single", "--compute-tors", "2"], says: "--compute-tors and --storage-tors need --layout two-tor" },
      { args: [...demo, "--response-loss", "1/2"], says: "--response-loss must be a share of the NVMe responses from 0 to 0.5" },
      { args: [...demo, "--ip", "v6"], says: "--ip must be 4, 6 or mixed (got 'v6')" },
      { args: [...demo, "--reorder", "0.2:256"], says: "--reorder must be SHARE[:MAXDISP]" },
      { args: [...demo, "--reorder-loss", "0.5"], says: "--reorder-loss needs --reorder" },
      { args: [...gen, "--mtu", "1500"], says: "--mtu must be one of 256, 512, 1024, 2048, 4096 bytes (got '1500')" },
      { args: [...demo, "--mtu", "1k"], says: "--mtu must be one of 256, 512, 1024, 2048, 4096 bytes (got '1k')" },
      { args: [...gen, "--io-sizes", "4k,1000"], says: "--io-sizes must be a comma-separated list of sizes in bytes, k or m, each a multiple of 512 from 512 to 8m (got '4k,1000')" },
      { args: [...demo, "--io-sizes", "16m"], says: "--io-sizes must be a comma-separated list" },
      { args: [...gen, "--storage-reorder", "0"], says: "--storage-reorder must be SHARE[:MAXDISP]" },
      { args: [...demo, "--storage-reorder", "0.5:65"], says: "(got '0.5:65')" },
    ];
    const results = await runAll(cases.map((c) => c.args));
    cases.forEach((c, i) => expectOneLineNaming(results[i]!, c.says, c.args.join(" ")));
    expect(existsSync(join(dir, "never-made"))).toBe(false);
  });

  test("an --out-dir that is a file or cannot be made, a broker list that names no broker, a port out of range", { timeout: 120_000 }, async () => {
    writeFileSync(join(dir, "a-file"), "kept\n");
    const cases = [
      { args: ["generate", "--out-dir", "a-file"], says: "a-file is a file, not a directory" },
      { args: ["generate", "--out-dir", "a-file/sub"], says: "a-file is a file, not a directory" },
      { args: ["generate", "--out-dir", "/proc/rdma-telemetry-test/out"], says: "cannot create /proc/rdma-telemetry-test" },
      { args: ["demo", "--out-dir", "a-file"], says: "a-file is a file, not a directory" },
      { args: ["demo", "--out-dir", "fresh-demo", "--kafka-brokers", ","], says: "--kafka-brokers: no broker given" },
      { args: ["replay", "x.pcap", "--topology", "t.json", "--out", "r.jsonl", "--kafka-brokers", " , "], says: "--kafka-brokers: no broker given" },
      { args: ["controller", "--config", "c.json", "--kafka-brokers", ","], says: "--kafka-brokers: no broker given" },
      // Ports beyond 65535 in the addresses commands listen on or talk to.
      // (the option and its value named once, then what is wrong)
      { args: ["demo", "--out-dir", "fresh-demo", "--metrics-listen", "127.0.0.1:99999"], says: "rdma-telemetry: --metrics-listen 127.0.0.1:99999: not HOST:PORT with a port from 0 to 65535" },
      { args: ["exporter", "--kafka-brokers", "127.0.0.1:1", "--metrics-listen", "0.0.0.0:abc"], says: "rdma-telemetry: --metrics-listen 0.0.0.0:abc: not HOST:PORT with a port from 0 to 65535" },
      { args: ["switch", "--listen", "127.0.0.1:99999"], says: "--listen" },
      { args: ["mode", "full", "--control", "127.0.0.1:99999"], says: "127.0.0.1:99999" },
    ];
    const results = await runAll(cases.map((c) => c.args));
    cases.forEach((c, i) => expectOneLineNaming(results[i]!, c.says, c.args.join(" ")));
    expect(readFileSync(join(dir, "a-file"), "utf8")).toBe("kept\n");
  });
});

describe("captures are not overwritten without --force", () => {
  test("generate and demo refuse a directory that holds files, leave it as it was, and overwrite it with --force", { timeout: 180_000 }, async () => {
    const out = join(dir, "captures");
    mkdirSync(out);
    writeFileSync(join(out, "tor.pcap"), "an earlier capture");
    const refused = await runAll([
      ["generate", "--out-dir", out, "--duration-ms", "50", "--layout", "single"],
      ["demo", "--out-dir", out, "--duration-ms", "50"],
    ]);
    for (const r of refused) expectOneLineNaming(r, `--out-dir ${out} already holds files (tor.pcap)`, "refused");
    expect(readFileSync(join(out, "tor.pcap"), "utf8")).toBe("an earlier capture");

    // An empty directory is as good as a new one; --force overwrites.
    const empty = join(dir, "empty");
    mkdirSync(empty);
    const [fresh, forced] = await runAll([
      ["generate", "--out-dir", empty, "--duration-ms", "50", "--layout", "single"],
      ["generate", "--out-dir", out, "--duration-ms", "50", "--layout", "single", "--force"],
    ]);
    expect(fresh!.status, fresh!.stderr).toBe(0);
    expect(forced!.status, forced!.stderr).toBe(0);
    expect(readFileSync(join(out, "tor.pcap")).subarray(0, 4).readUInt32LE(0)).toBe(0xa1b23c4d); // a pcap now
  });

  test("the demo runs twice into the same directory with --force, as `npm start` does", { timeout: 180_000 }, async () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toMatch(/ demo --force$/);
    const demoDir = join(dir, "demo-twice");
    for (let i = 0; i < 2; i++) {
      const r = await run(["demo", "--force", "--out-dir", demoDir, "--duration-ms", "300", "--load", "0.1"]);
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain("self-check against the generator's ground truth");
    }
    const refused = await run(["demo", "--out-dir", demoDir, "--duration-ms", "300", "--load", "0.1"]);
    expectOneLineNaming(refused, "already holds files", "demo without --force");
  });

  test("demo --ip 6 and --ip mixed: the self-check finds every record exact to the ns, addresses in RFC 5952 text", { timeout: 180_000 }, async () => {
    const families = ["6", "mixed"] as const;
    const results = await runAll(families.map((ip) => ["demo", "--out-dir", join(dir, `demo-ip${ip}`), "--duration-ms", "300", "--load", "0.1", "--ip", ip]));
    families.forEach((ip, i) => {
      const r = results[i]!;
      expect(r.status, r.stdout + r.stderr).toBe(0);
      const m = /self-check against the generator's ground truth: (\d+)\/(\d+) I\/O records and (\d+)\/(\d+) messages exact to the ns/.exec(r.stdout);
      expect(m, r.stdout).not.toBeNull();
      expect(m![1]).toBe(m![2]);
      expect(m![3]).toBe(m![4]);
      expect(Number(m![2])).toBeGreaterThan(0);
      const hosts = readFileSync(join(dir, `demo-ip${ip}`, "records.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { type: string; host?: string }).filter((x) => x.type === "io").map((x) => x.host!);
      const v6 = hosts.filter((h) => /^2001:db8:0:1::[0-9a-f]+$/.test(h)).length;
      if (ip === "6") expect(v6).toBe(hosts.length);
      else expect(v6 > 0 && v6 < hosts.length, `${v6} of ${hosts.length} over IPv6`).toBe(true);
    });
  });
});

describe("outputs that cannot be written, and pipelines that are not what they say", () => {
  const capture = join(dir, "cap");
  const cap = () => {
    if (!existsSync(capture)) writeTraffic(capture, generateTraffic({ seed: 2, layout: "single", durationNs: 300_000_000, hosts: 2, targets: 1, ioRate: 4000 }));
    return [join(capture, "tor.pcap"), "--topology", join(capture, "tor.topology.json")];
  };
  const hasPrlimit = spawnSync("prlimit", ["--version"]).status === 0;

  test("replay --out /dev/full: one line, exit 2, nothing left behind", { timeout: 120_000 }, async () => {
    const r = await run(["replay", ...cap(), "--out", "/dev/full"]);
    expectOneLineNaming(r, "/dev/full", "replay --out /dev/full");
    expect(existsSync("/dev/full.lock")).toBe(false);
  });

  test.skipIf(!hasPrlimit)("an --out file that fills up mid-run keeps its whole records, says how many were not written, and exits 2", { timeout: 120_000 }, async () => {
    const out = join(dir, "filled.jsonl");
    const r = await run(["replay", ...cap(), "--out", out], dir, 200_000);
    expectOneLineNaming(r, `cannot write ${out}`, "replay into a filled-up file");
    const m = /; (\d+) records written before it are kept, (\d+) records were not written/.exec(r.stderr);
    expect(m, r.stderr).not.toBeNull();
    const lines = readFileSync(out, "utf8").split("\n");
    expect(lines.pop()).toBe(""); // no partial line
    expect(lines.length).toBe(Number(m![1]));
    expect(lines.length).toBeGreaterThan(100);
    expect(Number(m![2])).toBeGreaterThan(0);
    for (const l of lines) expect((JSON.parse(l) as { type: string }).type).toBeTruthy();
    expect(existsSync(`${out}.lock`)).toBe(false);
  });

  test.skipIf(!hasPrlimit)("generate into a disk that fills up: one line naming the file, exit 2, the files keep what was written", { timeout: 120_000 }, async () => {
    const out = join(dir, "filled-captures");
    const r = await run(["generate", "--out-dir", out, "--duration-ms", "300"], dir, 100_000);
    expectOneLineNaming(r, `cannot write ${out}/tor-c.pcap`, "generate into a filled-up disk");
    expect(readFileSync(join(out, "tor-c.pcap")).length).toBe(100_000);
  });

  test.skipIf(!hasPrlimit)("controller --out into a disk that fills up: stopped at the signal with one line, exit 2, the file keeps its whole records", { timeout: 120_000 }, async () => {
    const children: ChildProcess[] = [];
    try {
      const sw = await startSwitch(children);
      const config = writeControllerConfig(dir, sw.port, "filled");
      const out = join(dir, "controller-filled.jsonl");
      const node = [process.execPath, ...CLI, "controller", "--config", config, "--out", out];
      const c = spawn("prlimit", ["--fsize=3000", ...node], { cwd: dir, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KAFKA_BROKERS: "" } });
      children.push(c);
      let stdout = "";
      let stderr = "";
      c.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      await new Promise<void>((resolve, reject) => {
        c.stdout.on("data", (d: Buffer) => (stdout += d.toString()).includes("primary on") && resolve());
        c.once("exit", (code) => reject(new Error(`controller exited (${code}): ${stdout}${stderr}`)));
      });
      await ioFeeder()(sw.child, 60);
      await digestsSettled(sw.child);
      const status = new Promise<number | null>((r) => c.once("exit", r));
      c.kill("SIGTERM");
      expectOneLineNaming({ status: await status, stdout, stderr }, `cannot write ${out}`, "controller into a filled-up file");
      const m = /; (\d+) records written before it are kept, (\d+) records were not written/.exec(stderr);
      expect(m, stderr).not.toBeNull();
      const lines = readFileSync(out, "utf8").split("\n");
      expect(lines.pop()).toBe("");
      expect(lines.length).toBe(Number(m![1]));
      expect(Number(m![2])).toBeGreaterThan(0);
      expect(existsSync(`${out}.lock`)).toBe(false);
    } finally {
      for (const ch of children) await stop(ch, "SIGKILL");
    }
  });

  test("a controller config whose P4Info is the BMv2 JSON, or whose device config is the P4Info, is named", { timeout: 120_000 }, async () => {
    const build = join(root, "p4/build");
    const config = (name: string, pipeline: object) => {
      const f = join(dir, `${name}.json`);
      writeFileSync(f, JSON.stringify({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.0/24"] }], switch: { address: "127.0.0.1:1" }, pipeline }));
      return f;
    };
    const [swapped, bothP4info, bfrt] = await runAll([
      ["controller", "--config", config("swapped", { p4info: join(build, "telemetry.json"), device_config: join(build, "telemetry.p4info.json") })],
      ["controller", "--config", config("both-p4info", { p4info: join(build, "telemetry.p4info.json"), device_config: join(build, "telemetry.p4info.json") })],
      ["controller", "--config", config("bfrt", { p4info: join(build, "tna/bfrt.json"), device_config: join(build, "tna/bfrt.json") })],
    ]);
    expectOneLineNaming(swapped!, `pipeline.p4info: ${join(build, "telemetry.json")} is a BMv2 JSON (a device config), not a P4Info`, "p4info is the BMv2 JSON");
    expectOneLineNaming(bothP4info!, `pipeline.device_config: ${join(build, "telemetry.p4info.json")} is a P4Info, not a device config`, "device_config is the P4Info");
    expectOneLineNaming(bfrt!, "pipeline.p4info", "p4info is bfrt.json");
  });
});
