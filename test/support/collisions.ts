// Hand-made NVMe traffic whose keys collide in the telemetry program's
// hash-indexed slots (p4/include/size.p4, v1model sizes), each the smallest
// case of state one key takes from another. Slots are found as the program
// hashes them: CRC-32 of the key's fields, big-endian, mod the slot count.
import { crc32 } from "../../switch/src/bmv2/crc.js";
import { ipv4, ipv4Text } from "../../contract/src/ipv4.js";
import { buildFrame, cmMad, CmAttr, nvmeCqe, nvmeSqe, Opcode, type RoceFrame } from "../../traffic/src/roce.js";
import type { SwitchCapture } from "../../traffic/src/types.js";

const IOREF_SLOTS = 262144;
const QUEUE_SLOTS = 131072; // per way
const CM_SLOTS = 65536; // per way

/** The slot of a key in a map of `slots`: its fields, each [value, bytes], big-endian. */
function keySlot(slots: number, ...fields: Array<[number, number]>): number {
  const k = Buffer.alloc(fields.reduce((n, [, bytes]) => n + bytes, 0));
  let at = 0;
  for (const [v, bytes] of fields) at = k.writeUIntBE(bytes === 4 ? v >>> 0 : v & (2 ** (8 * bytes) - 1), at, bytes);
  return crc32(k) % slots;
}

/** The slot of (a, b, qp) in a map of `slots`: two IPv4 addresses and a 24-bit QP number. */
export function slotOf(a: number, b: number, qp: number, slots: number): number {
  return keySlot(slots, [a, 4], [b, 4], [qp, 3]);
}

/** The first QP number from `from` whose (a, b, qp) slot is `slot`. */
function qpForSlot(a: number, b: number, slot: number, slots: number, from = 0x100): number {
  for (let qp = from; qp < 1 << 24; qp++) if (slotOf(a, b, qp, slots) === slot) return qp;
  throw new Error("no colliding QP number");
}

interface Scenario {
  capture: SwitchCapture;
  host: string;
  target: string;
  hostQp: number;
  targetQp: number;
  /** ingress time of each labelled packet (capture clock, ns) */
  at: Record<string, bigint>;
}

/** A hand-made capture: each frame `gap` ns after the one before; labelled frames' times in `at`; `send` returns the frame's time. */
export function recorder(t0: bigint) {
  let t = t0;
  const packets: SwitchCapture["packets"] = [];
  const at: Record<string, bigint> = {};
  const send = (f: RoceFrame, label?: string, gap = 5_000n): bigint => {
    t += gap;
    if (label) at[label] = t;
    const { data, wireLength } = buildFrame(f);
    packets.push({ timestampNs: t, data, originalLength: wireLength });
    return t;
  };
  return { packets, at, send };
}

/** The end map slot of a message's last PSN (p4/include/control/io_tracker.p4). */
const endSlot = (src: number, dst: number, qp: number, lastPsn: number): number => keySlot(IOREF_SLOTS, [src, 4], [dst, 4], [qp, 3], [lastPsn, 3]);

/**
 * One 8 KiB write (READ REQUEST, READ RESPONSE FIRST and LAST); between the
 * two READ RESPONSEs, an RDMA WRITE ONLY between two other hosts whose
 * (src, dst, dest QP) takes the QP map slot of the I/O's READ RESPONSE
 * message, and the first RDMA WRITE of another read between them whose
 * (src, dst, dest QP, last PSN) takes the end map slot of the I/O's last
 * PSN. The I/O's own last data packet (rr_last) is then not found.
 */
export function lastDataDisplaced(t0: bigint): Scenario {
  const host = ipv4("10.0.1.1");
  const target = ipv4("10.0.2.1");
  const other = ipv4("10.0.2.9"); // storage side, writing to a compute host
  const otherHost = ipv4("10.0.1.9");
  const tqp = 0x801;
  const hqp = 0x101;
  const otherQp = qpForSlot(other, otherHost, slotOf(host, target, tqp, IOREF_SLOTS), IOREF_SLOTS);
  const { packets, at, send } = recorder(t0);
  const rkey = 0x7001;
  send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: tqp, psn: 100, payload: nvmeSqe("write", 5, 1, 0x1000n, 8192, rkey) }, "cmd");
  send({ src: target, dst: host, opcode: Opcode.READ_REQUEST, destQp: hqp, psn: 500, reth: { va: 0x1000n, rkey, length: 8192 } }, "rreq");
  send({ src: host, dst: target, opcode: Opcode.READ_RESPONSE_FIRST, destQp: tqp, psn: 500, aeth: { syndrome: 0, msn: 1 }, payloadLength: 4096 }, "rr_first");
  send({ src: other, dst: otherHost, opcode: Opcode.WRITE_ONLY, destQp: otherQp, psn: 7, reth: { va: 0n, rkey: 0x99, length: 64 }, payloadLength: 64 }, undefined, 1_000n);
  // The other read: its command names R_Key 0x98; its data's first packet (PSN 20, last PSN 21) takes the end slot.
  const want = endSlot(host, target, tqp, 501);
  let endQp = 0x100;
  while (endSlot(other, otherHost, endQp, 21) !== want) endQp++;
  send({ src: otherHost, dst: other, opcode: Opcode.SEND_ONLY, destQp: 0x900, psn: 40, payload: nvmeSqe("read", 9, 1, 0x2000n, 8192, 0x98) }, undefined, 500n);
  send({ src: other, dst: otherHost, opcode: Opcode.WRITE_FIRST, destQp: endQp, psn: 20, reth: { va: 0x2000n, rkey: 0x98, length: 8192 }, payloadLength: 4096 }, undefined, 500n);
  send({ src: host, dst: target, opcode: Opcode.READ_RESPONSE_LAST, destQp: tqp, psn: 501, aeth: { syndrome: 0, msn: 1 }, payloadLength: 4096 }, "rr_last", 2_000n);
  // The other read's last packet finds its own I/O by its PSN; its response.
  send({ src: other, dst: otherHost, opcode: Opcode.WRITE_LAST, destQp: endQp, psn: 21, payloadLength: 4096 }, undefined, 500n);
  send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: hqp, psn: 501, payload: nvmeCqe(5, 1, 0, 0, 0) }, "rsp", 20_000n);
  send({ src: other, dst: otherHost, opcode: Opcode.SEND_ONLY, destQp: endQp, psn: 22, payload: nvmeCqe(9, 1, 0, 0, 0) }, undefined, 1_000n);
  const topology = { ports: [
    { port: 1, role: "compute" as const, prefixes: [`${ipv4Text(host)}/32`] },
    { port: 2, role: "compute" as const, prefixes: [`${ipv4Text(otherHost)}/32`] },
    { port: 33, role: "storage" as const, prefixes: [`${ipv4Text(target)}/32`] },
    { port: 34, role: "storage" as const, prefixes: [`${ipv4Text(other)}/32`] },
  ] };
  return { capture: { name: "sw", topology, packets }, host: ipv4Text(host), target: ipv4Text(target), hostQp: hqp, targetQp: tqp, at };
}

/** The slot of a queue pairing key (host, target, QP) in way 0 and in way 1 of a two-way queue pair map (p4/include/control/queue_pairs.p4). */
export function pairSlots(host: number, target: number, qp: number): [number, number] {
  return [keySlot(QUEUE_SLOTS, [host, 4], [target, 4], [qp, 3]), keySlot(QUEUE_SLOTS, [qp, 3], [target, 4], [host, 4])];
}

/**
 * A host in hostBase's /16 and a QP number whose pairing key lands in the
 * way-0 slot `want0` (and, if given, the way-1 slot `want1`), other than
 * the keys in `not`. CRC-32 is affine over GF(2) in the message's bits, so
 * this is a linear system in the 40 free bits (host's low 16, QP's 24).
 */
export function keyForSlots(hostBase: number, target: number, want0: number, want1?: number, not: ReadonlyArray<{ host: number; qp: number }> = []): { host: number; qp: number } {
  const N = 40;
  const at = (x: bigint) => ({ host: (hostBase & 0xffff0000) | Number((x >> 24n) & 0xffffn), qp: Number(x & 0xffffffn) });
  const slots = (x: bigint) => { const k = at(x); return pairSlots(k.host, target, k.qp); };
  const base = slots(0n);
  const cols = Array.from({ length: N }, (_, i) => slots(1n << BigInt(i)).map((v, w) => v ^ base[w]!));
  const rows: Array<{ mask: bigint; rhs: number }> = [];
  const bits = Math.log2(QUEUE_SLOTS);
  const wants = want1 === undefined ? [want0] : [want0, want1];
  wants.forEach((want, w) => {
    for (let b = 0; b < bits; b++) {
      let mask = 0n;
      for (let i = 0; i < N; i++) if ((cols[i]![w]! >> b) & 1) mask |= 1n << BigInt(i);
      rows.push({ mask, rhs: ((want ^ base[w]!) >> b) & 1 });
    }
  });
  // Gaussian elimination: one pivot variable per independent row.
  const pivots: Array<{ v: number; mask: bigint; rhs: number }> = [];
  for (const r of rows) {
    let { mask, rhs } = r;
    for (const p of pivots) if ((mask >> BigInt(p.v)) & 1n) { mask ^= p.mask; rhs ^= p.rhs; }
    if (mask === 0n) { if (rhs) throw new Error("no key for these slots"); continue; }
    let v = 0;
    while (!((mask >> BigInt(v)) & 1n)) v++;
    for (const p of pivots) if ((p.mask >> BigInt(v)) & 1n) { p.mask ^= mask; p.rhs ^= rhs; }
    pivots.push({ v, mask, rhs });
  }
  const free = [...Array(N).keys()].filter((i) => !pivots.some((p) => p.v === i));
  for (let choice = 1; choice < 1 << Math.min(free.length, 16); choice++) {
    let x = 0n;
    free.forEach((v, j) => { if ((choice >> j) & 1) x |= 1n << BigInt(v); });
    for (const p of pivots) {
      let bit = p.rhs;
      for (const v of free) if (((p.mask >> BigInt(v)) & 1n) && ((x >> BigInt(v)) & 1n)) bit ^= 1;
      if (bit) x |= 1n << BigInt(p.v);
    }
    const k = at(x);
    const [s0, s1] = pairSlots(k.host, target, k.qp);
    if (s0 !== want0 || (want1 !== undefined && s1 !== want1)) throw new Error("the solved key is not in its slots");
    if (k.qp !== 0 && (k.host & 0xffff) !== 0 && !not.some((n) => n.host === k.host && n.qp === k.qp)) return k;
  }
  throw new Error("no other key for these slots");
}

/**
 * Three 4 KiB reads of three hosts on one target whose queue pairings take
 * the same by-host-QP entries: A's in way 0, B's in way 1 (its way-0 entry
 * is A's), and C's, whose way-0 entry is A's and way-1 entry B's, replaces
 * B's between B's data and its response, which the switch then cannot pair.
 * The scenario's host and QPs are B's; `second` is C.
 */
export function pairingDisplaced(t0: bigint): Scenario & { second: { host: string; hostQp: number; targetQp: number } } {
  const hostA = ipv4("10.0.1.1");
  const target = ipv4("10.0.2.1");
  const others = ipv4("10.1.0.0");
  const A = { host: hostA, qp: 0x101 };
  const [a0] = pairSlots(A.host, target, A.qp);
  const B = keyForSlots(others, target, a0);
  const [, b1] = pairSlots(B.host, target, B.qp);
  const C = keyForSlots(others, target, a0, b1, [B]);
  const tq = { A: 0x801, B: 0x802, C: 0x803 };
  const { packets, at, send } = recorder(t0);
  const read = (h: { host: number; qp: number }, tqp: number, rkey: number, psn: number, label: string) => {
    send({ src: h.host, dst: target, opcode: Opcode.SEND_ONLY, destQp: tqp, psn, payload: nvmeSqe("read", 3, 1, 0n, 4096, rkey) }, `cmd${label}`);
    send({ src: target, dst: h.host, opcode: Opcode.WRITE_ONLY, destQp: h.qp, psn: psn + 1, reth: { va: 0n, rkey, length: 4096 }, payloadLength: 4096 }, `data${label}`);
  };
  const rsp = (h: { host: number; qp: number }, psn: number, status: number, label: string) =>
    send({ src: target, dst: h.host, opcode: Opcode.SEND_ONLY, destQp: h.qp, psn, payload: nvmeCqe(3, 1, 0, status, 0) }, label);
  read(A, tq.A, 0xa3, 10, "A");
  read(B, tq.B, 0xb3, 20, "");
  read(C, tq.C, 0xc3, 30, "2");
  rsp(B, 22, 0x0004, "rsp");
  rsp(A, 12, 0, "rspA");
  rsp(C, 32, 0, "rsp2");
  const topology = { ports: [
    { port: 1, role: "compute" as const, prefixes: [`${ipv4Text(hostA)}/32`] },
    { port: 2, role: "compute" as const, prefixes: ["10.1.0.0/16"] },
    { port: 33, role: "storage" as const, prefixes: [`${ipv4Text(target)}/32`] },
  ] };
  return {
    capture: { name: "sw", topology, packets }, host: ipv4Text(B.host), target: ipv4Text(target), hostQp: B.qp, targetQp: tq.B, at,
    second: { host: ipv4Text(C.host), hostQp: C.qp, targetQp: tq.C },
  };
}

/** The R_Key map slot of (host, target, R_Key). */
const rkeySlot = (host: number, target: number, rkey: number): number => keySlot(IOREF_SLOTS, [host, 4], [target, 4], [rkey, 4]);

/** One queue of 10.0.1.1 to 10.0.2.1, and two R_Keys whose R_Key map entries share way 0's slot. */
function rkeysSharingASlot() {
  const host = ipv4("10.0.1.1");
  const target = ipv4("10.0.2.1");
  const rkey = 0x7001;
  const want = rkeySlot(host, target, rkey);
  let other = rkey + 1;
  while (rkeySlot(host, target, other) !== want) other++;
  return { host, target, tqp: 0x801, hqp: 0x101, rkey, other };
}

/**
 * One 8 KiB I/O whose data moves in two RDMA operations of 4 KiB (as nvmet
 * moves a large I/O: each operation with its own RETH, the command's R_Key,
 * the next address); between them, a command of another queue of the same
 * host and target whose R_Key takes the I/O's R_Key map entry. The second
 * operation then names no I/O: its end (the I/O's last data packet) is not
 * found. With `taken` false, no other command: the I/O is whole.
 */
export function rkeyTakenBetweenOps(t0: bigint, op: "read" | "write", taken = true): Scenario {
  const { host, target, tqp, hqp, rkey, other } = rkeysSharingASlot();
  const { packets, at, send } = recorder(t0);
  // The buffer crosses a 4 GiB boundary (IOVAs are 64-bit): the switch
  // compares ends in their low 32 bits, which wrap here.
  const va = 0x7f00_ffff_f000n;
  send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: tqp, psn: 100, payload: nvmeSqe(op, 5, 1, va, 8192, rkey) }, "cmd");
  const dataOp = (k: number) => {
    const reth = { va: va + BigInt(k * 4096), rkey, length: 4096 };
    if (op === "read") {
      send({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: hqp, psn: 500 + k, reth, payloadLength: 4096 }, k === 0 ? "d_first" : "d_last");
    } else {
      send({ src: target, dst: host, opcode: Opcode.READ_REQUEST, destQp: hqp, psn: 500 + k, reth }, k === 0 ? "rreq" : undefined);
      send({ src: host, dst: target, opcode: Opcode.READ_RESPONSE_ONLY, destQp: tqp, psn: 500 + k, aeth: { syndrome: 0, msn: 1 + k }, payloadLength: 4096 }, k === 0 ? "rr_first" : "rr_last", 3_000n);
    }
  };
  dataOp(0);
  if (taken) send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: tqp + 1, psn: 300, payload: nvmeSqe("read", 9, 1, 0x900000n, 4096, other) }, "other", 1_000n);
  dataOp(1);
  send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: hqp, psn: 502, payload: nvmeCqe(5, 1, 0, 0, 0) }, "rsp", 20_000n);
  const topology = { ports: [
    { port: 1, role: "compute" as const, prefixes: [`${ipv4Text(host)}/32`] },
    { port: 33, role: "storage" as const, prefixes: [`${ipv4Text(target)}/32`] },
  ] };
  return { capture: { name: "sw", topology, packets }, host: ipv4Text(host), target: ipv4Text(target), hostQp: hqp, targetQp: tqp, at };
}

/**
 * Two 4 KiB reads on one queue whose R_Keys share a slot of the R_Key map's
 * way 0, the second command before the first read's data: both entries wait
 * at once (as thousands do on a ToR, the target's latency long).
 */
export function rkeysWaitingTogether(t0: bigint): Scenario & { cids: [number, number] } {
  const { host, target, tqp, hqp, rkey, other } = rkeysSharingASlot();
  const { packets, at, send } = recorder(t0);
  send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: tqp, psn: 100, payload: nvmeSqe("read", 5, 1, 0x10000n, 4096, rkey) }, "cmd5");
  send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: tqp, psn: 101, payload: nvmeSqe("read", 6, 1, 0x20000n, 4096, other) }, "cmd6");
  send({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: hqp, psn: 500, reth: { va: 0x10000n, rkey, length: 4096 }, payloadLength: 4096 }, "d5", 20_000n);
  send({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: hqp, psn: 501, reth: { va: 0x20000n, rkey: other, length: 4096 }, payloadLength: 4096 }, "d6");
  send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: hqp, psn: 502, payload: nvmeCqe(5, 1, 0, 0, 0) }, "rsp5", 2_000n);
  send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: hqp, psn: 503, payload: nvmeCqe(6, 2, 0, 0, 0) }, "rsp6");
  const topology = { ports: [
    { port: 1, role: "compute" as const, prefixes: [`${ipv4Text(host)}/32`] },
    { port: 33, role: "storage" as const, prefixes: [`${ipv4Text(target)}/32`] },
  ] };
  return { capture: { name: "sw", topology, packets }, host: ipv4Text(host), target: ipv4Text(target), hostQp: hqp, targetQp: tqp, at, cids: [5, 6] };
}

/**
 * Two queues of one host and target set up by RDMA CM at once (as a job's
 * start connects every queue within milliseconds): the second REQ, whose
 * (host, target, communication id) takes the first's CM slot, comes before
 * the first REP. Then an in-capsule write on each queue, which the switch
 * can attribute only through the pairing its CM exchange taught it.
 */
export function cmRequestsCollide(t0: bigint): { capture: SwitchCapture; queues: Array<{ hostQp: number; targetQp: number }>; at: Record<string, bigint> } {
  const host = ipv4("10.0.1.1");
  const target = ipv4("10.0.2.1");
  const cmSlot = (commId: number) => keySlot(CM_SLOTS, [host, 4], [target, 4], [commId, 4]);
  const first = 0x1001;
  let second = first + 1;
  while (cmSlot(second) !== cmSlot(first)) second++;
  const queues = [{ hostQp: 0x1a1, targetQp: 0xa01 }, { hostQp: 0x1b1, targetQp: 0xb01 }];
  const { packets, at, send } = recorder(t0);
  const gsi = (src: number, dst: number, payload: Buffer): RoceFrame => ({ src, dst, opcode: Opcode.UD_SEND_ONLY, destQp: 1, psn: 0, deth: { qkey: 0x80010000, srcQp: 1 }, payload });
  const ids = [first, second];
  ids.forEach((id, i) => send(gsi(host, target, cmMad(CmAttr.REQ, BigInt(id), { localCommId: id, localQpn: queues[i]!.hostQp }))));
  ids.forEach((id, i) => send(gsi(target, host, cmMad(CmAttr.REP, BigInt(id), { localCommId: 0x9000 + i, remoteCommId: id, localQpn: queues[i]!.targetQp }))));
  queues.forEach((q, i) => {
    const capsule = Buffer.concat([nvmeSqe("write", 1, 1, 0n, 512, 0, 0n, "in-capsule"), Buffer.alloc(512)]);
    send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: q.targetQp, psn: 100 + i, payload: capsule }, `cmd${i}`);
  });
  queues.forEach((q, i) => send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: q.hostQp, psn: 200 + i, payload: nvmeCqe(1, 1, 0, 0, 0) }, `rsp${i}`, 20_000n));
  const topology = { ports: [
    { port: 1, role: "compute" as const, prefixes: [`${ipv4Text(host)}/32`] },
    { port: 33, role: "storage" as const, prefixes: [`${ipv4Text(target)}/32`] },
  ] };
  return { capture: { name: "sw", topology, packets }, queues, at };
}

/** The I/O slot of (host, target, target QP, CID) (p4/include/control/io_tracker.p4, v1model: 262,144 slots). */
const ioSlot = (host: number, target: number, tqp: number, cid: number): number => keySlot(262144, [host, 4], [target, 4], [tqp, 3], [cid, 2]);

/**
 * A read open on queue A (CID 5), then, on queue B of the same host and
 * target, a Flush whose (host, target, target QP, CID) takes the read's I/O
 * slot, and its completion; then the read's data and response. The Flush
 * is another key's command: it must not close the read, which is answered.
 */
export function flushInAnotherKeysSlot(t0: bigint): Scenario & { flushCid: number; flushQp: number } {
  const host = ipv4("10.0.1.1");
  const target = ipv4("10.0.2.1");
  const tqp = 0x801;
  const hqp = 0x101;
  const want = ioSlot(host, target, tqp, 5);
  let flushQp = 0x802;
  let flushCid = -1;
  for (; flushCid < 0; flushQp++) {
    for (let cid = 0; cid < 0x10000; cid++) {
      if (ioSlot(host, target, flushQp, cid) === want) {
        flushCid = cid;
        break;
      }
    }
    if (flushCid >= 0) break;
  }
  const { packets, at, send } = recorder(t0);
  send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: tqp, psn: 100, payload: nvmeSqe("read", 5, 1, 0x1000n, 4096, 0x5005) }, "cmd");
  send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: flushQp, psn: 300, payload: nvmeSqe(0x00, flushCid, 1, 0n, 0, 0) }, "flush");
  send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: 0x102, psn: 900, payload: nvmeCqe(flushCid, 2, 0, 0, 0) }, "flush_rsp");
  send({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: hqp, psn: 500, reth: { va: 0x1000n, rkey: 0x5005, length: 4096 }, payloadLength: 4096 }, "data");
  send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: hqp, psn: 501, payload: nvmeCqe(5, 1, 0, 0, 0) }, "rsp");
  const topology = { ports: [
    { port: 1, role: "compute" as const, prefixes: [`${ipv4Text(host)}/32`] },
    { port: 33, role: "storage" as const, prefixes: [`${ipv4Text(target)}/32`] },
  ] };
  return { capture: { name: "sw", topology, packets }, host: ipv4Text(host), target: ipv4Text(target), hostQp: hqp, targetQp: tqp, at, flushCid, flushQp };
}
