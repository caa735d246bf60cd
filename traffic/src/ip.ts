// Addresses of either family as the generator carries them: an IPv4 address
// is a number (32 bits), an IPv6 address a bigint (128 bits). Text is the
// dotted quad or the RFC 5952 canonical IPv6 form.
import { ipv4, ipv4Text } from "@rdma-telemetry/contract";

export type IpAddress = number | bigint;
export type IpFamily = 4 | 6;

export const familyOf = (a: IpAddress): IpFamily => (typeof a === "bigint" ? 6 : 4);

/** RFC 5952 text of an IPv6 address: lower-case hex, no leading zeros, the longest run of two or more zero groups (the first of equals) as `::`. */
export function ipv6Text(v: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((v >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = (g: number[]) => g.map((x) => x.toString(16)).join(":");
  return best < 0 ? hex(groups) : `${hex(groups.slice(0, best))}::${hex(groups.slice(best + bestLen))}`;
}

/** IPv6 text (any valid form without an embedded IPv4 part) to its 128-bit value; throws on anything else. */
export function ipv6(text: string): bigint {
  const bad = () => new Error(`not an IPv6 address: '${text}'`);
  const halves = text.split("::");
  if (halves.length > 2) throw bad();
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) throw bad();
    return parseInt(g, 16);
  }));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const zeros = 8 - head.length - tail.length;
  if (halves.length === 2 ? zeros < 1 : zeros !== 0) throw bad();
  return [...head, ...new Array<number>(zeros).fill(0), ...tail].reduce((a, g) => (a << 16n) | BigInt(g), 0n);
}

/** An address as records write it. */
export const ipText = (a: IpAddress): string => (typeof a === "bigint" ? ipv6Text(a) : ipv4Text(a));

/** Text of either family to an address. */
export const ipParse = (text: string): IpAddress => (text.includes(":") ? ipv6(text) : ipv4(text));

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
