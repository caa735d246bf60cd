// Hand-made RDMA WRITE messages reordered on the way (adaptive routing,
// packet spraying), with a go-back-N resend among them: the smallest cases of
// SPEC §4's seen-PSN window.
import { ipv4, ipv4Text } from "../../contract/src/ipv4.js";
import { buildFrame, Opcode } from "../../traffic/src/roce.js";
import type { SwitchCapture } from "../../traffic/src/types.js";

export interface ReorderedMessage {
  firstPsn: number;
  lastPsn: number;
  packets: number;
  retransmitted: number;
  fctNs: number;
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
    capture: { name: "sw", topology: { ports: [{ port: 1, role: "compute", prefixes: [`${ipv4Text(src)}/32`] }, { port: 2, role: "compute", prefixes: [`${ipv4Text(dst)}/32`] }] }, packets },
    src: ipv4Text(src), dst: ipv4Text(dst), destQp,
    messages: [
      { firstPsn: 100, lastPsn: 107, packets: 8, retransmitted: 0, fctNs: fct(100, 107) },
      { firstPsn: 108, lastPsn: 111, packets: 5, retransmitted: 1, fctNs: fct(108, 111) },
      { firstPsn: 112, lastPsn: 117, packets: 6, retransmitted: 0, fctNs: fct(112, 117) },
    ],
  };
}
