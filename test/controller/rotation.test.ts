import { describe, expect, test } from "vitest";
import { Rotation } from "../../p4runtime-controller/src/rotation.js";

describe("polling rotation", () => {
  test("every known flow is measured within ceil(known / N) periods, round robin", () => {
    const r = new Rotation(3, 2);
    for (let i = 0; i < 10; i++) r.addFlow(i, 100, 7);
    const periods = Math.ceil(10 / 3);
    for (let start = 0; start < 5; start++) {
      const seen = new Set<number>();
      for (let k = 0; k < periods; k++) {
        for (const f of r.current().flows) seen.add(f.src);
        r.advance();
      }
      expect(seen.size).toBe(10);
    }
  });

  test("a window never holds more than N flows, with distinct slots below N", () => {
    const r = new Rotation(4, 4);
    for (let i = 0; i < 9; i++) r.addFlow(1, 2, i);
    for (let k = 0; k < 7; k++) {
      const w = r.advance();
      expect(w.flows.length).toBe(4);
      const slots = w.flows.map((f) => f.slot);
      expect(new Set(slots).size).toBe(4);
      expect(Math.max(...slots)).toBeLessThan(4);
    }
  });

  test("flows that stay in the window keep slot and epoch; newcomers get the new epoch", () => {
    const r = new Rotation(4, 1);
    r.addFlow(1, 2, 1);
    r.addFlow(1, 2, 2);
    const first = r.current().flows.map((f) => ({ ...f }));
    const next = r.advance();
    expect(next.flows).toEqual(first);
    r.addFlow(1, 2, 3);
    const w = r.current();
    expect(w.flows.length).toBe(3);
    const after = r.advance();
    const f3 = after.flows.find((f) => f.destQp === 3)!;
    expect(after.flows.find((f) => f.destQp === 1)!.epoch).toBe(first[0]!.epoch);
    expect(f3.slot).toBe(2);
  });

  test("flows and pairs that join the window as they are learned (while it has room) are handed out once; a rotation's window hands out none", () => {
    const r = new Rotation(2, 1);
    r.addFlow(1, 2, 1);
    r.addFlow(1, 2, 2);
    r.addFlow(1, 2, 3); // no room: known, not watched until a rotation
    r.addPair(1, 2);
    r.addPair(1, 3);
    const j = r.takeJoined();
    expect(j.flows.map((f) => [f.destQp, f.slot])).toEqual([[1, 0], [2, 1]]);
    expect(j.pairs).toEqual([{ host: 1, target: 2, gen: 1 }]);
    expect(r.takeJoined()).toEqual({ flows: [], pairs: [] });
    r.advance();
    expect(r.takeJoined()).toEqual({ flows: [], pairs: [] });
  });

  test("known flows are deduplicated", () => {
    const r = new Rotation(2, 2);
    expect(r.addFlow(1, 2, 3)).toBe(true);
    expect(r.addFlow(1, 2, 3)).toBe(false);
    expect(r.addPair(1, 2)).toBe(true);
    expect(r.addPair(1, 2)).toBe(false);
    expect(r.knownFlows).toBe(1);
  });

  test("a pair gets a new window occurrence each time it joins the window, keeps it while it stays, and never 0", () => {
    const r = new Rotation(1, 2, 254);
    for (const h of [1, 2, 3]) r.addPair(h, 9);
    const gens = () => Object.fromEntries(r.current().pairs.map((p) => [p.host, p.gen]));
    expect(gens()).toEqual({ 1: 254, 2: 254 }); // joined as learned: the first occurrence is the base
    r.advance(); // round robin: 3, 1
    expect(gens()).toEqual({ 3: 254, 1: 254 }); // 1 stays in the window: same occurrence
    r.advance(); // 2, 3: 2 back, its next occurrence
    expect(gens()).toEqual({ 2: 255, 3: 254 });
    r.advance(); // 1, 2
    expect(gens()).toEqual({ 1: 255, 2: 255 });
    r.advance(); // 3, 1
    expect(gens()).toEqual({ 3: 255, 1: 255 });
    r.advance(); // 2, 3: 2 wraps to 1, past 0
    expect(gens()).toEqual({ 2: 1, 3: 255 });
    // Read back from the switch (a takeover): a pair of the window keeps the occurrence the switch has.
    expect(r.adoptGen(2, 9, 77)).toBe(true);
    expect(r.adoptGen(1, 9, 77)).toBe(false); // not in the window
    expect(gens()).toEqual({ 2: 77, 3: 255 });
    r.advance(); // 1, 2: 2 stays with 77
    expect(gens()).toEqual({ 1: 1, 2: 77 });
  });

  test("an occurrence an earlier controller's window left on the switch is never given to that pair", () => {
    const r = new Rotation(1, 1, 40);
    // Taking the switch over: the earlier controller's window held (5, 9) in 40 and (6, 9) in 41.
    r.leftByEarlier(5, 9, 40);
    r.leftByEarlier(6, 9, 41);
    r.addPair(5, 9); // joins as learned: 41, not the base 40
    r.addPair(6, 9);
    r.addPair(7, 9);
    const gens = () => Object.fromEntries(r.current().pairs.map((p) => [p.host, p.gen]));
    expect(gens()).toEqual({ 5: 41 });
    r.advance(); // 6 joins: 40 (the one left for it is 41)
    expect(gens()).toEqual({ 6: 40 });
    r.advance();
    expect(gens()).toEqual({ 7: 40 });
    r.advance(); // 5 again: 42
    expect(gens()).toEqual({ 5: 42 });
    r.advance(); // 6: 41 skipped
    expect(gens()).toEqual({ 6: 42 });
  });
});
