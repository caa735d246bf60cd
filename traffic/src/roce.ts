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
  UD_SEND_ONLY: 0x64,
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
  /** Datagram Extended Transport Header (UD): Q_Key and source QP */
  deth?: { qkey: number; srcQp: number };
  payload?: Uint8Array;
  /** payload bytes when `payload` is omitted (zeros) */
  payloadLength?: number;
  vlan?: number;
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
  if (f.deth) {
    const d = Buffer.alloc(8);
    d.writeUInt32BE(f.deth.qkey >>> 0, 0);
    d.writeUInt32BE(f.deth.srcQp & 0xffffff, 4);
    ext.push(d);
  }
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

/** How a command describes its data (SPEC §2-§3). */
export type SglKind =
  /** keyed SGL data block (type 4, subtype 0): the target moves the data by RDMA */
  | "keyed"
  /** keyed, with remote invalidation (subtype 0xF): the target answers with SEND with Invalidate */
  | "keyed-invalidate"
  /** data block with the Offset subtype (type 0, subtype 1): the data follows the SQE in the capsule */
  | "in-capsule";

/** 64-byte NVMe SQE (little-endian fields). `opcode`: 0x01 write, 0x02 read, others (0x7F fabrics, 0x18 keep alive). */
export function nvmeSqe(op: "read" | "write" | number, cid: number, nsid: number, sglAddr: bigint, sglLength: number, sglKey: number, slba = 0n, sgl: SglKind = "keyed"): Buffer {
  const s = Buffer.alloc(64);
  s[0] = op === "write" ? 0x01 : op === "read" ? 0x02 : op & 0xff;
  s[1] = 0x40; // PSDT: SGL for data transfer
  s.writeUInt16LE(cid & 0xffff, 2);
  s.writeUInt32LE(nsid >>> 0, 4);
  s.writeBigUInt64LE(sglAddr, 24);
  if (sgl === "in-capsule") {
    s.writeUInt32LE(sglLength >>> 0, 32); // 4-byte length, 3 reserved bytes
    s[39] = 0x01; // SGL type 0 (data block), subtype 1 (offset)
  } else {
    s.writeUIntLE(sglLength & 0xffffff, 32, 3);
    s.writeUInt32LE(sglKey >>> 0, 35);
    s[39] = sgl === "keyed-invalidate" ? 0x4f : 0x40; // SGL type 4 (keyed data block)
  }
  if (typeof op === "string") {
    s.writeBigUInt64LE(slba, 40);
    s.writeUInt16LE(Math.max(0, Math.ceil(sglLength / 512) - 1) & 0xffff, 48);
  }
  return s;
}

/**
 * 16-byte NVMe CQE. `status` is DW3 bits 31:16 with the phase bit clear
 * (bit 0 here): SC in bits 8:1, SCT 11:9, CRD 13:12, More 14, DNR 15; 0 is
 * success. `phase` is the phase tag the host expects.
 */
export function nvmeCqe(cid: number, sqid: number, sqhd: number, status: number, phase = 1): Buffer {
  const c = Buffer.alloc(16);
  c.writeUInt16LE(sqhd & 0xffff, 8);
  c.writeUInt16LE(sqid & 0xffff, 10);
  c.writeUInt16LE(cid & 0xffff, 12);
  c.writeUInt16LE((status & 0xfffe) | (phase & 1), 14);
  return c;
}

/** NVMe status values as nvmeCqe takes them (phase bit clear). */
export const NvmeStatus = {
  SUCCESS: 0x0000,
  /** generic: Namespace Not Ready (SCT 0, SC 0x82), with DNR clear */
  NAMESPACE_NOT_READY: 0x0104,
  /** media: Write Fault (SCT 2, SC 0x80) */
  WRITE_FAULT: 0x0500,
  /** media: Unrecovered Read Error (SCT 2, SC 0x81) */
  UNRECOVERED_READ_ERROR: 0x0502,
  /** path: Asymmetric Access Transition (SCT 3, SC 0x03) */
  ANA_TRANSITION: 0x0606,
} as const;

/** Attribute ids of the RDMA CM MADs this project reads. */
export const CmAttr = { REQ: 0x0010, REP: 0x0013, RTU: 0x0014 } as const;

/**
 * An RDMA CM MAD (256 bytes) as RoCEv2 carries it: the payload of a UD SEND
 * ONLY to QP 1. REQ names the active side's QP, REP the passive side's and
 * answers the REQ's communication id.
 */
export function cmMad(attr: number, tid: bigint, f: { localCommId: number; remoteCommId?: number; localQpn: number; startingPsn?: number }): Buffer {
  const m = Buffer.alloc(256);
  m[0] = 1; // base version
  m[1] = 0x07; // management class: CM
  m[2] = 2; // class version
  m[3] = 0x03; // method: Send
  m.writeBigUInt64BE(tid, 8);
  m.writeUInt16BE(attr, 16);
  const d = 24;
  m.writeUInt32BE(f.localCommId >>> 0, d);
  if (attr === CmAttr.REQ) {
    m.writeBigUInt64BE(0x0000000001060000n + 4420n, d + 8); // service id: RDMA_PS_TCP, port 4420 (NVMe-oF)
    m.writeUInt32BE(((f.localQpn & 0xffffff) << 8) >>> 0, d + 32);
    m.writeUInt32BE(((f.startingPsn ?? 0) & 0xffffff) << 8 >>> 0, d + 44);
  } else {
    m.writeUInt32BE((f.remoteCommId ?? 0) >>> 0, d + 4);
    if (attr === CmAttr.REP) {
      m.writeUInt32BE(((f.localQpn & 0xffffff) << 8) >>> 0, d + 12);
      m.writeUInt32BE(((f.startingPsn ?? 0) & 0xffffff) << 8 >>> 0, d + 20);
    }
  }
  return m;
}
