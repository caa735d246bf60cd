// The run-time state of a compiled program as its generated code and the
// pipeline share it: register and counter arrays, the standard metadata
// fields, the per-packet context, and the compiled functions.
import type { FieldInfo } from "./layout.js";
import type { CounterValue, Value } from "./table.js";

/** The egress port that drops a packet (mark_to_drop). */
export const DROP_PORT = 511;

export interface RegisterArray {
  name: string;
  id: number;
  width: number;
  size: number;
  values: Float64Array | bigint[];
}

export interface CounterArray {
  name: string;
  id: number;
  size: number;
  direct: boolean;
  packets: Float64Array;
  bytes: Float64Array;
  /** cells folded past 2^48 (counter-values.ts) */
  high: Map<number, CounterValue>;
}

export interface LearnListInfo {
  id: number;
  name: string;
  fields: Array<{ name: string; width: number }>;
}

export interface ActionInfo {
  id: number;
  name: string;
  params: Array<{ name: string; width: number }>;
}

/** Per-packet context shared with the generated code. */
export interface PacketContext {
  exit: boolean;
  learnId: number;
  /** bytes counted by counters: the packet's length on the wire */
  packetLength: number;
  parserError: number;
  truncateTo: number;
  /** assert()/assume() failure message, if any */
  failed: string | undefined;
  /** clone requested: the session id | 0x8000 (simple_switch's encoding), else 0 */
  clone: number;
  /** the field list the clone preserves */
  cloneFieldList: number;
  /** resubmit requested: the field list id it preserves, else 0 */
  resubmit: number;
  /** recirculate requested: the field list id it preserves, else 0 */
  recirculate: number;
  /** the time meters see: the packet's arrival, ns since the switch started */
  nowNs: number;
}

export interface CompiledFunctions {
  parse(buf: Uint8Array, ctx: PacketContext): number;
  verifyChecksums(): boolean;
  ingress(ctx: PacketContext): void;
  egress(ctx: PacketContext): void;
  updateChecksums(): void;
  /** The packet to send: headers as they are now, then the bytes after `parsed`. */
  deparse(buf: Uint8Array, parsed: number, original?: Buffer): Buffer;
  learn(id: number): Value[];
  reset(): void;
  /** reset(), then the standard metadata a packet arrives with */
  begin(port: number, packetLength: number, ingressTs: number): void;
  /** parser_error and checksum_error after parsing */
  parsed(parserError: number, checksumError: number): void;
  /** egress_port, egress_global_timestamp, packet_length and egress_spec (not the drop port) as egress starts */
  toEgress(port: number, egressTs: number, packetLength: number): void;
  /** the next index of each header stack (part of a packet's state, with the field slots) */
  readonly SN: Int32Array;
}

/** The standard_metadata fields the switch itself reads and writes (v1model). */
export interface StandardMetadata {
  ingressPort: FieldInfo;
  egressSpec: FieldInfo;
  egressPort: FieldInfo;
  packetLength: FieldInfo;
  instanceType?: FieldInfo;
  ingressTs?: FieldInfo;
  egressTs?: FieldInfo;
  parserError?: FieldInfo;
  checksumError?: FieldInfo;
  mcastGrp?: FieldInfo;
  egressRid?: FieldInfo;
}
