// The Tofino flow tracker's decisions (p4/tna/include/control/flow_tracker.p4),
// run on one flow's packets: the const entries of its decision tables are
// read from the P4 (for each chip: Tofino 2 with the seen-PSN window, Tofino
// 1 without), the registers' actions are written here as in the P4. Every
// packet of the flow must be reported (SPEC §4: every packet in the flow
// totals, in the interval it arrives in): in a message digest, or as a flow
// packet outside any message in the next digest; none may wait in a closed
// state (after a flow's last message there may be no next message digest),
// and every flow-only digest is marked as such (packets and bytes 0).
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { rng } from "../support/rng.js";
import { constTable, lookup, p4Constants, preprocess, type ConstTable } from "../support/p4-const-entries.js";

const PSN_MOD = 1 << 24;
const OP = { FIRST: 0x06, MIDDLE: 0x07, LAST: 0x08, LAST_IMM: 0x09, ONLY: 0x0a, ONLY_IMM: 0x0b } as const;
const OPEN = new Set([6, 14]);

const SOURCE = readFileSync(new URL("../../p4/tna/include/control/flow_tracker.p4", import.meta.url), "utf8");
const CONSTANTS = p4Constants("p4/include/define.p4");

function table(src: string, name: string, window: boolean): ConstTable {
  return constTable(src, name, CONSTANTS, {
    keys: (k) => k.replace("WIN_SEEN_KEY", window ? 'win_seen: ternary @name("seen");' : ""),
    entry: (e) => e.replace(/WIN_SEEN\(([^)]*)\)/g, window ? ", $1" : ""),
  });
}

interface Report {
  msgEnd: boolean;
  packets: number;
  retransmitted: number;
  bytes: number;
  extraPackets: number;
  extraRetransmitted: number;
  straddled: number;
  psn: number;
}

const TABLES = ["op_params", "msg_state", "msg_counts_tbl", "msg_bytes_tbl", "msg_extra", "msg_decode"] as const;

/** One flow slot of the Tofino flow tracker, for one chip. */
class TofinoFlow {
  readonly t: Record<(typeof TABLES)[number], ConstTable>;
  // Registers.
  owned = false;
  hi8 = 0;
  epoch = 0;
  st = 0;
  counts = 0;
  bytesReg = 0;
  extra = 0;
  strad = 0;
  /** PSNs seen in this epoch (the window's answer; test/p4/psn-window-model.test.ts shows the ring gives it). */
  seenPsns = new Set<number>();

  constructor(readonly window: boolean) {
    const src = preprocess(SOURCE, new Set(window ? ["TNA_PSN_WINDOW"] : []));
    this.t = Object.fromEntries(TABLES.map((n) => [n, table(src, n, window)])) as TofinoFlow["t"];
  }

  /** What waits in the registers: an open message's counts and the extra counts. */
  pending(): { packets: number; retransmitted: number } {
    const open = OPEN.has(this.st) ? this.counts : 0;
    return { packets: (open >>> 16) + (this.extra >>> 16), retransmitted: (open & 0xffff) + (this.extra & 0xffff) };
  }

  /** One packet; returns the report it makes, if any, and whether it reset the flow (nothing carried over). */
  packet(opcode: number, psn: number, epoch: number, dmaLen: number): { report: Report | undefined; reset: boolean } {
    const psn8 = (psn << 8) >>> 0;
    const taken = !this.owned ? 1 : 0;
    this.owned = true;
    let mOld = 0;
    let mNew = 0;
    let behind = 0;
    if (taken) {
      this.hi8 = psn8;
      this.epoch = epoch;
    } else {
      const moved = this.epoch !== epoch;
      const newer = ((psn8 - this.hi8) | 0) > 0;
      behind = (this.hi8 - psn8) >>> 0;
      mOld = !moved && !newer ? 1 : 0;
      mNew = !moved && newer ? 1 : 0;
      if (moved || newer) this.hi8 = psn8;
      this.epoch = epoch;
    }
    const reset = taken === 1 || (mOld === 0 && mNew === 0);
    if (reset) this.seenPsns.clear();
    // The window: a PSN 64 or more behind counts as seen (win_far).
    const seen = mOld && (behind >>> 14 !== 0 || this.seenPsns.has(psn)) ? 1 : 0;
    this.seenPsns.add(psn);

    const op = lookup(this.t.op_params, { opcode });
    if (!op) throw new Error(`opcode ${opcode}: not an RDMA WRITE opcode of op_params`);
    const [stA, stB, stK] = op.args as [number, number, number];
    const key = { taken, m_old: mOld, m_new: mNew, opcode, seen };

    // Message state (returns the old state).
    const oldSt = this.st;
    const sa = lookup(this.t.msg_state, key)?.action;
    if (sa === "st_first") this.st = this.st === 2 ? 6 : 14;
    else if (sa === "st_lm") this.st = this.st > 3 ? this.st & stA : stB;
    else if (sa === "st_const") this.st = stB;
    else if (sa !== "st_read" && sa !== undefined) throw new Error(`msg_state: action ${sa} not modelled`);

    const rep: Report = { msgEnd: false, packets: 0, retransmitted: 0, bytes: 0, extraPackets: 0, extraRetransmitted: 0, straddled: 0, psn };
    let inc = 0;
    const ca = lookup(this.t.msg_counts_tbl, key)?.action;
    if (ca === "cnt_start") {
      inc = this.counts;
      this.counts = 0x10000;
      rep.packets = 1;
      rep.retransmitted = 0;
    } else if (ca === "cnt_add" || ca === "cnt_add_retx") {
      inc = ca === "cnt_add" ? 0x10000 : 0x10001;
      this.counts = (this.counts + inc) >>> 0;
      rep.packets = this.counts >>> 16;
      rep.retransmitted = this.counts & 0xffff;
    } else if (ca !== undefined) throw new Error(`msg_counts_tbl: action ${ca} not modelled`);

    const ba = lookup(this.t.msg_bytes_tbl, key)?.action;
    if (ba === "bytes_start") rep.bytes = this.bytesReg = dmaLen;
    else if (ba === "bytes_cont") rep.bytes = this.bytesReg;
    else if (ba !== undefined) throw new Error(`msg_bytes_tbl: action ${ba} not modelled`);

    const xkey = { ...key, state: oldSt };
    const xa = lookup(this.t.msg_extra, xkey)?.action;
    const takeExtra = (x: number) => {
      rep.extraPackets = x >>> 16;
      rep.extraRetransmitted = x & 0xffff;
    };
    if (xa === "x_add") this.extra = (this.extra + inc) >>> 0;
    else if (xa === "x_set") this.extra = inc;
    else if (xa === "x_clear") this.extra = 0;
    else if (xa === "x_take") (takeExtra(this.extra), (this.extra = 0));
    else if (xa === "x_take_open") (takeExtra((this.extra + inc) >>> 0), (this.extra = 0));
    else if (xa === "x_take_reset") (takeExtra(inc), (this.extra = 0));
    else if (xa !== undefined) throw new Error(`msg_extra: action ${xa} not modelled`);

    const d = lookup(this.t.msg_decode, xkey);
    let valid = false;
    let stradPlus = false;
    let flowOnly = false;
    const takeStrad = () => {
      const s = this.strad;
      this.strad = 0;
      return s & 0xff;
    };
    switch (d?.action) {
      case undefined:
        break;
      case "s_add":
        this.strad++;
        break;
      case "s_msg":
        valid = rep.msgEnd = true;
        rep.straddled = takeStrad();
        break;
      case "s_msg_strad":
        valid = rep.msgEnd = stradPlus = true;
        rep.straddled = takeStrad();
        break;
      case "s_r_start":
      case "s_r_outside":
        this.strad = stK;
        break;
      case "s_r_only":
        valid = rep.msgEnd = true;
        this.strad = stK;
        break;
      case "s_flow":
        valid = flowOnly = true;
        rep.straddled = takeStrad();
        break;
      case "s_flow_strad":
        valid = flowOnly = stradPlus = true;
        rep.straddled = takeStrad();
        break;
      case "s_r_flow":
        valid = flowOnly = stradPlus = true;
        takeStrad();
        break;
      default:
        throw new Error(`msg_decode: action ${d?.action} not modelled`);
    }
    if (stradPlus) rep.straddled++;
    if (flowOnly) {
      rep.packets = 0;
      rep.retransmitted = 0;
      rep.bytes = 0;
    }
    return { report: valid ? rep : undefined, reset };
  }
}

interface Pkt {
  opcode: number;
  psn: number;
  epoch: number;
  msg: number;
}

/**
 * A flow's RDMA WRITE messages as a switch sees them: messages of 1 to 40
 * packets from `start`, some packets lost before the switch and resent
 * with the rest of their message (go-back-N), some resent after their
 * message's last packet, duplicates, packets displaced up to `displace`
 * places, epoch changes (a rotation), a start in the middle of a message.
 */
function flow(r: () => number, start: number, messages: number, displace: number, epochs: boolean): Pkt[] {
  const sent: Pkt[] = [];
  let psn = start;
  let epoch = 1;
  for (let m = 0; m < messages; m++) {
    const n = r() < 0.2 ? 1 : 2 + Math.floor(r() * 39);
    const first = psn;
    const ops = n === 1 ? [r() < 0.5 ? OP.ONLY : OP.ONLY_IMM] : [OP.FIRST, ...Array<number>(n - 2).fill(OP.MIDDLE), r() < 0.5 ? OP.LAST : OP.LAST_IMM];
    let i = 0;
    while (i < n) {
      sent.push({ opcode: ops[i]!, psn: (first + i) % PSN_MOD, epoch, msg: m });
      if (r() < 0.01) sent.push({ ...sent[sent.length - 1]! }); // a duplicate on the way
      if (r() < 0.02 && i > 0) i = Math.max(0, i - 1 - Math.floor(r() * 6)); // go-back-N within the message
      i++;
    }
    if (r() < 0.1) {
      // The last ACK lost: the message's tail resent after its last packet.
      for (let j = Math.max(0, n - 1 - Math.floor(r() * 4)); j < n; j++) sent.push({ opcode: ops[j]!, psn: (first + j) % PSN_MOD, epoch, msg: m });
    }
    psn = (first + n) % PSN_MOD;
    if (epochs && r() < 0.05) epoch++;
  }
  // Lost before the switch and never resent (the sender gave up or the
  // capture starts late): a few packets, the first ones of the flow included.
  const kept = sent.filter((_, k) => !(r() < 0.01) && !(k < 3 && r() < 0.3));
  const out = kept.slice();
  for (let k = 0; k < out.length; k++) {
    if (displace && r() < 0.3) {
      const j = Math.max(0, k - Math.floor(r() * (displace + 1)));
      const [p] = out.splice(k, 1) as [Pkt];
      out.splice(j, 0, p);
    }
  }
  return out;
}

/** What each chip counts as retransmitted (SPEC §4 and docs/tofino.md): its own statement, apart from the tables. */
function truthRetransmitted(pkts: readonly Pkt[], window: boolean): boolean[] {
  let hi: number | undefined;
  let epoch = -1;
  let seen = new Set<number>();
  return pkts.map((p) => {
    if (hi === undefined || p.epoch !== epoch) {
      hi = p.psn;
      epoch = p.epoch;
      seen = new Set([p.psn]);
      return false;
    }
    const ahead = (p.psn - hi + PSN_MOD) % PSN_MOD;
    let retx: boolean;
    if (ahead !== 0 && ahead < PSN_MOD / 2) {
      hi = p.psn;
      retx = false;
    } else if (!window) retx = true;
    else retx = (hi - p.psn + PSN_MOD) % PSN_MOD >= 64 || seen.has(p.psn);
    seen.add(p.psn);
    return retx;
  });
}

function run(window: boolean, pkts: readonly Pkt[]) {
  const f = new TofinoFlow(window);
  const truth = truthRetransmitted(pkts, window);
  const reports: Report[] = [];
  let total = 0;
  let totalRetx = 0;
  let dropped = 0;
  let droppedRetx = 0;
  let reported = 0;
  let reportedRetx = 0;
  const problems: string[] = [];
  pkts.forEach((p, i) => {
    const before = f.pending();
    const { report, reset } = f.packet(p.opcode, p.psn, p.epoch, 4096);
    if (reset) {
      // A new flow or epoch: what waited is not carried over (as in v1model).
      dropped += before.packets;
      droppedRetx += before.retransmitted;
    }
    total++;
    if (truth[i]) totalRetx++;
    if (report) {
      reports.push(report);
      reported += report.extraPackets + (report.msgEnd ? report.packets : 0);
      reportedRetx += report.extraRetransmitted + (report.msgEnd ? report.retransmitted : 0);
      if (report.msgEnd && report.packets < 1) problems.push(`packet ${i}: a message digest of ${report.packets} packets`);
      if (!report.msgEnd && (report.packets !== 0 || report.bytes !== 0)) problems.push(`packet ${i}: a flow-only digest not marked (packets ${report.packets}, bytes ${report.bytes})`);
    }
    const now = f.pending();
    if (reported + now.packets !== total - dropped) problems.push(`packet ${i}: ${reported} reported + ${now.packets} waiting, ${total - dropped} counted`);
    if (reportedRetx + now.retransmitted !== totalRetx - droppedRetx) problems.push(`packet ${i}: ${reportedRetx} retransmitted reported + ${now.retransmitted} waiting, ${totalRetx - droppedRetx} counted`);
    // No message open, none collecting (states 0 and 2): nothing may wait.
    if ((f.st === 0 || f.st === 2) && (f.extra !== 0 || f.strad !== 0)) problems.push(`packet ${i} (opcode ${p.opcode}, PSN ${p.psn}): state ${f.st} with ${f.extra >>> 16} packets and ${f.strad} straddled waiting`);
  });
  return { f, reports, problems, total, dropped, reported };
}

const CHIPS = [
  ["Tofino 2 (seen-PSN window)", true],
  ["Tofino 1", false],
] as const;

describe.each(CHIPS)("TNA flow tracker tables, %s", (_chip, window) => {
  test("the P4's decision tables are read whole", () => {
    const f = new TofinoFlow(window);
    expect(f.t.msg_extra.keys).toEqual(["taken", "m_old", "m_new", "opcode", "state"]);
    expect(f.t.msg_counts_tbl.keys).toEqual(window ? ["taken", "m_old", "m_new", "opcode", "seen"] : ["taken", "m_old", "m_new", "opcode"]);
    expect(f.t.msg_decode.entries.length).toBeGreaterThan(30);
    expect(f.t.op_params.entries.map((e) => e.keys[0]!.value)).toEqual([6, 7, 8, 9, 10, 11]);
  });

  test("in order, no loss: one exact message digest per message, no other report", () => {
    const r = rng(5);
    const whole: Pkt[] = [];
    const sizes: number[] = [];
    let psn = PSN_MOD - 300; // across the 24-bit PSN wrap
    for (let m = 0; m < 300; m++) {
      const n = r() < 0.2 ? 1 : 2 + Math.floor(r() * 39);
      sizes.push(n);
      for (let i = 0; i < n; i++) {
        const opcode = n === 1 ? OP.ONLY_IMM : i === 0 ? OP.FIRST : i === n - 1 ? OP.LAST_IMM : OP.MIDDLE;
        whole.push({ opcode, psn: (psn + i) % PSN_MOD, epoch: 1, msg: m });
      }
      psn = (psn + n) % PSN_MOD;
    }
    const { reports, problems } = run(window, whole);
    expect(problems).toEqual([]);
    expect(reports.map((x) => ({ end: x.msgEnd, packets: x.packets, retransmitted: x.retransmitted, extra: x.extraPackets, straddled: x.straddled }))).toEqual(
      sizes.map((n) => ({ end: true, packets: n, retransmitted: 0, extra: 0, straddled: 0 })),
    );
  });

  test("packets resent after a flow's last message are reported at once, as flow-only digests", () => {
    // Two messages of 8 packets; the second's last 3 resent after its LAST.
    const pkts: Pkt[] = [];
    for (const first of [1000, 1008]) for (let i = 0; i < 8; i++) pkts.push({ opcode: i === 0 ? OP.FIRST : i === 7 ? OP.LAST : OP.MIDDLE, psn: first + i, epoch: 1, msg: first });
    for (const psn of [1013, 1014, 1015]) pkts.push({ opcode: psn === 1015 ? OP.LAST : OP.MIDDLE, psn, epoch: 1, msg: 1008 });
    const { reports, problems } = run(window, pkts);
    expect(problems).toEqual([]);
    expect(reports.filter((r) => r.msgEnd).map((r) => [r.packets, r.retransmitted])).toEqual([[8, 0], [8, 0]]);
    const flowOnly = reports.filter((r) => !r.msgEnd);
    expect(flowOnly.map((r) => [r.extraPackets, r.extraRetransmitted, r.packets, r.bytes])).toEqual([[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]]);
  });

  test("a message whose FIRST was not seen: its packets reported at its LAST, straddled once", () => {
    const pkts: Pkt[] = [];
    for (let i = 0; i < 6; i++) pkts.push({ opcode: i === 0 ? OP.FIRST : i === 5 ? OP.LAST : OP.MIDDLE, psn: 50 + i, epoch: 1, msg: 0 });
    for (let i = 1; i < 6; i++) pkts.push({ opcode: i === 5 ? OP.LAST_IMM : OP.MIDDLE, psn: 56 + i, epoch: 1, msg: 1 });
    const { reports, problems, f } = run(window, pkts);
    expect(problems).toEqual([]);
    expect(reports.map((r) => ({ end: r.msgEnd, packets: r.packets, extra: r.extraPackets, straddled: r.straddled }))).toEqual([
      { end: true, packets: 6, extra: 0, straddled: 0 },
      { end: false, packets: 0, extra: 5, straddled: 1 },
    ]);
    expect(f.st).toBe(0);
  });

  test("a message whose LAST was not seen: its packets reported when the next starts", () => {
    const pkts: Pkt[] = [];
    for (let i = 0; i < 5; i++) pkts.push({ opcode: i === 0 ? OP.FIRST : OP.MIDDLE, psn: 10 + i, epoch: 1, msg: 0 });
    for (let i = 0; i < 3; i++) pkts.push({ opcode: i === 0 ? OP.FIRST : i === 2 ? OP.LAST : OP.MIDDLE, psn: 16 + i, epoch: 1, msg: 1 });
    const { reports, problems } = run(window, pkts);
    expect(problems).toEqual([]);
    expect(reports.map((r) => ({ end: r.msgEnd, packets: r.packets, extra: r.extraPackets, straddled: r.straddled }))).toEqual([
      { end: false, packets: 0, extra: 5, straddled: 1 },
      { end: true, packets: 3, extra: 0, straddled: 0 },
    ]);
  });

  test.each([
    ["in order", 0],
    ["displaced up to 6", 6],
    ["displaced up to 30", 30],
  ])("%s, with loss, go-back-N, resends after the LAST, duplicates and rotations: every packet reported or waiting in an open message", (_n, displace) => {
    const r = rng(1000 + displace);
    let flowOnly = 0;
    let messages = 0;
    for (let k = 0; k < 40; k++) {
      const pkts = flow(r, (0xfff000 + k * 7001) % PSN_MOD, 60, displace, k % 2 === 1);
      const { reports, problems, total, dropped, reported } = run(window, pkts);
      expect(problems.slice(0, 5), `flow ${k}`).toEqual([]);
      expect(reported).toBeGreaterThan(0);
      expect(reported).toBeLessThanOrEqual(total - dropped);
      flowOnly += reports.filter((x) => !x.msgEnd).length;
      messages += reports.filter((x) => x.msgEnd).length;
    }
    // The streams exercise both kinds of report (a message whose FIRST is
    // overtaken gets none: its packets count for the flow, as straddled).
    expect(flowOnly).toBeGreaterThan(20);
    expect(messages).toBeGreaterThan(displace ? 100 : 1000);
  });
});
