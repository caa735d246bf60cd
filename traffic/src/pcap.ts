// pcap and pcapng reading (µs and ns resolution, either byte order, truncated
// snap lengths; Ethernet, Linux cooked and raw IP link types), whole or as a
// stream in bounded memory, and pcap writing (ns resolution, Ethernet), whole
// or as a stream.
import { TrafficError, WriteError } from "./errors.js";
import { closeSync, fstatSync, openSync, readFileSync, readSync, writeSync } from "node:fs";

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

/** A capture that cannot be read: the message names the file, the offset and what is wrong. */
export class CaptureError extends TrafficError {
  override readonly name = "CaptureError";
  constructor(message: string) {
    super(message, "BAD_CAPTURE");
  }
}

const PCAP_US = 0xa1b2c3d4;
const PCAP_NS = 0xa1b23c4d;
const PCAPNG_SHB = 0x0a0d0d0a;
export const LINKTYPE_ETHERNET = 1;
/** Linux cooked captures (`tcpdump -i any`): v1 before libpcap 1.10, v2 since. */
export const LINKTYPE_LINUX_SLL = 113;
export const LINKTYPE_LINUX_SLL2 = 276;
/** IP with no link header (the version nibble says which), and IPv4 or IPv6 only. */
export const LINKTYPE_RAW = 101;
export const LINKTYPE_IPV4 = 228;
export const LINKTYPE_IPV6 = 229;
const LINKTYPES = "Ethernet (1), Linux cooked v1 (113) and v2 (276), raw IP (101, 228, 229)";

/** A captured frame as Ethernet: the switch takes Ethernet frames. */
type ToEthernet = (data: Buffer, originalLength: number) => { data: Buffer; originalLength: number };

/**
 * An Ethernet header (no MACs known: zero destination, the cooked header's
 * source address when it is a MAC) before `payload`, with `etherType`.
 */
function ethernet(etherType: number, src: Buffer | undefined, payload: Buffer, originalLength: number, linkHeader: number) {
  const data = Buffer.alloc(14 + payload.length);
  if (src?.length === 6) src.copy(data, 6);
  data.writeUInt16BE(etherType, 12);
  payload.copy(data, 14);
  return { data, originalLength: originalLength - linkHeader + 14 };
}

/**
 * How frames of a link type become Ethernet frames, or undefined for a link
 * type the reader does not take. A frame cut short inside its link header
 * becomes one cut short inside the Ethernet header (the switch counts it as
 * a packet it could not parse), so that no packet is dropped here.
 */
export function toEthernet(linktype: number): ToEthernet | undefined {
  const short = (data: Buffer, originalLength: number, linkHeader: number) =>
    ({ data: Buffer.alloc(Math.min(12, data.length)), originalLength: Math.max(0, originalLength - linkHeader + 14) });
  switch (linktype) {
    case LINKTYPE_ETHERNET:
      return (data, originalLength) => ({ data, originalLength });
    case LINKTYPE_LINUX_SLL:
      // packet type (2), ARPHRD type (2), address length (2), address (8), protocol (2)
      return (data, orig) => data.length < 16 ? short(data, orig, 16)
        : ethernet(data.readUInt16BE(14), data.subarray(6, 6 + Math.min(8, data.readUInt16BE(4))), data.subarray(16), orig, 16);
    case LINKTYPE_LINUX_SLL2:
      // protocol (2), reserved (2), interface index (4), ARPHRD type (2), packet type (1), address length (1), address (8)
      return (data, orig) => data.length < 20 ? short(data, orig, 20)
        : ethernet(data.readUInt16BE(0), data.subarray(12, 12 + Math.min(8, data[11]!)), data.subarray(20), orig, 20);
    case LINKTYPE_RAW:
    case LINKTYPE_IPV4:
    case LINKTYPE_IPV6:
      return (data, orig) => {
        const version = linktype === LINKTYPE_IPV4 ? 4 : linktype === LINKTYPE_IPV6 ? 6 : data.length > 0 ? data[0]! >> 4 : 0;
        return ethernet(version === 4 ? 0x0800 : version === 6 ? 0x86dd : 0, undefined, data, orig, 0);
      };
    default:
      return undefined;
  }
}

/** Read size of a capture stream: few system calls, and memory that does not grow with the file. */
const CHUNK_BYTES = 4 << 20;

/**
 * The bytes of a capture, read forward: a window over a file, refilled as
 * records are read (a record larger than the window widens it), or a whole
 * capture already in memory.
 */
class CaptureBytes {
  /** file offset of buf[0] */
  private base = 0;
  /** bytes of buf that hold the file */
  private len: number;
  /** offset just past the last record read */
  consumed = 0;

  constructor(
    private readonly name: string,
    public buf: Buffer,
    /** the capture's length when known (a whole buffer; a regular file's size at open); found at EOF otherwise */
    private end: number | undefined,
    private readonly fd?: number,
    private readonly chunkBytes = CHUNK_BYTES,
  ) {
    this.len = fd === undefined ? buf.length : 0;
  }

  static of(buf: Buffer, name: string): CaptureBytes {
    return new CaptureBytes(name, buf, buf.length);
  }

  /** Index in `buf` of file offset `off` (once `fill` has brought it in). */
  at(off: number): number {
    return off - this.base;
  }

  /** Bytes from `off` to the end of the capture (known once `fill` has failed). */
  remaining(off: number): number {
    return (this.end ?? this.base + this.len) - off;
  }

  /** Brings bytes [off, off + n) into `buf`; false when the capture ends before. Offsets only move forward. */
  fill(off: number, n: number): boolean {
    if (off >= this.base && off + n <= this.base + this.len) return true;
    if (this.fd === undefined || (this.end !== undefined && off + n > this.end)) return false;
    // Keep the bytes from `off` on at the front; a record larger than the window widens it, and the next one narrows it back.
    const keep = Math.max(0, this.base + this.len - off);
    const size = Math.max(n, keep, this.chunkBytes);
    let buf = this.buf;
    if (buf.length !== size) {
      try {
        buf = Buffer.allocUnsafe(size);
      } catch {
        throw new CaptureError(`${this.name}: a record at byte ${off} needs ${n} bytes`);
      }
    }
    if (keep > 0) this.buf.copy(buf, 0, off - this.base, this.len);
    this.buf = buf;
    this.base = off;
    this.len = keep;
    while (this.len < n) {
      let got: number;
      try {
        // A pipe has no positions: it is read in order.
        got = readSync(this.fd, buf, this.len, buf.length - this.len, this.end === undefined ? null : this.base + this.len);
      } catch (err) {
        throw new CaptureError(`cannot read capture ${this.name}: ${(err as Error).message}`);
      }
      if (got === 0) {
        // The end (a pipe's, or a file that shrank while being read).
        this.end = this.base + this.len;
        return false;
      }
      this.len += got;
    }
    return true;
  }

  /** A packet's bytes: its own copy when `buf` is a window that will be refilled. */
  take(index: number, n: number): Buffer {
    const view = this.buf.subarray(index, index + n);
    return this.fd === undefined ? view : Buffer.from(view);
  }
}

type U32 = (b: Buffer, o: number) => number;
type U16 = (b: Buffer, o: number) => number;
const u32LE: U32 = (b, o) => b.readUInt32LE(o);
const u32BE: U32 = (b, o) => b.readUInt32BE(o);
const u16LE: U16 = (b, o) => b.readUInt16LE(o);
const u16BE: U16 = (b, o) => b.readUInt16BE(o);

/** Checks the file's header (an error names the problem before any packet is read) and returns its packets. */
function records(src: CaptureBytes, name: string): Generator<CapturedPacket, void, undefined> {
  if (!src.fill(0, 4)) throw new CaptureError(`${name}: too short to be a pcap or pcapng file (${src.remaining(0)} bytes)`);
  const magicBE = src.buf.readUInt32BE(src.at(0));
  const magicLE = src.buf.readUInt32LE(src.at(0));
  if (magicBE === PCAPNG_SHB) return pcapngRecords(src, name);
  for (const [magic, le] of [[magicLE, true], [magicBE, false]] as const) {
    if (magic !== PCAP_US && magic !== PCAP_NS) continue;
    if (!src.fill(0, 24)) throw new CaptureError(`${name}: truncated pcap header`);
    const linktype = (le ? u32LE : u32BE)(src.buf, src.at(20)) & 0x0fffffff;
    const frame = toEthernet(linktype);
    if (!frame) throw new CaptureError(`${name}: link type ${linktype} is not supported (${LINKTYPES} are)`);
    return pcapRecords(src, name, le, magic === PCAP_NS, frame);
  }
  throw new CaptureError(`${name}: not a pcap or pcapng file (magic 0x${magicBE.toString(16).padStart(8, "0")})`);
}

function* pcapRecords(src: CaptureBytes, name: string, le: boolean, nanos: boolean, frame: ToEthernet): Generator<CapturedPacket, void, undefined> {
  const u32 = le ? u32LE : u32BE;
  let off = 24;
  for (let n = 1; src.fill(off, 1); n++) {
    if (!src.fill(off, 16)) throw new CaptureError(`${name}: packet record ${n} at byte ${off} has a truncated header`);
    const h = src.at(off);
    const sec = BigInt(u32(src.buf, h));
    const frac = BigInt(u32(src.buf, h + 4));
    const incl = u32(src.buf, h + 8);
    const orig = u32(src.buf, h + 12);
    if (!src.fill(off, 16 + incl)) throw new CaptureError(`${name}: packet record ${n} at byte ${off} claims ${incl} bytes, only ${src.remaining(off) - 16} remain`);
    if (incl > orig) throw new CaptureError(`${name}: packet record ${n} captured ${incl} bytes of a ${orig}-byte packet`);
    const f = frame(src.take(src.at(off + 16), incl), orig);
    off += 16 + incl;
    src.consumed = off;
    yield { timestampNs: sec * 1_000_000_000n + (nanos ? frac : frac * 1000n), data: f.data, originalLength: f.originalLength, interfaceId: 0 };
  }
}

/** The least length of a block of each type that the reader looks into (IDB, SPB, EPB). */
const MIN_BLOCK: Record<number, number> = { 1: 20, 3: 16, 6: 32 };

function* pcapngRecords(src: CaptureBytes, name: string): Generator<CapturedPacket, void, undefined> {
  let le = true;
  let ifaces: Array<{ linktype: number; frame: ToEthernet | undefined; tsUnitsPerSec: bigint; tsOffsetNs: bigint }> = [];
  let off = 0;
  while (src.fill(off, 1)) {
    if (!src.fill(off, 12)) throw new CaptureError(`${name}: truncated pcapng block at byte ${off}`);
    let b = src.at(off);
    if (src.buf.readUInt32BE(b) === PCAPNG_SHB) {
      const bom = src.buf.readUInt32LE(b + 8);
      if (bom === 0x1a2b3c4d) le = true;
      else if (bom === 0x4d3c2b1a) le = false;
      else throw new CaptureError(`${name}: bad pcapng byte-order magic at byte ${off}`);
      ifaces = [];
    }
    const u32 = le ? u32LE : u32BE;
    const u16 = le ? u16LE : u16BE;
    const type = u32(src.buf, b);
    const len = u32(src.buf, b + 4);
    if (len < (MIN_BLOCK[type] ?? 12) || len % 4 !== 0 || !src.fill(off, len)) throw new CaptureError(`${name}: pcapng block at byte ${off} has bad length ${len}`);
    const buf = src.buf;
    b = src.at(off);
    const body = b + 8;
    const end = b + len - 4;
    if (type === 1) {
      // Interface Description Block
      const linktype = u16(buf, body);
      let tsUnitsPerSec = 1_000_000n;
      let tsOffsetNs = 0n;
      let o = body + 8;
      while (o + 4 <= end) {
        const code = u16(buf, o);
        const olen = u16(buf, o + 2);
        if (code === 0) break;
        if (code === 9 && olen >= 1) {
          const v = buf[o + 4]!;
          tsUnitsPerSec = v & 0x80 ? 2n ** BigInt(v & 0x7f) : 10n ** BigInt(v);
        }
        // if_tsoffset: seconds to add to the interface's timestamps.
        if (code === 14 && olen === 8 && o + 12 <= end) tsOffsetNs = (le ? buf.readBigInt64LE(o + 4) : buf.readBigInt64BE(o + 4)) * 1_000_000_000n;
        o += 4 + Math.ceil(olen / 4) * 4;
      }
      ifaces.push({ linktype, frame: toEthernet(linktype), tsUnitsPerSec, tsOffsetNs });
    } else if (type === 6 || type === 3) {
      let ifId = 0;
      let tsNs = 0n;
      let incl: number;
      let orig: number;
      let dataOff: number;
      if (type === 6) {
        ifId = u32(buf, body);
        const ts = (BigInt(u32(buf, body + 4)) << 32n) | BigInt(u32(buf, body + 8));
        incl = u32(buf, body + 12);
        orig = u32(buf, body + 16);
        dataOff = body + 20;
        const iface = ifaces[ifId];
        if (!iface) throw new CaptureError(`${name}: packet at byte ${off} names interface ${ifId}, which was not described`);
        tsNs = (ts * 1_000_000_000n) / iface.tsUnitsPerSec + iface.tsOffsetNs;
      } else {
        orig = u32(buf, body);
        incl = Math.min(orig, end - body - 4);
        dataOff = body + 4;
      }
      if (dataOff + incl > end) throw new CaptureError(`${name}: packet block at byte ${off} claims ${incl} bytes beyond its block`);
      // A Simple Packet Block belongs to the first interface.
      const iface = ifaces[ifId];
      if (!iface) throw new CaptureError(`${name}: packet at byte ${off} names interface ${ifId}, which was not described`);
      if (!iface.frame) throw new CaptureError(`${name}: interface ${ifId} has link type ${iface.linktype}, which is not supported (${LINKTYPES} are)`);
      const f = iface.frame(src.take(dataOff, incl), orig);
      off += len;
      src.consumed = off;
      yield { timestampNs: tsNs, data: f.data, originalLength: f.originalLength, interfaceId: ifId };
      continue;
    }
    off += len;
    src.consumed = off;
  }
}

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

/** The packets of a whole capture in memory (their `data` are views into `buf`). */
export function parseCapture(buf: Buffer, name = "capture"): CapturedPacket[] {
  return [...records(CaptureBytes.of(buf, name), name)];
}

export interface OpenCaptureOptions {
  /** bytes read at a time (default 4 MiB); memory held is about this, whatever the file's size */
  chunkBytes?: number;
  /**
   * A capture damaged after its header (cut short in the middle of a packet,
   * as one copied while being written or whose writer was killed, or a
   * record that does not parse) ends where the damage begins, as Wireshark
   * reads it: the packets before it are delivered, and the error is kept in
   * `damage` instead of thrown.
   */
  stopAtDamage?: boolean;
}

/**
 * A capture read as a stream, packet by packet, in memory that does not grow
 * with the file. Each packet's `data` is its own Buffer. The file closes
 * when the last packet has been read, on an error, or on `close()`.
 */
export class CaptureReader implements IterableIterator<CapturedPacket> {
  private fd: number | undefined;
  private readonly bytes: CaptureBytes;
  private readonly packets: Generator<CapturedPacket, void, undefined>;
  /** the file's size in bytes (undefined for a pipe) */
  readonly size: number | undefined;
  /** packets read so far */
  packetsRead = 0;
  /** with stopAtDamage: what ended the capture early, if anything did */
  damage: CaptureError | undefined;
  private readonly stopAtDamage: boolean;

  /** Opens `path` and checks its header: a file that cannot be read, or is not a capture, is a CaptureError at once. */
  constructor(readonly path: string, opts: OpenCaptureOptions = {}) {
    const chunk = Math.max(1, Math.floor(opts.chunkBytes ?? CHUNK_BYTES));
    this.stopAtDamage = opts.stopAtDamage ?? false;
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (err) {
      throw new CaptureError(`cannot read capture ${path}: ${(err as Error).message}`);
    }
    try {
      const st = fstatSync(fd);
      this.size = st.isFile() ? st.size : undefined;
      this.bytes = new CaptureBytes(path, Buffer.allocUnsafe(chunk), this.size, fd, chunk);
      this.packets = records(this.bytes, path);
    } catch (err) {
      closeSync(fd);
      if (err instanceof CaptureError) throw err;
      throw new CaptureError(`cannot read capture ${path}: ${(err as Error).message}`);
    }
    this.fd = fd;
  }

  /** Bytes of the file up to the end of the last packet read (progress: against `size`). */
  get bytesRead(): number {
    return this.bytes.consumed;
  }

  next(): IteratorResult<CapturedPacket, undefined> {
    if (this.fd === undefined) return { done: true, value: undefined };
    let r: IteratorResult<CapturedPacket, void>;
    try {
      r = this.packets.next();
    } catch (err) {
      this.close();
      if (!(this.stopAtDamage && err instanceof CaptureError)) throw err;
      this.damage = err;
      return { done: true, value: undefined };
    }
    if (r.done) {
      this.close();
      return { done: true, value: undefined };
    }
    this.packetsRead++;
    return r;
  }

  /** Stopping early (a `for...of` left by break or an error) closes the file. */
  return(): IteratorResult<CapturedPacket, undefined> {
    this.close();
    return { done: true, value: undefined };
  }

  [Symbol.iterator](): this {
    return this;
  }

  close(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    this.bytes.buf = Buffer.alloc(0);
    closeSync(fd);
  }
}

/** Opens a pcap or pcapng file for reading as a stream (see CaptureReader). */
export function openCapture(path: string, opts?: OpenCaptureOptions): CaptureReader {
  return new CaptureReader(path, opts);
}

/** A packet to write: `originalLength` defaults to the bytes given. */
export interface PcapRecord {
  timestampNs: bigint;
  data: Uint8Array;
  originalLength?: number;
}

function putHeader(out: Buffer, snaplen: number): number {
  out.writeUInt32LE(PCAP_NS, 0);
  out.writeUInt16LE(2, 4);
  out.writeUInt16LE(4, 6);
  out.writeUInt32LE(0, 8); // thiszone
  out.writeUInt32LE(0, 12); // sigfigs
  out.writeUInt32LE(snaplen, 16);
  out.writeUInt32LE(LINKTYPE_ETHERNET, 20);
  return 24;
}

function putRecord(out: Buffer, off: number, p: PcapRecord, snaplen: number): number {
  const incl = Math.min(p.data.length, snaplen);
  out.writeUInt32LE(Number(p.timestampNs / 1_000_000_000n), off);
  out.writeUInt32LE(Number(p.timestampNs % 1_000_000_000n), off + 4);
  out.writeUInt32LE(incl, off + 8);
  out.writeUInt32LE(p.originalLength ?? p.data.length, off + 12);
  out.set(p.data.subarray(0, incl), off + 16);
  return off + 16 + incl;
}

/** Encodes packets as a nanosecond-resolution pcap (Ethernet). */
export function encodePcap(packets: ReadonlyArray<PcapRecord>, snaplen = 65535): Buffer {
  const size = 24 + packets.reduce((a, p) => a + 16 + Math.min(p.data.length, snaplen), 0);
  const out = Buffer.alloc(size);
  let off = putHeader(out, snaplen);
  for (const p of packets) off = putRecord(out, off, p, snaplen);
  return out;
}

/** Writes packets to a nanosecond-resolution pcap, a block at a time. */
export function writePcap(path: string, packets: Iterable<PcapRecord>, snaplen?: number): void {
  const w = new PcapWriter(path, { snaplen });
  try {
    for (const p of packets) w.write(p);
  } finally {
    w.close();
  }
}

/** Bytes a PcapWriter gathers before writing them out. */
const BLOCK_BYTES = 1 << 20;

/**
 * A nanosecond-resolution pcap written as packets come: records are gathered
 * in a block and written when it fills, so memory does not grow with the
 * capture. The file is created (or emptied) at once: a path that cannot be
 * written throws from the constructor, before any work.
 */
export class PcapWriter {
  private fd: number | undefined;
  private readonly block: Buffer;
  private used: number;
  private readonly snaplen: number;
  /** packets written */
  packets = 0;
  /** bytes of the file, including what is still in the block */
  bytes = 0;

  constructor(readonly path: string, opts: { snaplen?: number; blockBytes?: number } = {}) {
    this.snaplen = opts.snaplen ?? 65535;
    // A block always holds at least one whole record.
    this.block = Buffer.allocUnsafe(Math.max(opts.blockBytes ?? BLOCK_BYTES, 24 + 16 + this.snaplen));
    this.fd = openSync(path, "w");
    this.used = putHeader(this.block, this.snaplen);
    this.bytes = this.used;
  }

  write(p: PcapRecord): void {
    if (this.fd === undefined) throw new Error(`${this.path}: written after close`);
    if (this.failed) throw new WriteError(`cannot write ${this.path}: an earlier write failed`);
    const size = 16 + Math.min(p.data.length, this.snaplen);
    if (this.used + size > this.block.length) this.flush();
    this.used = putRecord(this.block, this.used, p, this.snaplen);
    this.packets++;
    this.bytes += size;
  }

  /** Writes out what the block holds; a failed write is a WriteError, and the writer takes no more. */
  flush(): void {
    if (this.fd === undefined || this.failed) return;
    let off = 0;
    try {
      while (off < this.used) off += writeSync(this.fd, this.block, off, this.used - off);
    } catch (err) {
      this.failed = true;
      throw new WriteError(`cannot write ${this.path}: ${(err as Error).message}; it keeps the packets written before`, { cause: err });
    }
    this.used = 0;
  }

  private failed = false;

  close(): void {
    if (this.fd === undefined) return;
    try {
      this.flush();
    } finally {
      closeSync(this.fd);
      this.fd = undefined;
    }
  }
}
