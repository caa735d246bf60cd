// Packets through the telemetry program, configured by the telemetry
// controller over P4Runtime: the same tests on the software switch and, where
// it is installed (see test/bmv2/harness.ts), on BMv2 simple_switch_grpc.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Topology } from "../../app/topology.js";
import { IO_FLAG_DATA_SEEN, IO_FLAG_HIST_UNPAIRED, type IoDigest } from "../../contract/src/digests.js";
import type { SwitchCounters } from "../../p4runtime-controller/src/controller.js";
import { ipv4 } from "../../contract/src/ipv4.js";
import { buildFrame, nvmeCqe, nvmeSqe, Opcode, type RoceFrame } from "../../traffic/src/roce.js";
import { bmv2Target, softwareTarget, type PacketTarget } from "./targets.js";

const topology = Topology.parse({
  ports: [
    { port: 1, role: "compute", prefixes: ["10.0.1.1/32"] },
    { port: 2, role: "compute", prefixes: ["10.0.1.2/32"] },
    { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] },
  ],
});

const H1 = ipv4("10.0.1.1");
const H2 = ipv4("10.0.1.2");
const T1 = ipv4("10.0.2.1");
const frame = (f: RoceFrame) => buildFrame(f).data;

function counterDelta(before: SwitchCounters, after: SwitchCounters): Partial<SwitchCounters> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - before[k as keyof SwitchCounters]]).filter(([, d]) => d !== 0));
}

for (const target of [softwareTarget(), bmv2Target("rtp")]) {
  const title = `${target.name} running the telemetry program${target.skipReason ? ` (SKIPPED: ${target.skipReason})` : ""}`;
  describe.skipIf(target.skipReason !== undefined)(title, () => {
    const t: PacketTarget = target;
    beforeAll(() => t.start(topology), 60_000);
    afterAll(() => t.stop());

    test("forwards IPv4 by the routes the controller installed; drops what has no route", async () => {
      const r = await t.send(1, frame({ src: H1, dst: H2, opcode: Opcode.ACK, destQp: 5, psn: 1, aeth: { syndrome: 0, msn: 0 } }));
      expect(r.out.map((o) => o.port), r.out.map((o) => `${o.port}: ${o.data.toString("hex")}`).join("\n")).toEqual([2]);
      expect((await t.send(1, frame({ src: H1, dst: ipv4("192.168.0.1"), opcode: Opcode.ACK, destQp: 5, psn: 1 }))).out).toEqual([]);
      const arp = Buffer.alloc(60);
      arp.writeUInt16BE(0x0806, 12);
      expect((await t.send(1, arp)).out).toEqual([]);
    });

    test("forwarded packets are byte-for-byte what came in", async () => {
      const data = frame({ src: H1, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 9, psn: 77, payload: nvmeSqe("write", 3, 1, 0x1000n, 8192, 0xabcdef01) });
      const r = await t.send(1, data);
      expect(r.out.map((o) => o.port)).toEqual([33]);
      expect(Buffer.compare(r.out[0]!.data, Buffer.from(data))).toBe(0);
    });

    test("malformed RoCEv2 is forwarded unchanged, counted, and loses nothing else", async () => {
      await t.digests();
      const good = frame({ src: H1, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 9, psn: 1, payload: nvmeSqe("read", 42, 1, 0n, 4096, 0x5555) });
      const random = Buffer.from(frame({ src: H1, dst: T1, opcode: 0, destQp: 0, psn: 0, payloadLength: 80 }));
      let x = 99;
      for (let i = 42; i < random.length; i++) random[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
      // What each packet does to the switch's counters: the parser stops
      // (PacketTooShort) in a truncated header or a SEND too short for a
      // command capsule; a reserved opcode (these random bytes start with
      // 0x6f) ends parsing after the BTH without error, and is counted.
      const cases: Array<[string, Uint8Array, Partial<SwitchCounters>]> = [
        ["truncated in the BTH", good.subarray(0, 14 + 20 + 8 + 6), { parser_errors: 1 }],
        ["truncated in the SQE", good.subarray(0, 14 + 20 + 8 + 12 + 20), { parser_errors: 1, roce_packets: 1 }],
        ["short SEND payload", frame({ src: H1, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 9, psn: 2, payload: Buffer.alloc(20, 1) }), { parser_errors: 1, roce_packets: 1 }],
        ["reserved opcode", frame({ src: H1, dst: T1, opcode: 0x1f, destQp: 9, psn: 3, payload: Buffer.alloc(64, 0xff) }), { roce_packets: 1, unknown_opcodes: 1 }],
        ["random bytes on UDP 4791", random, { roce_packets: 1, unknown_opcodes: 1 }],
      ];
      for (const [name, data, counted] of cases) {
        const before = await t.controller.readCounters();
        const r = await t.send(1, data);
        expect(r.error, name).toBeUndefined();
        expect(r.out.map((o) => o.port), name).toEqual([33]);
        expect(Buffer.compare(r.out[0]!.data, Buffer.from(data)), name).toBe(0);
        expect(counterDelta(before, await t.controller.readCounters()), name).toEqual(counted);
      }
      expect(await t.digests()).toEqual([]);
      // A well-formed I/O after all that is still measured, to the tick of the switch's clock.
      const cmd = await t.send(1, good);
      const data = await t.send(33, frame({ src: T1, dst: H1, opcode: Opcode.WRITE_ONLY, destQp: 9, psn: 10, reth: { va: 0n, rkey: 0x5555, length: 4096 }, payloadLength: 4096 }));
      const rsp = await t.send(33, frame({ src: T1, dst: H1, opcode: Opcode.SEND_ONLY, destQp: 9, psn: 11, payload: nvmeCqe(42, 1, 0, 0) }));
      const got = (await t.digests(2)).filter((d): d is IoDigest => d.kind === "io" && d.cid === 42);
      expect(got.map((d) => d.event)).toEqual([1, 2]);
      expect(got[0]).toMatchObject({ ts: Number(cmd.atNs) });
      expect(got[1]).toMatchObject({
        vantage: 3, op: 1, bytes: 4096, ts: Number(rsp.atNs),
        e2e_ns: Number(rsp.atNs - cmd.atNs), to_data_ns: Number(data.atNs - cmd.atNs), from_data_ns: Number(rsp.atNs - data.atNs),
      });
      // (Whether the pair had its histogram id by the response depends on the controller's timing.)
      expect(got[1]!.flags & ~IO_FLAG_HIST_UNPAIRED).toBe(IO_FLAG_DATA_SEEN);
      expect(got[1]!.e2e_ns).toBeGreaterThan(0);
    });

    test("every event of a packet is counted, as many events as the packet has", async () => {
      await t.digests();
      const steps: Array<[string, number, Uint8Array, Partial<SwitchCounters>]> = [
        // A read command capsule: a RoCEv2 packet, an I/O command and its digest.
        ["command", 2, frame({ src: H2, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 12, psn: 500, payload: nvmeSqe("read", 7, 1, 0n, 4096, 0x7777) }),
          { roce_packets: 1, io_commands: 1, digests: 1 }],
        // The host's second queue to the same target (an NVMe queue per CPU)
        // with the same CID in flight: another I/O, not a reuse.
        ["same CID on another queue", 2, frame({ src: H2, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 13, psn: 700, payload: nvmeSqe("read", 7, 1, 0n, 4096, 0x7790) }),
          { roce_packets: 1, io_commands: 1, digests: 1 }],
        // The same capsule retransmitted: the first one counts.
        ["retransmitted command", 2, frame({ src: H2, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 12, psn: 500, payload: nvmeSqe("read", 7, 1, 0n, 4096, 0x7777) }),
          { roce_packets: 1 }],
        // Its CID again while it is open: its response was lost, and the new
        // command replaces it (one packet, four events).
        ["command reusing the CID", 2, frame({ src: H2, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 12, psn: 501, payload: nvmeSqe("read", 7, 1, 0n, 4096, 0x7778) }),
          { roce_packets: 1, io_commands: 1, io_replaced: 1, digests: 1 }],
        // The read data, keyed by the new command's R_Key: the queue pair is learned from it.
        ["read data", 33, frame({ src: T1, dst: H2, opcode: Opcode.WRITE_ONLY, destQp: 12, psn: 900, reth: { va: 0n, rkey: 0x7778, length: 4096 }, payloadLength: 4096 }),
          { roce_packets: 1, queue_pairs_learned: 1 }],
        // The response: the I/O and its digest.
        ["response", 33, frame({ src: T1, dst: H2, opcode: Opcode.SEND_ONLY, destQp: 12, psn: 901, payload: nvmeCqe(7, 1, 0, 0) }),
          { roce_packets: 1, io_responses: 1, digests: 1 }],
        // A response no command waits for.
        ["response without its command", 33, frame({ src: T1, dst: H2, opcode: Opcode.SEND_ONLY, destQp: 12, psn: 902, payload: nvmeCqe(8, 1, 0, 0) }),
          { roce_packets: 1, io_unmatched_responses: 1 }],
        // The second queue's response: no keyed transfer paired that queue,
        // so the response is reported unpaired, digest and all.
        ["response on a queue never paired", 33, frame({ src: T1, dst: H2, opcode: Opcode.SEND_ONLY, destQp: 13, psn: 950, payload: nvmeCqe(7, 1, 0, 0) }),
          { roce_packets: 1, io_unpaired_responses: 1, digests: 1 }],
      ];
      for (const [name, port, data, counted] of steps) {
        const before = await t.controller.readCounters();
        await t.send(port, data);
        expect(counterDelta(before, await t.controller.readCounters()), name).toEqual(counted);
      }
      // Each I/O digest by event, queue (its target QP; the host QP an unpaired response came to) and CID.
      const ios = (await t.digests(5)).filter((d): d is IoDigest => d.kind === "io");
      expect(ios.map((d) => [d.event, d.target_qp === 0 ? d.host_qp : d.target_qp, d.cid])).toEqual([[1, 12, 7], [1, 13, 7], [1, 12, 7], [2, 12, 7], [3, 13, 7]]);
    });

    test("every digest carries the next sequence number of the switch", async () => {
      await t.digests();
      for (let cid = 100; cid < 110; cid++) await t.send(1, frame({ src: H1, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 9, psn: cid, payload: nvmeSqe("read", cid, 1, 0n, 512, cid) }));
      const seqs = (await t.digests(10)).map((d) => d.seq);
      expect(seqs.length).toBe(10);
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe(seqs[i - 1]! + 1);
    });
  });
}
