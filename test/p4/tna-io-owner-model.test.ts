// The Tofino I/O tracker's slot owner (p4/tna/include/control/io_tracker.p4,
// as both Tofino chips compile it) for a command the switch does not
// measure: the const entries of the classification, owner and check tables
// are read from the P4, the owner register's actions are written here as in
// the P4. A read whose response was lost, then a Flush with its CID (a host
// with bare tags): the Flush closes the read's slot (counted as closed by
// CID reuse), and the Flush's completion closes nothing, so the read never
// gets the Flush's completion time. An admin command with a Read's opcode
// (Get Log Page) is no read.
import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { constTable, lookup, p4Constants, preprocess, type ConstTable } from "../support/p4-const-entries.js";

const RAW = readFileSync(new URL("../../p4/tna/include/control/io_tracker.p4", import.meta.url), "utf8");
const C = p4Constants("p4/include/define.p4", "p4/tna/include/control/io_tracker.p4");
const K = (name: string): number => {
  const v = C.get(name);
  if (v === undefined) throw new Error(`${name} not in the P4`);
  return v;
};
// The predicate masks are macros (#define NAME value &&& mask): expanded before the entries are read.
const MACROS = [...RAW.matchAll(/^#define (\w+) (\S+ &&& \S+)$/gm)].map((m) => [new RegExp(`\\b${m[1]}\\b`, "g"), m[2]!] as const);
const expand = (s: string) => MACROS.reduce((a, [re, v]) => a.replace(re, v), s);
// The classification's header validity keys, named apart.
const validity = (s: string) => s.replace(/hdr\.(\w+)\.isValid\(\)/g, "$1_valid");

function tables(chip: 1 | 2): Record<"io_class" | "owner_tbl" | "check_tbl", ConstTable> {
  const src = preprocess(RAW, new Set(), chip);
  return {
    // The in-capsule write's entry spans two lines: joined, as p4c reads it.
    // (The actions' arguments are not needed here.)
    io_class: constTable(src.replace(/:\n\s+cmd\(/g, ": cmd("), "io_class", C, { keys: validity, entry: (e) => e.replace(/: (\w+)\(.*\);\s*$/, (m, a: string) => (a === "other_cmd" ? m : `: ${a}();`)) }),
    owner_tbl: constTable(src, "owner_tbl", C, { entry: expand }),
    check_tbl: constTable(src, "check_tbl", C, { entry: expand }),
  };
}

const SEND_ONLY = 0x04;
const SGL_KEYED = 4;

/** One I/O slot, its owner register (the key's fingerprint; 0 when free), as the P4's owner_claim and owner_close. */
class Slot {
  owner = 0;
  constructor(private readonly t: Record<"io_class" | "owner_tbl" | "check_tbl", ConstTable>) {}

  private classify(p: { sqe?: { opc: number; sgl: number; nsid?: number }; cqe?: boolean }): number {
    const e = lookup(this.t.io_class, {
      cm_req_valid: 0, cm_rep_valid: 0, opcode: SEND_ONLY,
      nvme_sqe_valid: p.sqe ? 1 : 0, opc: p.sqe?.opc ?? 0, sgl_type: p.sqe?.sgl ?? 0, nvme_cqe_valid: p.cqe ? 1 : 0, nsid: p.sqe ? p.sqe.nsid ?? 1 : 0,
    });
    if (e?.action === "other_cmd") return e.args[0]!;
    return { cmd: K("IO_PKT_CMD"), rsp: K("IO_PKT_RSP") }[e?.action ?? ""] ?? K("IO_PKT_NONE");
  }

  /** A packet of the key `fp` (its queue paired): the check table's action, or undefined (none). */
  packet(fp: number, p: { sqe?: { opc: number; sgl: number; nsid?: number }; cqe?: boolean }): string | undefined {
    const pktClass = this.classify(p);
    const oa = lookup(this.t.owner_tbl, { pkt_class: pktClass, in_capsule: 0, host_qp_found: 1, target_qp_found: 1 })?.action;
    let owner = 0;
    let closed = 0;
    if (oa === "owner_claim_a") {
      owner = this.owner === fp ? 0b1000 : this.owner === 0 ? 0b0001 : 0b0100;
      if (this.owner === 0) this.owner = fp;
    } else if (oa === "owner_close_a") {
      closed = this.owner === fp ? 0b0010 : 0b0001;
      if (this.owner === fp) this.owner = 0;
    } else expect(oa).toBeUndefined();
    return lookup(this.t.check_tbl, { pkt_class: pktClass, owner, closed })?.action;
  }
}

test.each([1, 2] as const)("Tofino %i: a Flush with the CID of a read whose response was lost closes the read's slot (counted), and its completion closes nothing", (chip) => {
  const s = new Slot(tables(chip));
  const FP = 0x5a5;
  expect(s.packet(FP, { sqe: { opc: 0x02, sgl: SGL_KEYED } })).toBe("check_cmd_a"); // the read claims the slot
  // Its response is lost; the host reuses CID 5 for a Flush (a keyed SGL of length 0: no data).
  expect(s.packet(FP, { sqe: { opc: 0x00, sgl: SGL_KEYED } })).toBe("closed_other");
  expect(s.owner).toBe(0);
  expect(s.packet(FP, { cqe: true })).toBe("unmatched_rsp"); // the Flush's completion: no I/O's response
  // Write Zeroes and Dataset Management (its ranges in the capsule) alike; a read's own response still closes it.
  expect(s.packet(FP, { sqe: { opc: 0x02, sgl: SGL_KEYED } })).toBe("check_cmd_a");
  expect(s.packet(FP, { cqe: true })).toBe("check_rsp_a");
  for (const sqe of [{ opc: 0x08, sgl: SGL_KEYED }, { opc: 0x09, sgl: 0 }]) {
    expect(s.packet(FP, { sqe: { opc: 0x02, sgl: SGL_KEYED } })).toBe("check_cmd_a");
    expect(s.packet(FP, { sqe })).toBe("closed_other");
    expect(s.packet(FP, { cqe: true })).toBe("unmatched_rsp");
  }
  // Get Log Page is opcode 02h, as a Read's, on the admin queue, with NSID FFFFFFFFh or 0: not a read.
  for (const nsid of [0xffffffff, 0]) {
    expect(s.packet(FP, { sqe: { opc: 0x02, sgl: SGL_KEYED, nsid } })).toBeUndefined();
    expect(s.packet(FP, { cqe: true })).toBe("unmatched_rsp");
  }
  // A read whose SGL is a descriptor list (Last Segment, type 3): an I/O not measured, counted as untracked; it takes its CID too.
  expect(s.packet(FP, { sqe: { opc: 0x02, sgl: SGL_KEYED } })).toBe("check_cmd_a");
  expect(s.packet(FP, { sqe: { opc: 0x02, sgl: 3 } })).toBe("untracked_cmd");
  expect(s.owner).toBe(0);
  expect(s.packet(FP, { cqe: true })).toBe("unmatched_rsp");
  // A Flush of another key whose slot is this one (tens of thousands of queues): the read holding it stays, and its response closes it.
  expect(s.packet(FP, { sqe: { opc: 0x02, sgl: SGL_KEYED } })).toBe("check_cmd_a");
  expect(s.packet(0x6b6, { sqe: { opc: 0x00, sgl: SGL_KEYED } })).toBeUndefined();
  expect(s.owner).toBe(FP);
  expect(s.packet(FP, { cqe: true })).toBe("check_rsp_a");
  // With no I/O of its key in the slot, such a command closes nothing and counts nothing.
  expect(s.packet(FP, { sqe: { opc: 0x00, sgl: SGL_KEYED } })).toBeUndefined();
  expect(C.get("IO_OUTCOME_CLOSED")).toBe(7);
});
