// RoCEv2 over IPv6 and mixed families from the generator: frames that parse,
// ICRCs as IBTA Annex A17 computes them (checked against a ConnectX-4 Lx
// capture and against an independent rendering of the rule), the RDMA CM as
// Linux's rdma_cm writes it for AF_INET6, and a ground truth that means the
// same as over IPv4.
import { crc32 } from "node:zlib";
import { describe, expect, test } from "vitest";
import { addressPlan, generateTraffic } from "../../traffic/src/generator.js";
import { ipText, ipv6, ipv6Text } from "../../traffic/src/ip.js";
import { buildFrame, CmAttr, flowLabelUdpPort, Opcode, parseRoce, qpFlowLabel, rdmaCmFlowLabel, roceIcrc } from "../../traffic/src/roce.js";

/** The ICRC rule written out on its own (IBTA A17.8): 1s over the LRH and every variant field, CRC-32 over the rest, least significant byte first. */
function icrcOf(frame: Buffer): string {
  const f = parseRoce(frame)!;
  const pseudo = Buffer.concat([Buffer.alloc(8, 0xff), Buffer.from(frame.subarray(f.ipOffset, f.icrcOffset))]);
  const ip = 8;
  if (f.family === 4) {
    pseudo[ip + 1] = 0xff; // TOS
    pseudo[ip + 8] = 0xff; // TTL
    pseudo.fill(0xff, ip + 10, ip + 12); // header checksum
  } else {
    pseudo[ip] = 0x6f; // traffic class (high nibble)
    pseudo.fill(0xff, ip + 1, ip + 4); // traffic class (low nibble), flow label
    pseudo[ip + 7] = 0xff; // hop limit
  }
  const udp = ip + (f.bthOffset - 8 - f.ipOffset);
  pseudo.fill(0xff, udp + 6, udp + 8); // UDP checksum
  pseudo[udp + 8 + 4] = 0xff; // BTH resv8a
  const b = Buffer.alloc(4);
  b.writeUInt32LE(crc32(pseudo));
  return b.toString("hex");
}

describe("RoCEv2 frames of either family", () => {
  test("the ICRC equals the one a ConnectX-4 Lx sent (a CNP over IPv4, as scapy's RoCE tests hold it)", () => {
    const cnp = Buffer.from(
      "e41d2dab2bc27cfe90643b32080045c2003c718c400040119161" + "0a0011010a001201" + "000012b700280000" + "8100ffff40000118" + "00000000" + "00000000000000000000000000000000" + "82fd002a",
      "hex",
    );
    const f = parseRoce(cnp)!;
    expect({ opcode: f.opcode, destQp: f.destQp, icrcOffset: f.icrcOffset }).toEqual({ opcode: Opcode.CNP, destQp: 0x118, icrcOffset: cnp.length - 4 });
    const b = Buffer.alloc(4);
    b.writeUInt32LE(roceIcrc(cnp.subarray(f.ipOffset), f.icrcOffset! - f.ipOffset));
    expect(b.toString("hex")).toBe("82fd002a");
    expect(icrcOf(cnp)).toBe("82fd002a");
  });

  test("IPv6 frames, with and without 802.1Q: headers as RoCEv2 NICs send them; the ICRC ignores the variant fields and covers the rest", () => {
    const src = ipv6("2001:db8:0:1::1");
    const dst = ipv6("2001:db8:0:2::1");
    for (const vlan of [undefined, 100]) {
      const base = { src, dst, opcode: Opcode.WRITE_FIRST, destQp: 0x4009, psn: 0xabcdef, reth: { va: 0x1000n, rkey: 0x55, length: 8192 }, payloadLength: 4096, flowLabel: 0x12345, srcPort: flowLabelUdpPort(0x12345), ecn: 2, vlan };
      const d = buildFrame(base).data;
      const f = parseRoce(d)!;
      expect(f).toMatchObject({ vlan, family: 6, src, dst, trafficClass: (26 << 2) | 2, flowLabel: 0x12345, hopLimit: 64, udpSrcPort: flowLabelUdpPort(0x12345), opcode: Opcode.WRITE_FIRST, destQp: 0x4009, psn: 0xabcdef });
      expect(d.readUInt16BE(f.ipOffset - 2)).toBe(0x86dd);
      expect(d.readUInt16BE(f.ipOffset + 4)).toBe(8 + 12 + 16 + 4096 + 4); // payload length: UDP, BTH, RETH, data, ICRC
      expect(d.readUInt16BE(f.bthOffset - 2)).toBe(0); // UDP checksum 0 (the ICRC covers the packet)
      expect(d.length).toBe((vlan ? 18 : 14) + 40 + 8 + 12 + 16 + 4096 + 4);
      expect(d.toString("hex", f.icrcOffset)).toBe(icrcOf(d));
      // A CE mark, another flow label or hop limit on the way leaves the ICRC as it was; the data does not.
      const marked = Buffer.from(d);
      marked.writeUInt32BE(((6 << 28) | (((26 << 2) | 3) << 20) | 0xfffff) >>> 0, f.ipOffset);
      marked[f.ipOffset + 7] = 63;
      expect(icrcOf(marked)).toBe(d.toString("hex", f.icrcOffset));
      const other = buildFrame({ ...base, psn: 1 }).data;
      expect(other.toString("hex", f.icrcOffset)).not.toBe(d.toString("hex", f.icrcOffset));
    }
  });

  test("addresses print in RFC 5952 form", () => {
    expect(ipv6Text(ipv6("2001:0db8:0000:0000:0000:0000:0000:0001"))).toBe("2001:db8::1");
    expect(ipv6Text(ipv6("2001:db8:0:1:0:0:0:1"))).toBe("2001:db8:0:1::1");
    expect(ipv6Text(ipv6("2001:db8:0:0:1:0:0:1"))).toBe("2001:db8::1:0:0:1"); // the first of two equal runs
    expect(ipv6Text(ipv6("2001:db8:0:1:1:1:1:1"))).toBe("2001:db8:0:1:1:1:1:1"); // one zero group stays
    expect(ipv6Text(ipv6("::"))).toBe("::");
    expect(ipv6Text(ipv6("FE80::A"))).toBe("fe80::a");
    expect(() => ipv6("2001:db8::1::2")).toThrow(/not an IPv6 address/);
    expect(ipv6Text(ipv6("::ffff:10.0.0.1"))).toBe("::ffff:10.0.0.1"); // IPv4-mapped, as RFC 5952 §5 writes it
    expect(() => ipv6("::ffff:10.0.0.300")).toThrow(/not an IPv6 address/);
  });

  test("Linux's flow label and UDP source port rules", () => {
    // rdma_cm: (source port × 31 + 4420) in 20 bits; a QP without one: the QPNs' product folded.
    expect(rdmaCmFlowLabel(0x8123)).toBe((0x8123 * 31 + 4420) & 0xfffff);
    expect(qpFlowLabel(0x11, 0x22)).toBe(0x242);
    expect(qpFlowLabel(0xffffff, 0xffffff)).toBe(Number((((0xfffffe000001n ^ (0xfffffe000001n >> 20n)) ^ ((0xfffffe000001n ^ (0xfffffe000001n >> 20n)) >> 40n)) & 0xfffffn)));
    expect(flowLabelUdpPort(0xfc000 | 0x3)).toBe(0xc000 | (0x3 ^ 0x3f));
  });
});

describe("the generator over IPv6 and mixed families", () => {
  const small = { durationNs: 120_000_000, hosts: 4, targets: 2, queuesPerHost: 2, ioRate: 800, connectDuringCapture: 1, seed: 9 };

  test("--ip 6: every frame parses as RoCEv2 over IPv6 with a right ICRC; the truth is the IPv4 run's with the addresses in RFC 5952 text", () => {
    const v4 = generateTraffic(small);
    const v6 = generateTraffic({ ...small, ip: 6 });
    const plan = addressPlan({ ip: 6, layout: "two-tor" });
    const hosts = new Set(Array.from({ length: 4 }, (_, i) => ipText(plan.host(i))));
    const targets = new Set(Array.from({ length: 2 }, (_, j) => ipText(plan.target(j, 6))));
    expect([...hosts]).toEqual(["2001:db8:0:1::1", "2001:db8:0:1::2", "2001:db8:0:1::3", "2001:db8:0:1::4"]);
    for (const sw of v6.switches) {
      for (const p of sw.packets) {
        const f = parseRoce(p.data);
        expect(f?.family).toBe(6);
        expect(p.data.toString("hex", f!.icrcOffset)).toBe(icrcOf(p.data));
      }
      for (const port of sw.topology.ports) expect(port.prefixes.every((x) => x.endsWith("/128") || x === "::/0")).toBe(true);
    }
    // Same packets at the same times; the same figures for every I/O and message.
    expect(v6.switches.map((s) => s.packets.map((p) => p.timestampNs))).toEqual(v4.switches.map((s) => s.packets.map((p) => p.timestampNs)));
    const v4Text = (t: string) => t.replace(/^2001:db8:0:1::(\w+)$/, (_m, n: string) => `10.0.1.${parseInt(n, 16)}`).replace(/^2001:db8:0:2::(\w+)$/, (_m, n: string) => `10.0.2.${parseInt(n, 16)}`);
    expect(v6.ios.every((t) => hosts.has(t.host) && targets.has(t.target))).toBe(true);
    expect(v6.ios.map((t) => ({ ...t, host: v4Text(t.host), target: v4Text(t.target) }))).toEqual(v4.ios);
    expect(v6.messages.map((m) => ({ ...m, src: v4Text(m.src), dst: v4Text(m.dst) }))).toEqual(v4.messages);
    expect(v6.cnps).toBe(v4.cnps);
  });

  test("--ip 6: the RDMA CM exchange as rdma_cm writes it for AF_INET6, and every packet of a queue carries its path's flow label", () => {
    const g = generateTraffic({ ...small, ip: 6 });
    const pkts = g.switches[0]!.packets.map((p) => ({ d: p.data, f: parseRoce(p.data)! }));
    const reqs = pkts.filter(({ d, f }) => f.opcode === Opcode.UD_SEND_ONLY && f.destQp === 1 && d.readUInt16BE(f.bthOffset + 20 + 16) === CmAttr.REQ);
    expect(reqs.length).toBe(4 * 2 * 3);
    for (const { d, f } of reqs) {
      const m = d.subarray(f.bthOffset + 20 + 24);
      // GIDs: the packet's own addresses, not an IPv4-mapped form.
      expect(m.subarray(56, 72).toString("hex")).toBe(d.toString("hex", f.ipOffset + 8, f.ipOffset + 24));
      expect(m.subarray(72, 88).toString("hex")).toBe(d.toString("hex", f.ipOffset + 24, f.ipOffset + 40));
      const priv = m.subarray(140);
      const cmPort = priv.readUInt16BE(2);
      expect({ ipVersion: priv[1]! >> 4, src: priv.toString("hex", 4, 20), dst: priv.toString("hex", 20, 36) })
        .toEqual({ ipVersion: 6, src: m.toString("hex", 56, 72), dst: m.toString("hex", 72, 88) });
      // The path's flow label (in the REQ, on the wire) is rdma_cm's; the UDP source port follows from it.
      const fl = rdmaCmFlowLabel(cmPort);
      expect({ req: m.readUInt32BE(88) >>> 12, wire: f.flowLabel, port: f.udpSrcPort, tc: m[92] }).toEqual({ req: fl, wire: fl, port: flowLabelUdpPort(fl), tc: 26 << 2 });
    }
    // Every packet of an NVMe queue carries one flow label both ways; the gradient flows' is 0, their port from the QPNs.
    const byQueue = new Map<string, Set<number>>();
    for (const { f } of pkts) {
      const [a, b] = [ipText(f.src), ipText(f.dst)].sort();
      if (f.destQp >= 0x2000 && f.destQp < 0x4000) {
        expect(f.flowLabel).toBe(0);
        // Data and ACKs to the receiver's QP (0x2000 + host), CTS and ACKs to the sender's (0x3000 + host): one connection.
        const other = f.destQp < 0x3000 ? f.destQp + 0x1000 : f.destQp - 0x1000;
        if (f.opcode !== Opcode.CNP) expect(f.udpSrcPort).toBe(flowLabelUdpPort(qpFlowLabel(other, f.destQp)));
        continue;
      }
      const k = `${a}|${b}`;
      (byQueue.get(k) ?? byQueue.set(k, new Set()).get(k)!).add(f.flowLabel);
    }
    expect([...byQueue.values()].every((s) => [...s].every((x) => x !== 0))).toBe(true);
  });

  test("--ip mixed: even-numbered hosts IPv4, odd-numbered IPv6, targets both, a gradient ring per family", () => {
    const g = generateTraffic({ ...small, ip: "mixed" });
    const fam = (t: string) => (t.includes(":") ? 6 : 4);
    const hostIndex = (t: string) => (fam(t) === 6 ? parseInt(t.split("::")[1]!, 16) : Number(t.split(".")[3])) - 1;
    for (const io of g.ios) {
      expect(fam(io.host)).toBe(hostIndex(io.host) % 2 === 0 ? 4 : 6);
      expect(fam(io.target)).toBe(fam(io.host));
    }
    expect(new Set(g.ios.map((t) => fam(t.host)))).toEqual(new Set([4, 6]));
    expect(new Set(g.messages.map((m) => `${m.src}>${m.dst}`))).toEqual(new Set(["10.0.1.1>10.0.1.3", "10.0.1.3>10.0.1.1", "2001:db8:0:1::2>2001:db8:0:1::4", "2001:db8:0:1::4>2001:db8:0:1::2"]));
    const storage = g.switches[1]!.topology.ports.filter((p) => p.role === "storage");
    expect(storage.map((p) => p.prefixes)).toEqual([["10.0.2.1/32", "2001:db8:0:2::1/128"], ["10.0.2.2/32", "2001:db8:0:2::2/128"]]);
    expect(g.switches[0]!.topology.ports.find((p) => p.role === "fabric")!.prefixes).toEqual(["0.0.0.0/0", "::/0"]);
    for (const sw of g.switches) for (const p of sw.packets) expect(p.data.toString("hex", parseRoce(p.data)!.icrcOffset)).toBe(icrcOf(p.data));
    // A dual-stack target is one NIC: one MAC in both families (and one HCA GUID in its CM messages).
    const macs = new Map<string, Set<string>>();
    for (const p of g.switches[1]!.packets) {
      const f = parseRoce(p.data)!;
      const target = ipText(f.src).replace(/^2001:db8:0:2::/, "10.0.2.");
      if (target.startsWith("10.0.2.")) (macs.get(target) ?? macs.set(target, new Set()).get(target)!).add(p.data.toString("hex", 6, 12));
    }
    expect([...macs.values()].map((s) => s.size)).toEqual([1, 1]);
  });
});
