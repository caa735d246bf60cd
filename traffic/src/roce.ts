// Builds RoCEv2 frames (SPEC §2): Ethernet (802.1Q optional) / IPv4 or IPv6 /
// UDP 4791 / BTH and its extension headers / payload / ICRC, and NVMe command
// and response capsules.
import { crc32 } from "node:zlib";
import { endpointKey, gidOf, type IpAddress } from "./ip.js";

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
  /** an IPv4 address (number) or an IPv6 address (bigint); both ends of one frame are of one family */
  src: IpAddress;
  dst: IpAddress;
  srcPort?: number; // UDP source port (entropy)
  /** IPv6 flow label (20 bits; 0 when omitted) */
  flowLabel?: number;
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

function macFor(ip: IpAddress): Buffer {
  const m = Buffer.alloc(6);
  m[0] = 0x02;
  m.writeUInt32BE(endpointKey(ip), 2);
  return m;
}

const ICRC_LRH = Buffer.alloc(8, 0xff);

/**
 * The RoCEv2 ICRC (IBTA Annex A17): CRC-32 over 8 bytes of 1s standing for
 * the LRH, the IP header with its variant fields set to 1s (IPv4: TOS, TTL,
 * header checksum; IPv6: traffic class, flow label, hop limit), the UDP
 * header with its checksum set to 1s, the BTH with its reserved byte
 * (resv8a) set to 1s, and everything after the BTH up to the ICRC. `ip` is
 * the frame from the IP header on, `end` where the ICRC goes. Sent least
 * significant byte first, as a ConnectX NIC sends it.
 */
export function roceIcrc(ip: Buffer, end: number): number {
  const v6 = ip[0]! >> 4 === 6;
  const ipLen = v6 ? 40 : 20;
  const head = Buffer.from(ip.subarray(0, ipLen + 8 + 12));
  if (v6) {
    head.writeUInt32BE(0x6fffffff, 0); // version kept; traffic class and flow label masked
    head[7] = 0xff; // hop limit
  } else {
    head[1] = 0xff; // TOS
    head[8] = 0xff; // TTL
    head.writeUInt16BE(0xffff, 10); // header checksum
  }
  head.writeUInt16BE(0xffff, ipLen + 6); // UDP checksum
  head[ipLen + 8 + 4] = 0xff; // BTH resv8a
  return crc32(ip.subarray(ipLen + 8 + 12, end), crc32(head, crc32(ICRC_LRH)));
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
  const v6 = typeof f.src === "bigint";
  if (v6 !== (typeof f.dst === "bigint")) throw new TypeError("a frame's source and destination must be of one address family");
  const ipLen = v6 ? 40 : 20;
  const wireLength = l2 + ipLen + udpLen;
  const headLength = l2 + ipLen + 8 + 12 + extLen;
  const frame = Buffer.alloc(Math.max(headLength, Math.min(wireLength, snaplen)));
  macFor(f.dst).copy(frame, 0);
  macFor(f.src).copy(frame, 6);
  let o = 12;
  if (f.vlan !== undefined) {
    frame.writeUInt16BE(0x8100, 12);
    frame.writeUInt16BE(f.vlan & 0xfff, 14);
    o = 16;
  }
  frame.writeUInt16BE(v6 ? 0x86dd : 0x0800, o);
  const ip = frame.subarray(l2, l2 + ipLen);
  const tos = (26 << 2) | ((f.ecn ?? 0b10) & 3); // DSCP 26 (RoCE), ECT(0) by default
  if (v6) {
    // Version 6, traffic class as the IPv4 TOS, flow label; payload length; next header UDP; hop limit 64.
    ip.writeUInt32BE(((6 << 28) | (tos << 20) | ((f.flowLabel ?? 0) & 0xfffff)) >>> 0, 0);
    ip.writeUInt16BE(udpLen, 4);
    ip[6] = 17;
    ip[7] = 64;
    gidOf(f.src).copy(ip, 8);
    gidOf(f.dst).copy(ip, 24);
  } else {
    ip[0] = 0x45;
    ip[1] = tos;
    ip.writeUInt16BE(20 + udpLen, 2);
    ip.writeUInt16BE(0x4000, 6); // DF
    ip[8] = 64;
    ip[9] = 17;
    ip.writeUInt32BE((f.src as number) >>> 0, 12);
    ip.writeUInt32BE((f.dst as number) >>> 0, 16);
    ip.writeUInt16BE(ipChecksum(ip), 10);
  }
  // UDP checksum 0 in either family, as RoCEv2 NICs send it (the ICRC covers the packet; RFC 6935 for IPv6).
  const udp = l2 + ipLen;
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
  // The ICRC, where the capture holds the whole packet.
  if (p + 4 <= frame.length) frame.writeUInt32LE(roceIcrc(frame.subarray(l2), p - l2), p);
  return { data: frame, wireLength };
}

/** A RoCEv2 frame's headers as read back (parseRoce). */
export interface ParsedRoce {
  vlan: number | undefined;
  family: 4 | 6;
  src: IpAddress;
  dst: IpAddress;
  /** IPv4 TOS or IPv6 traffic class: DSCP << 2 | ECN */
  trafficClass: number;
  /** IPv6 only (0 for IPv4) */
  flowLabel: number;
  /** IPv4 TTL or IPv6 hop limit */
  hopLimit: number;
  /** offset of the IP header, of the BTH, and of the ICRC (where the frame holds the whole packet, else undefined) */
  ipOffset: number;
  bthOffset: number;
  icrcOffset: number | undefined;
  udpSrcPort: number;
  opcode: number;
  destQp: number;
  psn: number;
}

/** The headers of an Ethernet (802.1Q optional) / IPv4 or IPv6 / UDP 4791 frame; undefined for any other frame. */
export function parseRoce(d: Buffer): ParsedRoce | undefined {
  let o = 12;
  let vlan: number | undefined;
  if (d.length >= 18 && d.readUInt16BE(12) === 0x8100) {
    vlan = d.readUInt16BE(14) & 0xfff;
    o = 16;
  }
  if (d.length < o + 2) return undefined;
  const type = d.readUInt16BE(o);
  const ip = o + 2;
  let udp: number;
  let f: Pick<ParsedRoce, "family" | "src" | "dst" | "trafficClass" | "flowLabel" | "hopLimit">;
  let end: number;
  if (type === 0x0800 && d.length >= ip + 20 && d[ip + 9] === 17) {
    udp = ip + (d[ip]! & 0xf) * 4;
    f = { family: 4, src: d.readUInt32BE(ip + 12), dst: d.readUInt32BE(ip + 16), trafficClass: d[ip + 1]!, flowLabel: 0, hopLimit: d[ip + 8]! };
    end = ip + d.readUInt16BE(ip + 2);
  } else if (type === 0x86dd && d.length >= ip + 40 && d[ip + 6] === 17) {
    udp = ip + 40;
    const w = d.readUInt32BE(ip);
    const addr = (at: number) => (d.readBigUInt64BE(at) << 64n) | d.readBigUInt64BE(at + 8);
    f = { family: 6, src: addr(ip + 8), dst: addr(ip + 24), trafficClass: (w >>> 20) & 0xff, flowLabel: w & 0xfffff, hopLimit: d[ip + 7]! };
    end = udp + d.readUInt16BE(ip + 4);
  } else return undefined;
  if (d.length < udp + 8 + 12 || d.readUInt16BE(udp + 2) !== ROCEV2_PORT) return undefined;
  const bth = udp + 8;
  return {
    vlan, ...f, ipOffset: ip, bthOffset: bth, icrcOffset: end <= d.length ? end - 4 : undefined, udpSrcPort: d.readUInt16BE(udp),
    opcode: d[bth]!, destQp: d.readUInt32BE(bth + 4) & 0xffffff, psn: d.readUInt32BE(bth + 8) & 0xffffff,
  };
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
 * success. `phase` is the phase tag (a fabrics target such as Linux's nvmet
 * sends 0); `dw0` the command-specific result (a Connect's controller id).
 */
export function nvmeCqe(cid: number, sqid: number, sqhd: number, status: number, phase = 1, dw0 = 0): Buffer {
  const c = Buffer.alloc(16);
  c.writeUInt32LE(dw0 >>> 0, 0);
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

/** Attribute ids of the RDMA CM MADs (IBTA CM class 0x07). */
export const CmAttr = { REQ: 0x0010, MRA: 0x0011, REJ: 0x0012, REP: 0x0013, RTU: 0x0014, DREQ: 0x0015, DREP: 0x0016 } as const;

/** The IB service id rdma_cm gives a TCP port space listener (RDMA_PS_TCP), here NVMe-oF's port 4420. */
export const NVMF_SERVICE_ID = 0x0000000001060000n + 4420n;

/** The node GUID of a RoCE HCA whose MAC this project derives from `ip` (EUI-64, U/L bit flipped). */
export function hcaGuid(ip: IpAddress): bigint {
  const mac = macFor(ip);
  const g = Buffer.from([mac[0]! ^ 0x02, mac[1]!, mac[2]!, 0xff, 0xfe, mac[3]!, mac[4]!, mac[5]!]);
  return g.readBigUInt64BE(0);
}

/** A RoCEv2 GID for an IPv4 address: its IPv4-mapped IPv6 form. */
export function ipv4Gid(ip: number): Buffer {
  return gidOf(ip);
}

/** NVMe-oF's TCP port, the destination port of rdma_cm's connection requests. */
export const NVMF_PORT = 4420;

/**
 * The flow label rdma_cm gives a connection's path on RoCEv2 (Linux
 * cma_get_roce_udp_flow_label): (source port × 31 + destination port) in 20
 * bits. Both sides' QPs and the CM exchange carry it.
 */
export const rdmaCmFlowLabel = (srcPort: number, dstPort = NVMF_PORT): number => (srcPort * 31 + dstPort) & 0xfffff;

/** The flow label Linux derives for a QP whose path has none (rdma_calc_flow_label): the QPNs' product folded to 20 bits. */
export function qpFlowLabel(lqpn: number, rqpn: number): number {
  let v = BigInt(lqpn >>> 0) * BigInt(rqpn >>> 0);
  v ^= v >> 20n;
  v ^= v >> 40n;
  return Number(v & 0xfffffn);
}

/** The UDP source port of a RoCEv2 QP with this flow label (rdma_flow_label_to_udp_sport): 14 bits folded from 20, from 0xC000 up. */
export const flowLabelUdpPort = (fl: number): number => ((fl & 0x3fff) ^ ((fl & 0xfc000) >>> 14)) | 0xc000;

/** The InfiniBand MTU sizes RoCE uses (IBTA enum: 1 = 256 ... 5 = 4096). */
export const IB_MTUS = [256, 512, 1024, 2048, 4096] as const;

/** An MTU's IBTA code (the CM REQ's path MTU field). */
export function ibMtuCode(mtu: number): number {
  const i = IB_MTUS.indexOf(mtu as (typeof IB_MTUS)[number]);
  if (i < 0) throw new RangeError(`path MTU must be one of ${IB_MTUS.join(", ")} (got ${mtu})`);
  return i + 1;
}

export interface CmFields {
  localCommId: number;
  remoteCommId?: number;
  localQpn: number;
  startingPsn?: number;
  /** REQ: the active side's and the passive side's addresses (path GIDs, rdma_cm's IP header), of one family */
  src?: IpAddress;
  dst?: IpAddress;
  /** REQ: the active side's rdma_cm source port */
  srcPort?: number;
  /** the sender's HCA node GUID (REQ, REP); derived from its address when omitted */
  localGuid?: bigint;
  /** the ULP's private data: after rdma_cm's 36-byte IP header in a REQ, at the start in a REP */
  privateData?: Uint8Array;
  /** REQ: the path MTU in bytes (256 to 4096; default 4096) */
  pathMtu?: number;
}

/**
 * An RDMA CM MAD (256 bytes) as RoCEv2 carries it (the payload of a UD SEND
 * ONLY to QP 1), with the fields Linux's ib_cm and rdma_cm set for an RC
 * connection: REQ with its path (GIDs: IPv6 addresses as they are, IPv4 ones
 * IPv4-mapped; flow label, traffic class, path MTU, retry counts,
 * CM timeouts, end-to-end flow control) and rdma_cm's IP private data header
 * (version, IP version, source port, both addresses) before the ULP's; REP
 * with the passive side's QP, initiator depth and private data; RTU.
 * All three carry the REQ's transaction id.
 */
export function cmMad(attr: number, tid: bigint, f: CmFields): Buffer {
  const m = Buffer.alloc(256);
  m[0] = 1; // base version
  m[1] = 0x07; // management class: CM
  m[2] = 2; // class version
  m[3] = 0x03; // method: Send
  m.writeBigUInt64BE(tid, 8);
  m.writeUInt16BE(attr, 16);
  const d = 24;
  m.writeUInt32BE(f.localCommId >>> 0, d);
  const guid = f.localGuid ?? (f.src !== undefined ? hcaGuid(f.src) : 0n);
  if (attr === CmAttr.REQ) {
    m.writeBigUInt64BE(NVMF_SERVICE_ID, d + 8);
    m.writeBigUInt64BE(guid, d + 16);
    m.writeUInt32BE((((f.localQpn & 0xffffff) << 8) | 16) >>> 0, d + 32); // responder resources: the HCA's max_qp_rd_atom
    m[d + 43] = (20 << 3) | (0 << 1) | 1; // remote CM response timeout 20, transport RC, end-to-end flow control
    m.writeUInt32BE(((((f.startingPsn ?? 0) & 0xffffff) << 8) | (20 << 3) | 7) >>> 0, d + 44); // local CM response timeout 20, retry count 7
    m.writeUInt16BE(0xffff, d + 48); // P_Key
    m[d + 50] = (ibMtuCode(f.pathMtu ?? 4096) << 4) | 7; // path MTU, RNR retry count 7
    m[d + 51] = 15 << 4; // max CM retries
    m.writeUInt16BE(0xffff, d + 52); // primary local and remote LIDs: permissive (RoCE)
    m.writeUInt16BE(0xffff, d + 54);
    if (f.src !== undefined) gidOf(f.src).copy(m, d + 56);
    if (f.dst !== undefined) gidOf(f.dst).copy(m, d + 72);
    m.writeUInt32BE(((rdmaCmFlowLabel(f.srcPort ?? 0) << 12) | 16) >>> 0, d + 88); // flow label; packet rate: 100 Gb/s
    m[d + 92] = 26 << 2; // traffic class: the ToS of the connection (DSCP 26)
    m[d + 93] = 64; // hop limit (routed)
    m[d + 95] = 18 << 3; // local ACK timeout
    const p = d + 140; // private data, 92 bytes
    // rdma_cm's header: version 0, IP version, source port, then each address
    // as 16 bytes (IPv6 whole; IPv4 in the last 4, the rest zero).
    const v6 = typeof f.src === "bigint";
    m[p + 1] = (v6 ? 6 : 4) << 4;
    m.writeUInt16BE((f.srcPort ?? 0) & 0xffff, p + 2);
    for (const [a, at] of [[f.src, p + 4], [f.dst, p + 20]] as const) {
      if (a === undefined) continue;
      if (typeof a === "bigint") gidOf(a).copy(m, at);
      else m.writeUInt32BE(a >>> 0, at + 12);
    }
    if (f.privateData) m.set(f.privateData.subarray(0, 92 - 36), p + 36);
  } else {
    m.writeUInt32BE((f.remoteCommId ?? 0) >>> 0, d + 4);
    if (attr === CmAttr.REP) {
      m.writeUInt32BE(((f.localQpn & 0xffffff) << 8) >>> 0, d + 12);
      m.writeUInt32BE(((f.startingPsn ?? 0) & 0xffffff) << 8 >>> 0, d + 20);
      m[d + 25] = 16; // initiator depth: the REQ's responder resources, within the HCA's limit
      m[d + 26] = (16 << 3) | 1; // target ACK delay, end-to-end flow control
      m[d + 27] = 7 << 5; // RNR retry count
      m.writeBigUInt64BE(guid, d + 28);
      if (f.privateData) m.set(f.privateData.subarray(0, 196), d + 36);
    } else if (f.privateData) {
      m.set(f.privateData.subarray(0, 224), d + 8);
    }
  }
  return m;
}

/** NVMe-oF's RDMA CM private data in a REQ (NVMe/RDMA binding): queue id and the host's queue sizes. */
export function nvmeRdmaCmReq(qid: number, hrqsize: number, hsqsize: number): Buffer {
  const p = Buffer.alloc(32);
  p.writeUInt16LE(0, 0); // record format 1.0
  p.writeUInt16LE(qid & 0xffff, 2);
  p.writeUInt16LE(hrqsize & 0xffff, 4);
  p.writeUInt16LE(hsqsize & 0xffff, 6);
  return p;
}

/** NVMe-oF's RDMA CM private data in a REP: the controller's receive queue size. */
export function nvmeRdmaCmRep(crqsize: number): Buffer {
  const p = Buffer.alloc(32);
  p.writeUInt16LE(0, 0);
  p.writeUInt16LE(crqsize & 0xffff, 2);
  return p;
}

/**
 * A Fabrics Connect command capsule (opcode 0x7F, fctype 0x01) with its
 * 1,024 bytes of connect data in the capsule: host id, controller id (0xFFFF
 * asks the admin queue for a dynamic controller), subsystem and host NQNs.
 * `sqsize` is 0-based; `kato` in ms (admin queue only).
 */
export function nvmfConnect(f: { cid: number; qid: number; sqsize: number; kato: number; hostId: Buffer; cntlid: number; subnqn: string; hostnqn: string }): Buffer {
  const s = Buffer.alloc(64 + 1024);
  s[0] = 0x7f;
  s[1] = 0x40; // PSDT: SGL
  s.writeUInt16LE(f.cid & 0xffff, 2);
  s[4] = 0x01; // fctype: Connect
  s.writeUInt32LE(1024, 32); // SGL1: data block, offset subtype, the data after the SQE
  s[39] = 0x01;
  s.writeUInt16LE(0, 40); // record format 0
  s.writeUInt16LE(f.qid & 0xffff, 42);
  s.writeUInt16LE(f.sqsize & 0xffff, 44);
  s.writeUInt32LE(f.kato >>> 0, 48);
  const data = s.subarray(64);
  f.hostId.copy(data, 0, 0, 16);
  data.writeUInt16LE(f.cntlid & 0xffff, 16);
  data.write(f.subnqn, 256, 255, "ascii");
  data.write(f.hostnqn, 512, 255, "ascii");
  return s;
}
