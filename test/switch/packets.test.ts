// Packets through the compiled program on the software switch, configured by
// the telemetry controller over P4Runtime.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Rig } from "../../app/rig.js";
import { Topology } from "../../app/topology.js";
import type { DigestBatch } from "../../p4runtime-controller/src/telemetry/controller.js";
import type { IoDigest } from "../../exporter/src/digests.js";
import { buildFrame, ipv4, nvmeCqe, nvmeSqe, Opcode, type RoceFrame } from "../../traffic/src/roce.js";
import { P4_NAMES } from "../../generated/p4info/telemetry-names.js";

const topology = Topology.parse({
  ports: [
    { port: 1, role: "compute", prefixes: ["10.0.1.1/32"] },
    { port: 2, role: "compute", prefixes: ["10.0.1.2/32"] },
    { port: 33, role: "storage", prefixes: ["10.0.2.1/32"] },
  ],
});

let rig: Rig;
const batches: DigestBatch[] = [];
let now = 1_800_000_000_000_000_000n;
const H1 = ipv4("10.0.1.1");
const H2 = ipv4("10.0.1.2");
const T1 = ipv4("10.0.2.1");

beforeAll(async () => {
  rig = new Rig({ name: "pkt", topology, maxListSize: 1, maxTimeoutUs: 1 });
  await rig.start((b) => batches.push(b));
});
afterAll(() => rig.stop());

function send(port: number, data: Uint8Array) {
  now += 1000n;
  return rig.sw.process({ port, data, unixNs: now })!;
}

const frame = (f: RoceFrame) => buildFrame(f).data;

async function digests(): Promise<DigestBatch[]> {
  await rig.drain();
  return batches.splice(0);
}

async function counter(index: number): Promise<number> {
  const c = rig.controller;
  const id = c.schema.counters.get(P4_NAMES.counters.stats_telemetry_stats.name).preamble!.id;
  const entities = await c.connection.client.readAll([{ entity: { $case: "counterEntry", value: { counterId: id, index: { index: BigInt(index) }, data: undefined } } }]);
  const e = entities[0]?.entity;
  return e?.$case === "counterEntry" ? Number(e.value.data?.packetCount ?? 0n) : -1;
}

describe("software switch running the telemetry program", () => {
  test("forwards IPv4 by the routes the controller installed; drops what has no route", () => {
    const r = send(1, frame({ src: H1, dst: H2, opcode: Opcode.ACK, destQp: 5, psn: 1, aeth: { syndrome: 0, msn: 0 } }));
    expect(r.output?.port).toBe(2);
    expect(send(1, frame({ src: H1, dst: ipv4("192.168.0.1"), opcode: Opcode.ACK, destQp: 5, psn: 1 })).output).toBeUndefined();
    const arp = Buffer.alloc(60);
    arp.writeUInt16BE(0x0806, 12);
    expect(send(1, arp).output).toBeUndefined();
  });

  test("forwarded packets are byte-for-byte what came in", () => {
    const data = frame({ src: H1, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 9, psn: 77, payload: nvmeSqe("write", 3, 1, 0x1000n, 8192, 0xabcdef01) });
    const r = send(1, data);
    expect(r.output?.port).toBe(33);
    expect(Buffer.compare(r.output!.data, Buffer.from(data))).toBe(0);
  });

  test("malformed RoCEv2 is forwarded, counted, and loses nothing else", async () => {
    await digests();
    const before = await counter(10);
    const good = frame({ src: H1, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 9, psn: 1, payload: nvmeSqe("read", 42, 1, 0n, 4096, 0x5555) });
    const cases: Array<[string, Uint8Array]> = [
      ["truncated in the BTH", good.subarray(0, 14 + 20 + 8 + 6)],
      ["truncated in the SQE", good.subarray(0, 14 + 20 + 8 + 12 + 20)],
      ["short SEND payload", frame({ src: H1, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 9, psn: 2, payload: Buffer.alloc(20, 1) })],
      ["reserved opcode", frame({ src: H1, dst: T1, opcode: 0x1f, destQp: 9, psn: 3, payload: Buffer.alloc(64, 0xff) })],
    ];
    const random = Buffer.from(frame({ src: H1, dst: T1, opcode: 0, destQp: 0, psn: 0, payloadLength: 80 }));
    let x = 99;
    for (let i = 42; i < random.length; i++) random[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
    cases.push(["random bytes on UDP 4791", random]);
    for (const [name, data] of cases) {
      const r = send(1, data);
      expect(r.error, name).toBeUndefined();
      expect(r.output?.port, name).toBe(33);
    }
    // The parser stopped early on the two truncated packets and the short SEND.
    expect((await counter(10)) - before).toBeGreaterThanOrEqual(3);
    // A well-formed command after all that is still measured.
    send(1, good);
    send(33, frame({ src: T1, dst: H1, opcode: Opcode.WRITE_ONLY, destQp: 9, psn: 10, reth: { va: 0n, rkey: 0x5555, length: 4096 }, payloadLength: 4096 }));
    send(33, frame({ src: T1, dst: H1, opcode: Opcode.SEND_ONLY, destQp: 9, psn: 11, payload: nvmeCqe(42, 1, 0, 0) }));
    const got = (await digests()).flatMap((b) => b.digests).filter((d): d is IoDigest => d.kind === "io" && d.cid === 42);
    expect(got.map((d) => d.event)).toEqual([1, 2]);
    expect(got[1]).toMatchObject({ vantage: 3, op: 1, bytes: 4096, flags: 1, e2e_ns: 2000, to_data_ns: 1000, from_data_ns: 1000 });
  });

  test("every digest carries the next sequence number of the switch", async () => {
    await digests();
    for (let cid = 100; cid < 110; cid++) send(1, frame({ src: H1, dst: T1, opcode: Opcode.SEND_ONLY, destQp: 9, psn: cid, payload: nvmeSqe("read", cid, 1, 0n, 512, cid) }));
    const seqs = (await digests()).flatMap((b) => b.digests.map((d) => d.seq));
    expect(seqs.length).toBe(10);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe(seqs[i - 1]! + 1);
  });
});
