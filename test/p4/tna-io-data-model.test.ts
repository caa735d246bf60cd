// The Tofino I/O tracker's data path (p4/tna/include/control/io_tracker.p4,
// as both Tofino chips compile it) for an I/O whose data moves in
// several RDMA operations: the const entries
// of the R_Key, PSN and QP map tables and of the reference table are read
// from the P4, the registers' actions are written here as in the P4. The
// I/O's last data time (DAL's end) must come from the end of its last
// operation or be absent (0), never from an earlier operation's end; a
// keyed transfer whose R_Key the map does not hold touches no I/O.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { constTable, lookup, p4Constants, preprocess, type ConstTable } from "../support/p4-const-entries.js";

const RAW = readFileSync(new URL("../../p4/tna/include/control/io_tracker.p4", import.meta.url), "utf8");
const SRC = preprocess(RAW, new Set());
const DEFINES = readFileSync(new URL("../../p4/tna/include/define_tna.p4", import.meta.url), "utf8");
const C = p4Constants("p4/include/define.p4", "p4/tna/include/control/io_tracker.p4");
const K = (name: string): number => {
  const v = C.get(name);
  if (v === undefined) throw new Error(`${name} not in the P4`);
  return v;
};
const TABLES = ["rkey_tbl", "rkey_ref_tbl", "psn_tbl", "qp_tbl", "ref_tbl"] as const;
const T = Object.fromEntries(TABLES.map((n) => [n, constTable(SRC, n, C)])) as Record<(typeof TABLES)[number], ConstTable>;

const OP = { WRITE_FIRST: 0x06, WRITE_MIDDLE: 0x07, WRITE_LAST: 0x08, WRITE_ONLY: 0x0a, READ_REQUEST: 0x0c, RR_FIRST: 0x0d, RR_MIDDLE: 0x0e, RR_LAST: 0x0f, RR_ONLY: 0x10 } as const;
const IOREF_PENDING = K("IOREF_PENDING");
const WORD_FOUND = K("WORD_FOUND");
const REF_PENDING = K("REF_PENDING");
const REF_MORE = K("REF_MORE");

interface Pair { lo: number; hi: number }
interface Reth { rkey: number; va: number; len: number }

/** The names define_tna.p4 defines for a chip (its `#define NAME` lines that the chip's branches keep). */
const definedFor = (chip: 1 | 2): Set<string> =>
  new Set([...preprocess(DEFINES.replace(/^#define (\w+)$/gm, "DEFINED $1"), new Set(), chip).matchAll(/^DEFINED (\w+)$/gm)].map((m) => m[1]!));

/**
 * The R_Key map's key on a chip: the R_Key alone; or (where define_tna.p4
 * defines TNA_RKEY_FP for it) the R_Key with the host and the target, which
 * the P4 hashes into the key before the map's stage; or (TNA_RKEY_MIX) the
 * R_Key XOR the host's endpoint key, which a command and an RDMA CM REQ take
 * from their source and a keyed transfer and a REP from their destination
 * (the host's side of each).
 */
function rkeyKeyOf(chip: 1 | 2): (rkey: number, host: number, target: number) => string {
  const src = preprocess(RAW, definedFor(chip), chip);
  const hashed = /sgl_key = rkey_fp_hash\.get\(\{ sgl_key, meta\.io_digest\.host, meta\.io_digest\.target \}\)/.test(src);
  const mixed =
    /sgl_key = sgl_key_mix\.get\(\{ hdr\.nvme_sqe\.sgl_key_le\[7:0\], hdr\.nvme_sqe\.sgl_key_le\[15:8\],\s+hdr\.nvme_sqe\.sgl_key_le\[23:16\], hdr\.nvme_sqe\.sgl_key_le\[31:24\], meta\.src_key \}\)/.test(src) &&
    /Hash<bit<32>>\(HashAlgorithm_t\.XOR32\) sgl_key_mix;/.test(src) &&
    /sgl_key = hdr\.reth\.rkey \^ meta\.dst_key;/.test(src) &&
    /sgl_key = hdr\.cm_req\.local_comm_id \^ meta\.src_key;/.test(src) &&
    /sgl_key = hdr\.cm_rep\.remote_comm_id \^ meta\.dst_key;/.test(src);
  expect(hashed && mixed, `chip ${chip}: one key scheme`).toBe(false);
  if (hashed) return (rkey, host, target) => `${rkey}|${host}|${target}`;
  if (mixed) return (rkey, host) => String((rkey ^ host) >>> 0);
  return (rkey) => String(rkey);
}

/** One R_Key map entry (every key here shares it), one PSN map entry per PSN, one QP map entry per QP, and the I/O slots by reference. */
class TofinoIoData {
  constructor(private readonly key: (rkey: number, host: number, target: number) => string = rkeyKeyOf(1)) {}
  rkeyMap: { lo: string; hi: number } = { lo: "", hi: 0 };
  rkeyRef: Pair = { lo: 0, hi: 0 };
  psnMap = new Map<number, Pair>();
  qpMap = new Map<number, Pair>();
  /** slot check (the command's reference) -> last data packet (time when it ends its message, else 0; PSN) */
  last = new Map<number, Pair>();
  /** slot check -> the time of each data packet its check passed */
  seen = new Map<number, number[]>();

  command(cref: number, rkey: number, sglAddr: number, sglLen: number, tqp: number, pair = PAIR): void {
    const claim = lookup(T.rkey_tbl, { pkt_class: K("IO_PKT_CMD"), in_capsule: 0, "isValid()": 0 })?.action;
    expect(claim).toBe("rkey_claim_a");
    this.rkeyMap = { lo: this.key(rkey, pair.host, pair.target), hi: (tqp | IOREF_PENDING | WORD_FOUND) >>> 0 };
    expect(lookup(T.rkey_ref_tbl, { pkt_class: K("IO_PKT_CMD"), in_capsule: 0, "isValid()": 0 })?.action).toBe("rkey_ref_claim_a");
    this.rkeyRef = { lo: (sglAddr + sglLen) >>> 0, hi: cref };
    this.last.set(cref, { lo: 0, hi: 0 });
    this.seen.set(cref, []);
  }

  /** A data packet towards the host (read data) or the target (READ RESPONSE); READ REQUESTs through `readRequest`. */
  data(t: number, opcode: number, qp: number, psn: number, reth?: Reth, pair = PAIR): void {
    const toTarget = opcode >= OP.RR_FIRST;
    const pktClass = K(toTarget ? "IO_PKT_READ_RESP" : "IO_PKT_WRITE_DATA");
    const starts = [OP.WRITE_FIRST, OP.WRITE_ONLY, OP.RR_FIRST, OP.RR_ONLY].includes(opcode as never) ? 1 : 0;
    const ends = [OP.WRITE_LAST, OP.WRITE_ONLY, OP.RR_LAST, OP.RR_ONLY].includes(opcode as never);
    let nowx = ends ? t : 0;
    // A READ RESPONSE's word is its own QP (no found bit).
    let { word, cref } = this.keyed(pktClass, reth, pair) ?? { word: toTarget ? qp : 0, cref: 0 };
    const found = (word >>> 30) & 1;
    const pa = lookup(T.psn_tbl, { pkt_class: pktClass, starts_message: starts, found })?.action;
    if (pa === "psn_find_a") {
      const e = this.psnMap.get(psn);
      if (e?.lo === psn) e.hi = (e.hi & ~REF_PENDING) >>> 0;
      cref = e?.lo === psn ? e.hi : 0;
    } else expect(pa).toBeUndefined();
    const qa = lookup(T.qp_tbl, { pkt_class: pktClass, starts_message: starts, found })?.action;
    if (qa === "qp_write_a") this.qpMap.set(qp, { lo: qp, hi: cref });
    else if (qa === "qp_none_a") this.qpMap.set(qp, { lo: qp, hi: 0 });
    else if (qa === "qp_find_a") cref = this.qpMap.get(qp)?.lo === qp ? this.qpMap.get(qp)!.hi : 0;
    else throw new Error(`qp_tbl: ${qa}`);
    ({ cref, nowx } = this.reference(pktClass, reth, found, cref, nowx));
    // The slot's check, then its last data packet (a message's first
    // writes, a later one only as the next PSN).
    const last = this.last.get(cref);
    if (cref === 0 || !last) return;
    this.seen.get(cref)!.push(t);
    if (starts || psn - last.hi === 1) this.last.set(cref, { lo: nowx, hi: psn });
  }

  /** The reference table: none for an R_Key the map does not hold; REF_MORE taken off, and the end is no last data time. */
  private reference(pktClass: number, reth: Reth | undefined, found: number, cref: number, nowx: number): { cref: number; nowx: number } {
    const ra = lookup(T.ref_tbl, { pkt_class: pktClass, "isValid()": reth ? 1 : 0, found, more: (cref >>> 14) & 1 })?.action;
    if (ra === "ref_none") return { cref: 0, nowx };
    if (ra === "ref_more") return { cref: (cref & ~REF_MORE) >>> 0, nowx: 0 };
    expect(ra).toBeUndefined();
    return { cref, nowx };
  }

  /** A READ REQUEST (target -> host): found by its R_Key, it claims the PSN map entry of the READ RESPONSE it asks for. */
  readRequest(t: number, psn: number, reth: Reth): void {
    const pktClass = K("IO_PKT_READ_REQ");
    const { word, cref } = this.keyed(pktClass, reth)!;
    const found = (word >>> 30) & 1;
    const pa = lookup(T.psn_tbl, { pkt_class: pktClass, starts_message: 0, found })?.action;
    if (pa === "psn_claim_a") this.psnMap.set(psn, { lo: psn, hi: (cref | REF_PENDING) >>> 0 });
    const own = this.reference(pktClass, reth, found, cref, 0).cref;
    if (own !== 0 && this.seen.has(own)) this.seen.get(own)!.push(t);
  }

  /** The R_Key map and its references (stage 3): a keyed transfer's word and reference; undefined for a packet without its RETH. */
  private keyed(pktClass: number, reth: Reth | undefined, pair = PAIR): { word: number; cref: number } | undefined {
    if (!reth) return undefined;
    const k = { pkt_class: pktClass, in_capsule: 0, "isValid()": 1 };
    expect([lookup(T.rkey_tbl, k)?.action, lookup(T.rkey_ref_tbl, k)?.action]).toEqual(["rkey_find_a", "rkey_ref_find_a"]);
    const mine = this.rkeyMap.lo === this.key(reth.rkey, pair.host, pair.target);
    const word = mine ? (this.rkeyMap.hi & ~IOREF_PENDING) >>> 0 : 0;
    if (mine) this.rkeyMap.hi = word;
    const end = (reth.va + reth.len) >>> 0;
    this.rkeyRef.hi = (this.rkeyRef.lo === end ? this.rkeyRef.hi & ~REF_MORE : this.rkeyRef.hi | REF_MORE) >>> 0;
    return { word, cref: this.rkeyRef.hi };
  }
}

/** The data packets' (host, target); a command may be another pair's. */
const PAIR = { host: 0x0a00_0101, target: 0x0a00_0201 };
const A = 0x1234_0001; // references (fingerprint ++ slot)
const B = 0x5678_0002;
const HQP = 0x101;
const TQP = 0x801;
const VA = 0xffff_f000; // the SGL's end wraps past 2^32: ends compare in their low 32 bits

/** A read of 8 KiB in two RDMA WRITE operations of two packets; between them, optionally, another command of the same (host, target) takes the R_Key entry. */
function read(taken: boolean): { io: TofinoIoData; op2Last: number } {
  const io = new TofinoIoData();
  io.command(A, 0x70, VA, 8192, TQP);
  io.data(10, OP.WRITE_FIRST, HQP, 100, { rkey: 0x70, va: VA, len: 4096 });
  io.data(11, OP.WRITE_LAST, HQP, 101);
  if (taken) io.command(B, 0x99, 0x10_0000, 4096, TQP + 1);
  io.data(20, OP.WRITE_FIRST, HQP, 102, { rkey: 0x70, va: VA + 4096, len: 4096 });
  io.data(21, OP.WRITE_LAST, HQP, 103);
  return { io, op2Last: 21 };
}

/** A write of 8 KiB in two READ REQUESTs of two READ RESPONSE packets each. */
function write(taken: boolean): TofinoIoData {
  const io = new TofinoIoData();
  io.command(A, 0x70, VA, 8192, TQP);
  io.readRequest(5, 500, { rkey: 0x70, va: VA, len: 4096 });
  io.data(10, OP.RR_FIRST, TQP, 500);
  io.data(11, OP.RR_LAST, TQP, 501);
  if (taken) io.command(B, 0x99, 0x10_0000, 4096, TQP + 1);
  io.readRequest(15, 502, { rkey: 0x70, va: VA + 4096, len: 4096 });
  io.data(20, OP.RR_FIRST, TQP, 502);
  io.data(21, OP.RR_LAST, TQP, 503);
  return io;
}

describe("Tofino I/O tracker: an I/O in several RDMA operations (the tables as in the P4)", () => {
  test("whole, every data packet is the I/O's and its last data time is its last operation's end", () => {
    const r = read(false).io;
    expect([r.last.get(A), r.seen.get(A)]).toEqual([{ lo: 21, hi: 103 }, [10, 11, 20, 21]]);
    const w = write(false);
    expect([w.last.get(A), w.seen.get(A)]).toEqual([{ lo: 21, hi: 503 }, [5, 10, 11, 15, 20, 21]]);
  });

  test("its R_Key entry taken between two operations: the first operation is the I/O's, but no last data time (DAL absent), never the first operation's end", () => {
    const r = read(true).io;
    expect([r.last.get(A)!.lo, r.seen.get(A)]).toEqual([0, [10, 11]]);
    const w = write(true);
    expect([w.last.get(A)!.lo, w.seen.get(A)]).toEqual([0, [5, 10, 11]]);
  });

  test("an operation whose R_Key the map does not hold touches no I/O, not the one whose reference shares the entry", () => {
    const io = new TofinoIoData();
    io.command(A, 0x70, VA, 4096, TQP);
    io.command(B, 0x99, VA, 4096, TQP + 1); // same buffer, a new R_Key: same SGL end
    io.data(10, OP.WRITE_ONLY, HQP, 100, { rkey: 0x70, va: VA, len: 4096 });
    io.data(11, OP.WRITE_FIRST, HQP, 101, { rkey: 0x70, va: VA, len: 4096 });
    io.data(12, OP.WRITE_LAST, HQP, 102);
    expect([io.seen.get(A), io.seen.get(B)]).toEqual([[], []]);
    io.data(20, OP.WRITE_ONLY, HQP + 1, 7, { rkey: 0x99, va: VA, len: 4096 });
    expect([io.last.get(B), io.seen.get(B)]).toEqual([{ lo: 20, hi: 7 }, [20]]);
  });
});

// Identical hosts number their memory regions alike, so two host-target
// pairs often use equal R_Keys; when their R_Key map entries share an index,
// the later command takes the entry. Tofino 2 keys the entry by a
// fingerprint of (R_Key, host, target), Tofino 1 by the R_Key XOR the host
// (docs/tofino.md, "Keys, slots and capacity"): the first pair's data then
// finds no I/O (its DAL absent and counted), never the other pair's.
describe.each([1, 2] as const)("Tofino %i", (chip) => {
  test("another host's command with the same R_Key takes the entry; this pair's data then touches neither I/O", () => {
    const io = new TofinoIoData(rkeyKeyOf(chip));
    io.command(A, 0x70, VA, 4096, TQP);
    io.command(B, 0x70, 0x10_0000, 4096, TQP, { host: 0x0a00_0102, target: 0x0a00_0202 });
    io.data(10, OP.WRITE_ONLY, HQP, 100, { rkey: 0x70, va: VA, len: 4096 });
    expect([io.seen.get(A), io.seen.get(B)]).toEqual([[], []]);
    // The later pair's own data finds its I/O.
    io.data(11, OP.WRITE_ONLY, HQP, 101, { rkey: 0x70, va: 0x10_0000, len: 4096 }, { host: 0x0a00_0102, target: 0x0a00_0202 });
    expect(io.seen.get(B)).toEqual([11]);
  });
});
