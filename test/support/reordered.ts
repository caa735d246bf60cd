// Hand-made RDMA WRITE messages reordered on the way (adaptive routing,
// packet spraying), with a go-back-N resend among them: the smallest cases of
// SPEC §4's seen-PSN window.
import { ipv4, ipv4Text } from "../../contract/src/ipv4.js";
import { buildFrame, nvmeCqe, nvmeSqe, Opcode, type RoceFrame } from "../../traffic/src/roce.js";
import type { SwitchCapture } from "../../traffic/src/types.js";
import { recorder } from "./collisions.js";

export interface ReorderedMessage {
  firstPsn: number;
  lastPsn: number;
  packets: number;
  retransmitted: number;
  fctNs: number;
}

/** One switch with the flow's two hosts on compute ports, and its packets. */
function flowCapture(src: number, dst: number, packets: SwitchCapture["packets"]): SwitchCapture {
  return { name: "sw", topology: { ports: [{ port: 1, role: "compute", prefixes: [`${ipv4Text(src)}/32`] }, { port: 2, role: "compute", prefixes: [`${ipv4Text(dst)}/32`] }] }, packets };
}

/**
 * One flow, three messages of 8, 4 and 6 packets of 1 KiB. The first has
 * packets displaced by one and two places (no loss); the second has one
 * packet lost after the switch and resent (go-back-N: the resent PSNs were
 * seen already) among displaced ones; the third has packets displaced by
 * two places.
 */
export function reorderedFlow(t0: bigint): { capture: SwitchCapture; src: string; dst: string; destQp: number; messages: ReorderedMessage[] } {
  const src = ipv4("10.0.1.1");
  const dst = ipv4("10.0.1.2");
  const destQp = 0x2c1;
  let t = t0;
  const packets: SwitchCapture["packets"] = [];
  const at = new Map<number, bigint>();
  const send = (psn: number, opcode: number, length: number) => {
    t += 1_000n;
    if (!at.has(psn)) at.set(psn, t);
    const { data, wireLength } = buildFrame({ src, dst, opcode, destQp, psn, ...(opcode === Opcode.WRITE_FIRST ? { reth: { va: 0n, rkey: 0x55, length } } : {}), payloadLength: 1024 });
    packets.push({ timestampNs: t, data, originalLength: wireLength });
  };
  const op = (psn: number, first: number, last: number) => (psn === first ? Opcode.WRITE_FIRST : psn === last ? Opcode.WRITE_LAST : Opcode.WRITE_MIDDLE);
  const message = (first: number, count: number, order: number[]) => {
    for (const i of order) send(first + i, op(first + i, first, first + count - 1), count * 1024);
  };
  message(100, 8, [0, 2, 1, 3, 5, 6, 4, 7]);
  message(108, 4, [0, 2, 1, 2, 3]);          // 110 lost after the switch and resent
  message(112, 6, [0, 3, 1, 4, 2, 5]);       // displaced by two places
  const fct = (first: number, last: number) => Number(at.get(last)! - at.get(first)!);
  return {
    capture: flowCapture(src, dst, packets),
    src: ipv4Text(src), dst: ipv4Text(dst), destQp,
    messages: [
      { firstPsn: 100, lastPsn: 107, packets: 8, retransmitted: 0, fctNs: fct(100, 107) },
      { firstPsn: 108, lastPsn: 111, packets: 5, retransmitted: 1, fctNs: fct(108, 111) },
      { firstPsn: 112, lastPsn: 117, packets: 6, retransmitted: 0, fctNs: fct(112, 117) },
    ],
  };
}

/**
 * One flow whose messages each have one packet displaced far (a long
 * message on a sprayed path at a small MTU): PSN first+1 seen after 254,
 * then after 255 later packets of its message, the most the seen-PSN window
 * (256 PSNs) tells from a resend. No loss: nothing is retransmitted.
 */
export function farDisplacedFlow(t0: bigint): { capture: SwitchCapture; messages: ReorderedMessage[] } {
  const src = ipv4("10.0.1.1");
  const dst = ipv4("10.0.1.2");
  const destQp = 0x2c2;
  let t = t0;
  const packets: SwitchCapture["packets"] = [];
  const at = new Map<number, bigint>();
  const messages: ReorderedMessage[] = [];
  let first = 0xfffe00; // across the PSN wrap
  for (const displaced of [254, 255]) {
    const count = 300;
    const order = [0, ...Array.from({ length: displaced }, (_, i) => i + 2), 1, ...Array.from({ length: count - displaced - 2 }, (_, i) => i + displaced + 2)];
    for (const i of order) {
      const psn = (first + i) & 0xffffff;
      t += 100n;
      at.set(psn, t);
      const opcode = i === 0 ? Opcode.WRITE_FIRST : i === count - 1 ? Opcode.WRITE_LAST : Opcode.WRITE_MIDDLE;
      const { data, wireLength } = buildFrame({ src, dst, opcode, destQp, psn, ...(i === 0 ? { reth: { va: 0n, rkey: 0x56, length: count * 1024 } } : {}), payloadLength: 1024 });
      packets.push({ timestampNs: t, data, originalLength: wireLength });
    }
    const last = (first + count - 1) & 0xffffff;
    messages.push({ firstPsn: first, lastPsn: last, packets: count, retransmitted: 0, fctNs: Number(at.get(last)! - at.get(first)!) });
    first = (first + count) & 0xffffff;
  }
  return {
    capture: flowCapture(src, dst, packets),
    messages,
  };
}

/**
 * One flow whose messages' FIRST packets are overtaken (SPEC §4: packets of a
 * message seen before its first-PSN packet still belong to it), then late
 * packets after the flow's last message:
 *  - 200..205: FIRST overtaken by one packet;
 *  - 206..213: FIRST overtaken by three, one of them itself displaced;
 *  - 214..221: 215 lost after the switch and resent go-back-N (215, 216 again)
 *    while FIRST is still on a slow path: the resends before FIRST are the
 *    message's, retransmitted;
 *  - 222..225, the flow's last message: 224 is seen after LAST (flow figures
 *    only); `lateAt` later (another interval), LAST is resent once more
 *    (retransmitted, flow figures only).
 * `intervals`: what the flow's interval records must say, oldest first.
 */
export function overtakenFirstFlow(t0: bigint, lateAt: bigint): {
  capture: SwitchCapture; messages: ReorderedMessage[]; lateNs: bigint;
  intervals: Array<{ messages: number; packets: number; retransmitted: number }>;
} {
  const src = ipv4("10.0.1.3");
  const dst = ipv4("10.0.1.4");
  const destQp = 0x2c5;
  let t = t0;
  const packets: SwitchCapture["packets"] = [];
  const at = new Map<number, bigint>();
  const send = (psn: number, opcode: number, length: number, gap = 1_000n) => {
    t += gap;
    if (!at.has(psn)) at.set(psn, t);
    const { data, wireLength } = buildFrame({ src, dst, opcode, destQp, psn, ...(opcode === Opcode.WRITE_FIRST ? { reth: { va: 0n, rkey: 0x56, length } } : {}), payloadLength: 1024 });
    packets.push({ timestampNs: t, data, originalLength: wireLength });
  };
  const op = (psn: number, first: number, last: number) => (psn === first ? Opcode.WRITE_FIRST : psn === last ? Opcode.WRITE_LAST : Opcode.WRITE_MIDDLE);
  const message = (first: number, count: number, order: number[]) => {
    for (const i of order) send(first + i, op(first + i, first, first + count - 1), count * 1024);
  };
  message(200, 6, [1, 0, 2, 3, 4, 5]);
  message(206, 8, [2, 3, 1, 0, 4, 5, 6, 7]);
  message(214, 8, [1, 2, 1, 0, 2, 3, 4, 5, 6, 7]);
  message(222, 4, [0, 1, 3, 2]);
  send(225, Opcode.WRITE_LAST, 0, lateAt);
  const lateNs = t;
  const fct = (first: number, last: number) => Number(at.get(last)! - at.get(first)!);
  return {
    capture: flowCapture(src, dst, packets),
    messages: [
      { firstPsn: 200, lastPsn: 205, packets: 6, retransmitted: 0, fctNs: fct(200, 205) },
      { firstPsn: 206, lastPsn: 213, packets: 8, retransmitted: 0, fctNs: fct(206, 213) },
      { firstPsn: 214, lastPsn: 221, packets: 10, retransmitted: 2, fctNs: fct(214, 221) },
      { firstPsn: 222, lastPsn: 225, packets: 3, retransmitted: 0, fctNs: fct(222, 225) },
    ],
    lateNs,
    intervals: [{ messages: 4, packets: 28, retransmitted: 2 }, { messages: 0, packets: 1, retransmitted: 1 }],
  };
}

/**
 * A message whose LAST never reaches the switch (PSNs 300–302 seen, 303
 * not), then the flow's next message in order (304–307): the first has no
 * record, and its three packets count for the flow, at once, as straddled.
 */
export function unendedMessageFlow(t0: bigint): { capture: SwitchCapture; next: ReorderedMessage } {
  const src = ipv4("10.0.1.5");
  const dst = ipv4("10.0.1.6");
  const destQp = 0x2c9;
  let t = t0;
  const packets: SwitchCapture["packets"] = [];
  const send = (psn: number, opcode: number, length: number) => {
    t += 1_000n;
    const { data, wireLength } = buildFrame({ src, dst, opcode, destQp, psn, ...(opcode === Opcode.WRITE_FIRST ? { reth: { va: 0n, rkey: 0x57, length } } : {}), payloadLength: 1024 });
    packets.push({ timestampNs: t, data, originalLength: wireLength });
    return t;
  };
  send(300, Opcode.WRITE_FIRST, 4096);
  send(301, Opcode.WRITE_MIDDLE, 0);
  send(302, Opcode.WRITE_MIDDLE, 0);
  const first = send(304, Opcode.WRITE_FIRST, 4096);
  send(305, Opcode.WRITE_MIDDLE, 0);
  send(306, Opcode.WRITE_MIDDLE, 0);
  const last = send(307, Opcode.WRITE_LAST, 0);
  return {
    capture: flowCapture(src, dst, packets),
    next: { firstPsn: 304, lastPsn: 307, packets: 4, retransmitted: 0, fctNs: Number(last - first) },
  };
}

/**
 * Four NVMe I/Os of 4 KiB on one queue, each one RDMA operation of four
 * 1 KiB packets (path MTU 1024): RDMA WRITEs for reads, READ RESPONSEs for
 * writes, reordered on the way as sprayed paths reorder them:
 *  - I/O 0: its LAST overtakes both MIDDLEs; later resent (go-back-N);
 *  - I/Os 1 and 2: 2's FIRST overtakes 1's LAST (the QP's message before);
 *  - I/O 3: its LAST and a MIDDLE overtake its FIRST (the LAST held);
 *  - I/O 1's message crosses the PSN wrap.
 * `at` holds each I/O's command, first data packet (d_first, or the write's
 * READ REQUEST: rreq), first sighting of its last PSN (last) and response;
 * `index` the capture's index of its data FIRST and of that LAST sighting.
 */
export function reorderedNvmeData(t0: bigint, op: "read" | "write"): {
  capture: SwitchCapture; host: string; target: string; targetQp: number;
  at: Array<{ cmd: bigint; first: bigint; last: bigint; rsp: bigint }>;
  index: Array<{ first: number; last: number }>;
} {
  // A queue of its own for each op: a switch that ran one keeps its state for the other.
  const host = ipv4(op === "read" ? "10.0.1.1" : "10.0.1.2");
  const target = ipv4(op === "read" ? "10.0.2.1" : "10.0.2.2");
  const tqp = op === "read" ? 0x801 : 0x802;
  const hqp = op === "read" ? 0x101 : 0x102;
  const { packets, send: sendAfter } = recorder(t0);
  const at = [0, 1, 2, 3].map(() => ({ cmd: 0n, first: 0n, last: 0n, rsp: 0n }));
  const index = [0, 1, 2, 3].map(() => ({ first: -1, last: -1 }));
  const send = (f: RoceFrame, gap = 700n): bigint => sendAfter(f, undefined, gap);
  // I/O 1's message crosses the PSN wrap (0xfffffe, 0xffffff, 0, 1).
  const psn0 = (k: number) => (0xfffffa + 4 * k) & 0xffffff;
  const rkey = (k: number) => 0x7000 + k;
  const va = (k: number) => 0x10_0000n * BigInt(k + 1);
  for (let k = 0; k < 4; k++) at[k]!.cmd = send({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: tqp, psn: 100 + k, payload: nvmeSqe(op, k + 1, 1, va(k), 4096, rkey(k)) });
  if (op === "write") {
    for (let k = 0; k < 4; k++) at[k]!.first = send({ src: target, dst: host, opcode: Opcode.READ_REQUEST, destQp: hqp, psn: psn0(k), reth: { va: va(k), rkey: rkey(k), length: 4096 } });
  }
  // Packet i (0-3) of I/O k's message.
  const data = (k: number, i: number): bigint => {
    const psn = (psn0(k) + i) & 0xffffff;
    if (op === "read") {
      const opcode = [Opcode.WRITE_FIRST, Opcode.WRITE_MIDDLE, Opcode.WRITE_MIDDLE, Opcode.WRITE_LAST][i]!;
      const sent = send({ src: target, dst: host, opcode, destQp: hqp, psn, payloadLength: 1024, ...(i === 0 ? { reth: { va: va(k), rkey: rkey(k), length: 4096 } } : {}) });
      if (i === 0) at[k]!.first = sent;
      return sent;
    }
    const opcode = [Opcode.READ_RESPONSE_FIRST, Opcode.READ_RESPONSE_MIDDLE, Opcode.READ_RESPONSE_MIDDLE, Opcode.READ_RESPONSE_LAST][i]!;
    return send({ src: host, dst: target, opcode, destQp: tqp, psn, payloadLength: 1024, ...(i === 0 || i === 3 ? { aeth: { syndrome: 0, msn: k + 1 } } : {}) });
  };
  const order: Array<[number, number]> = [
    [0, 0], [0, 3], [0, 1], [0, 2],
    [1, 0], [1, 1], [1, 2], [2, 0], [1, 3], [2, 1], [2, 2], [2, 3],
    [3, 3], [3, 1], [3, 0], [3, 2],
  ];
  for (const [k, i] of order) {
    const sent = data(k, i);
    if (i === 0) index[k]!.first = packets.length - 1;
    if (i === 3 && at[k]!.last === 0n) [at[k]!.last, index[k]!.last] = [sent, packets.length - 1];
  }
  data(0, 3); // I/O 0's LAST resent: its first sighting stays its end
  for (let k = 0; k < 4; k++) at[k]!.rsp = send({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: hqp, psn: 2000 + k, payload: nvmeCqe(k + 1, 1, 0, 0, 0) }, 10_700n);
  const topology = { ports: [
    { port: 1, role: "compute" as const, prefixes: [`${ipv4Text(host)}/32`] },
    { port: 33, role: "storage" as const, prefixes: [`${ipv4Text(target)}/32`] },
  ] };
  return { capture: { name: "sw", topology, packets }, host: ipv4Text(host), target: ipv4Text(target), targetQp: tqp, at, index };
}
