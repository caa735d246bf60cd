// Addresses of either family as the generator carries them: an IPv4 address
// is a number (32 bits), an IPv6 address a bigint (128 bits). Text is the
// dotted quad or the RFC 5952 canonical IPv6 form.
// (One formatter for the whole product: @rdma-telemetry/contract's.)
export { familyOf, ipParse, ipText, ipv6, ipv6Text, type IpAddress, type IpFamily } from "@rdma-telemetry/contract";
import type { IpAddress } from "@rdma-telemetry/contract";

/**
 * What the generator derives an endpoint's MAC and HCA GUID from: an IPv4
 * address itself; for 2001:db8:0:S::N, the IPv4 address 10.0.S.N (the same
 * endpoint's in the address plan), so that a dual-stack endpoint has one MAC
 * and one GUID in both families.
 */
export const endpointKey = (a: IpAddress): number =>
  typeof a === "bigint" ? (0x0a000000 + (Number((a >> 64n) & 0xffn) << 8) + Number(a & 0xffffn)) >>> 0 : a >>> 0;

/** The 16 bytes of a RoCEv2 GID: an IPv6 address itself, an IPv4 address in its IPv4-mapped form (::ffff:a.b.c.d). */
export function gidOf(a: IpAddress): Buffer {
  const g = Buffer.alloc(16);
  if (typeof a === "bigint") {
    g.writeBigUInt64BE(a >> 64n, 0);
    g.writeBigUInt64BE(a & 0xffff_ffff_ffff_ffffn, 8);
  } else {
    g.writeUInt16BE(0xffff, 10);
    g.writeUInt32BE(a >>> 0, 12);
  }
  return g;
}
