import { describe, expect, test } from "vitest";
import { generateTraffic, MIN_SNAPLEN } from "../../traffic/src/generator.js";

describe("traffic generator", () => {
  const small = { durationNs: 120_000_000, hosts: 3, targets: 2, ioRate: 500 };

  test("is reproducible from its seed", () => {
    const a = generateTraffic({ ...small, seed: 7 });
    const b = generateTraffic({ ...small, seed: 7 });
    const c = generateTraffic({ ...small, seed: 8 });
    expect(a.ios).toEqual(b.ios);
    expect(a.switches[0]!.packets.map((p) => p.timestampNs)).toEqual(b.switches[0]!.packets.map((p) => p.timestampNs));
    expect(a.ios).not.toEqual(c.ios);
  });

  test("captures are time-ordered and truncated to the snap length, with wire lengths kept", () => {
    const g = generateTraffic({ ...small, seed: 3, snaplen: MIN_SNAPLEN });
    for (const sw of g.switches) {
      for (let i = 1; i < sw.packets.length; i++) expect(sw.packets[i]!.timestampNs >= sw.packets[i - 1]!.timestampNs).toBe(true);
      expect(sw.packets.every((p) => p.data.length <= MIN_SNAPLEN && p.originalLength >= p.data.length)).toBe(true);
      expect(sw.packets.some((p) => p.originalLength > 4000)).toBe(true);
    }
    // By default the captures keep whole packets, as Wireshark needs them.
    const whole = generateTraffic({ ...small, seed: 3 });
    for (const sw of whole.switches) expect(sw.packets.every((p) => p.data.length === p.originalLength)).toBe(true);
  });

  test("ground truth obeys the metric definitions", () => {
    const g = generateTraffic({ ...small, seed: 5, faults: [{ kind: "loss", host: 0, fromNs: 0, toNs: 1e9, probability: 0.02 }] });
    for (const io of g.ios) {
      if (io.e2e_c_ns !== null && io.e2e_s_ns !== null) {
        expect(io.rtt_ns).toBe(io.e2e_c_ns - io.e2e_s_ns);
        expect(io.rtt_ns).toBeGreaterThan(0);
      } else expect(io.rtt_ns).toBeNull();
      if (io.op === "read" || io.in_capsule) expect(io.dpl_ns).toBeNull();
      else if (io.e2e_c_ns !== null) expect(io.dpl_ns).toBeGreaterThan(0);
      if (io.in_capsule && io.e2e_s_ns !== null) expect(io.dal_ns).toBe(io.e2e_s_ns);
      if (io.dal_ns !== null) expect(io.dal_ns).toBeLessThanOrEqual(io.e2e_s_ns!);
      // A complete I/O has its e2e at every vantage that tracked it.
      if (io.record && !io.incomplete) expect([io.e2e_c_ns !== null, io.e2e_s_ns !== null]).toEqual([io.c_seen, io.s_seen]);
    }
    expect(g.messages.some((m) => m.retransmitted > 0 || m.late_retransmitted > 0)).toBe(true);
    for (const m of g.messages) {
      expect(m.fnr).toBeCloseTo(m.retransmitted / m.packets, 12);
      expect(m.packets).toBeGreaterThanOrEqual(Math.ceil(m.bytes / 4096));
    }
  });

  test("NCCL channels: each ring neighbour pair has a connection per channel, with its own QPs and keys, its share of the step's data and of the link", () => {
    const g = generateTraffic({ ...small, seed: 4, gradientChannels: 3, gradientBytes: 96 << 10 });
    const data = g.messages.filter((m) => m.packets > 1 || m.bytes !== 64);
    expect(data.every((m) => m.bytes === 32 << 10)).toBe(true);
    // Three hosts in a ring: three pairs, three data flows each (and a CTS flow back for each).
    const flows = new Map<string, Set<number>>();
    for (const m of g.messages) flows.set(`${m.src}>${m.dst}`, (flows.get(`${m.src}>${m.dst}`) ?? new Set()).add(m.dest_qp));
    expect(flows.size).toBe(6);
    for (const qps of flows.values()) expect(qps.size).toBe(3);
    const dataQps = new Set(data.map((m) => m.dest_qp));
    expect(dataQps.size).toBe(9);
    // A channel's packets leave at a third of the link's rate: 4 KiB each at 100 Gbit/s is 328 ns, so about 983 ns apart.
    const one = data.find((m) => m.packets === 8 && m.retransmitted === 0 && m.late_packets === 0)!;
    expect(one.fct_ns).toBeGreaterThanOrEqual(7 * 983);
  });

  test("the NVMe workload looks like real hosts: queues per CPU with the same CIDs in flight, in-capsule writes, CM set-up, errors, lost responses", () => {
    const g = generateTraffic({ seed: 11, durationNs: 400_000_000, hosts: 4, targets: 2, queuesPerHost: 4, responseLoss: 0.01, errorRate: 0.01 });
    const ios = g.ios;
    // Several queues per host-target pair, each with its own QPs.
    const queues = new Map<string, Set<number>>();
    for (const io of ios) (queues.get(`${io.host}|${io.target}`) ?? queues.set(`${io.host}|${io.target}`, new Set()).get(`${io.host}|${io.target}`)!).add(io.target_qp);
    expect([...queues.values()].every((q) => q.size === 4)).toBe(true);
    // The same CID in flight on two queues of one pair at the same time.
    const open = ios.filter((io) => io.cmdCNs !== null && io.e2e_c_ns !== null);
    const overlapping = open.some((a) => open.some((b) => a !== b && a.host === b.host && a.target === b.target && a.cid === b.cid && a.target_qp !== b.target_qp
      && b.cmdCNs! >= a.cmdCNs! && b.cmdCNs! < a.cmdCNs! + BigInt(a.e2e_c_ns!)));
    expect(overlapping).toBe(true);
    // A CID reused on its queue while the switch still holds the I/O whose response it missed.
    const reused = ios.some((a) => a.incomplete && ios.some((b) => b !== a && b.host === a.host && b.target === a.target && b.target_qp === a.target_qp && b.cid === a.cid
      && b.cmdCNs !== null && a.cmdCNs !== null && b.cmdCNs > a.cmdCNs && b.cmdCNs - a.cmdCNs < 1_000_000_000n));
    expect(reused).toBe(true);
    expect(ios.some((io) => io.in_capsule && io.record)).toBe(true);
    expect(ios.some((io) => io.status !== 0)).toBe(true);
    expect(ios.some((io) => io.incomplete && (io.e2e_c_ns !== null || io.e2e_s_ns !== null))).toBe(true);
    // Controllers connected before the capture: in-capsule writes before the first keyed transfer cannot be attributed.
    expect(ios.some((io) => !io.record)).toBe(true);
    // RDMA CM on QP 1 for the controllers set up during the capture.
    const cm = g.switches[0]!.packets.filter((p) => p.data.length > 54 && p.data[42] === 0x64 && p.data.readUInt32BE(46) === 1);
    expect(cm.length).toBeGreaterThan(0);
    // Each QP's PSNs go out in order.
    for (const sw of g.switches) {
      const last = new Map<string, number>();
      for (const p of sw.packets) {
        if (p.data.length < 54 || p.data.readUInt16BE(36) !== 4791) continue;
        const op = p.data[42]!;
        if (op > 0x10 || (op >= 0x0d && op <= 0x10)) continue; // ACKs and READ RESPONSEs use the peer's PSNs
        const key = `${p.data.readUInt32BE(26)}|${p.data.readUInt32BE(30)}|${p.data.readUInt32BE(46) & 0xffffff}`;
        const psn = p.data.readUInt32BE(50) & 0xffffff;
        const prev = last.get(key);
        if (prev !== undefined) expect(((psn - prev) & 0xffffff) < 0x800000, `PSN order on ${key}`).toBe(true);
        last.set(key, psn);
      }
    }
  });

  test("NVMe/RDMA framed as Linux frames it: CM path, rdma_cm and nvme-rdma private data, Fabrics Connect, nvmet's completions", () => {
    const g = generateTraffic({ seed: 12, durationNs: 200_000_000, hosts: 2, targets: 1, queuesPerHost: 2, queueDepth: 64, connectDuringCapture: 1, layout: "single" });
    const pkts = g.switches[0]!.packets.map((p) => p.data).filter((d) => d.readUInt16BE(36) === 4791);
    const ip = (d: Buffer, o: number) => d.readUInt32BE(o);
    // CM REQ: GIDs are the IPv4-mapped addresses of the packet, rdma_cm's header names IPv4 and both addresses, then the queue id and sizes.
    const reqs = pkts.filter((d) => d[42] === 0x64 && d.readUInt16BE(62 + 16) === 0x0010);
    expect(reqs.length).toBe(2 * 3); // each host's admin queue and two I/O queues
    for (const d of reqs) {
      const m = d.subarray(62 + 24);
      expect(m.subarray(56, 72).toString("hex")).toBe(`00000000000000000000ffff${d.toString("hex", 26, 30)}`);
      expect(m.subarray(72, 88).toString("hex")).toBe(`00000000000000000000ffff${d.toString("hex", 30, 34)}`);
      expect({ mtu: m[50]! >> 4, retry: m[47]! & 7, rnr: m[50]! & 7, flowControl: m[43]! & 1, cmTimeout: m[47]! >> 3 }).toEqual({ mtu: 5, retry: 7, rnr: 7, flowControl: 1, cmTimeout: 20 });
      const priv = m.subarray(140);
      expect({ version: priv[1], src: ip(priv, 16), dst: ip(priv, 32) }).toEqual({ version: 0x40, src: ip(d, 26), dst: ip(d, 30) });
      const qid = priv.readUInt16LE(36 + 2);
      expect({ hrqsize: priv.readUInt16LE(36 + 4), hsqsize: priv.readUInt16LE(36 + 6) }).toEqual(qid === 0 ? { hrqsize: 32, hsqsize: 31 } : { hrqsize: 64, hsqsize: 63 });
    }
    // Fabrics Connect: fctype Connect, the queue's id, KATO on the admin queue only, the host NQN in the connect data.
    const connects = pkts.filter((d) => d[42] === 0x04 && d.length >= 54 + 64 + 1024 && d[54] === 0x7f);
    expect(connects.length).toBe(6);
    for (const d of connects) {
      const sqe = d.subarray(54);
      expect(sqe[4]).toBe(0x01);
      const qid = sqe.readUInt16LE(42);
      expect(sqe.readUInt32LE(48)).toBe(qid === 0 ? 15_000 : 0);
      expect(sqe.toString("ascii", 64 + 512, 64 + 512 + 32)).toBe("nqn.2014-08.org.nvmexpress:uuid:");
      expect(sqe.readUInt16LE(64 + 16)).toBe(qid === 0 ? 0xffff : sqe.readUInt16LE(64 + 16));
    }
    // Completions (16-byte SEND payloads to the host): phase 0, and the SQ head
    // one past the previous completion on that queue (further where the capture missed one).
    const heads = new Map<string, number>();
    const advances: number[] = [];
    let completions = 0;
    for (const d of pkts) {
      if ((d[42] !== 0x04 && d[42] !== 0x17) || d.readUInt16BE(38) - 8 - 12 - 4 - (d[42] === 0x17 ? 4 : 0) !== 16) continue;
      const cqe = d.subarray(d.length - 4 - 16, d.length - 4);
      const key = `${ip(d, 30)}|${d.readUInt32BE(46) & 0xffffff}`;
      expect(cqe.readUInt16LE(14) & 1).toBe(0);
      const prev = heads.get(key);
      if (prev !== undefined) advances.push((cqe.readUInt16LE(8) - prev + 64) % 64); // I/O queues: 64 entries
      heads.set(key, cqe.readUInt16LE(8));
      completions++;
    }
    expect(completions).toBeGreaterThan(100);
    expect(advances.filter((a) => a === 1).length).toBeGreaterThan(advances.length * 0.95);
    expect(advances.every((a) => a >= 1 && a <= 3)).toBe(true);
  });

  test("streams in time order: truths come out while packets are still being made", async () => {
    const { streamTraffic } = await import("../../traffic/src/generator.js");
    const stream = streamTraffic({ seed: 4, durationNs: 400_000_000 });
    let last = 0n;
    let packets = 0;
    let ios = 0;
    let packetsAtFirstIo = -1;
    for (const item of stream) {
      if (item.kind === "packet") {
        expect(item.timestampNs >= last).toBe(true);
        last = item.timestampNs;
        packets++;
      } else if (item.kind === "io") {
        if (ios++ === 0) packetsAtFirstIo = packets;
      }
    }
    expect(ios).toBeGreaterThan(1000);
    // The first I/O's truth left long before the last packet: nothing waits for the end.
    expect(packetsAtFirstIo).toBeGreaterThan(0);
    expect(packetsAtFirstIo).toBeLessThan(packets / 10);
  });
});
