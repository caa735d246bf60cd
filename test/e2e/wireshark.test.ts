// Wireshark as an oracle no one here wrote: its NVMe-oF dissector follows
// each queue from its RDMA CM exchange (GIDs, rdma_cm's IP header, the
// NVMe/RDMA private data) and pairs every command with its completion,
// printing the latency it measured from the capture's own timestamps. Every
// such latency must equal the record's end-to-end time at that switch, to the
// ns, and tshark must decode nearly every I/O of the queues set up in the
// capture: proof that the generated captures are framed as Linux frames them.
// IPv6 and mixed captures (RoCEv2 over IPv6, GIDs equal to the addresses,
// rdma_cm's AF_INET6 header) must decode alike, and their latencies equal
// the records' (replayed through the switch, IPv6 on endpoint keys).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import type { IoRecordJson, MessageRecordJson, RecordJson } from "../../contract/src/records.js";
import { ioRecordKey, ioTruthKey, messageRecordKey } from "../../app/self-check.js";
import { DEFAULT_GENERATOR_OPTIONS, readTruth } from "../../traffic/src/generator.js";
import { openCapture } from "../../traffic/src/pcap.js";
import type { IoTruth } from "../../traffic/src/types.js";
import { CmAttr, Opcode, parseRoce } from "../../traffic/src/roce.js";
import { ipText } from "../../traffic/src/ip.js";
import { CLI } from "../support/cli.js";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "wireshark-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tshark = spawnSync("tshark", ["--version"], { encoding: "utf8" });
const haveTshark = tshark.status === 0;
// CI installs Debian's tshark (.ci/run): there the test must run, never skip.
if (!haveTshark && process.env.CI) throw new Error("tshark not found: .ci/run installs Debian's tshark package");

const cli = (args: string[]) => {
  const r = spawnSync(process.execPath, [...CLI, ...args], { encoding: "utf8", cwd: root, env: { ...process.env, KAFKA_BROKERS: "" } });
  expect(r.status, r.stderr).toBe(0);
};

/** The queues whose RDMA CM exchange (REQ and the REP answering it) is in a capture: `host|target|target_qp`. */
function cmQueues(path: string): Set<string> {
  const req = new Map<number, { host: string; target: string }>();
  const queues = new Set<string>();
  for (const p of openCapture(path)) {
    const d = p.data;
    const f = parseRoce(d);
    if (!f || f.opcode !== Opcode.UD_SEND_ONLY || f.destQp !== 1) continue;
    const mad = f.bthOffset + 12 + 8;
    const attr = d.readUInt16BE(mad + 16);
    if (attr === CmAttr.REQ) req.set(d.readUInt32BE(mad + 24), { host: ipText(f.src), target: ipText(f.dst) });
    else if (attr === CmAttr.REP) {
      const r = req.get(d.readUInt32BE(mad + 28));
      if (r) queues.add(`${r.host}|${r.target}|${d.readUInt32BE(mad + 36) >>> 8}`);
    }
  }
  return queues;
}

interface Decoded {
  key: string;
  latencyNs: number;
}

/** The read and write commands tshark paired with their completions, with the latency it printed (ms) in ns. */
function tsharkLatencies(path: string): Decoded[] {
  const fields = ["frame.number", "ip.src", "ip.dst", "infiniband.bth.destqp", "infiniband.bth.psn", "nvme.cmd.opc", "nvme.cmd.cid", "nvme.cmd_pkt", "nvme.cmd_latency", "ipv6.src", "ipv6.dst", "nvme.cmd.nsid"];
  const r = spawnSync("tshark", ["-r", path, "-Y", "nvme", "-T", "fields", "-E", "separator=/t", ...fields.flatMap((f) => ["-e", f])], { encoding: "utf8", maxBuffer: 1 << 30 });
  expect(r.status, r.stderr).toBe(0);
  const rows = new Map<number, string[]>();
  const out: Decoded[] = [];
  for (const line of r.stdout.split("\n")) {
    if (!line) continue;
    const f = line.split("\t");
    rows.set(Number(f[0]), f);
    if (!f[8]) continue;
    const cmd = rows.get(Number(f[7]));
    // Reads and writes of a namespace (keep-alives have no record, nor Get Log Page: opcode 02h on the admin queue, NSID 0 or FFFFFFFFh).
    if (!cmd || !/^0x0?[12]$/.test(cmd[5]!.split(",")[0]!) || [0, 0xffffffff].includes(Number(cmd[11]!.split(",")[0]))) continue;
    const key = `${cmd[1] || cmd[9]}|${cmd[2] || cmd[10]}|${parseInt(cmd[3]!, 16)}|${parseInt(cmd[6]!, 16)}|${Number(cmd[4])}`;
    out.push({ key, latencyNs: Math.round(Number(f[8]) * 1e6) });
  }
  return out;
}

test.skipIf(!haveTshark)("tshark decodes the generated NVMe/RDMA and its command latencies equal the records' e2e at each switch, to the ns", () => {
  cli(["generate", "--out-dir", dir, "--duration-ms", "400", "--seed", "3"]);
  const records = join(dir, "records.jsonl");
  cli(["replay", join(dir, "tor-c.pcap"), join(dir, "tor-s.pcap"), "--topology", join(dir, "tor-c.topology.json"), "--topology", join(dir, "tor-s.topology.json"), "--out", records]);
  const ios = new Map(readFileSync(records, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson)
    .filter((r): r is IoRecordJson => r.type === "io").map((r) => [ioRecordKey(r), r]));
  const truths: IoTruth[] = [];
  for (const t of readTruth(join(dir, "ground-truth.jsonl"))) if (t.type === "io") truths.push(t.truth);

  for (const [sw, e2e] of [["tor-c", "e2e_c_ns"], ["tor-s", "e2e_s_ns"]] as const) {
    const capture = join(dir, `${sw}.pcap`);
    // A command whose response is missing from this capture (the ground
    // truth says so) tshark pairs with the next completion of its CID, a later
    // I/O's: that is no latency, and the record has none at this switch.
    const missingResponse = new Set(truths.filter((t) => t[e2e] === null).map(ioTruthKey));
    const all = tsharkLatencies(capture);
    const decoded = all.filter((d) => !missingResponse.has(d.key));
    const problems: string[] = [];
    for (const d of decoded) {
      const r = ios.get(d.key);
      if (!r) problems.push(`${d.key}: tshark paired it, no record`);
      else if (r[e2e] !== d.latencyNs) problems.push(`${d.key}: tshark ${d.latencyNs} ns, record ${e2e} ${String(r[e2e])}`);
    }
    expect(problems.slice(0, 10), `${problems.length} of ${decoded.length} differ at ${sw}`).toEqual([]);
    // Every I/O the switch timed on a queue whose CM exchange the capture
    // holds. Wireshark decodes a command only in a SEND ONLY: an in-capsule
    // write too large for one packet (SEND FIRST ... LAST) it does not reassemble.
    const queues = cmQueues(capture);
    const timed = truths.filter((t) => queues.has(`${t.host}|${t.target}|${t.target_qp}`) && t[e2e] !== null);
    const onePacket = timed.filter((t) => !(t.in_capsule && 64 + t.bytes > DEFAULT_GENERATOR_OPTIONS.mtu));
    const got = new Set(decoded.map((d) => d.key));
    const share = (ts: IoTruth[]) => ts.filter((t) => got.has(ioTruthKey(t))).length / ts.length;
    console.log(`${sw}: tshark paired ${decoded.length} reads and writes with their completions, every one equal to the record's ${e2e} to the ns ` +
      `(and ${all.length - decoded.length} whose response is missing from the capture with a later one of their CID); ` +
      `of the ${timed.length} I/Os timed on the ${queues.size} queues set up in the capture, ${(100 * share(timed)).toFixed(1)} % decoded, ` +
      `${(100 * share(onePacket)).toFixed(1)} % of the ${onePacket.length} whose command capsule is one packet`);
    expect(queues.size).toBeGreaterThan(0);
    expect(share(onePacket)).toBeGreaterThanOrEqual(0.95);
  }
}, 180_000);

test.skipIf(!haveTshark)("tshark decodes RoCEv2 over IPv6 and mixed families as over IPv4, and at a path MTU of 1024: its command latencies equal the records' e2e (and the ground truth's) at each switch, to the ns", () => {
  for (const [family, mtu] of [["6", 4096], ["mixed", 4096], ["4", 1024]] as const) {
    const out = join(dir, `ip${family}-mtu${mtu}`);
    cli(["generate", "--out-dir", out, "--duration-ms", "250", "--seed", "4", "--ip", family, "--mtu", String(mtu)]);
    // Every RDMA CM REQ states the path MTU the queue's packets use (IBTA code: 3 is 1024, 5 is 4096).
    const pathMtus = spawnSync("tshark", ["-r", join(out, "tor-c.pcap"), "-Y", "infiniband.cm.req.pppmtu", "-T", "fields", "-e", "infiniband.cm.req.pppmtu"], { encoding: "utf8" }).stdout.trim().split("\n");
    expect(pathMtus.length).toBeGreaterThan(0);
    expect(new Set(pathMtus)).toEqual(new Set([mtu === 1024 ? "0x03" : "0x05"]));
    const records = join(out, "records.jsonl");
    cli(["replay", join(out, "tor-c.pcap"), join(out, "tor-s.pcap"), "--topology", join(out, "tor-c.topology.json"), "--topology", join(out, "tor-s.topology.json"), "--out", records]);
    const ios = new Map(readFileSync(records, "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson)
      .filter((r): r is IoRecordJson => r.type === "io").map((r) => [ioRecordKey(r), r]));
    const truths: IoTruth[] = [];
    for (const t of readTruth(join(out, "ground-truth.jsonl"))) if (t.type === "io") truths.push(t.truth);
    const byKey = new Map(truths.map((t) => [ioTruthKey(t), t]));
    for (const [sw, e2e] of [["tor-c", "e2e_c_ns"], ["tor-s", "e2e_s_ns"]] as const) {
      const capture = join(out, `${sw}.pcap`);
      // As above: a command whose response is missing from this capture is no latency.
      const decoded = tsharkLatencies(capture).filter((d) => byKey.get(d.key)?.[e2e] !== null);
      const problems = decoded.flatMap((d) => {
        const t = byKey.get(d.key);
        const r = ios.get(d.key);
        if (!t) return [`${d.key}: tshark paired it, no I/O`];
        if (t[e2e] !== d.latencyNs) return [`${d.key}: tshark ${d.latencyNs} ns, truth ${e2e} ${String(t[e2e])}`];
        return !r ? [`${d.key}: tshark paired it, no record`] : r[e2e] !== d.latencyNs ? [`${d.key}: tshark ${d.latencyNs} ns, record ${e2e} ${String(r[e2e])}`] : [];
      });
      expect(problems.slice(0, 10), `${problems.length} of ${decoded.length} differ at ${sw} (--ip ${family})`).toEqual([]);
      const queues = cmQueues(capture);
      const onePacket = truths.filter((t) => queues.has(`${t.host}|${t.target}|${t.target_qp}`) && t[e2e] !== null && !(t.in_capsule && 64 + t.bytes > mtu));
      const got = new Set(decoded.map((d) => d.key));
      const share = onePacket.filter((t) => got.has(ioTruthKey(t))).length / onePacket.length;
      const v6 = decoded.filter((d) => d.key.includes(":")).length;
      console.log(`--ip ${family} --mtu ${mtu}, ${sw}: tshark paired ${decoded.length} reads and writes (${v6} over IPv6) with their completions, every one equal to the record's and the truth's ${e2e} to the ns; ` +
        `${(100 * share).toFixed(1)} % of the ${onePacket.length} timed on the ${queues.size} queues set up in the capture decoded`);
      if (family !== "4") expect(v6).toBeGreaterThan(0);
      if (family !== "6") expect(v6).toBeLessThan(decoded.length);
      expect(share).toBeGreaterThanOrEqual(0.95);
    }
  }
}, 180_000);

/**
 * The RDMA WRITE messages between compute hosts as tshark decodes them, made
 * into messages by SPEC §4 on paths that keep order: a message runs from the
 * first sighting of its FIRST (or ONLY) to the first sighting of its LAST (or
 * ONLY), holds every packet seen between, and a packet whose PSN was seen
 * before is retransmitted. Also each message's closing opcode and immediate.
 */
function tsharkMessages(path: string, hosts: Set<string>): { messages: Map<string, { first_psn: number; last_psn: number; bytes: number; packets: number; retransmitted: number; fct_ns: number; first_unix_ns: string; closing: number; imm: string }>; naks: number } {
  const fields = ["frame.time_epoch", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.reth.dmalen", "infiniband.immdt", "infiniband.aeth.syndrome"];
  const r = spawnSync("tshark", ["-r", path, "-Y", "infiniband.bth.opcode >= 6 && infiniband.bth.opcode <= 11 || infiniband.bth.opcode == 17", "-T", "fields", "-E", "separator=/t", ...fields.flatMap((f) => ["-e", f])], { encoding: "utf8", maxBuffer: 1 << 30 });
  expect(r.status, r.stderr).toBe(0);
  const ns = (t: string) => { const [s, f = ""] = t.split("."); return BigInt(s!) * 1_000_000_000n + BigInt(f.padEnd(9, "0").slice(0, 9)); };
  const flows = new Map<string, { seen: Set<number>; open?: { key: string; first_psn: number; bytes: number; packets: number; retransmitted: number; t: bigint } }>();
  const messages = new Map<string, { first_psn: number; last_psn: number; bytes: number; packets: number; retransmitted: number; fct_ns: number; first_unix_ns: string; closing: number; imm: string }>();
  let naks = 0;
  for (const line of r.stdout.split("\n")) {
    if (!line) continue;
    const f = line.split("\t");
    const src = f[1] || f[3]!;
    const dst = f[2] || f[4]!;
    if (!hosts.has(src) || !hosts.has(dst)) continue;
    const opcode = Number(f[5]);
    if (opcode === 17) {
      if (Number(f[10]!.split(",")[0]) >> 5 === 3) naks++; // AETH syndrome 011xxxxx: NAK
      continue;
    }
    const flowKey = `${src}|${dst}|${parseInt(f[6]!, 16)}`;
    const flow = flows.get(flowKey) ?? flows.set(flowKey, { seen: new Set() }).get(flowKey)!;
    const psn = Number(f[7]);
    const retx = flow.seen.has(psn);
    flow.seen.add(psn);
    const t = ns(f[0]!);
    if (!retx && (opcode === 6 || opcode === 10 || opcode === 11)) {
      flow.open = { key: `${flowKey}|${psn}`, first_psn: psn, bytes: Number(f[8]), packets: 0, retransmitted: 0, t };
    }
    const m = flow.open;
    if (!m) continue; // a late packet of a message already closed: the flow's figures only
    m.packets++;
    if (retx) m.retransmitted++;
    if (!retx && opcode >= 8) {
      messages.set(m.key, { first_psn: m.first_psn, last_psn: psn, bytes: m.bytes, packets: m.packets, retransmitted: m.retransmitted, fct_ns: Number(t - m.t), first_unix_ns: m.t.toString(), closing: opcode, imm: (f[9] ?? "").split(",")[0]! });
      flow.open = undefined;
    }
  }
  return { messages, naks };
}

test.skipIf(!haveTshark)("tshark decodes the gradient sync as NCCL's transport sends it (CTS, WRITE with Immediate, ACK and NAK), and every message record equals the message its packets make by SPEC §4, to the ns", () => {
  const out = join(dir, "messages");
  cli(["demo", "--out-dir", out, "--duration-ms", "1000", "--seed", "6", "--snaplen", "146"]);
  const topology = JSON.parse(readFileSync(join(out, "tor-c.topology.json"), "utf8")) as { ports: Array<{ role: string; prefixes: string[] }> };
  const hosts = new Set(topology.ports.filter((p) => p.role === "compute").flatMap((p) => p.prefixes.map((x) => x.split("/")[0]!)));
  const records = readFileSync(join(out, "records.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RecordJson)
    .filter((r): r is MessageRecordJson => r.type === "message");
  const { messages, naks } = tsharkMessages(join(out, "tor-c.pcap"), hosts);
  const problems: string[] = [];
  for (const r of records) {
    const k = messageRecordKey(r);
    const t = messages.get(k);
    if (!t) problems.push(`${k}: record, no message in tshark's decode`);
    else {
      const { closing: _c, imm: _i, ...want } = t;
      const got = { first_psn: r.first_psn, last_psn: r.last_psn, bytes: r.bytes, packets: r.packets, retransmitted: r.retransmitted, fct_ns: r.fct_ns, first_unix_ns: r.first_unix_ns };
      if (JSON.stringify(got) !== JSON.stringify(want)) problems.push(`${k}: record ${JSON.stringify(got)}, tshark ${JSON.stringify(want)}`);
    }
  }
  for (const k of messages.keys()) if (!records.some((r) => messageRecordKey(r) === k)) problems.push(`${k}: in tshark's decode, no record`);
  expect(problems.slice(0, 10), `${problems.length} of ${records.length} differ`).toEqual([]);
  const data = [...messages.values()].filter((m) => m.packets > 1);
  const cts = [...messages.values()].filter((m) => m.bytes === 64);
  const retransmitted = data.reduce((a, m) => a + m.retransmitted, 0);
  console.log(`tshark: ${messages.size} RDMA WRITE messages between hosts (${data.length} gradient messages, ${cts.length} CTS writes), ${retransmitted} packets retransmitted, ${naks} NAKs; every one equal to its record`);
  // NCCL's framing: the gradient message ends in WRITE LAST with Immediate, its immediate the size; the CTS is one WRITE ONLY of 64 bytes.
  expect(data.every((m) => m.closing === Opcode.WRITE_LAST_IMM && parseInt(m.imm, 16) === m.bytes)).toBe(true);
  expect(cts.length).toBe(data.length);
  expect(cts.every((m) => m.closing === Opcode.WRITE_ONLY && m.packets === 1 && m.fct_ns === 0)).toBe(true);
  // The demo's lossy host: go-back-N after a NAK, its resent packets counted as retransmitted.
  expect(naks).toBeGreaterThan(0);
  expect(retransmitted).toBeGreaterThan(0);
}, 180_000);
