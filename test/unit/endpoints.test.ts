// IPv6 endpoints: text (RFC 5952), endpoint keys in the exporter (per switch,
// carried with the digests), on the raw-digest topic, and the controller's
// registry of keys.
import { describe, expect, test } from "vitest";
import { canonicalAddress, ipv6, ipv6Text, parsePrefix } from "../../contract/src/address.js";
import type { IoDigest, MsgDigest } from "../../contract/src/digests.js";
import type { DigestBatch } from "../../contract/src/digest-batch.js";
import type { IoRecordJson, MessageRecordJson, RecordJson, SwitchStatsJson } from "../../contract/src/records.js";
import { MetricsEngine } from "../../exporter/src/metrics.js";
import { batchFromRaw, rawDigestMessages } from "../../exporter/src/kafka/digest-bus.js";
import { RawDigest } from "../../exporter/src/generated/rdma/telemetry/v1/records.js";
import { DEFAULT_TOPICS } from "../../exporter/src/kafka/encode.js";
import { EndpointRegistry } from "../../p4runtime-controller/src/endpoints.js";

const T0 = 1_800_000_000_000_000_000n;
const KEY1 = 0xf0000001;
const KEY2 = 0xf0000002;

function io(over: Partial<IoDigest>): IoDigest {
  return { kind: "io", seq: 0, event: 2, vantage: 1, mode: 1, op: 2, flags: 3, host: KEY1, target: KEY2, host_qp: 0x101, target_qp: 0x801, cmd_psn: 1000, cid: 9, status: 0, bytes: 4096, ts: 1000, e2e_ns: 0, to_data_ns: 0, from_data_ns: 0, host_prep_ns: 0, gen: 0, ...over };
}

function msg(over: Partial<MsgDigest>): MsgDigest {
  return { kind: "msg", seq: 0, mode: 1, flags: 0, src: KEY1, dst: KEY2, dest_qp: 7, first_psn: 100, last_psn: 163, bytes: 262144, packets: 64, retransmitted: 0, ecn_ce: 0, first_ts: 0, fct_ns: 21000, gap_ns: 0, extra_packets: 0, extra_retransmitted: 0, extra_ecn_ce: 0, straddled: 0, cnp: 0, ...over };
}

describe("addresses as text", () => {
  test.each([
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
    ["2001:DB8:0:0:1:0:0:1", "2001:db8::1:0:0:1"], // the first of two equal runs
    ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"], // one zero group is not shortened
    ["2001:db8:0:0:0:0:2:1", "2001:db8::2:1"],
    ["::", "::"],
    ["0:0:0:0:0:0:0:1", "::1"],
    ["fe80::", "fe80::"],
    ["::ffff:10.0.0.1", "::ffff:10.0.0.1"], // IPv4-mapped: the IPv4 part dotted (RFC 5952 §5)
    ["::ffff:a00:1", "::ffff:10.0.0.1"],
    ["10.0.1.1", "10.0.1.1"],
  ])("%s is written %s (RFC 5952)", (given, text) => {
    expect(canonicalAddress(given)).toBe(text);
    if (given.includes(":")) expect(ipv6Text(ipv6(given))).toBe(text);
  });

  test.each(["2001:db8:::1", "2001:db8::1::2", "1:2:3:4:5:6:7:8:9", "2001:db8::g", "12345::"])("%s is refused", (text) => {
    expect(() => ipv6(text)).toThrow(`not an IPv6 address: '${text}'`);
  });

  test("prefixes of both families: canonical text, host bits refused with the prefix meant", () => {
    expect(parsePrefix("2001:DB8:0:1::/64").text).toBe("2001:db8:0:1::/64");
    expect(parsePrefix("::/0").len).toBe(0);
    expect(parsePrefix("10.0.1.0/24").text).toBe("10.0.1.0/24");
    expect(() => parsePrefix("2001:db8::1/64")).toThrow("2001:db8::1/64 has host bits set (did you mean 2001:db8::/64?)");
    expect(() => parsePrefix("10.0.1.0")).toThrow("not an IPv4 prefix like 10.0.0.0/24");
  });
});

describe("endpoint keys in the exporter", () => {
  const A = "2001:db8:0:1::1";
  const B = "2001:db8:0:2::1";

  test("the halves of an I/O meet though each switch gave the addresses other keys; records and aggregates write the addresses", () => {
    const out: RecordJson[] = [];
    const m = new MetricsEngine((r) => out.push(r));
    m.onDigestList("tor-s", T0 + 50_000n, [io({ vantage: 2, ts: 50_000, e2e_ns: 40_000, to_data_ns: 5_000, from_data_ns: 20_000 })], 0, undefined, [{ key: KEY1, address: A }, { key: KEY2, address: B }]);
    // tor-c's controller gave the same addresses the keys the other way round.
    m.onDigestList("tor-c", T0 + 60_000n, [io({ vantage: 1, host: KEY2, target: KEY1, ts: 60_000, e2e_ns: 46_000, host_prep_ns: 3_100 })], 0, undefined, [{ key: KEY2, address: A }, { key: KEY1, address: B }]);
    m.onDigestList("tor-c", T0 + 70_000n, [msg({ seq: 1, src: KEY2, dst: KEY1, first_ts: 70_000 })], 0, undefined, [{ key: KEY2, address: A }, { key: KEY1, address: B }]);
    m.finish();
    const ios = out.filter((r): r is IoRecordJson => r.type === "io");
    expect(ios).toHaveLength(1);
    expect(ios[0]).toMatchObject({ host: A, target: B, rtt_ns: 6_000, c_switch_id: "tor-c", s_switch_id: "tor-s" });
    expect(out.find((r): r is MessageRecordJson => r.type === "message")).toMatchObject({ src: A, dst: B });
    expect(out.find((r) => r.type === "flow_interval")).toMatchObject({ src: A, dst: B });
    expect(out.filter((r) => r.type === "io_interval").map((r) => r.type === "io_interval" && `${r.switch_id} ${r.host}|${r.target}`)).toEqual([`tor-c ${A}|${B}`]);
  });

  test("a digest whose endpoint key has no address is dropped and counted, never written as an address", () => {
    const out: RecordJson[] = [];
    const m = new MetricsEngine((r) => out.push(r));
    m.onDigestList("tor", T0, [io({ vantage: 3, e2e_ns: 40_000 }), msg({ seq: 1, src: 0x0a000101, dst: 0x0a000102 })], 0, undefined, [{ key: KEY1, address: A }]);
    m.finish();
    expect(out.filter((r) => r.type === "io")).toHaveLength(0);
    expect(out.filter((r) => r.type === "message")).toHaveLength(1);
    expect(JSON.stringify(out)).not.toMatch(/240\.0\.0\.|f000/);
    const s = out.find((r): r is SwitchStatsJson => r.type === "switch_stats")!;
    expect(s).toMatchObject({ unknown_endpoint_digests: 1, digests_received: 2, digests_lost: 0 });
  });

  test("raw digests on Kafka: each carries the entries of its keys, keyed by the addresses' text", () => {
    const d = io({ vantage: 2, e2e_ns: 40_000 });
    const values = [d.seq, d.event, d.vantage, d.mode, d.op, d.flags, d.host, d.target, d.host_qp, d.target_qp, d.cmd_psn, d.cid, d.status, d.bytes, d.ts, d.e2e_ns, d.to_data_ns, d.from_data_ns, d.host_prep_ns];
    const batch: DigestBatch = { switchId: "tor-s", listTimestampNs: T0, digests: [d], badDigests: 0, session: 1, raw: { digest: "io_digest_t", samples: [values] }, endpoints: [{ key: KEY1, address: A }, { key: KEY2, address: B }, { key: 0xf0000003, address: "2001:db8::99" }] };
    const [m] = rawDigestMessages(batch, DEFAULT_TOPICS);
    expect(m!.key).toBe(`${A}|${B}`);
    const back = batchFromRaw(RawDigest.decode(m!.value));
    expect(back.endpoints).toEqual([{ key: KEY1, address: A }, { key: KEY2, address: B }]);
    expect(back.digests[0]).toMatchObject({ host: KEY1, target: KEY2 });
  });
});

describe("the controller's endpoint registry", () => {
  test("keys from 240.0.0.1 up, one per address", () => {
    const r = new EndpointRegistry();
    expect(r.assign("2001:db8::1")).toEqual({ key: 0xf0000001, added: true });
    expect(r.assign("2001:db8::2")).toEqual({ key: 0xf0000002, added: true });
    expect(r.assign("2001:db8::1")).toEqual({ key: 0xf0000001, added: false });
  });

  test("what the switch holds wins: keys stay, an address whose key the switch gives another gets a new one", () => {
    const r = new EndpointRegistry();
    r.assign("2001:db8::1"); // 240.0.0.1 here, but the switch says 240.0.0.5
    r.assign("2001:db8::2"); // 240.0.0.2, which the switch gives ::3
    const changed = r.adopt([{ key: 0xf0000005, address: "2001:db8::1" }, { key: 0xf0000002, address: "2001:db8::3" }, { key: 0xf0000005, address: "2001:db8::1" }]);
    expect(r.keyOf("2001:db8::1")).toBe(0xf0000005);
    expect(r.keyOf("2001:db8::3")).toBe(0xf0000002);
    expect(r.keyOf("2001:db8::2")).toBe(0xf0000006);
    expect(changed.sort()).toEqual(["2001:db8::1", "2001:db8::2", "2001:db8::3"]);
    expect(r.addressOf(0xf0000001)).toBeUndefined();
    expect(r.assign("2001:db8::4")!.key).toBe(0xf0000007);
  });
});
