// pcap and pcapng reading (µs and ns resolution, either byte order, truncated
// snap lengths) and pcap writing (ns resolution).
import { readFileSync, writeFileSync } from "node:fs";

export interface CapturedPacket {
  /** capture timestamp, ns since the Unix epoch */
  timestampNs: bigint;
  /** the bytes captured (may be shorter than the packet) */
  data: Buffer;
  /** the packet's length on the wire */
  originalLength: number;
  /** pcapng interface id (0 for pcap) */
  interfaceId: number;
}

export class CaptureError extends Error {
  override readonly name = "CaptureError";
}

const PCAP_US = 0xa1b2c3d4;
const PCAP_NS = 0xa1b23c4d;
const PCAPNG_SHB = 0x0a0d0d0a;
export const LINKTYPE_ETHERNET = 1;

/** Reads a whole pcap or pcapng file. Throws CaptureError naming the problem. */
export function readCapture(path: string): CapturedPacket[] {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch (err) {
    throw new CaptureError(`cannot read capture ${path}: ${(err as Error).message}`);
  }
  return parseCapture(buf, path);
}

export function parseCapture(buf: Buffer, name = "capture"): CapturedPacket[] {
  if (buf.length < 4) throw new CaptureError(`${name}: too short to be a pcap or pcapng file (${buf.length} bytes)`);
  const magicBE = buf.readUInt32BE(0);
  const magicLE = buf.readUInt32LE(0);
  if (magicBE === PCAPNG_SHB) return parsePcapng(buf, name);
  for (const [magic, le] of [[magicLE, true], [magicBE, false]] as const) {
    if (magic === PCAP_US || magic === PCAP_NS) return parsePcap(buf, name, le, magic === PCAP_NS);
  }
  throw new CaptureError(`${name}: not a pcap or pcapng file (magic 0x${magicBE.toString(16).padStart(8, "0")})`);
}

function parsePcap(buf: Buffer, name: string, le: boolean, nanos: boolean): CapturedPacket[] {
  if (buf.length < 24) throw new CaptureError(`${name}: truncated pcap header`);
  const u32 = (o: number) => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const linktype = u32(20) & 0x0fffffff;
  if (linktype !== LINKTYPE_ETHERNET) throw new CaptureError(`${name}: link type ${linktype} (only Ethernet, 1, is supported)`);
  const out: CapturedPacket[] = [];
  let off = 24;
  while (off < buf.length) {
    if (off + 16 > buf.length) throw new CaptureError(`${name}: packet record ${out.length + 1} at byte ${off} has a truncated header`);
    const sec = BigInt(u32(off));
    const frac = BigInt(u32(off + 4));
    const incl = u32(off + 8);
    const orig = u32(off + 12);
    if (off + 16 + incl > buf.length) throw new CaptureError(`${name}: packet record ${out.length + 1} at byte ${off} claims ${incl} bytes, only ${buf.length - off - 16} remain`);
    if (incl > orig) throw new CaptureError(`${name}: packet record ${out.length + 1} captured ${incl} bytes of a ${orig}-byte packet`);
    out.push({
      timestampNs: sec * 1_000_000_000n + (nanos ? frac : frac * 1000n),
      data: buf.subarray(off + 16, off + 16 + incl),
      originalLength: orig,
      interfaceId: 0,
    });
    off += 16 + incl;
  }
  return out;
}

function parsePcapng(buf: Buffer, name: string): CapturedPacket[] {
  const out: CapturedPacket[] = [];
  let le = true;
  let ifaces: Array<{ linktype: number; tsUnitsPerSec: bigint }> = [];
  let off = 0;
  while (off < buf.length) {
    if (off + 12 > buf.length) throw new CaptureError(`${name}: truncated pcapng block at byte ${off}`);
    const typeBE = buf.readUInt32BE(off);
    if (typeBE === PCAPNG_SHB) {
      const bom = buf.readUInt32LE(off + 8);
      if (bom === 0x1a2b3c4d) le = true;
      else if (bom === 0x4d3c2b1a) le = false;
      else throw new CaptureError(`${name}: bad pcapng byte-order magic at byte ${off}`);
      ifaces = [];
    }
    const u32 = (o: number) => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
    const u16 = (o: number) => (le ? buf.readUInt16LE(o) : buf.readUInt16BE(o));
    const type = u32(off);
    const len = u32(off + 4);
    if (len < 12 || len % 4 !== 0 || off + len > buf.length) throw new CaptureError(`${name}: pcapng block at byte ${off} has bad length ${len}`);
    const body = off + 8;
    const end = off + len - 4;
    if (type === 1) {
      // Interface Description Block
      const linktype = u16(body);
      let tsUnitsPerSec = 1_000_000n;
      let o = body + 8;
      while (o + 4 <= end) {
        const code = u16(o);
        const olen = u16(o + 2);
        if (code === 0) break;
        if (code === 9 && olen >= 1) {
          const v = buf[o + 4]!;
          tsUnitsPerSec = v & 0x80 ? 2n ** BigInt(v & 0x7f) : 10n ** BigInt(v);
        }
        o += 4 + Math.ceil(olen / 4) * 4;
      }
      ifaces.push({ linktype, tsUnitsPerSec });
    } else if (type === 6 || type === 3) {
      let ifId = 0;
      let tsNs = 0n;
      let incl: number;
      let orig: number;
      let dataOff: number;
      if (type === 6) {
        ifId = u32(body);
        const ts = (BigInt(u32(body + 4)) << 32n) | BigInt(u32(body + 8));
        incl = u32(body + 12);
        orig = u32(body + 16);
        dataOff = body + 20;
        const iface = ifaces[ifId];
        if (!iface) throw new CaptureError(`${name}: packet at byte ${off} names interface ${ifId}, which was not described`);
        tsNs = (ts * 1_000_000_000n) / iface.tsUnitsPerSec;
      } else {
        orig = u32(body);
        incl = Math.min(orig, end - body - 4);
        dataOff = body + 4;
      }
      if (dataOff + incl > end) throw new CaptureError(`${name}: packet block at byte ${off} claims ${incl} bytes beyond its block`);
      const iface = ifaces[ifId];
      if (iface && iface.linktype !== LINKTYPE_ETHERNET) throw new CaptureError(`${name}: interface ${ifId} has link type ${iface.linktype} (only Ethernet is supported)`);
      out.push({ timestampNs: tsNs, data: buf.subarray(dataOff, dataOff + incl), originalLength: orig, interfaceId: ifId });
    }
    off += len;
  }
  return out;
}

/** Encodes packets as a nanosecond-resolution pcap (Ethernet). */
export function encodePcap(packets: ReadonlyArray<{ timestampNs: bigint; data: Uint8Array; originalLength?: number }>, snaplen = 65535): Buffer {
  const size = 24 + packets.reduce((a, p) => a + 16 + Math.min(p.data.length, snaplen), 0);
  const out = Buffer.alloc(size);
  out.writeUInt32LE(PCAP_NS, 0);
  out.writeUInt16LE(2, 4);
  out.writeUInt16LE(4, 6);
  out.writeUInt32LE(snaplen, 16);
  out.writeUInt32LE(LINKTYPE_ETHERNET, 20);
  let off = 24;
  for (const p of packets) {
    const incl = Math.min(p.data.length, snaplen);
    out.writeUInt32LE(Number(p.timestampNs / 1_000_000_000n), off);
    out.writeUInt32LE(Number(p.timestampNs % 1_000_000_000n), off + 4);
    out.writeUInt32LE(incl, off + 8);
    out.writeUInt32LE(p.originalLength ?? p.data.length, off + 12);
    out.set(p.data.subarray(0, incl), off + 16);
    off += 16 + incl;
  }
  return out;
}

export function writePcap(path: string, packets: ReadonlyArray<{ timestampNs: bigint; data: Uint8Array; originalLength?: number }>, snaplen?: number): void {
  writeFileSync(path, encodePcap(packets, snaplen));
}
