// Runs packets through a compiled program the way simple_switch does:
// parse, verify checksums, ingress, learn, egress, update checksums, deparse.
import type { CompiledProgram } from "./program.js";
import { DROP_PORT, type PacketContext } from "./state.js";
import type { Value } from "./table.js";

export interface PacketIn {
  port: number;
  data: Uint8Array;
  /** ingress timestamp in ns since the switch started */
  timestampNs: number;
  /** length on the wire (for counters) when `data` is a truncated capture */
  wireLength?: number;
}

export interface PacketOut {
  port: number;
  data: Buffer;
}

export interface LearnSample {
  listId: number;
  listName: string;
  values: Value[];
}

export interface ProcessResult {
  output: PacketOut | undefined;
  learn: LearnSample | undefined;
  parserError: number;
  /** set when assert()/assume() failed or the packet could not be processed */
  error: string | undefined;
}

export class Pipeline {
  private readonly ctx: PacketContext = { exit: false, learnId: 0, packetLength: 0, parserError: 0, truncateTo: 0, failed: undefined };
  packetsIn = 0;
  packetsOut = 0;
  packetsDropped = 0;
  packetErrors = 0;

  constructor(readonly program: CompiledProgram) {}

  process(pkt: PacketIn): ProcessResult {
    const p = this.program;
    const { N } = p;
    const fn = p.fn;
    const ctx = this.ctx;
    const std = p.std;
    this.packetsIn++;
    ctx.exit = false;
    ctx.learnId = 0;
    ctx.parserError = 0;
    ctx.truncateTo = 0;
    ctx.failed = undefined;
    ctx.packetLength = pkt.wireLength ?? pkt.data.length;
    try {
      fn.begin(pkt.port, ctx.packetLength, pkt.timestampNs);
      const parsed = fn.parse(pkt.data, ctx);
      fn.parsed(ctx.parserError, 0);
      if (!fn.verifyChecksums()) fn.parsed(ctx.parserError, 1);
      fn.ingress(ctx);
      ctx.exit = false;
      let learn: LearnSample | undefined;
      if (ctx.learnId > 0) {
        const list = p.learnLists.get(ctx.learnId);
        learn = { listId: ctx.learnId, listName: list?.name ?? String(ctx.learnId), values: fn.learn(ctx.learnId) };
      }
      const egressSpec = std.egressSpec.kind === "n" ? N[std.egressSpec.slot]! : Number(p.B[std.egressSpec.slot]);
      if (egressSpec === DROP_PORT || ctx.failed) {
        this.packetsDropped++;
        return { output: undefined, learn, parserError: ctx.parserError, error: ctx.failed };
      }
      fn.toEgress(egressSpec, pkt.timestampNs);
      fn.egress(ctx);
      const egressDrop = std.egressSpec.kind === "n" ? N[std.egressSpec.slot] === DROP_PORT : false;
      if (egressDrop || ctx.failed) {
        this.packetsDropped++;
        return { output: undefined, learn, parserError: ctx.parserError, error: ctx.failed };
      }
      fn.updateChecksums();
      const original = Buffer.isBuffer(pkt.data) ? pkt.data : Buffer.from(pkt.data.buffer, pkt.data.byteOffset, pkt.data.byteLength);
      let data = fn.deparse(pkt.data, parsed, original);
      if (ctx.truncateTo > 0 && data.length > ctx.truncateTo) data = data.subarray(0, ctx.truncateTo);
      this.packetsOut++;
      return { output: { port: egressSpec, data }, learn, parserError: ctx.parserError, error: undefined };
    } catch (err) {
      // A fault in one packet must not stop the switch.
      this.packetErrors++;
      this.packetsDropped++;
      return { output: undefined, learn: undefined, parserError: ctx.parserError, error: `packet on port ${pkt.port}: ${(err as Error).message}` };
    }
  }
}
