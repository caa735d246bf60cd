// Hand-made NVMe traffic whose keys collide in the telemetry program's
// hash-indexed slots (p4/include/size.p4, v1model sizes), each the smallest
// case of state one key takes from another. Slots are found as the program
// hashes them: CRC-32 of the key's fields, big-endian, mod the slot count.
import { crc32 } from "../../switch/src/bmv2/crc.js";
import { ipv4, ipv4Text } from "../../contract/src/ipv4.js";
import { buildFrame, nvmeCqe, nvmeSqe, Opcode, type RoceFrame } from "../../traffic/src/roce.js";
import type { SwitchCapture } from "../../traffic/src/types.js";

const IOREF_SLOTS = 262144;
const QUEUE_SLOTS = 16384;

/** The slot of (a, b, qp) in a map of `slots`: two IPv4 addresses and a 24-bit QP number. */
export function slotOf(a: number, b: number, qp: number, slots: number): number {
  const k = Buffer.alloc(11);
  k.writeUInt32BE(a >>> 0, 0);
  k.writeUInt32BE(b >>> 0, 4);
  k.writeUIntBE(qp & 0xffffff, 8, 3);
  return crc32(k) % slots;
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

function recorder(t0: bigint) {
  let t = t0;
  const packets: SwitchCapture["packets"] = [];
  const at: Record<string, bigint> = {};
  const send = (f: RoceFrame, label?: string, gap = 5_000n) => {
    t += gap;
    if (label) at[label] = t;
    const { data, wireLength } = buildFrame(f);
    packets.push({ timestampNs: t, data, originalLength: wireLength });
  };
  return { packets, at, send };
}

/**
 * One 8 KiB write (READ REQUEST, READ RESPONSE FIRST and LAST); between the
 * two READ RESPONSEs, an RDMA WRITE ONLY between two other hosts whose
 * (src, dst, dest QP) takes the QP map slot of the I/O's READ RESPONSE
 * message. The I/O's own last data packet (rr_last) is then not found.
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
  send({ src: host, dst: target, opcode: Opcode.READ_RESPONSE_LAST, destQp: tqp, psn: 501, aeth: { syndrome: 0, msn: 1 }, payloadLength: 4096 }, "rr_last", 2_000n);
  send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: hqp, psn: 501, payload: nvmeCqe(5, 1, 0, 0, 0) }, "rsp", 20_000n);
  const topology = { ports: [
    { port: 1, role: "compute" as const, prefixes: [`${ipv4Text(host)}/32`] },
    { port: 2, role: "compute" as const, prefixes: [`${ipv4Text(otherHost)}/32`] },
    { port: 33, role: "storage" as const, prefixes: [`${ipv4Text(target)}/32`] },
    { port: 34, role: "storage" as const, prefixes: [`${ipv4Text(other)}/32`] },
  ] };
  return { capture: { name: "sw", topology, packets }, host: ipv4Text(host), target: ipv4Text(target), hostQp: hqp, targetQp: tqp, at };
}

/**
 * Two 4 KiB reads of two hosts on one target whose queue pairings take the
 * same by-host-QP slot; the second pairing is learned between the first
 * I/O's data and its response, which the switch then cannot pair.
 */
export function pairingDisplaced(t0: bigint): Scenario & { second: { host: string; hostQp: number; targetQp: number } } {
  const host = ipv4("10.0.1.1");
  const host2 = ipv4("10.0.1.2");
  const target = ipv4("10.0.2.1");
  const a = { h: 0x101, t: 0x801 };
  const b = { h: qpForSlot(host2, target, slotOf(host, target, a.h, QUEUE_SLOTS), QUEUE_SLOTS), t: 0x802 };
  const { packets, at, send } = recorder(t0);
  send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: a.t, psn: 10, payload: nvmeSqe("read", 3, 1, 0n, 4096, 0xa3) }, "cmd");
  send({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: a.h, psn: 20, reth: { va: 0n, rkey: 0xa3, length: 4096 }, payloadLength: 4096 }, "data");
  send({ src: host2, dst: target, opcode: Opcode.SEND_ONLY, destQp: b.t, psn: 30, payload: nvmeSqe("read", 3, 1, 0n, 4096, 0xb3) }, "cmd2");
  send({ src: target, dst: host2, opcode: Opcode.WRITE_ONLY, destQp: b.h, psn: 40, reth: { va: 0n, rkey: 0xb3, length: 4096 }, payloadLength: 4096 }, "data2");
  send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: a.h, psn: 21, payload: nvmeCqe(3, 1, 0, 0x0004, 0) }, "rsp");
  send({ src: target, dst: host2, opcode: Opcode.SEND_ONLY, destQp: b.h, psn: 41, payload: nvmeCqe(3, 1, 0, 0, 0) }, "rsp2");
  const topology = { ports: [
    { port: 1, role: "compute" as const, prefixes: [`${ipv4Text(host)}/32`] },
    { port: 2, role: "compute" as const, prefixes: [`${ipv4Text(host2)}/32`] },
    { port: 33, role: "storage" as const, prefixes: [`${ipv4Text(target)}/32`] },
  ] };
  return {
    capture: { name: "sw", topology, packets }, host: ipv4Text(host), target: ipv4Text(target), hostQp: a.h, targetQp: a.t, at,
    second: { host: ipv4Text(host2), hostQp: b.h, targetQp: b.t },
  };
}
