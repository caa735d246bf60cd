// Defects found in review, each pinned by a test through the compiled program
// on the software switch (or the controller itself where no switch is needed).
import { afterEach, describe, expect, test } from "vitest";
import { Topology } from "../../app/topology.js";
import { replaySwitches } from "../../app/replay.js";
import type { FlowAggregateJson, IoRecordJson, MessageRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { parseConfig } from "../../p4runtime-controller/src/config.js";
import type { DigestBatch } from "../../contract/src/digest-batch.js";
import { TelemetryController } from "../../p4runtime-controller/src/controller.js";
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";
import { crc32 } from "../../switch/src/bmv2/crc.js";
import { ipv4, ipv4Text } from "../../contract/src/ipv4.js";
import { buildFrame, cmMad, CmAttr, nvmeCqe, nvmeSqe, Opcode, type RoceFrame } from "../../traffic/src/roce.js";
import { until } from "../support/wait.js";
import { cmRequestsCollide, flushInAnotherKeysSlot, lastDataDisplaced, pairingDisplaced, rkeysWaitingTogether, rkeyTakenBetweenOps } from "../support/collisions.js";
import { farDisplacedFlow, overtakenFirstFlow, reorderedFlow, reorderedNvmeData, unendedMessageFlow } from "../support/reordered.js";
import type { SwitchCapture } from "../../traffic/src/types.js";
import { ipv6 } from "../../traffic/src/ip.js";
import { IO_EVENT_CMD, IO_EVENT_RSP, IO_FLAG_IN_CAPSULE, IO_FLAG_REPLACED, LEARN_ENDPOINT, type IoDigest, type LearnDigest, type MsgDigest, type TelemetryDigest } from "../../contract/src/digests.js";
import { v6Switch, writeV6Entries, type V6Port } from "../support/v6-switch.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});


const T0 = 1_800_000_000_000_000_000n;

/**
 * A host (10.0.1.1) and a target (10.0.2.1) on one switch, and the frames
 * sent between them, each `gap` (3 µs) after the one before; a label keeps
 * a frame's time (`e2e` between two labels).
 */
function handMadeCapture(psn0: number, vlan?: number) {
  const topology = Topology.parse({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.1/32"] }, { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] }] });
  let t = T0;
  let psn = psn0;
  const packets: Array<{ timestampNs: bigint; data: Buffer }> = [];
  const at: Record<string, bigint> = {};
  return {
    topology, host: ipv4("10.0.1.1"), target: ipv4("10.0.2.1"), packets, at,
    nextPsn: () => psn++,
    send: (f: RoceFrame, label?: string, gap = 3_000n) => {
      t += gap;
      if (label) at[label] = t;
      packets.push({ timestampNs: t, data: buildFrame(vlan === undefined ? f : { ...f, vlan }).data });
    },
    e2e: (a: string, b: string) => Number(at[b]! - at[a]!),
  };
}

describe("CNP counts per host pair", () => {
  test("two host pairs whose counter slots collide never add to each other's CNPs", async () => {
    // Find a second pair whose CNP slot (CRC-32 of {dst, src} mod 4096, as the program hashes it) is the first pair's.
    const slot = (src: number, dst: number) => {
      const b = Buffer.alloc(8);
      b.writeUInt32BE(src, 0);
      b.writeUInt32BE(dst, 4);
      return crc32(b) % 4096;
    };
    const a = { src: ipv4("10.0.1.1"), dst: ipv4("10.0.1.2") };
    let b: { src: number; dst: number } | undefined;
    for (let x = 3; x < 250 && !b; x++) for (let y = 3; y < 250 && !b; y++) {
      const c = { src: ipv4(`10.0.1.${x}`), dst: ipv4(`10.0.1.${y}`) };
      if (x !== y && slot(c.src, c.dst) === slot(a.src, a.dst)) b = c;
    }
    expect(b, "a colliding pair").toBeDefined();
    const hosts = [a.src, a.dst, b!.src, b!.dst];
    const topology = Topology.parse({ ports: hosts.map((h, i) => ({ port: i + 1, role: "compute", prefixes: [`${ipv4Text(h)}/32`] })) });
    let t = T0;
    const packets: Array<{ timestampNs: bigint; data: Buffer }> = [];
    const send = (f: RoceFrame) => packets.push({ timestampNs: (t += 10_000n), data: buildFrame(f).data });
    const cnp = (p: { src: number; dst: number }) => send({ src: p.dst, dst: p.src, opcode: Opcode.CNP, destQp: 0x99, psn: 0, payload: Buffer.alloc(16) });
    const write = (p: { src: number; dst: number }, psn: number) =>
      send({ src: p.src, dst: p.dst, opcode: Opcode.WRITE_ONLY, destQp: 0x20, psn, reth: { va: 0n, rkey: 1, length: 1024 }, payloadLength: 1024 });
    cnp(a);
    cnp(a);
    cnp(a);
    cnp(b!); // the slot is a's, with CNPs not yet reported: not counted for b, counted as untracked
    cnp(b!);
    write(b!, 1);
    write(a, 1);
    const records: RecordJson[] = [];
    await replaySwitches([{ name: "sw", topology, packets }], { onRecord: (r) => records.push(r) });
    const flows = records.filter((r): r is FlowAggregateJson => r.type === "flow_interval");
    const cnps = Object.fromEntries(flows.map((f) => [`${f.src}>${f.dst}`, f.cnp_packets]));
    expect(cnps).toEqual({ [`${ipv4Text(a.src)}>${ipv4Text(a.dst)}`]: 3, [`${ipv4Text(b!.src)}>${ipv4Text(b!.dst)}`]: 0 });
    const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats").at(-1)!;
    expect(stats.cnp_untracked).toBe(2);
  }, 60_000);
});

describe("polling mode after a takeover", () => {
  const topology = Topology.parse({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.1/32"] }, { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] }] });

  function controllerFor(port: number, electionId: number) {
    const c = new TelemetryController(parseConfig({
      switch: { address: `127.0.0.1:${port}`, election_id: electionId, switch_id: "sw", timestamp_unit_ns: 1 },
      ports: topology.ports.map((p) => ({ port: p.port, role: p.role, prefixes: [...p.prefixes] })),
      mode: "polling",
      digest: { max_list_size: 1, max_timeout_us: 1 },
    }), { rotationTimer: false });
    c.start();
    cleanups.push(() => c.stop());
    return c;
  }

  test("a new controller on a running switch is told every flow and host-target pair again", async () => {
    const sw = new SoftwareSwitch({ clock: "virtual" });
    const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
    const port = await server.listen("127.0.0.1:0");
    cleanups.push(() => server.close());
    let t = T0;
    const traffic = () => {
      // A gradient-sync flow and an NVMe command from the host.
      sw.process({ port: 1, unixNs: (t += 1000n), data: buildFrame({ src: ipv4("10.0.1.1"), dst: ipv4("10.0.2.1"), opcode: Opcode.WRITE_ONLY, destQp: 0x44, psn: Number(t % 1000n), reth: { va: 0n, rkey: 5, length: 64 }, payloadLength: 64 }).data });
      sw.process({ port: 1, unixNs: (t += 1000n), data: buildFrame({ src: ipv4("10.0.1.1"), dst: ipv4("10.0.2.1"), opcode: Opcode.SEND_ONLY, destQp: 0x81, psn: Number(t % 1000n), payload: nvmeSqe("read", Number(t % 100n), 1, 0n, 4096, 7) }).data });
    };
    const first = controllerFor(port, 5);
    await first.ready();
    traffic();
    await until(() => first.stats.learnedFlows === 1 && first.stats.learnedPairs === 1, 3000, "the first controller to learn");
    await first.stop();
    // The switch keeps running (and its learn filters keep their state); a new controller takes over.
    const second = controllerFor(port, 6);
    await second.ready();
    traffic();
    await until(() => second.stats.learnedFlows === 1 && second.stats.learnedPairs === 1, 3000, "the new controller to learn the same flow and pair");
    // And it is not told of them again while it stays primary (it measures them: they joined its window).
    let learns = 0;
    second.on("digests", (b: DigestBatch) => (learns += b.digests.filter((d) => d.kind === "learn").length));
    traffic();
    traffic();
    // Then a flow never seen: its learn digest comes after any the traffic above caused, on the same stream.
    sw.process({ port: 1, unixNs: (t += 1000n), data: buildFrame({ src: ipv4("10.0.1.1"), dst: ipv4("10.0.2.1"), opcode: Opcode.WRITE_ONLY, destQp: 0x45, psn: 1, reth: { va: 0n, rkey: 5, length: 64 }, payloadLength: 64 }).data });
    await until(() => second.stats.learnedFlows === 2, 3000, () => `the new flow to be learned (learned ${second.stats.learnedFlows})`);
    expect(learns).toBe(1);
  }, 30_000);
});

describe("bad digests", () => {
  test("samples the controller cannot decode are counted on the batch, per switch", () => {
    const c = new TelemetryController(parseConfig({
      switch: { address: "127.0.0.1:1", switch_id: "sw", timestamp_unit_ns: 1 },
      ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.1/32"] }],
    }));
    const batches: DigestBatch[] = [];
    c.on("digests", (b) => batches.push(b));
    c.on("bad-digest", () => undefined);
    const ioId = c.schema.digests.get("io_digest_t").preamble!.id;
    const bitstring = (n: number) => ({ data: { $case: "bitstring" as const, value: Buffer.from([n]) } });
    const member = (n: number) => ({ data: { $case: "struct" as const, value: { members: Array.from({ length: n }, () => bitstring(1)) } } });
    // A list for a digest the P4Info does not have, and one whose second sample has too few members.
    c.connection.emit("digest", { digestId: 12345, listId: 1n, data: [member(3)], timestamp: T0 });
    c.connection.emit("digest", { digestId: ioId, listId: 2n, data: [member(20), member(4)], timestamp: T0 });
    expect(batches.map((b) => [b.digests.length, b.badDigests])).toEqual([[0, 1], [1, 1]]);
    expect(c.stats.badDigests).toBe(2);
  });
});

describe("NVMe status", () => {
  test("the CQE status is reported without its phase bit, in place", async () => {
    const topology = Topology.parse({ ports: [{ port: 1, role: "compute", prefixes: ["10.0.1.1/32"] }, { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] }] });
    const host = ipv4("10.0.1.1");
    const target = ipv4("10.0.2.1");
    let t = T0;
    const packets: Array<{ timestampNs: bigint; data: Buffer }> = [];
    const send = (f: RoceFrame) => packets.push({ timestampNs: (t += 5_000n), data: buildFrame(f).data });
    // Two reads on one queue; the target's data pairs the queue; both fail: 0x0502 with phase 0, 0x0503 (same status, phase 1).
    for (const [cid, word] of [[1, 0x0502], [2, 0x0503]] as const) {
      send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: 0x801, psn: cid, payload: nvmeSqe("read", cid, 1, 0n, 512, 0x100 + cid) });
      send({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: 0x101, psn: cid, reth: { va: 0n, rkey: 0x100 + cid, length: 512 }, payloadLength: 512 });
      send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: 0x101, psn: 10 + cid, payload: nvmeCqe(cid, 1, 0, word & 0xfffe, word & 1) });
    }
    const records: RecordJson[] = [];
    await replaySwitches([{ name: "sw", topology, packets }], { onRecord: (r) => records.push(r) });
    const ios = records.filter((r): r is IoRecordJson => r.type === "io");
    expect(ios.map((r) => [r.cid, r.nvme_status, r.host_qp, r.target_qp])).toEqual([[1, 0x0502, 0x101, 0x801], [2, 0x0502, 0x101, 0x801]]);
    expect(records.filter((r): r is MessageRecordJson => r.type === "message")).toHaveLength(0);
  }, 60_000);
});

describe("NVMe queues on traffic not made by the generator", () => {
  test("VLAN-tagged, two queues with the same CID in flight answered out of order, SEND with Invalidate, in-capsule writes over two packets, CM set-up, an unpaired queue, a lost response and its CID reused", async () => {
    const { topology, host, target, packets, send, e2e, nextPsn } = handMadeCapture(1000, 100);
    const Q = { A: { t: 0xa01, h: 0x1a1 }, B: { t: 0xb01, h: 0x1b1 }, C: { t: 0xc01, h: 0x1c1 }, D: { t: 0xd01, h: 0x1d1 } };
    const cmd = (q: { t: number }, op: "read" | "write", cid: number, rkey: number, label: string) =>
      send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: q.t, psn: nextPsn(), payload: nvmeSqe(op, cid, 1, 0n, 4096, rkey, 0n, "keyed-invalidate") }, label);
    const inCapsule = (q: { t: number }, cid: number, label: string) => {
      // 64-byte SQE and 4 KiB of data: SEND FIRST and SEND LAST.
      const capsule = Buffer.concat([nvmeSqe("write", cid, 1, 0n, 4096, 0, 0n, "in-capsule"), Buffer.alloc(4096 - 64)]);
      send({ src: host, dst: target, opcode: Opcode.SEND_FIRST, destQp: q.t, psn: nextPsn(), payload: capsule }, label);
      send({ src: host, dst: target, opcode: Opcode.SEND_LAST, destQp: q.t, psn: nextPsn(), payloadLength: 64 }, undefined, 400n);
    };
    const data = (q: { h: number }, rkey: number, label: string) =>
      send({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: q.h, psn: nextPsn(), reth: { va: 0n, rkey, length: 4096 }, payloadLength: 4096 }, label);
    const rsp = (q: { h: number }, cid: number, label: string, invalidate?: number) =>
      send({ src: target, dst: host, opcode: invalidate === undefined ? Opcode.SEND_ONLY : Opcode.SEND_ONLY_INV, ieth: invalidate, destQp: q.h, psn: nextPsn(), payload: nvmeCqe(cid, 1, 0, 0, 1) }, label);
    const gsi = (src: number, dst: number, payload: Buffer) => ({ src, dst, opcode: Opcode.UD_SEND_ONLY, destQp: 1, psn: 0, deth: { qkey: 0x80010000, srcQp: 1 }, payload });

    // Queue C is set up by RDMA CM in the capture.
    send(gsi(host, target, cmMad(CmAttr.REQ, 1n, { localCommId: 0x77, localQpn: Q.C.h })));
    send(gsi(target, host, cmMad(CmAttr.REP, 1n, { localCommId: 0x99, remoteCommId: 0x77, localQpn: Q.C.t })));
    // CID 7 in flight on queues A and B at once; B's data and response come first, B's response as SEND with Invalidate.
    cmd(Q.A, "read", 7, 0xa7, "cmdA7");
    cmd(Q.B, "read", 7, 0xb7, "cmdB7");
    data(Q.B, 0xb7, "dataB7");
    data(Q.A, 0xa7, "dataA7");
    rsp(Q.B, 7, "rspB7", 0xb7);
    rsp(Q.A, 7, "rspA7");
    // In-capsule writes: on B (paired by its read) and on C (paired by CM), none on D (never paired).
    inCapsule(Q.B, 3, "cmdB3");
    inCapsule(Q.C, 0, "cmdC0");
    inCapsule(Q.D, 0, "cmdD0");
    rsp(Q.B, 3, "rspB3");
    rsp(Q.C, 0, "rspC0");
    rsp(Q.D, 0, "rspD0");
    // A read on A whose response the capture missed; the host reuses CID 9 for the next one.
    cmd(Q.A, "read", 9, 0xa9, "cmdA9a");
    data(Q.A, 0xa9, "dataA9a");
    cmd(Q.A, "read", 9, 0xa90, "cmdA9b");
    data(Q.A, 0xa90, "dataA9b");
    rsp(Q.A, 9, "rspA9b");

    const records: RecordJson[] = [];
    await replaySwitches([{ name: "sw", topology, packets }], { onRecord: (r) => records.push(r) });
    const ios = records.filter((r): r is IoRecordJson => r.type === "io");
    const view = ios.map((r) => [r.target_qp, r.host_qp, r.cid, r.in_capsule, r.incomplete, r.e2e_c_ns, r.dal_ns]).sort((x, y) => Number(x[0]) - Number(y[0]) || Number(x[2]) - Number(y[2]) || String(x[4]).localeCompare(String(y[4])));
    expect(view).toEqual([
      [Q.A.t, Q.A.h, 7, false, false, e2e("cmdA7", "rspA7"), e2e("cmdA7", "dataA7") + e2e("dataA7", "rspA7")],
      [Q.A.t, Q.A.h, 9, false, false, e2e("cmdA9b", "rspA9b"), e2e("cmdA9b", "dataA9b") + e2e("dataA9b", "rspA9b")],
      [Q.A.t, Q.A.h, 9, false, true, null, null],
      [Q.B.t, Q.B.h, 3, true, false, e2e("cmdB3", "rspB3"), e2e("cmdB3", "rspB3")],
      [Q.B.t, Q.B.h, 7, false, false, e2e("cmdB7", "rspB7"), e2e("cmdB7", "dataB7") + e2e("dataB7", "rspB7")],
      [Q.C.t, Q.C.h, 0, true, false, e2e("cmdC0", "rspC0"), e2e("cmdC0", "rspC0")],
    ]);
    const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats").at(-1)!;
    expect(stats).toMatchObject({ untracked_ios: 1, io_unpaired_responses: 1, io_replaced: 1, parser_errors: 0 });
  }, 60_000);
});

describe("NVMe commands the switch does not measure (Flush, Write Zeroes, Dataset Management, a read in a descriptor list)", () => {
  test("a read whose response the capture missed, then a Flush with its CID (a host with bare tags, as SPDK's): the Flush's completion never closes the read; the read is incomplete, the stale I/O counted as closed by CID reuse", async () => {
    const { topology, host, target, packets, send, e2e, nextPsn } = handMadeCapture(1000);
    const Q = { t: 0xa01, h: 0x1a1 };
    const up = (sqe: Buffer, label: string, gap?: bigint) => send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: Q.t, psn: nextPsn(), payload: sqe }, label, gap);
    const data = (rkey: number, label: string) => send({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: Q.h, psn: nextPsn(), reth: { va: 0n, rkey, length: 4096 }, payloadLength: 4096 }, label);
    const rsp = (cid: number, label: string, gap?: bigint) => send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: Q.h, psn: nextPsn(), payload: nvmeCqe(cid, 1, 0, 0, 0) }, label, gap);
    // No data: the host's SGL is a keyed data block of length 0 and key 0 (nvme_rdma_set_sg_null).
    const noData = (opc: number, cid: number) => nvmeSqe(opc, cid, 1, 0n, 0, 0);
    // A read that pairs the queue and is answered.
    up(nvmeSqe("read", 4, 1, 0n, 4096, 0x44), "cmd4");
    data(0x44, "data4");
    rsp(4, "rsp4");
    // CID 5: a read whose response the capture missed; the host reuses CID 5 for a Flush, then for Write Zeroes.
    up(nvmeSqe("read", 5, 1, 0n, 4096, 0x55), "cmd5");
    data(0x55, "data5");
    up(noData(0x00, 5), "flush5", 40_000n);
    rsp(5, "flushRsp5", 20_000n);
    up(noData(0x08, 5), "wz5");
    rsp(5, "wzRsp5");
    // CID 6: a Dataset Management (deallocate) with its ranges in the capsule, then a read with CID 6.
    up(Buffer.concat([nvmeSqe(0x09, 6, 1, 0n, 16, 0, 0n, "in-capsule"), Buffer.alloc(16)]), "dsm6");
    rsp(6, "dsmRsp6");
    up(nvmeSqe("read", 6, 1, 0n, 4096, 0x66), "cmd6");
    data(0x66, "data6");
    rsp(6, "rsp6");
    // CID 7: a read whose SGL is a Last Segment descriptor (type 3) naming a list of two keyed descriptors in the capsule, as an SPDK host may send: an I/O not measured, counted.
    const listed = Buffer.concat([nvmeSqe("read", 7, 1, 0n, 32, 0), Buffer.alloc(32)]);
    listed[39] = 0x30;
    up(listed, "cmd7");
    data(0x771, "data7a");
    data(0x772, "data7b");
    rsp(7, "rsp7");
    // The capture goes on past the read's I/O timeout (it ended within it, the read's answer would be unknown).
    send({ src: host, dst: target, opcode: Opcode.ACK, destQp: Q.t, psn: nextPsn(), aeth: { syndrome: 0x1f, msn: 0 } }, "late", 2_000_000_000n);

    const records: RecordJson[] = [];
    await replaySwitches([{ name: "sw", topology, packets }], { onRecord: (r) => records.push(r) });
    const ios = records.filter((r): r is IoRecordJson => r.type === "io");
    const view = ios.map((r) => [r.cid, r.op, r.incomplete, r.e2e_c_ns, r.dal_ns]).sort((x, y) => Number(x[0]) - Number(y[0]));
    expect(view).toEqual([
      [4, "read", false, e2e("cmd4", "rsp4"), e2e("cmd4", "data4") + e2e("data4", "rsp4")],
      [5, "read", true, null, null],
      [6, "read", false, e2e("cmd6", "rsp6"), e2e("cmd6", "data6") + e2e("data6", "rsp6")],
    ]);
    const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats").at(-1)!;
    expect(stats).toMatchObject({ io_replaced: 1, untracked_ios: 1, parser_errors: 0 });
  }, 60_000);

  test("a read that fails before any data on a queue whose pairing the switch never learned (its response names the host's QP only): its answer is unknown, never incomplete; a read whose response the capture missed stays incomplete unless such a response with its CID came", async () => {
    const { topology, host, target, packets, send, e2e, nextPsn } = handMadeCapture(3000);
    const A = { t: 0xb01, h: 0x1b1 };
    const B = { t: 0xb02, h: 0x1b2 };
    const C = { t: 0xb03, h: 0x1b3 };
    const up = (q: typeof A, sqe: Buffer, label: string, gap?: bigint) => send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: q.t, psn: nextPsn(), payload: sqe }, label, gap);
    const data = (q: typeof A, rkey: number, label: string) => send({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: q.h, psn: nextPsn(), reth: { va: 0n, rkey, length: 4096 }, payloadLength: 4096 }, label);
    const rsp = (q: typeof A, cid: number, status: number, label: string, gap?: bigint) => send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: q.h, psn: nextPsn(), payload: nvmeCqe(cid, 1, 0, status, 0) }, label, gap);
    // Queue C is paired by a read's data, then answered.
    up(C, nvmeSqe("read", 2, 1, 0n, 4096, 0xc2), "cmdC2");
    data(C, 0xc2, "dataC2");
    rsp(C, 2, 0, "rspC2");
    // Queue A's first I/O: a read the target fails (LBA out of range, 0x80) before any data; nothing has paired queue A.
    up(A, nvmeSqe("read", 3, 1, 0n, 4096, 0xa3), "cmdA3");
    rsp(A, 3, 0x80 << 1, "rspA3", 20_000n);
    // CID 8 on queues B and C, both responses missing from the capture; then a response with CID 8 to queue A's
    // host QP (an in-capsule write of queue A, which the switch could not attribute): perhaps B's, never C's.
    up(B, nvmeSqe("read", 8, 1, 0n, 4096, 0xb8), "cmdB8");
    up(C, nvmeSqe("read", 8, 1, 0n, 4096, 0xc8), "cmdC8");
    up(A, Buffer.concat([nvmeSqe("write", 8, 1, 0n, 512, 0, 0n, "in-capsule"), Buffer.alloc(512)]), "cmdA8");
    rsp(A, 8, 0, "rspA8", 20_000n);
    // The capture goes on past the I/O timeout of the reads of CID 8.
    send({ src: host, dst: target, opcode: Opcode.ACK, destQp: C.t, psn: nextPsn(), aeth: { syndrome: 0x1f, msn: 0 } }, "late", 2_000_000_000n);

    const records: RecordJson[] = [];
    await replaySwitches([{ name: "sw", topology, packets }], { onRecord: (r) => records.push(r) });
    const ios = records.filter((r): r is IoRecordJson => r.type === "io");
    const view = ios.map((r) => [r.target_qp, r.cid, r.host_qp, r.incomplete, r.nvme_status, r.e2e_c_ns]).sort((x, y) => Number(x[0]) - Number(y[0]) || Number(x[1]) - Number(y[1]));
    expect(view).toEqual([
      [A.t, 3, 0, false, 0, null],
      [B.t, 8, 0, false, 0, null],
      [C.t, 2, C.h, false, 0, e2e("cmdC2", "rspC2")],
      [C.t, 8, C.h, true, 0, null],
    ]);
    const all = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats");
    expect(all.at(-1)).toMatchObject({ io_unpaired_responses: 2, parser_errors: 0 });
    expect(all.reduce((a, r) => a + r.incomplete_ios, 0)).toBe(1);
  }, 60_000);

  test("a Flush of another queue whose key takes the slot of an open read (tens of thousands of queues on a ToR) closes nothing: the read is answered, with its figures", async () => {
    const s = flushInAnotherKeysSlot(T0);
    const records: RecordJson[] = [];
    await replaySwitches([{ name: "sw", topology: Topology.parse(s.capture.topology), packets: s.capture.packets }], { onRecord: (r) => records.push(r) });
    const ios = records.filter((r): r is IoRecordJson => r.type === "io");
    const e2e = (a: string, b: string) => Number(s.at[b]! - s.at[a]!);
    expect(ios.map((r) => [r.target_qp, r.cid, r.incomplete, r.e2e_c_ns, r.dal_ns])).toEqual([[s.targetQp, 5, false, e2e("cmd", "rsp"), e2e("cmd", "data") + e2e("data", "rsp")]]);
    const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats").at(-1)!;
    expect(stats.io_replaced).toBe(0);
  }, 60_000);
});

describe("admin commands with data (Linux's controller set-up)", () => {
  test("Get Log Page (opcode 02h, as a Read's, NSID FFFFFFFFh) and Identify on the admin queue, each with its data: no record; a read of namespace 1 beside them has its record", async () => {
    const { topology, host, target, packets, send, e2e, nextPsn } = handMadeCapture(500);
    const admin = { t: 0x4000, h: 0x100 };
    const io = { t: 0x4001, h: 0x101 };
    const command = (q: { t: number; h: number }, cid: number, sqe: Buffer, rkey: number, label: string) => {
      send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: q.t, psn: nextPsn(), payload: sqe }, `cmd${label}`);
      send({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: q.h, psn: nextPsn(), reth: { va: 0n, rkey, length: 4096 }, payloadLength: 4096 }, `data${label}`);
      send({ src: target, dst: host, opcode: Opcode.SEND_ONLY_INV, ieth: rkey, destQp: q.h, psn: nextPsn(), payload: nvmeCqe(cid, 0, 0, 0, 0) }, `rsp${label}`);
    };
    const logPage = nvmeSqe(0x02, 2, 0xffffffff, 0n, 4096, 0x4402, 0n, "keyed-invalidate");
    logPage.writeUInt32LE((0x0c | (1023 << 16)) >>> 0, 40);
    command(admin, 1, nvmeSqe(0x06, 1, 0, 0n, 4096, 0x4401, 0n, "keyed-invalidate"), 0x4401, "Identify");
    command(admin, 2, logPage, 0x4402, "LogPage");
    command(admin, 2, nvmeSqe(0x02, 2, 0, 0n, 4096, 0x4403, 0n, "keyed-invalidate"), 0x4403, "LogPage0");
    command(io, 2, nvmeSqe("read", 2, 1, 0n, 4096, 0x5502, 0n, "keyed-invalidate"), 0x5502, "Read");
    const records: RecordJson[] = [];
    await replaySwitches([{ name: "sw", topology, packets }], { onRecord: (r) => records.push(r) });
    const ios = records.filter((r): r is IoRecordJson => r.type === "io");
    expect(ios.map((r) => [r.target_qp, r.cid, r.op, r.incomplete, r.e2e_c_ns])).toEqual([[io.t, 2, "read", false, e2e("cmdRead", "rspRead")]]);
    const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats").at(-1)!;
    expect(stats).toMatchObject({ untracked_ios: 0, io_replaced: 0, parser_errors: 0 });
  }, 60_000);
});

describe("a record never says more than the switch saw (state taken by a colliding key)", () => {
  const replay = async (capture: SwitchCapture) => {
    const records: RecordJson[] = [];
    await replaySwitches([{ name: "sw", topology: Topology.parse(capture.topology), packets: capture.packets }], { onRecord: (r) => records.push(r) });
    return { ios: records.filter((r): r is IoRecordJson => r.type === "io"), stats: records.filter((r): r is SwitchStatsJson => r.type === "switch_stats").at(-1)! };
  };

  test("a write whose last READ RESPONSE's message state another flow took has no DAL (never one from its first READ RESPONSE), and the loss is counted", async () => {
    const s = lastDataDisplaced(T0);
    const { ios, stats } = await replay(s.capture);
    expect(ios).toHaveLength(2);
    const r = ios.find((x) => x.target_qp === s.targetQp)!;
    // The other read, whose first packet took the end map slot, has its whole DAL.
    expect(ios.find((x) => x !== r)?.dal_ns).toEqual(expect.any(Number));
    expect([r.host, r.target, r.host_qp, r.target_qp, r.incomplete]).toEqual([s.host, s.target, s.hostQp, s.targetQp, false]);
    expect(r.e2e_c_ns).toBe(Number(s.at.rsp! - s.at.cmd!));
    // DPL is the host's own READ RESPONSE FIRST: still measured.
    expect(r.dpl_ns).toBe(Number(s.at.rr_first! - s.at.rreq!));
    expect(r.dal_ns).toBeNull();
    expect(stats.io_references_lost).toBe(1);
  }, 60_000);

  test("two reads whose R_Keys share an R_Key map slot, both waiting for their data at once: each has its DAL, none lost", async () => {
    const s = rkeysWaitingTogether(T0);
    const { ios, stats } = await replay(s.capture);
    expect(ios).toHaveLength(2);
    for (const cid of s.cids) {
      const r = ios.find((x) => x.cid === cid)!;
      const [cmd, d, rsp] = [s.at[`cmd${cid}`]!, s.at[`d${cid}`]!, s.at[`rsp${cid}`]!];
      expect([r.host_qp, r.incomplete, r.e2e_c_ns, r.dal_ns], `cid ${cid}`).toEqual([s.hostQp, false, Number(rsp - cmd), Number(d - cmd + (rsp - d))]);
    }
    expect(stats.io_references_lost).toBe(0);
  }, 60_000);

  test("a read answered on a queue whose pairing a colliding pairing took is reported answered on its queue, with no figure, never incomplete", async () => {
    const s = pairingDisplaced(T0);
    const { ios, stats } = await replay(s.capture);
    const byHost = Object.fromEntries(ios.map((r) => [r.host, r]));
    const first = byHost[s.host]!;
    expect([first.host_qp, first.target_qp, first.incomplete, first.nvme_status, first.e2e_c_ns, first.e2e_s_ns, first.dal_ns])
      .toEqual([s.hostQp, s.targetQp, false, 0x0004, null, null, null]);
    const second = byHost[s.second.host]!;
    expect([second.host_qp, second.target_qp, second.incomplete, second.e2e_c_ns]).toEqual([s.second.hostQp, s.second.targetQp, false, Number(s.at.rsp2! - s.at.cmd2!)]);
    expect(stats.io_unpaired_responses).toBe(1);
    expect(stats.queue_pairs_learned).toBe(3);
    expect(ios.every((r) => !r.incomplete)).toBe(true);
  }, 60_000);

  test("two RDMA CM exchanges in flight at once whose REQs share a CM slot: both queues are paired, and an in-capsule write on each is measured", async () => {
    const s = cmRequestsCollide(T0);
    const { ios, stats } = await replay(s.capture);
    const view = ios.map((r) => [r.target_qp, r.host_qp, r.in_capsule, r.incomplete, r.e2e_c_ns]).sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(view).toEqual(s.queues.map((q, i) => [q.targetQp, q.hostQp, true, false, Number(s.at[`rsp${i}`]! - s.at[`cmd${i}`]!)]));
    expect([stats.untracked_ios, stats.queue_pairs_learned]).toEqual([0, 2]);
  }, 60_000);

  test("an I/O in two RDMA operations whose R_Key entry another command takes between them has no DAL (never one from the first operation's end), and the loss is counted; whole, its DAL is from the last operation's end", async () => {
    for (const op of ["read", "write"] as const) {
      const whole = rkeyTakenBetweenOps(T0, op, false);
      const w = (await replay(whole.capture)).ios.find((r) => r.target_qp === whole.targetQp)!;
      const first = op === "read" ? whole.at.d_first! : whole.at.rreq!;
      const last = op === "read" ? whole.at.d_last! : whole.at.rr_last!;
      expect(w.dal_ns, op).toBe(Number(first - whole.at.cmd! + (whole.at.rsp! - last)));
      const s = rkeyTakenBetweenOps(T0, op);
      const { ios, stats } = await replay(s.capture);
      const r = ios.find((x) => x.target_qp === s.targetQp)!;
      expect([r.host_qp, r.incomplete, r.e2e_c_ns, r.dal_ns], op).toEqual([s.hostQp, false, Number(s.at.rsp! - s.at.cmd!), null]);
      if (op === "write") expect(r.dpl_ns).toBe(Number(s.at.rr_first! - s.at.rreq!));
      expect(stats.io_references_lost, op).toBe(1);
    }
  }, 60_000);
});

describe("reordered NVMe data (docs/spec.md §3: the message's PSNs in the QP map)", () => {
  test("reads and writes whose data packets come out of order (a LAST before the MIDDLEs, the next message's FIRST before a LAST, a LAST before its own FIRST, a resent LAST, a message across the PSN wrap): DAL exact from the first sighting of the last PSN, nothing counted lost", async () => {
    for (const op of ["read", "write"] as const) {
      const s = reorderedNvmeData(T0, op);
      const records: RecordJson[] = [];
      await replaySwitches([{ name: "sw", topology: Topology.parse(s.capture.topology), packets: s.capture.packets }], { onRecord: (r) => records.push(r) });
      const ios = records.filter((r): r is IoRecordJson => r.type === "io").sort((a, b) => a.cid - b.cid);
      expect(ios.map((r) => [r.cid, r.incomplete, r.dal_ns]), op).toEqual(s.at.map((a, k) => [k + 1, false, Number(a.first - a.cmd + (a.rsp - a.last))]));
      const stats = records.filter((r): r is SwitchStatsJson => r.type === "switch_stats").at(-1)!;
      expect(stats.io_references_lost, op).toBe(0);
    }
  }, 60_000);
});

describe("reordered paths (SPEC §4: a seen-PSN window per flow)", () => {
  /** Replays one flow's capture: the records, and the message records and their figures as the scenarios give them. */
  async function replayFlow(capture: SwitchCapture) {
    const records: RecordJson[] = [];
    const result = await replaySwitches([{ name: "sw", topology: Topology.parse(capture.topology), packets: capture.packets }], { onRecord: (r) => records.push(r) });
    const msgs = records.filter((r): r is MessageRecordJson => r.type === "message");
    const view = msgs.map((m) => ({ firstPsn: m.first_psn, lastPsn: m.last_psn, packets: m.packets, retransmitted: m.retransmitted, fctNs: m.fct_ns }));
    return { records, result, msgs, view };
  }

  test("RDMA WRITE messages with packets displaced by up to two places, and a go-back-N resend among them: every packet in its message, only the resend retransmitted, FCT from first sightings", async () => {
    const s = reorderedFlow(T0);
    const { records, view } = await replayFlow(s.capture);
    expect(view).toEqual(s.messages);
    const flow = records.filter((r): r is FlowAggregateJson => r.type === "flow_interval");
    expect(flow.map((f) => [f.messages, f.packets, f.retransmitted])).toEqual([[3, 19, 1]]);
  }, 60_000);

  test("a packet displaced 254 and 255 places in long messages (a sprayed path at a small MTU), across the PSN wrap: within the seen-PSN window, not retransmitted", async () => {
    const s = farDisplacedFlow(T0);
    const { view } = await replayFlow(s.capture);
    expect(view).toEqual(s.messages);
  }, 60_000);

  test("messages whose FIRST is overtaken by one and by three packets, a go-back-N resend before the FIRST, packets after the flow's last message: a record for each message, every packet in the flow's totals for the interval it arrives in", async () => {
    const s = overtakenFirstFlow(T0, 1_500_000_000n);
    const { records, result, msgs, view } = await replayFlow(s.capture);
    expect(view).toEqual(s.messages);
    // Each message's gap runs from the previous one's LAST to its own FIRST, both first sightings.
    expect(msgs.slice(1).every((m) => m.gap_ns !== null)).toBe(true);
    const flow = records.filter((r): r is FlowAggregateJson => r.type === "flow_interval");
    expect(flow.map((f) => BigInt(f.interval_start_unix_ns) - T0)).toEqual([0n, 1_000_000_000n]);
    expect(flow.map((f) => ({ messages: f.messages, packets: f.packets, retransmitted: f.retransmitted }))).toEqual(s.intervals);
    expect(flow.reduce((a, f) => a + f.straddled_messages, 0)).toBe(0);
    // The two packets outside any message each went out at once, in a digest of their own, counted.
    expect(result.exporter.metrics.flowOnlyDigests.get("sw")).toBe(2);
  }, 60_000);

  test("a message whose LAST never reached the switch, then the flow's next message: no record for it, its packets in the flow's totals at once (straddled), the next one's record whole", async () => {
    const s = unendedMessageFlow(T0);
    const records: RecordJson[] = [];
    const result = await replaySwitches([{ name: "sw", topology: Topology.parse(s.capture.topology), packets: s.capture.packets }], { onRecord: (r) => records.push(r) });
    const msgs = records.filter((r): r is MessageRecordJson => r.type === "message");
    expect(msgs.map((m) => ({ firstPsn: m.first_psn, lastPsn: m.last_psn, packets: m.packets, retransmitted: m.retransmitted, fctNs: m.fct_ns }))).toEqual([s.next]);
    // No gap: the end of the message before it was never seen.
    expect(msgs[0]!.gap_ns).toBeNull();
    const flow = records.filter((r): r is FlowAggregateJson => r.type === "flow_interval");
    expect(flow.map((f) => ({ messages: f.messages, packets: f.packets, retransmitted: f.retransmitted, straddled: f.straddled_messages }))).toEqual([{ messages: 1, packets: 7, retransmitted: 0, straddled: 1 }]);
    expect(result.exporter.metrics.flowOnlyDigests.get("sw")).toBe(1);
  }, 60_000);
});

describe("RoCEv2 over IPv6 (hand-made frames; endpoint entries written over P4Runtime as the controller writes them)", () => {
  const H = ipv6("2001:db8:0:1::1");
  const TG = ipv6("2001:db8:0:2::1");
  const KH = 0xf0000001;
  const KT = 0xf0000002;
  const ports: V6Port[] = [
    { port: 1, role: "compute", prefixes: ["10.0.1.0/24"], prefixes6: ["2001:db8:0:1::/64"] },
    { port: 33, role: "storage", prefixes: ["10.0.2.0/24"], prefixes6: ["2001:db8:0:2::/64"] },
  ];
  const open = async (endpoints: ReadonlyArray<readonly [bigint, number]> = [[H, KH], [TG, KT]], mode: "full" | "polling" = "full") => {
    const s = await v6Switch(ports, endpoints, mode);
    cleanups.push(() => s.close());
    return s;
  };
  const ios = (ds: TelemetryDigest[]) => ds.filter((d): d is IoDigest => d.kind === "io");

  test("VLAN-tagged NVMe over IPv6: a read, an in-capsule write on a queue paired by RDMA CM (GIDs are the IPv6 addresses), a CID reused after a lost response; keys are the endpoint keys, durations to the ns", async () => {
    const s = await open();
    const Q = { A: { t: 0xa01, h: 0x1a1 }, C: { t: 0xc01, h: 0x1c1 } };
    let t = T0;
    let psn = 1000;
    const at: Record<string, bigint> = {};
    const send = (f: RoceFrame, label?: string, gap = 3_000n) => {
      t += gap;
      if (label) at[label] = t;
      s.send(f.src === H ? 1 : 33, buildFrame({ ...f, vlan: 100 }).data, t);
    };
    const gsi = (src: bigint, dst: bigint, payload: Buffer): RoceFrame => ({ src, dst, opcode: Opcode.UD_SEND_ONLY, destQp: 1, psn: 0, deth: { qkey: 0x80010000, srcQp: 1 }, payload });
    const cmd = (q: { t: number }, cid: number, rkey: number, label: string) =>
      send({ src: H, dst: TG, opcode: Opcode.SEND_ONLY, destQp: q.t, psn: psn++, payload: nvmeSqe("read", cid, 1, 0n, 4096, rkey) }, label);
    const data = (q: { h: number }, rkey: number, label: string) =>
      send({ src: TG, dst: H, opcode: Opcode.WRITE_ONLY, destQp: q.h, psn: psn++, reth: { va: 0n, rkey, length: 4096 }, payloadLength: 4096 }, label);
    const rsp = (q: { h: number }, cid: number, label: string) =>
      send({ src: TG, dst: H, opcode: Opcode.SEND_ONLY, destQp: q.h, psn: psn++, payload: nvmeCqe(cid, 1, 0, 0, 1) }, label);

    send(gsi(H, TG, cmMad(CmAttr.REQ, 1n, { localCommId: 0x77, localQpn: Q.C.h, src: H, dst: TG })));
    send(gsi(TG, H, cmMad(CmAttr.REP, 1n, { localCommId: 0x99, remoteCommId: 0x77, localQpn: Q.C.t, src: TG, dst: H })));
    cmd(Q.A, 7, 0xa7, "cmdA7");
    data(Q.A, 0xa7, "dataA7");
    rsp(Q.A, 7, "rspA7");
    // In-capsule write on C: SEND FIRST with the SQE and SEND LAST; the response on the host QP CM named.
    const capsule = Buffer.concat([nvmeSqe("write", 0, 1, 0n, 4096, 0, 0n, "in-capsule"), Buffer.alloc(4096 - 64)]);
    send({ src: H, dst: TG, opcode: Opcode.SEND_FIRST, destQp: Q.C.t, psn: psn++, payload: capsule }, "cmdC0");
    send({ src: H, dst: TG, opcode: Opcode.SEND_LAST, destQp: Q.C.t, psn: psn++, payloadLength: 64 }, undefined, 400n);
    rsp(Q.C, 0, "rspC0");
    // CID 9: the first response is lost; the host reuses the CID.
    cmd(Q.A, 9, 0xa9, "cmdA9a");
    data(Q.A, 0xa9, "dataA9a");
    cmd(Q.A, 9, 0xa90, "cmdA9b");
    data(Q.A, 0xa90, "dataA9b");
    rsp(Q.A, 9, "rspA9b");

    // 4 commands, 3 responses.
    await s.waitDigests(7);
    const d = ios(s.digests);
    expect(d.every((x) => x.host === KH && x.target === KT)).toBe(true);
    const ns = (a: string, b: string) => Number(at[b]! - at[a]!);
    const rsps = d.filter((x) => x.event === IO_EVENT_RSP).map((x) => [x.target_qp, x.host_qp, x.cid, x.e2e_ns, x.flags & IO_FLAG_IN_CAPSULE]);
    expect(rsps).toEqual([
      [Q.A.t, Q.A.h, 7, ns("cmdA7", "rspA7"), 0],
      [Q.C.t, Q.C.h, 0, ns("cmdC0", "rspC0"), IO_FLAG_IN_CAPSULE],
      [Q.A.t, Q.A.h, 9, ns("cmdA9b", "rspA9b"), 0],
    ]);
    const replaced = d.filter((x) => x.event === IO_EVENT_CMD && (x.flags & IO_FLAG_REPLACED) !== 0).map((x) => [x.cid, x.cmd_psn]);
    expect(replaced).toHaveLength(1);
    expect(replaced[0]![0]).toBe(9);
    const c = await s.counters();
    expect(c).toMatchObject({ io_replaced: 1, io_commands: 4, io_responses: 3, queue_pairs_learned: 2, unknown_endpoint: 0, ipv6_ext_header: 0, parser_errors: 0 });
    // Every packet routed by ipv6_routes, unchanged (VLAN tag, hop limit).
    expect(s.forwarded.every(([i, e]) => e === (i === 1 ? 33 : 1))).toBe(true);
  }, 30_000);

  test("a CNP and ECN CE over IPv6 (ECN from the traffic class) count for the flow's host pair", async () => {
    const s = await open();
    let t = T0;
    const send = (f: RoceFrame) => s.send(f.src === H ? 1 : 33, buildFrame(f).data, (t += 10_000n));
    send({ src: TG, dst: H, opcode: Opcode.CNP, destQp: 0x99, psn: 0, payload: Buffer.alloc(16) });
    send({ src: H, dst: TG, opcode: Opcode.WRITE_FIRST, destQp: 0x20, psn: 1, reth: { va: 0n, rkey: 1, length: 2048 }, payloadLength: 1024, flowLabel: 0x12345 });
    send({ src: H, dst: TG, opcode: Opcode.WRITE_LAST, destQp: 0x20, psn: 2, payloadLength: 1024, ecn: 3, flowLabel: 0x54321 });
    await s.waitDigests(1);
    const m = s.digests.filter((d): d is MsgDigest => d.kind === "msg");
    expect(m.map((x) => [x.src, x.dst, x.dest_qp, x.first_psn, x.last_psn, x.packets, x.ecn_ce, x.cnp, x.bytes])).toEqual([[KH, KT, 0x20, 1, 2, 2, 1, 1, 2048]]);
    expect(await s.counters()).toMatchObject({ cnp: 1, cnp_untracked: 0, ecn_ce: 1, messages: 1, roce_packets: 3 });
  }, 30_000);

  test("an extension header chain is forwarded, not measured, and counted; an IPv4 packet from 240.0.0.0/4 (an endpoint key) likewise", async () => {
    const s = await open();
    let t = T0;
    const withHopByHop = (f: RoceFrame) => {
      // An 8-byte hop-by-hop options header (PadN) between IPv6 and UDP, as the kernel adds one (e.g. for MLD or jumbograms).
      const b = Buffer.from(buildFrame(f).data);
      const ip = 14;
      const hbh = Buffer.from([17, 0, 1, 4, 0, 0, 0, 0]);
      b[ip + 6] = 0; // next header: hop-by-hop
      b.writeUInt16BE(b.readUInt16BE(ip + 4) + 8, ip + 4);
      return Buffer.concat([b.subarray(0, ip + 40), hbh, b.subarray(ip + 40)]);
    };
    const cmd = (src: number | bigint, dst: number | bigint): RoceFrame => ({ src, dst, opcode: Opcode.SEND_ONLY, destQp: 0x801, psn: 1, payload: nvmeSqe("read", 1, 1, 0n, 512, 0x101) });
    s.send(1, withHopByHop(cmd(H, TG)), (t += 1000n));
    s.send(1, buildFrame(cmd(ipv4("10.0.1.1"), ipv4("240.0.0.2"))).data, (t += 1000n));
    s.send(1, buildFrame(cmd(ipv4("240.0.0.1"), ipv4("10.0.2.1"))).data, (t += 1000n));
    // And one measured command, so that the digests above would have come before it.
    s.send(1, buildFrame(cmd(H, TG)).data, (t += 1000n));
    await s.waitDigests(1);
    expect(s.digests.map((d) => d.kind === "io" && [d.host, d.target])).toEqual([[KH, KT]]);
    expect(await s.counters()).toMatchObject({ ipv6_ext_header: 1, reserved_address: 2, unknown_endpoint: 0, io_commands: 1, roce_packets: 3, parser_errors: 0 });
    // Forwarded all the same (the 240/4 destination has no route: dropped and counted as such).
    expect(s.forwarded).toEqual([[1, 33], [1, undefined], [1, 33], [1, 33]]);
  }, 30_000);

  test("an endpoint the tables lack: forwarded, not measured, counted, reported once in a LEARN_ENDPOINT digest (the source first); measured once its entries are in", async () => {
    const s = await open([[TG, KT]]);
    let t = T0;
    const cmd = (cid: number): RoceFrame => ({ src: H, dst: TG, opcode: Opcode.SEND_ONLY, destQp: 0x801, psn: cid, payload: nvmeSqe("read", cid, 1, 0n, 512, 0x100 + cid) });
    for (let cid = 1; cid <= 3; cid++) s.send(1, buildFrame(cmd(cid)).data, (t += 1000n));
    // Both ends unknown: the source is reported (first), then the destination once the source is known.
    const X = ipv6("2001:db8:0:1::99");
    const Y = ipv6("2001:db8:0:2::99");
    s.send(1, buildFrame({ src: X, dst: Y, opcode: Opcode.WRITE_ONLY, destQp: 0x20, psn: 1, reth: { va: 0n, rkey: 1, length: 64 }, payloadLength: 64 }).data, (t += 1000n));
    await s.waitDigests(2);
    await new Promise((r) => setTimeout(r, 100));
    const learn = s.digests.filter((d): d is LearnDigest => d.kind === "learn");
    expect(learn.map((d) => [d.learn, d.addr, d.src, d.dst, d.dest_qp])).toEqual([[LEARN_ENDPOINT, H, 0, 0, 0], [LEARN_ENDPOINT, X, 0, 0, 0]]);
    expect(ios(s.digests)).toHaveLength(0);
    expect(await s.counters()).toMatchObject({ unknown_endpoint: 4, roce_packets: 4, io_commands: 0, messages: 0, digests: 2 });
    expect(s.forwarded.every(([, e]) => e === 33)).toBe(true);
    // The controller answers: the next command is measured.
    await writeV6Entries(s.controller, [], [[H, KH], [X, 0xf0000003]]);
    s.send(1, buildFrame(cmd(4)).data, (t += 1000n));
    s.send(1, buildFrame({ src: X, dst: Y, opcode: Opcode.WRITE_ONLY, destQp: 0x20, psn: 2, reth: { va: 0n, rkey: 1, length: 64 }, payloadLength: 64 }).data, (t += 1000n));
    await s.waitDigests(4);
    expect(s.digests.slice(2).map((d) => (d.kind === "io" ? ["io", d.host, d.target, d.cid] : d.kind === "learn" ? ["learn", d.learn, d.addr] : [d.kind]))).toEqual([["io", KH, KT, 4], ["learn", LEARN_ENDPOINT, Y]]);
  }, 30_000);
});
