// The Tofino 2 seen-PSN window (docs/tofino.md, "Seen-PSN window";
// p4/tna/include/control/flow_tracker.p4) against the v1model build's
// (p4/include/control/flow_tracker.p4): a ring of 128 PSNs in four tagged
// blocks of 32, gated by the highest PSN, must classify every packet as the
// v1model's 64-bit window shifted along the highest PSN does (new or
// retransmitted), whatever the reordering, duplicates, PSN wrap and other
// flows sharing the slot. Both are written here from their P4, step by step.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { rng } from "../support/rng.js";

const PSN_MOD = 1 << 24;

/** v1model: the highest PSN and a 64-bit window, bit i = PSN highest - i seen. */
class ShiftWindow {
  max = 0;
  seen = 0n;
  fresh = true;
  /** true when the packet is new (not retransmitted). */
  see(psn: number): boolean {
    if (this.fresh) {
      // A flow new to the switch: nothing behind its first PSN seen.
      this.fresh = false;
      this.max = psn;
      this.seen = 1n;
      return true;
    }
    const ahead = (psn - this.max + PSN_MOD) % PSN_MOD;
    const behind = (this.max - psn + PSN_MOD) % PSN_MOD;
    if (ahead !== 0 && ahead < PSN_MOD / 2) {
      this.seen = ahead >= 64 ? 1n : ((this.seen << BigInt(ahead)) | 1n) & 0xffffffffffffffffn;
      this.max = psn;
      return true;
    }
    if (behind < 64) {
      const bit = 1n << BigInt(behind);
      if ((this.seen & bit) === 0n) {
        this.seen |= bit;
        return true;
      }
    }
    return false;
  }
}

/** Tofino 2: flow_psn_epoch's highest PSN (<< 8), and flow_win's blocks (bitmap, tag) per slot. */
class TofinoSlot {
  h8: number | undefined;
  readonly blocks = Array.from({ length: 4 }, () => ({ lo: 0, hi: 0 }));
  /** One packet of the flow with this 16-bit identity: true when new. A taken slot resets the PSN register. */
  see(psn: number, id: number, taken: boolean): boolean {
    const psn8 = (psn << 8) >>> 0;
    let mOld = false;
    let behind = 0;
    if (taken || this.h8 === undefined) {
      this.h8 = psn8; // psn_reset
    } else {
      const before = this.h8;
      const newer = ((psn8 - before) | 0) > 0; // (int<32>)(psn8 - value.lo) > 0
      if (newer) this.h8 = psn8;
      else mOld = true;
      behind = (before - psn8) >>> 0; // win_behind = win_h8 - psn8
    }
    // win_tbl: (taken) or (not old) or (old, behind[31:14] == 0) touch the window; else far.
    if (!taken && mOld && behind >>> 14 !== 0) return false;
    const block = this.blocks[(psn >>> 5) & 3]!;
    const tag = (((id & 0xffff) << 16) | ((psn >>> 7) & 0xffff)) >>> 0; // win_id ++ win_lap
    const bit = (1 << (psn & 31)) >>> 0;
    const same = block.hi === tag;
    const old = block.lo;
    if (same) block.lo = (block.lo | bit) >>> 0;
    else {
      block.lo = bit;
      block.hi = tag;
    }
    const seen = same && (old & bit) !== 0;
    // msg_counts: an old PSN is retransmitted when seen; a taken slot or a new PSN is new.
    return taken || !mOld || !seen;
  }
}


/**
 * A flow's packets as a switch sees them: PSNs from `start`, each packet
 * displaced up to `displace` places, some lost before the switch and resent
 * later (go-back-N from the lost one), some duplicated.
 */
function stream(r: () => number, start: number, n: number, displace: number): number[] {
  const sent: number[] = [];
  let psn = start;
  for (let i = 0; i < n; i++) {
    if (r() < 0.01 && sent.length > 8) {
      // go-back-N: the sender resends from a PSN a few behind.
      const back = 1 + Math.floor(r() * 8);
      psn = (psn - back + PSN_MOD) % PSN_MOD;
    }
    sent.push(psn);
    if (r() < 0.02) sent.push(psn); // a duplicate on the way
    psn = (psn + 1) % PSN_MOD;
  }
  // Displacement: each packet may overtake up to `displace` earlier ones.
  const out = sent.slice();
  for (let i = 0; i < out.length; i++) {
    if (r() < 0.3) {
      const j = Math.max(0, i - Math.floor(r() * (displace + 1)));
      const [p] = out.splice(i, 1) as [number];
      out.splice(j, 0, p);
    }
  }
  return out;
}

describe("Tofino 2 seen-PSN window, as v1model's", () => {
  test.each([
    ["in order", 0, 0x000100],
    ["displaced up to 6", 6, 0x123456],
    ["displaced up to 40", 40, 0xfffe80], // across the 24-bit PSN wrap
    ["displaced up to 70 (past the window)", 70, 0x7fff00],
  ])("%s: every packet classified alike", (_name, displace, start) => {
    const r = rng(displace * 7919 + 1);
    for (let run = 0; run < 20; run++) {
      const pkts = stream(r, (start + run * 4099) % PSN_MOD, 3000, displace);
      const v1 = new ShiftWindow();
      const t2 = new TofinoSlot();
      const got = pkts.map((p, i) => [v1.see(p), t2.see(p, 0x5a5a, i === 0)]);
      const diff = got.findIndex(([a, b]) => a !== b);
      expect(diff, `run ${run}: packet ${diff} (PSN ${pkts[diff]})`).toBe(-1);
      // The streams hold late first sightings and retransmissions alike.
      if (displace > 0) expect(got.filter(([a], i) => a && i > 0 && pkts[i] !== pkts[i - 1]).length).toBeGreaterThan(0);
      expect(got.filter(([a]) => !a).length).toBeGreaterThan(0);
    }
  });

  test("a flow that takes a slot another flow used reads none of that flow's blocks", () => {
    const r = rng(42);
    const t2 = new TofinoSlot();
    // The first flow leaves its four blocks on the laps around PSN 1000.
    stream(r, 1000, 200, 4).forEach((p, i) => t2.see(p, 0x1111, i === 0));
    // Another flow takes the slot with PSNs on the very same laps.
    const pkts = stream(r, 1000, 200, 10);
    const v1 = new ShiftWindow();
    pkts.forEach((p, i) => expect(t2.see(p, 0x2222, i === 0), `packet ${i}`).toBe(v1.see(p)));
  });

  test("a ring of 64 (two blocks) would not do: a PSN 40 behind loses its block", () => {
    // The gate lets PSNs up to 63 behind reach the window; with two blocks
    // of 32, the block of a PSN 40 behind is already on the next lap.
    const blocks = 2;
    const seen = new Map<number, { lap: number; bits: number }>();
    const see = (psn: number) => {
      const b = (psn >>> 5) % blocks;
      const lap = Math.floor(psn / (32 * blocks));
      const e = seen.get(b);
      if (e && e.lap === lap) {
        const was = (e.bits >>> (psn & 31)) & 1;
        e.bits |= 1 << (psn & 31);
        return was === 0;
      }
      seen.set(b, { lap, bits: 1 << (psn & 31) });
      return true;
    };
    for (let p = 0; p < 100; p++) see(p);
    // PSN 60 was seen; its duplicate 39 behind the highest (99) must be retransmitted.
    expect(see(60)).toBe(true); // the two-block ring calls it new: wrong
    const t2 = new TofinoSlot();
    for (let p = 0; p < 100; p++) t2.see(p, 1, p === 0);
    expect(t2.see(60, 1, false)).toBe(false); // four blocks: retransmitted
  });
});

// The model above is the P4's: the constants it takes from
// p4/tna/include/control/flow_tracker.p4 are still there.
test("the model's constants are the Tofino P4's", () => {
  const p4 = readFileSync(new URL("../../p4/tna/include/control/flow_tracker.p4", import.meta.url), "utf8");
  for (const line of [
    "win_lap = (bit<16>)(hdr.bth.psn >> 7);",            // the lap: PSN bits 22:7
    "widx = slot ++ hdr.bth.psn[6:5];",                  // four blocks of 32 per slot
    "win_tag = win_id ++ win_lap;",                      // identity over lap
    "win_behind[31:14]: ternary",                        // 64 << 8 = 2^14: the gate
    "win_behind = win_h8 - psn8;",
    "(0, 1, _, _, 0): cnt_add();",                       // an old PSN not seen: new
    "(0, 1, _, _ WIN_SEEN(_)): cnt_add_retx();",
  ]) expect(p4, line).toContain(line);
  // The bit of each of the 32 PSNs of a block, and the seen test on it.
  for (let k = 0; k < 32; k++) {
    const b = `32w0x${(1 << k >>> 0).toString(16).padStart(8, "0")}`;
    expect(p4).toContain(`${k}: win_bit_a(${b});`);
    expect(p4).toContain(`(2, ${b} &&& ${b}, ${k}): win_seen_a();`);
  }
  expect(p4).toContain("(64, _, _): win_seen_a();");
});

// The one documented difference from v1model (docs/tofino.md): a new epoch
// (a polling rotation, a mode switch) changes the blocks' identity, so what
// the epoch saw counts, and a PSN behind the epoch's first is new (v1model
// takes it as seen). Within the new epoch, a duplicate is retransmitted and
// a PSN 64 behind still is.
test("after a new epoch, Tofino 2 counts what the epoch saw", () => {
  const t2 = new TofinoSlot();
  for (let p = 1000; p < 1100; p++) t2.see(p, 0x0101, p === 1000);
  // The next epoch: the slot's identity changes; its first packet resets the PSN register.
  expect(t2.see(1100, 0x0102, true)).toBe(true);
  expect(t2.see(1090, 0x0102, false)).toBe(true); // seen in the last epoch only: new here
  expect(t2.see(1090, 0x0102, false)).toBe(false); // now seen in this epoch
  expect(t2.see(1100, 0x0102, false)).toBe(false); // the epoch's first, again
  for (let p = 1101; p < 1170; p++) t2.see(p, 0x0102, false);
  expect(t2.see(1100, 0x0102, false)).toBe(false); // 69 behind: retransmitted
});
