// Typed views of the telemetry program's digests (p4/include/header.p4).
// A digest arrives as one value per struct member, in declaration order,
// whichever way it came: from the software switch, or over P4Runtime as a
// P4Data struct of bitstrings. Decoding checks every member's name and width.
import { ContractError } from "./errors.js";
import { P4_COMPACT_DIGESTS, P4_CONSTANTS, P4_NAMES } from "./generated/telemetry-names.js";

export interface DigestFieldSpec {
  name: string;
  bitwidth: number;
}

export interface DigestSchema {
  name: string;
  fields: readonly DigestFieldSpec[];
}

/** A digest sample that does not decode by the contract (wrong width, unknown digest, bad value). */
export class BadDigestError extends ContractError {
  override readonly name = "BadDigestError";
  constructor(message: string) {
    super(message, "BAD_DIGEST");
  }
}

// The program's codes, generated from p4/include/define.p4.
const C = P4_CONSTANTS;
export const IO_EVENT_CMD = C.IO_EVENT_CMD;
export const IO_EVENT_RSP = C.IO_EVENT_RSP;
/** a response on a queue whose QP pairing is unknown: its I/O is untracked */
export const IO_EVENT_UNPAIRED_RSP = C.IO_EVENT_UNPAIRED_RSP;
/** a queue pairing a colliding one took from the switch (host, target, host_qp, target_qp), no I/O */
export const IO_EVENT_QUEUE_PAIR = C.IO_EVENT_QUEUE_PAIR;
export const VANTAGE_C = C.VANTAGE_C;
export const VANTAGE_S = C.VANTAGE_S;
export const IO_FLAG_DATA_SEEN = C.IO_FLAG_DATA_SEEN;
export const IO_FLAG_RR_SEEN = C.IO_FLAG_RR_SEEN;
export const IO_FLAG_IN_CAPSULE = C.IO_FLAG_IN_CAPSULE;
/** CMD: the command closed an open I/O with the same key (its response was lost) */
export const IO_FLAG_REPLACED = C.IO_FLAG_REPLACED;
/** RSP: the I/O's own last data packet was not seen (its state taken by a colliding key): no DAL */
export const IO_FLAG_LAST_LOST = C.IO_FLAG_LAST_LOST;
export const IO_OP_READ = C.IO_OP_READ;
export const IO_OP_WRITE = C.IO_OP_WRITE;
export const MSG_FLAG_GAP_VALID = C.MSG_FLAG_GAP_VALID;
/** RSP: the I/O's pair had no histogram id: its figures counted in the overflow histograms (not in the compact layout) */
export const IO_FLAG_HIST_UNPAIRED = C.IO_FLAG_HIST_UNPAIRED;
/** The message's flow had no histogram id: its FCT counted in the overflow histogram (not in the compact layout) */
export const MSG_FLAG_HIST_UNFLOWED = C.MSG_FLAG_HIST_UNFLOWED;
export const LEARN_FLOW = C.LEARN_FLOW;
export const LEARN_IO_PAIR = C.LEARN_IO_PAIR;
/** an IPv6 address the switch's endpoint tables lack (`addr`): the controller gives it an endpoint key */
export const LEARN_ENDPOINT = C.LEARN_ENDPOINT;
export const MODE_OFF = C.MODE_OFF;
export const MODE_FULL = C.MODE_FULL;
export const MODE_POLLING = C.MODE_POLLING;
export const MODE_SUMMARY = C.MODE_SUMMARY;

export interface IoDigest {
  kind: "io";
  seq: number;
  event: number;
  vantage: number;
  mode: number;
  op: number;
  flags: number;
  host: number;
  target: number;
  host_qp: number;
  target_qp: number;
  cmd_psn: number;
  cid: number;
  status: number;
  bytes: number;
  ts: number;
  e2e_ns: number;
  to_data_ns: number;
  from_data_ns: number;
  host_prep_ns: number;
  /** polling and summary mode: the pair's window occurrence the event's packet was seen in (io_watchlist's `gen`; 0 unwatched, in full mode, and from a switch that does not send it) */
  gen: number;
}

export interface MsgDigest {
  kind: "msg";
  seq: number;
  mode: number;
  flags: number;
  src: number;
  dst: number;
  dest_qp: number;
  first_psn: number;
  last_psn: number;
  bytes: number;
  packets: number;
  retransmitted: number;
  ecn_ce: number;
  first_ts: number;
  fct_ns: number;
  gap_ns: number;
  extra_packets: number;
  extra_retransmitted: number;
  extra_ecn_ce: number;
  straddled: number;
  cnp: number;
}

export interface LearnDigest {
  kind: "learn";
  seq: number;
  learn: number;
  src: number;
  dst: number;
  dest_qp: number;
  /** LEARN_ENDPOINT: the IPv6 address (128 bits) missing from the endpoint tables; 0n for the other kinds */
  addr: bigint;
}

export type TelemetryDigest = IoDigest | MsgDigest | LearnDigest;

/**
 * A message digest that carries flow packets only, no message (SPEC §4: every
 * packet of a flow counts in the interval it arrives in, also after the
 * flow's last message): packets counted outside any message (extra_*) as
 * they arrive. Marked by packets and bytes 0, which no message has (a message
 * has at least one packet; one of 0 bytes has exactly one), in both digest
 * layouts (the Tofino build also sends fct_ns 0). Sent by both builds
 * (p4/include/control/flow_tracker.p4, p4/tna/include/control/flow_tracker.p4).
 */
export function isFlowOnly(d: MsgDigest): boolean {
  return d.packets === 0 && d.bytes === 0;
}

/** Which typed view each digest of the program gets. */
const KINDS: Readonly<Record<keyof typeof P4_NAMES.digests, TelemetryDigest["kind"]>> = { io_digest_t: "io", msg_digest_t: "msg", learn_digest_t: "learn" };

/**
 * The members each digest has, with their widths: the exporter's contract
 * with the P4 program, generated from its P4Info (the typed views above
 * must name the same members; the tests check they do).
 */
export const EXPECTED: Readonly<Record<string, { kind: TelemetryDigest["kind"]; fields: Readonly<Record<string, number>> }>> = Object.fromEntries(
  Object.entries(P4_NAMES.digests).map(([name, d]) => [name, { kind: KINDS[name as keyof typeof KINDS], fields: Object.fromEntries(d.fields.map((f) => [f.name, f.bitwidth])) }]),
);

/** Checks a schema (from the P4Info) against what the exporter expects; returns problems. */
export function checkSchema(schema: DigestSchema): string[] {
  const want = EXPECTED[schema.name];
  if (!want) return [`unknown digest '${schema.name}' (expected one of ${Object.keys(EXPECTED).join(", ")})`];
  const problems: string[] = [];
  const have = new Map(schema.fields.map((f) => [f.name, f.bitwidth]));
  for (const [name, width] of Object.entries(want.fields)) {
    const w = have.get(name);
    if (w === undefined) problems.push(`digest '${schema.name}' lacks member '${name}'`);
    else if (w !== width) problems.push(`digest '${schema.name}' member '${name}' is ${w} bits, expected ${width}`);
  }
  return problems;
}

/** A number from a value of at most 48 bits (bigint, number, or big-endian bytes). */
function toNumber(v: unknown, field: string, digest: string, width: number): number {
  if (v instanceof Uint8Array && v.length <= 6) {
    // Up to 48 bits (every member of the telemetry digests): number arithmetic.
    let x = 0;
    for (let i = 0; i < v.length; i++) x = x * 256 + v[i]!;
    if (x >= 2 ** width) throw new BadDigestError(`digest '${digest}' member '${field}': value ${x} does not fit in ${width} bits`);
    return x;
  }
  if (typeof v === "number" && Number.isInteger(v) && v >= 0 && v < 2 ** width) return v;
  let n: bigint;
  if (typeof v === "number") n = BigInt(v);
  else if (typeof v === "bigint") n = v;
  else if (v instanceof Uint8Array) {
    n = 0n;
    for (const b of v) n = (n << 8n) | BigInt(b);
  } else throw new BadDigestError(`digest '${digest}' member '${field}': unexpected value of type ${typeof v}`);
  if (n < 0n || n >= 1n << BigInt(width)) throw new BadDigestError(`digest '${digest}' member '${field}': value ${n} does not fit in ${width} bits`);
  return Number(n);
}

/** A bigint from a value of more than 48 bits (an IPv6 address). */
function toBigint(v: unknown, field: string, digest: string, width: number): bigint {
  let n: bigint;
  if (typeof v === "bigint") n = v;
  else if (typeof v === "number" && Number.isSafeInteger(v)) n = BigInt(v);
  else if (v instanceof Uint8Array) {
    n = 0n;
    for (const b of v) n = (n << 8n) | BigInt(b);
  } else throw new BadDigestError(`digest '${digest}' member '${field}': unexpected value ${typeof v === "number" ? v : `of type ${typeof v}`}`);
  if (n < 0n || n >= 1n << BigInt(width)) throw new BadDigestError(`digest '${digest}' member '${field}': value ${n} does not fit in ${width} bits`);
  return n;
}

/** The canonical bitstring of a wide member (big-endian, no leading zeros, at least one byte). */
function bigintBytes(n: bigint): Uint8Array {
  const out: number[] = [];
  do {
    out.unshift(Number(n & 0xffn));
    n >>= 8n;
  } while (n > 0n);
  return Uint8Array.from(out);
}

/**
 * Decodes one digest from its values in member order. Throws BadDigestError
 * naming the digest and the member that was wrong.
 */
export function decodeDigest(name: string, values: readonly unknown[]): TelemetryDigest {
  const decode = decoder(name, "full");
  if (!decode) throw new BadDigestError(`unknown digest '${name}'`);
  return decode(values, undefined);
}

// ---------------------------------------------------------------------------
// The compact layout (Tofino's 48-byte learn quantum; p4/include/header.p4).
// The controller decodes it into the full layout above, so that everything
// downstream of the controller (records, raw digests, the journal) sees one
// layout only.

/** The digest layouts the controller reads: the full one (BMv2), or the compact one (Tofino). */
export type DigestLayout = "full" | "compact";

/**
 * The compact layout's members and widths, generated from the Tofino builds'
 * P4Info (p4/build/tna/, p4/build/t2na/).
 */
export const EXPECTED_COMPACT: Readonly<Record<string, { kind: TelemetryDigest["kind"]; fields: Readonly<Record<string, number>> }>> = Object.fromEntries(
  Object.entries(P4_COMPACT_DIGESTS).map(([name, d]) => [name, { kind: KINDS[name as keyof typeof KINDS], fields: Object.fromEntries(d.fields.map((f) => [f.name, f.bitwidth])) }]),
);

const LAYOUTS: Readonly<Record<DigestLayout, typeof EXPECTED>> = { full: EXPECTED, compact: EXPECTED_COMPACT };
const LAYOUT_NAMES: Readonly<Record<DigestLayout, string>> = { full: "full (BMv2)", compact: "compact (Tofino)" };

/** How a digest schema differs from one layout: names the digest and each member that differs. */
function layoutProblems(schema: DigestSchema, layout: DigestLayout): string[] {
  const want = LAYOUTS[layout][schema.name];
  if (!want) return [`unknown digest '${schema.name}' (expected one of ${Object.keys(EXPECTED).join(", ")})`];
  const problems: string[] = [];
  const names = Object.keys(want.fields);
  const have = new Map(schema.fields.map((f) => [f.name, f.bitwidth]));
  for (const [name, width] of Object.entries(want.fields)) {
    const w = have.get(name);
    if (w === undefined) problems.push(`digest '${schema.name}' lacks member '${name}'`);
    else if (w !== width) problems.push(`digest '${schema.name}' member '${name}' is ${w} bits, expected ${width}`);
  }
  for (const f of schema.fields) if (!(f.name in want.fields)) problems.push(`digest '${schema.name}' has member '${f.name}', which the ${layout} layout does not`);
  // Samples arrive member by member: the order must be the layout's too.
  if (problems.length === 0 && schema.fields.some((f, i) => f.name !== names[i])) {
    problems.push(`digest '${schema.name}' has its members in the order ${schema.fields.map((f) => f.name).join(", ")}, expected ${names.join(", ")}`);
  }
  return problems;
}

/**
 * Which layout a P4Info's digests follow: every digest must match the same
 * known layout exactly (member names, order and widths). Otherwise the
 * problems, against the layout the digests come nearest to.
 */
export function digestLayoutOf(schemas: readonly DigestSchema[]): { layout: DigestLayout; problems: [] } | { layout: undefined; problems: string[] } {
  const byLayout = (Object.keys(LAYOUTS) as DigestLayout[]).map((layout) => ({ layout, problems: schemas.flatMap((s) => layoutProblems(s, layout)) }));
  const match = byLayout.find((l) => l.problems.length === 0);
  if (match?.layout === "compact") {
    // Compiled now, so that a layout the fills do not cover is refused here, not sample by sample.
    for (const s of schemas) {
      try {
        decoder(s.name, "compact");
      } catch (err) {
        return { layout: undefined, problems: [(err as Error).message] };
      }
    }
  }
  if (match) return { layout: match.layout, problems: [] };
  const nearest = byLayout.reduce((a, b) => (b.problems.length < a.problems.length ? b : a));
  return { layout: undefined, problems: nearest.problems.map((p) => `${p} (${LAYOUT_NAMES[nearest.layout]} layout)`) };
}

/**
 * What the compact layout lacks, taken from the digest list a sample came
 * in. Build it once per list (compactContext).
 */
export interface CompactContext {
  /** the controller's mode code (MODE_*) when the list arrived */
  readonly mode: number;
  /** the list's timestamp as the switch sent it, modulo 2^48 (a ts_t) */
  readonly ts: number;
  /** the list's timestamp is at least 2^48: an earlier time wraps modulo 2^48 rather than stopping at 0 */
  readonly wraps: boolean;
}

const TS_MOD = 2 ** 48;

/**
 * The context of one digest list: `listTimestampNs` as the switch stamped it
 * (before any mapping to Unix time), so that the times filled in are on the
 * same clock as the list timestamps the exporter calibrates with.
 */
export function compactContext(mode: number, listTimestampNs: bigint): CompactContext {
  const t = listTimestampNs < 0n ? 0n : listTimestampNs;
  return { mode, ts: Number(t % BigInt(TS_MOD)), wraps: t >= BigInt(TS_MOD) };
}

/**
 * How each member the compact layout lacks is filled in (a JavaScript
 * expression over `c`, the CompactContext, and `m_<member>`, the sample's
 * compact members). io `ts`: the list's time (the digest's own time is not
 * sent); msg `first_ts`: the list's time less the message's FCT, so that
 * first_ts + fct_ns is the list's time too; `extra_ecn_ce`: 0 (not counted).
 */
const FILLS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  // io `evo`: event (1:0), vantage (3:2) and op (5:4) in one byte of the quantum.
  io_digest_t: { mode: "c.mode", ts: "c.ts", event: "(m_evo & 3)", vantage: "((m_evo >> 2) & 3)", op: "((m_evo >> 4) & 3)" },
  msg_digest_t: {
    mode: "c.mode",
    first_ts: `(c.ts >= m_fct_ns ? c.ts - m_fct_ns : c.wraps ? c.ts - m_fct_ns + ${TS_MOD} : 0)`,
    extra_ecn_ce: "0",
  },
};

/** Compact members that hold several members of the full layout (their FILLS take them apart). */
const PACKED: ReadonlySet<string> = new Set(["io_digest_t.evo"]);

type Decoder = (values: readonly unknown[], c: CompactContext | undefined) => TelemetryDigest;

/**
 * A decoder per digest and layout, compiled once: each member the layout
 * sends checked against its width (a narrowed member is zero-extended; a
 * member that is already a number in range takes no further work), each
 * member of the full layout it lacks filled in (FILLS, from the list's
 * context), the typed object built in one literal (one shape per kind).
 */
function compileDecoder(name: string, layout: DigestLayout): Decoder | undefined {
  const want = LAYOUTS[layout][name];
  const full = EXPECTED[name];
  if (!want || !full) return undefined;
  const names = Object.keys(want.fields);
  const widths = names.map((f) => want.fields[f]!);
  for (const f of names) if (!(f in full.fields) && !PACKED.has(`${name}.${f}`)) throw new BadDigestError(`compact digest '${name}' member '${f}' is not in the full layout`);
  const fills = FILLS[name] ?? {};
  const slow = (v: unknown, i: number): number => toNumber(v, names[i]!, name, widths[i]!);
  const wide = (v: unknown, i: number): bigint => toBigint(v, names[i]!, name, widths[i]!);
  const wrongCount = (n: number): never => {
    throw new BadDigestError(`digest '${name}' has ${n} members, expected ${names.length}${layout === "compact" ? " (compact layout)" : ""}`);
  };
  // Members wider than 48 bits (an IPv6 address) decode to a bigint.
  const locals = names.map((f, i) =>
    widths[i]! > 48 ? `const m_${f} = wide(v[${i}], ${i});` : `const m_${f} = (typeof (x = v[${i}]) === "number" && x >= 0 && x < ${2 ** widths[i]!} && x === Math.floor(x)) ? x : slow(v[${i}], ${i});`,
  );
  const members = Object.keys(full.fields).map((f) => {
    const key = full.kind === "learn" && f === "kind" ? "learn" : f;
    if (f in want.fields) return `${key}: m_${f}`;
    const fill = fills[f];
    if (fill === undefined) throw new BadDigestError(`digest '${name}' member '${f}' is not in the compact layout and has no fill`);
    return `${key}: ${fill}`;
  });
  const body = `return function decode(v, c) {
    if (v.length !== ${names.length}) wrongCount(v.length);
    let x;
    ${locals.join("\n    ")}
    return { kind: ${JSON.stringify(full.kind)}, ${members.join(",\n      ")} };
  };`;
  return new Function("slow", "wide", "wrongCount", body)(slow, wide, wrongCount) as Decoder;
}

const decoders = new Map<string, Decoder | undefined>();

function decoder(name: string, layout: DigestLayout): Decoder | undefined {
  const key = `${layout}:${name}`;
  let decode = decoders.get(key);
  if (decode === undefined && !decoders.has(key)) decoders.set(key, (decode = compileDecoder(name, layout)));
  return decode;
}

/**
 * Decodes one digest sent in the compact layout into the full layout (the
 * typed view every consumer reads). Throws BadDigestError naming the digest
 * and the member that was wrong.
 */
export function decodeCompactDigest(name: string, values: readonly unknown[], c: CompactContext): TelemetryDigest {
  const decode = decoder(name, "compact");
  if (!decode) throw new BadDigestError(`unknown digest '${name}'`);
  return decode(values, c);
}

type FullValues = (d: TelemetryDigest) => Array<number | Uint8Array>;
const fullValueFns = new Map<string, FullValues>();

/** A decoded digest's members in the full layout's order: the raw sample the full layout would have sent. */
export function fullDigestValues(name: string, d: TelemetryDigest): Array<number | Uint8Array> {
  let fn = fullValueFns.get(name);
  if (!fn) {
    const want = EXPECTED[name];
    if (!want) throw new BadDigestError(`unknown digest '${name}'`);
    const keys = Object.keys(want.fields).map((f) => (want.kind === "learn" && f === "kind" ? "learn" : f));
    const wideKeys = new Set(Object.entries(want.fields).filter(([, w]) => w > 48).map(([f]) => f));
    const values = new Function("d", "bytes", `return [${keys.map((k) => (wideKeys.has(k) ? `bytes(d.${k})` : `d.${k}`)).join(", ")}];`) as (d: TelemetryDigest, bytes: (n: bigint) => Uint8Array) => Array<number | Uint8Array>;
    fn = (d) => values(d, bigintBytes);
    fullValueFns.set(name, fn);
  }
  return fn(d);
}

/**
 * The absolute time of a digest's 48-bit ns timestamp, unwrapped around
 * `last`, the newest absolute time seen: of the three candidates (one wrap
 * before, the same, one wrap after), the nearest, so that a sample arriving
 * out of order across a wrap lands right.
 */
export function unwrapTimestamp(ts: number, last: bigint | undefined): bigint {
  const t = BigInt(ts);
  if (last === undefined) return t;
  const base = last - (last % TS_MOD_N);
  let best = base + t;
  let bestDist = best > last ? best - last : last - best;
  for (const c of [base - TS_MOD_N + t, base + TS_MOD_N + t]) {
    const d = c > last ? c - last : last - c;
    if (c >= 0n && d < bestDist) [best, bestDist] = [c, d];
  }
  return best;
}

const TS_MOD_N = BigInt(TS_MOD);
