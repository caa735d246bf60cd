// Addresses of either family, and the endpoint keys that stand for them in
// the data plane (docs/architecture.md, "Endpoint keys"). An IPv4 address is
// a number (32 bits), an IPv6 address a bigint (128 bits). Text is the dotted
// quad or the RFC 5952 canonical IPv6 form: records, keys, labels and logs
// write addresses with addressText() and nothing else.
import { ipv4, ipv4Text } from "./ipv4.js";

export type IpAddress = number | bigint;
export type IpFamily = 4 | 6;

export const familyOf = (a: IpAddress): IpFamily => (typeof a === "bigint" ? 6 : 4);

/**
 * RFC 5952 text of an IPv6 address: lower-case hex, no leading zeros, the
 * longest run of two or more zero groups (the first of equals) as `::`; an
 * IPv4-mapped address (::ffff:0:0/96) with its IPv4 part dotted (§5).
 */
export function ipv6Text(v: bigint): string {
  if (v >> 32n === 0xffffn) return `::ffff:${ipv4Text(Number(v & 0xffffffffn))}`;
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

/** IPv6 text (any valid form, also with a trailing dotted quad) to its 128-bit value; throws on anything else. */
export function ipv6(text: string): bigint {
  const bad = () => new Error(`not an IPv6 address: '${text}'`);
  let s = text;
  // A trailing dotted quad (::ffff:10.0.0.1) is the last two groups.
  const dot = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dot) {
    let v: number;
    try {
      v = ipv4(dot[2]!);
    } catch {
      throw bad();
    }
    s = `${dot[1]!}${(v >>> 16).toString(16)}:${(v & 0xffff).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) throw bad();
  const parse = (p: string) => (p === "" ? [] : p.split(":").map((g) => {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) throw bad();
    return parseInt(g, 16);
  }));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const zeros = 8 - head.length - tail.length;
  if (halves.length === 2 ? zeros < 1 : zeros !== 0) throw bad();
  return [...head, ...new Array<number>(zeros).fill(0), ...tail].reduce((a, g) => (a << 16n) | BigInt(g), 0n);
}

/** An address as text (dotted quad, or RFC 5952 IPv6). */
export const ipText = (a: IpAddress): string => (typeof a === "bigint" ? ipv6Text(a) : ipv4Text(a));

/** Text of either family to an address; throws on anything else. */
export const ipParse = (text: string): IpAddress => (text.includes(":") ? ipv6(text) : ipv4(text));

/** The canonical text of an address given as text of either family (RFC 5952 for IPv6); throws on anything else. */
export const canonicalAddress = (text: string): string => ipText(ipParse(text));

/** An IPv6 address as 16 big-endian bytes. */
export function ipv6Bytes(v: bigint): Uint8Array {
  const b = new Uint8Array(16);
  for (let i = 15; i >= 0; i--, v >>= 8n) b[i] = Number(v & 0xffn);
  return b;
}

/** 16 (or fewer, big-endian) bytes to an IPv6 address. */
export function ipv6FromBytes(b: Uint8Array): bigint {
  let v = 0n;
  for (const x of b) v = (v << 8n) | BigInt(x);
  return v;
}

/** A prefix of either family, parsed: its network address, length and family. */
export interface IpPrefix {
  readonly family: IpFamily;
  readonly addr: IpAddress;
  readonly len: number;
  /** canonical text: network address (dotted quad or RFC 5952) / length */
  readonly text: string;
}

/**
 * Parses "10.0.0.0/24" or "2001:db8::/32". Throws an Error whose message says
 * what is wrong (not a prefix, length out of range, host bits set: with the
 * prefix meant).
 */
export function parsePrefix(text: string): IpPrefix {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
  const v6 = text.includes(":");
  const what = v6 ? "an IPv6 prefix like 2001:db8::/64" : "an IPv4 prefix like 10.0.0.0/24";
  if (!m) throw new Error(`not ${what} (got ${JSON.stringify(text)})`);
  let addr: IpAddress;
  try {
    addr = ipParse(m[1]!);
  } catch {
    throw new Error(`not ${what} (got ${JSON.stringify(text)})`);
  }
  const len = Number(m[2]);
  const bits = v6 ? 128 : 32;
  if (len > bits) throw new Error(`${text}: an ${v6 ? "IPv6" : "IPv4"} prefix is at most /${bits}`);
  let net: IpAddress;
  if (typeof addr === "bigint") {
    const mask = len === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - len)) - 1n);
    net = addr & mask;
  } else {
    const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
    net = (addr & mask) >>> 0;
  }
  const canonical = `${ipText(net)}/${len}`;
  if (net !== addr) throw new Error(`${text} has host bits set (did you mean ${canonical}?)`);
  return { family: v6 ? 6 : 4, addr: net, len, text: canonical };
}

/** Whether `a` lies in `p`. */
export function prefixContains(p: IpPrefix, a: IpAddress): boolean {
  if (typeof a !== typeof p.addr) return false;
  if (typeof a === "bigint") {
    const mask = p.len === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - p.len)) - 1n);
    return (a & mask) === p.addr;
  }
  const mask = p.len === 0 ? 0 : (0xffffffff << (32 - p.len)) >>> 0;
  return ((a & mask) >>> 0) === p.addr;
}

// ---------------------------------------------------------------------------
// Endpoint keys. Every address field of the digests holds a 32-bit endpoint
// key: an IPv4 address is its own key; an IPv6 address has a key in
// 240.0.0.0/4 (RFC 1112's reserved class E, never a host address), given by
// the controller of that switch and written to its endpoint tables. A key is
// per switch: the digests of a switch travel with the entries of the keys
// they use (DigestBatch.endpoints), and the exporter writes the address.

/** The first endpoint key the controller gives out (240.0.0.1), and the last (255.255.255.255). */
export const FIRST_ENDPOINT_KEY = 0xf0000001;
export const LAST_ENDPOINT_KEY = 0xffffffff;

/** Whether a 32-bit address field holds an endpoint key of an IPv6 address (240.0.0.0/4), not an IPv4 address. */
export const isEndpointKey = (v: number): boolean => v >>> 28 === 0xf;

/** One endpoint: a key and the IPv6 address (RFC 5952 text) it stands for. */
export interface EndpointEntry {
  readonly key: number;
  readonly address: string;
}

/**
 * The text of a 32-bit address field: the dotted quad of an IPv4 address, or
 * the address an endpoint key stands for (`names`); undefined for a key with
 * no entry (never printed as an address: the record would say more than the
 * switch saw).
 */
export function endpointText(v: number, names: ReadonlyMap<number, string> | undefined): string | undefined {
  if (!isEndpointKey(v)) return ipv4Text(v);
  return names?.get(v);
}
