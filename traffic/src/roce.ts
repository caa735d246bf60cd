// Builds RoCEv2 frames (SPEC §2): Ethernet / IPv4 / UDP 4791 / BTH and its
// extension headers / payload / ICRC, and NVMe command and response capsules.
import { crc32 } from "node:zlib";

export const ROCEV2_PORT = 4791;

export const Opcode = {
  SEND_FIRST: 0x00,
  SEND_MIDDLE: 0x01,
  SEND_LAST: 0x02,
  SEND_LAST_IMM: 0x03,
  SEND_ONLY: 0x04,
  SEND_ONLY_IMM: 0x05,
  WRITE_FIRST: 0x06,
  WRITE_MIDDLE: 0x07,
  WRITE_LAST: 0x08,
  WRITE_LAST_IMM: 0x09,
  WRITE_ONLY: 0x0a,
  WRITE_ONLY_IMM: 0x0b,
  READ_REQUEST: 0x0c,
  READ_RESPONSE_FIRST: 0x0d,
  READ_RESPONSE_MIDDLE: 0x0e,
  READ_RESPONSE_LAST: 0x0f,
  READ_RESPONSE_ONLY: 0x10,
  ACK: 0x11,
  SEND_LAST_INV: 0x16,
  SEND_ONLY_INV: 0x17,
  CNP: 0x81,
} as const;

export interface RoceFrame {
  src: number; // IPv4 as uint32
  dst: number;
  srcPort?: number; // UDP source port (entropy)
  ecn?: number; // 0..3
  opcode: number;
  destQp: number;
  psn: number;
  ackReq?: boolean;
  reth?: { va: bigint; rkey: number; length: number };
  aeth?: { syndrome: number; msn: number };
  imm?: number;
  ieth?: number;
  payload?: Uint8Array;
  /** payload bytes when `payload` is omitted (zeros) */
  payloadLength?: number;
  vlan?: number;
}

export function ipv4(text: string): number {
  const parts = text.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new Error(`not an IPv4 address: '${text}'`);
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

export function ipv4Text(v: number): string {
  return `${(v >>> 24) & 255}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
}

function macFor(ip: number): Buffer {
  const m = Buffer.alloc(6);
  m[0] = 0x02;
  m.writeUInt32BE(ip >>> 0, 2);
  return m;
}

function ipChecksum(h: Buffer): number {
  let sum = 0;
  for (let i = 0; i < h.length; i += 2) sum += h.readUInt16BE(i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/**
 * A frame, ICRC included. With `snaplen`, only the first `snaplen` bytes are
 * materialised (as a capture with that snap length would hold them); the
 * headers still describe the whole packet, whose length is `wireLength`.
 */
export function buildFrame(f: RoceFrame, snaplen = Infinity): { data: Buffer; wireLength: number } {
  const ext: Buffer[] = [];
  if (f.reth) {
    const r = Buffer.alloc(16);
    r.writeBigUInt64BE(f.reth.va, 0);
    r.writeUInt32BE(f.reth.rkey >>> 0, 8);
    r.writeUInt32BE(f.reth.length >>> 0, 12);
    ext.push(r);
  }
  if (f.aeth) {
    const a = Buffer.alloc(4);
    a.writeUInt32BE(((f.aeth.syndrome & 0xff) << 24 | (f.aeth.msn & 0xffffff)) >>> 0, 0);
    ext.push(a);
  }
  if (f.imm !== undefined) {
    const i = Buffer.alloc(4);
    i.writeUInt32BE(f.imm >>> 0, 0);
    ext.push(i);
  }
  if (f.ieth !== undefined) {
    const i = Buffer.alloc(4);
    i.writeUInt32BE(f.ieth >>> 0, 0);
    ext.push(i);
  }
  const payload = f.payload ?? new Uint8Array(0);
  const payloadLength = f.payload ? f.payload.length : f.payloadLength ?? 0;
  const pad = (4 - (payloadLength % 4)) % 4;
  const bth = Buffer.alloc(12);
  bth[0] = f.opcode;
  bth[1] = (pad & 3) << 4; // SE 0, M 0, PadCnt, TVer 0
  bth.writeUInt16BE(0xffff, 2); // default P_Key
  bth.writeUInt32BE(f.destQp & 0xffffff, 4);
  bth.writeUInt32BE(((f.ackReq ? 1 : 0) << 31 | (f.psn & 0xffffff)) >>> 0, 8);
  const extLen = ext.reduce((a, b) => a + b.length, 0);
  const udpLen = 8 + 12 + extLen + payloadLength + pad + 4;
  const l2 = f.vlan !== undefined ? 18 : 14;
  const wireLength = l2 + 20 + udpLen;
  const headLength = l2 + 20 + 8 + 12 + extLen;
  const frame = Buffer.alloc(Math.max(headLength, Math.min(wireLength, snaplen)));
  macFor(f.dst).copy(frame, 0);
  macFor(f.src).copy(frame, 6);
  let o = 12;
  if (f.vlan !== undefined) {
    frame.writeUInt16BE(0x8100, 12);
    frame.writeUInt16BE(f.vlan & 0xfff, 14);
    o = 16;
  }
  frame.writeUInt16BE(0x0800, o);
  const ip = frame.subarray(l2, l2 + 20);
  ip[0] = 0x45;
  ip[1] = (26 << 2) | ((f.ecn ?? 0b10) & 3); // DSCP 26 (RoCE), ECT(0) by default
  ip.writeUInt16BE(20 + udpLen, 2);
  ip.writeUInt16BE(0x4000, 6); // DF
  ip[8] = 64;
  ip[9] = 17;
  ip.writeUInt32BE(f.src >>> 0, 12);
  ip.writeUInt32BE(f.dst >>> 0, 16);
  ip.writeUInt16BE(ipChecksum(ip), 10);
  const udp = l2 + 20;
  frame.writeUInt16BE(f.srcPort ?? 49152 + (f.destQp & 0x3fff), udp);
  frame.writeUInt16BE(ROCEV2_PORT, udp + 2);
  frame.writeUInt16BE(udpLen, udp + 4);
  let p = udp + 8;
  bth.copy(frame, p);
  p += 12;
  for (const e of ext) {
    e.copy(frame, p);
    p += e.length;
  }
  frame.set(payload.subarray(0, Math.max(0, frame.length - p)), p);
  p += payloadLength + pad;
  // ICRC over the transport headers and payload (variant fields not masked:
  // a stand-in that keeps frames well-formed; switches never check it).
  if (p + 4 <= frame.length) frame.writeUInt32LE(crc32(frame.subarray(udp + 8, p)), p);
  return { data: frame, wireLength };
}

/** 64-byte NVMe SQE with a keyed SGL data block descriptor (little-endian fields). */
export function nvmeSqe(op: "read" | "write", cid: number, nsid: number, sglAddr: bigint, sglLength: number, sglKey: number, slba = 0n): Buffer {
  const s = Buffer.alloc(64);
  s[0] = op === "write" ? 0x01 : 0x02;
  s[1] = 0x40; // PSDT: SGL for data transfer
  s.writeUInt16LE(cid & 0xffff, 2);
  s.writeUInt32LE(nsid >>> 0, 4);
  s.writeBigUInt64LE(sglAddr, 24);
  s.writeUIntLE(sglLength & 0xffffff, 32, 3);
  s.writeUInt32LE(sglKey >>> 0, 35);
  s[39] = 0x40; // SGL type 4 (keyed data block), subtype 0
  s.writeBigUInt64LE(slba, 40);
  s.writeUInt16LE(Math.max(0, Math.ceil(sglLength / 512) - 1) & 0xffff, 48);
  return s;
}

/** 16-byte NVMe CQE; `status` is the Status Field (SCT/SC), phase bit 1. */
export function nvmeCqe(cid: number, sqid: number, sqhd: number, status: number): Buffer {
  const c = Buffer.alloc(16);
  c.writeUInt16LE(sqhd & 0xffff, 8);
  c.writeUInt16LE(sqid & 0xffff, 10);
  c.writeUInt16LE(cid & 0xffff, 12);
  c.writeUInt16LE(((status & 0x7fff) << 1) | 1, 14);
  return c;
}
