// A raw digest from rdma.digest.v1 back into a batch of one. Apart from
// digest-bus.ts (and its Kafka client), so that an exporter group member's
// engine threads load only what decoding needs.
//
// rawDigestBatch reads the message straight from its bytes, as the
// controller reads P4Runtime's digest lists (p4runtime's digest-decoding.ts):
// members become numbers without the generated DigestField objects, their
// names' strings or a copy of each value, and the switch and digest names
// are decoded once per distinct name. Anything it does not expect (a member
// missing, twice or unknown, wider than 48 bits or than its width, an
// unknown field, a malformed message) goes to the generated decoder and
// batchFromRaw, which give the same batch or the error naming what is wrong.
import { decodeDigest, EXPECTED, type DigestBatch, type EndpointEntry } from "@rdma-telemetry/contract";
import { readUintBE, tag, WireType } from "@rdma-telemetry/p4runtime";
import { RawDigest } from "../generated/rdma/telemetry/v1/records.js";

/**
 * Not a switch's digest: a controller's note, on the digest topic, that a
 * polling rotation took a host–target pair out of its switch's window
 * (`list_timestamp_ns` the rotation's time on that switch's clock, members
 * `host` and `target` its endpoint keys). Keyed as the pair's I/O digests, it
 * reaches the exporter that holds their commands: their responses went
 * unwatched there, not missing.
 */
export const WINDOW_LEFT = "window_left";
/** Its counterpart: a rotation put the pair back into the window (its commands from then on are watched). */
export const WINDOW_JOINED = "window_joined";
/** A rotation that puts the pair back was written (its WINDOW_JOINED to come): `seen_ts` bounds the responses still the older commands' own. */
export const WINDOW_BOUND = "window_bound";
/**
 * A note's members; `seen_ts` (the newest switch time, 48-bit ns, its
 * controller had before a join's write) and `gen` (the window occurrence
 * that left or joined, io_watchlist's) may be absent. Notes are read by the
 * generated decoder (they are few: one per pair and rotation).
 */
const WINDOW_NOTE_FIELDS: Readonly<Record<string, number>> = { host: 32, target: 32, seen_ts: 48, gen: 8 };
const OPTIONAL_NOTE_FIELDS = new Set(["seen_ts", "gen"]);
const isWindowNote = (digest: string): boolean => digest === WINDOW_LEFT || digest === WINDOW_JOINED || digest === WINDOW_BOUND;

/**
 * Not a switch's digest either: its controller gave up a command of its
 * switch with no response seen (`list_timestamp_ns` the command's time,
 * `seq` its digest's number). `lost` 0: every digest the switch sent between
 * the command and its I/O timeout came (the I/O is incomplete there); 1: some
 * were lost, one may have been the response (its answer is unknown). Keyed as
 * the pair's I/O digests: an exporter group member, which holds a share of
 * the switch's digests and cannot tell a loss, gives the controller's verdict.
 */
export const IO_GIVEN_UP = "io_given_up";
const GIVEN_UP_FIELDS: Readonly<Record<string, number>> = { host: 32, target: 32, target_qp: 24, cid: 16, cmd_psn: 24, lost: 1 };

/**
 * Not a switch's digest: its controller's note that the switch's clock has
 * reached `list_timestamp_ns` (the newest digest list's time, on by the
 * controller's clock once the switch has sent no list for a while:
 * switchClockTime in digest-bus.ts). One goes, once a second, to each partition
 * of the digest topic that had no digest of the switch in that second, after
 * every digest the controller published before it: a member learns that the
 * switch has moved on in a partition it sends nothing to (no members).
 */
export const SWITCH_CLOCK = "switch_clock";

/** The command an IO_GIVEN_UP note names, and the verdict. */
export interface GivenUpNote {
  host: number;
  target: number;
  targetQp: number;
  cid: number;
  cmdPsn: number;
  lost: boolean;
}

/** Which pair left (or came back into) the window, when the message is a window note. */
export interface WindowNote {
  host: number;
  target: number;
  joined: boolean;
  /** WINDOW_BOUND */
  bound?: true;
  /** a bound's (and a departure's with a join written behind it): the newest switch time (48-bit ns) its controller had from the switch before that join's write */
  seenTs?: number;
  /** the window occurrence that left or joined */
  gen?: number;
}

/** A window note's batch: no digest, the pair's endpoint entries. */
function windowNoteBatch(switchId: string, digest: string, listTimestampNs: bigint, m: ReadonlyMap<string, number>, endpoints: EndpointEntry[] | undefined): { batch: DigestBatch; windowNote: WindowNote } {
  const seenTs = m.get("seen_ts");
  const gen = m.get("gen");
  return { batch: { switchId, listTimestampNs, digests: [], badDigests: 0, session: 0, raw: { digest, samples: [] }, ...(endpoints?.length ? { endpoints } : {}) }, windowNote: { host: m.get("host")!, target: m.get("target")!, joined: digest === WINDOW_JOINED, ...(digest === WINDOW_BOUND ? { bound: true as const } : {}), ...(seenTs === undefined ? {} : { seenTs }), ...(gen === undefined ? {} : { gen }) } };
}

/** Decodes a raw digest back into a batch of one; throws BadDigestError naming what is wrong. */
export function batchFromRaw(raw: RawDigest): DigestBatch {
  return rawBatch(raw).batch;
}

/** A note's members by `fields` (name to width; `optional` may be absent); throws naming what is wrong. */
function noteMembers(raw: RawDigest, fields: Readonly<Record<string, number>>, optional: ReadonlySet<string>): Map<string, number> {
  const byName = new Map(raw.fields.map((f) => [f.name, f.value]));
  const values = new Map<string, number>();
  for (const [n, w] of Object.entries(fields)) {
    const v = byName.get(n);
    if (v === undefined && optional.has(n)) continue;
    if (!v || v.length === 0 || v.length > 6) throw new Error(`${raw.digest} from ${raw.switchId}: member '${n}' ${v ? `is ${v.length} bytes` : "missing"}`);
    const x = readUintBE(v, 0, v.length);
    if (x >= 2 ** w) throw new Error(`${raw.digest} from ${raw.switchId}: member '${n}' does not fit in ${w} bits`);
    values.set(n, x);
  }
  return values;
}

function rawBatch(raw: RawDigest): { batch: DigestBatch; windowNote?: WindowNote; givenUp?: GivenUpNote; clock?: true } {
  const endpoints = (): EndpointEntry[] => raw.endpoints.map((e) => ({ key: e.key >>> 0, address: e.address }));
  if (isWindowNote(raw.digest)) return windowNoteBatch(raw.switchId, raw.digest, raw.listTimestampNs, noteMembers(raw, WINDOW_NOTE_FIELDS, OPTIONAL_NOTE_FIELDS), endpoints());
  if (raw.digest === SWITCH_CLOCK) {
    if (raw.fields.length) throw new Error(`${SWITCH_CLOCK} from ${raw.switchId}: has members (${raw.fields.map((f) => f.name).join(", ")}); it has none`);
    return { batch: { switchId: raw.switchId, listTimestampNs: raw.listTimestampNs, digests: [], badDigests: 0, session: 0, raw: { digest: raw.digest, samples: [] } }, clock: true };
  }
  if (raw.digest === IO_GIVEN_UP) {
    const m = noteMembers(raw, GIVEN_UP_FIELDS, new Set());
    const e = endpoints();
    return {
      batch: { switchId: raw.switchId, listTimestampNs: raw.listTimestampNs, digests: [], badDigests: 0, session: 0, raw: { digest: raw.digest, samples: [] }, ...(e.length ? { endpoints: e } : {}) },
      givenUp: { host: m.get("host")!, target: m.get("target")!, targetQp: m.get("target_qp")!, cid: m.get("cid")!, cmdPsn: m.get("cmd_psn")!, lost: m.get("lost") === 1 },
    };
  }
  return { batch: digestBatchFromRaw(raw) };
}

/** Members a controller that predates them does not send: read as 0 (io gen: no window occurrence named). */
const ADDED_MEMBERS: Readonly<Record<string, readonly string[]>> = { io_digest_t: ["gen"] };

function digestBatchFromRaw(raw: RawDigest): DigestBatch {
  const want = EXPECTED[raw.digest];
  const names = Object.keys(want?.fields ?? {});
  const byName = new Map(raw.fields.map((f) => [f.name, f.value]));
  for (const n of ADDED_MEMBERS[raw.digest] ?? []) if (!byName.has(n)) byName.set(n, Buffer.from([0]));
  const values = names.map((n) => byName.get(n) ?? Buffer.alloc(0));
  const d = decodeDigest(raw.digest, values.map((v) => (v.length ? v : new Uint8Array([0]))));
  if (names.some((n) => !byName.has(n))) throw new Error(`raw digest '${raw.digest}' from ${raw.switchId} lacks members ${names.filter((n) => !byName.has(n)).join(", ")}`);
  const endpoints: EndpointEntry[] = raw.endpoints.map((e) => ({ key: e.key >>> 0, address: e.address }));
  return { switchId: raw.switchId, listTimestampNs: raw.listTimestampNs, digests: [d], badDigests: 0, session: 0, raw: { digest: raw.digest, samples: [values] }, ...(endpoints.length ? { endpoints } : {}) };
}

/** A raw digest's batch, and the message's own sequence number (with the switch, digest and list time, what tells a digest published twice). */
export interface RawDigestBatch {
  batch: DigestBatch;
  seq: bigint;
  /** a window note (the batch then has no digest) */
  windowNote?: WindowNote;
  /** a controller's verdict on a command it gave up (the batch then has no digest) */
  givenUp?: GivenUpNote;
  /** a controller's SWITCH_CLOCK note (the batch then has no digest; its list time is the note's) */
  clock?: true;
}

// RawDigest { switch_id = 1, digest = 2, seq = 3, list_timestamp_ns = 4, fields = 5: DigestField { name = 1, value = 2 }, endpoints = 6: Endpoint { key = 1, address = 2 } }
const SWITCH_ID = tag(1, WireType.Delimited);
const DIGEST = tag(2, WireType.Delimited);
const SEQ = tag(3, WireType.Varint);
const LIST_TS = tag(4, WireType.Varint);
const FIELDS = tag(5, WireType.Delimited);
const ENDPOINTS = tag(6, WireType.Delimited);
const NAME = tag(1, WireType.Delimited);
const VALUE = tag(2, WireType.Delimited);
const KEY = tag(1, WireType.Varint);
const ADDRESS = tag(2, WireType.Delimited);

const utf8 = new TextDecoder();
const encoder = new TextEncoder();

const sameBytes = (a: Uint8Array, buf: Uint8Array, start: number, end: number): boolean => {
  if (a.length !== end - start) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== buf[start + i]) return false;
  return true;
};

/** Strings by their UTF-8 bytes: switch and digest names repeat in every message. */
class Names {
  private readonly byHash = new Map<number, { bytes: Uint8Array; text: string }>();

  get(buf: Uint8Array, start: number, end: number): string {
    let h = 0x811c9dc5;
    for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
    const hit = this.byHash.get(h);
    if (hit && sameBytes(hit.bytes, buf, start, end)) return hit.text;
    const text = utf8.decode(buf.subarray(start, end));
    if (!hit) {
      if (this.byHash.size >= 65_536) this.byHash.clear();
      this.byHash.set(h, { bytes: buf.slice(start, end), text });
    }
    return text;
  }
}
const names = new Names();

/** A digest's members in P4Info order, their names' bytes and widths; undefined for a digest with a member wider than 48 bits (the generated path). */
interface Layout {
  names: Uint8Array[];
  /** 2^width of each member */
  limits: number[];
}
const layouts = new Map<string, Layout | undefined>();
function layoutOf(digest: string): Layout | undefined {
  if (layouts.has(digest)) return layouts.get(digest);
  const fields = isWindowNote(digest) ? WINDOW_NOTE_FIELDS : EXPECTED[digest]?.fields;
  const widths = Object.values(fields ?? {});
  const l = fields && widths.every((w) => w <= 48) ? { names: Object.keys(fields).map((n) => encoder.encode(n)), limits: widths.map((w) => 2 ** w) } : undefined;
  layouts.set(digest, l);
  return l;
}

/** The slow path: the generated decoder, then batchFromRaw (which throws what is wrong). */
function generated(bytes: Uint8Array): RawDigestBatch {
  const raw = RawDigest.decode(bytes);
  return { ...rawBatch(raw), seq: raw.seq };
}

// The reader's state: one message at a time, in this thread (nothing is awaited while reading).
let B: Uint8Array = new Uint8Array(0);
let P = 0;
let E = 0;
let failed = false;

/** A varint of up to 8 bytes as a number (tags, lengths, keys); sets `failed` when truncated or longer. */
function varint(): number {
  if (P < E) {
    const b = B[P]!;
    if (b < 0x80) {
      P++;
      return b;
    }
  }
  let v = 0;
  let scale = 1;
  for (let i = 0; i < 8 && P < E; i++) {
    const b = B[P++]!;
    v += (b & 0x7f) * scale;
    if (b < 0x80) return v;
    scale *= 128;
  }
  failed = true;
  return 0;
}

/** A uint64 varint as a bigint; undefined when longer than 64 bits or truncated. */
function varint64(): bigint | undefined {
  // The first four bytes (28 bits) and the rest (at most 36 more) as numbers: two BigInts, not one a byte.
  let lo = 0;
  let hi = 0;
  let scale = 1;
  for (let i = 0; i < 10 && P < E; i++) {
    const b = B[P++]!;
    if (i < 4) lo += (b & 0x7f) * scale;
    else hi += (b & 0x7f) * scale;
    if (b < 0x80) return i === 9 && b > 1 ? undefined : hi ? (BigInt(hi) << 28n) | BigInt(lo) : BigInt(lo);
    scale = i === 3 ? 1 : scale * 128;
  }
  return undefined;
}

/** Decodes a raw digest message into a batch of one; throws BadDigestError (or the decoder's error) naming what is wrong. */
export function rawDigestBatch(bytes: Uint8Array): RawDigestBatch {
  B = bytes;
  P = 0;
  E = bytes.length;
  failed = false;
  let switchId = "";
  let digest = "";
  let seq = 0n;
  let listTimestampNs = 0n;
  let layout: Layout | undefined;
  let values: number[] | undefined;
  let endpoints: EndpointEntry[] | undefined;
  while (P < E && !failed) {
    const t = varint();
    if (t === FIELDS) {
      // Members may come before the digest's name only in a message this encoder did not write.
      if (!layout || !values) return generated(bytes);
      const end = varint() + P;
      if (failed || end > E) return generated(bytes);
      let nameStart = -1;
      let nameEnd = -1;
      let valueStart = 0;
      let valueEnd = 0;
      while (P < end && !failed) {
        const ft = varint();
        if (ft !== NAME && ft !== VALUE) return generated(bytes);
        const len = varint();
        if (ft === NAME) {
          nameStart = P;
          nameEnd = P + len;
        } else {
          valueStart = P;
          valueEnd = P + len;
        }
        P += len;
      }
      if (failed || P !== end || nameStart < 0 || valueEnd - valueStart > 6) return generated(bytes);
      // Members come in P4Info order from the controller; any other order, a member twice or one unknown, is the generated path's.
      const j = values.length;
      if (j >= layout.names.length || !sameBytes(layout.names[j]!, B, nameStart, nameEnd)) return generated(bytes);
      const v = readUintBE(B, valueStart, valueEnd);
      if (v >= layout.limits[j]!) return generated(bytes);
      values.push(v);
    } else if (t === SWITCH_ID || t === DIGEST) {
      const len = varint();
      const s = P;
      P += len;
      if (failed || P > E) return generated(bytes);
      if (t === SWITCH_ID) switchId = names.get(B, s, P);
      else {
        if (values) return generated(bytes);
        digest = names.get(B, s, P);
        layout = layoutOf(digest);
        if (!layout) return generated(bytes);
        values = [];
      }
    } else if (t === SEQ || t === LIST_TS) {
      const v = varint64();
      if (v === undefined) return generated(bytes);
      if (t === SEQ) seq = v;
      else listTimestampNs = v;
    } else if (t === ENDPOINTS) {
      const end = varint() + P;
      if (failed || end > E) return generated(bytes);
      let key = 0;
      let address = "";
      while (P < end && !failed) {
        const et = varint();
        if (et === KEY) key = varint();
        else if (et === ADDRESS) {
          const len = varint();
          if (!failed && P + len <= end) address = utf8.decode(B.subarray(P, P + len));
          P += len;
        } else return generated(bytes);
      }
      if (failed || P !== end || key > 0xffffffff) return generated(bytes);
      (endpoints ??= []).push({ key: key >>> 0, address });
    } else return generated(bytes);
  }
  if (failed || P !== E || !layout || !values || values.length !== layout.names.length || isWindowNote(digest)) return generated(bytes);
  const d = decodeDigest(digest, values);
  return { batch: { switchId, listTimestampNs, digests: [d], badDigests: 0, session: 0, raw: { digest, samples: [values] }, ...(endpoints ? { endpoints } : {}) }, seq };
}
