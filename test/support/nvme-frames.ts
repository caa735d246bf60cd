// Frames of one NVMe read I/O on one queue (host 10.0.1.1 QP 0x101, target
// 10.0.2.1 QP 0x801), as the process tests feed a switch: the command, its
// data (which pairs the queue) and its response, each with its ingress port.
import { ipv4 } from "../../contract/src/ipv4.js";
import { buildFrame, nvmeCqe, nvmeSqe, Opcode } from "../../traffic/src/roce.js";

const host = ipv4("10.0.1.1");
const target = ipv4("10.0.2.1");

/** I/O number `i` (its command PSN); CIDs cycle through 32 tags; `rkeyBase` keeps two tests' keys apart. */
export function readIoFrames(i: number, rkeyBase = 0x10000): Array<{ port: number; hex: string }> {
  const cid = i % 32;
  const rkey = rkeyBase + i;
  return [
    { port: 1, hex: buildFrame({ src: host, dst: target, opcode: Opcode.SEND_ONLY, destQp: 0x801, psn: i, payload: nvmeSqe("read", cid, 1, 0n, 512, rkey) }).data.toString("hex") },
    { port: 33, hex: buildFrame({ src: target, dst: host, opcode: Opcode.WRITE_ONLY, destQp: 0x101, psn: 2 * i, reth: { va: 0n, rkey, length: 512 }, payloadLength: 512 }).data.toString("hex") },
    { port: 33, hex: buildFrame({ src: target, dst: host, opcode: Opcode.SEND_ONLY, destQp: 0x101, psn: 2 * i + 1, payload: nvmeCqe(cid, 1, 0, 0) }).data.toString("hex") },
  ];
}
