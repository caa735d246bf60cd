// The lifecycle of one switch as a loop: open the stream, arbitrate, push the
// pipeline if the switch does not have it (cookie), reconcile the desired
// state, then receive. On a stream error: back off (exponential, jittered)
// and start again. Events tell the owner what happened.
import { EventEmitter } from "node:events";
import type { P4Info } from "./generated/p4/config/v1/p4info.js";
import {
  GetForwardingPipelineConfigRequest_ResponseType,
  SetForwardingPipelineConfigRequest_Action,
  type DigestList,
  type PacketIn,
  type Update,
} from "./generated/p4/v1/p4runtime.js";
import { P4RuntimeClient, P4WriteError, type ClientOptions, type StreamChannel } from "./client.js";
import { fromUint128, toUint128 } from "./wire.js";
import type { DesiredState } from "./desired-state.js";
import { Backoff, isRetriable, sleep, type BackoffOptions } from "./backoff.js";
import { P4RuntimeError } from "./errors.js";
import { p4infoDifferences } from "./p4info-compare.js";
import { silentLogger, type Logger } from "./logger.js";

export interface PipelineSpec {
  p4info: P4Info;
  /** absent when attaching: the pipeline is the one on the switch */
  deviceConfig?: Buffer;
  /**
   * Names the program: its high 32 bits are compared with the switch's
   * cookie; the low 32 are replaced at each push by a fresh session number
   * (see the "session" event).
   */
  cookie: bigint;
}

const PROGRAM_MASK = 0xffffffff00000000n;
const SESSION_MASK = 0xffffffffn;

/** A session number for a push: never 0 (0 is "unknown" to the exporter). */
function newSession(): bigint {
  return BigInt(1 + Math.floor(Math.random() * 0xfffffffe));
}


export interface ConnectionOptions extends ClientOptions {
  electionId: bigint;
  role?: string;
  pipeline: PipelineSpec;
  /**
   * Attach to the pipeline already on the switch instead of pushing one: its
   * P4Info must be `pipeline.p4info` (else set-up fails, not retriable,
   * naming what differs). The session then comes from the switch's cookie,
   * read on every reconnection, and moves on when the cookie changes or the
   * switch has lost the entries written here (a restart that loaded the same
   * pipeline with the same cookie).
   */
  attach?: boolean;
  state: DesiredState;
  logger?: Logger;
  /** reconnection backoff; a set-up failure that is not retriable waits `notRetriableMs` */
  backoff?: BackoffOptions;
}

export interface ConnectionEvents {
  "channel-up": [];
  primary: [];
  backup: [{ primaryElectionId: bigint | undefined }];
  "pipeline-pushed": [{ cookie: bigint }];
  /**
   * The switch's session: the number written with the pipeline when it was
   * pushed (by this controller or another), so that every controller, also
   * one started later, tells a switch that kept running from one that
   * restarted and lost its pipeline.
   */
  session: [{ session: number; pushed: boolean; reloaded?: boolean }];
  reconciled: [{ updates: number }];
  digest: [DigestList];
  "packet-in": [PacketIn];
  "stream-error": [P4RuntimeError];
  /** the next attempt to reach the switch, in `inMs` (`attempt` counts since the switch last answered) */
  retrying: [{ error: string; inMs: number; attempt: number }];
}

export class SwitchConnection extends EventEmitter<ConnectionEvents> {
  readonly client: P4RuntimeClient;
  private channel: StreamChannel | undefined;
  private isPrimary = false;
  private readonly log: Logger;
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  /** serialises writes: reconciliation and owner writes never interleave */
  private writeChain: Promise<unknown> = Promise.resolve();
  /**
   * Taking the switch as primary: the pipeline checked and the switch's
   * entries read (reconcile) before anything is written, so that a write
   * asked for meanwhile (digests arrive as soon as the switch names the new
   * primary) does not insert what the switch already holds.
   */
  private settingUp: Promise<boolean> | undefined;

  constructor(readonly options: ConnectionOptions) {
    super();
    this.client = new P4RuntimeClient(options);
    this.log = options.logger ?? silentLogger;
  }

  get primary(): boolean {
    return this.isPrimary;
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.channel?.close();
    await this.loop;
    this.client.close();
  }

  private async run(): Promise<void> {
    const backoff = new Backoff(this.options.backoff ?? { initialMs: 100, maxMs: 2000 });
    let attempts = 0;
    while (!this.abort.signal.aborted) {
      this.failure = undefined;
      this.ended = undefined;
      const ok = await this.session();
      if (this.abort.signal.aborted) break;
      const up = ok && this.failure === undefined;
      if (up) backoff.reset();
      const wait = Math.round(backoff.next(this.failure));
      attempts = up ? 1 : attempts + 1;
      const ended = this.ended as P4RuntimeError | undefined; // set by session()
      const error = (this.failure as Error | undefined)?.message ?? ended?.message ?? "stream ended";
      // Said once per change (the switch lost, or a different failure), with the delay; each attempt is debug.
      if (up || error !== this.retrying) {
        this.log.warn(up ? "lost the switch; reconnecting" : "cannot reach the switch; retrying", { address: this.options.address, error, retry_in_ms: wait });
        this.retrying = error;
      } else {
        this.log.debug("still cannot reach the switch; retrying", { address: this.options.address, attempt: attempts, retry_in_ms: wait });
      }
      this.emit("retrying", { error, inMs: wait, attempt: attempts });
      await sleep(wait, this.abort.signal);
    }
  }

  /** Why the last session ended, when setting up the switch failed. */
  private failure: unknown;
  /** Why the last session's stream ended. */
  private ended: P4RuntimeError | undefined;
  /** The failure last reported while retrying; undefined while the switch answers. */
  private retrying: string | undefined;

  /** One stream session; true when it reached the arbitration response. */
  private async session(): Promise<boolean> {
    const ch = this.client.streamChannel(this.abort.signal);
    this.channel = ch;
    this.isPrimary = false;
    let arbitrated = false;
    ch.send({
      update: {
        $case: "arbitration",
        value: {
          deviceId: this.options.deviceId,
          role: this.options.role ? { id: 0n, name: this.options.role, config: undefined } : undefined,
          electionId: toUint128(this.options.electionId),
          status: undefined,
        },
      },
    });
    try {
      for await (const msg of ch) {
        const u = msg.update;
        if (!u) continue;
        if (u.$case === "arbitration") {
          if (!arbitrated) {
            if (this.retrying !== undefined) this.log.info("reached the switch again", { address: this.options.address });
            this.retrying = undefined;
            this.emit("channel-up");
          }
          arbitrated = true;
          const nowPrimary = u.value.status?.code === 0;
          if (nowPrimary && !this.isPrimary) {
            this.isPrimary = true;
            this.log.info("became primary", { electionId: this.options.electionId.toString() });
            // Set up in the background: the stream must keep being read meanwhile.
            this.settingUp = this.becamePrimary().then(() => true, (err: unknown) => {
              this.failure = err;
              this.log.error("setting up the switch failed", { error: (err as Error).message, retriable: isRetriable(err) });
              ch.close();
              return false;
            });
          } else if (!nowPrimary) {
            this.isPrimary = false;
            this.emit("backup", { primaryElectionId: fromUint128(u.value.electionId) });
          }
        } else if (u.$case === "digest") {
          this.emit("digest", u.value);
        } else if (u.$case === "packet") {
          this.emit("packet-in", u.value);
        } else if (u.$case === "error") {
          this.log.warn("stream error message from the switch", { code: u.value.canonicalCode, message: u.value.message });
        }
      }
    } catch (err) {
      this.log.debug("stream failed", { error: (err as Error).message });
    }
    const err = await ch.closed;
    this.isPrimary = false;
    if (!this.abort.signal.aborted) {
      const e = err ?? new P4RuntimeError("stream ended by the switch", "UNAVAILABLE", true);
      this.ended = e;
      this.log.debug("stream closed", { error: e.message });
      this.emit("stream-error", e);
    }
    return arbitrated;
  }

  private async becamePrimary(): Promise<void> {
    if (this.options.attach) {
      const cookie = await this.attachPipeline();
      await this.reconcile(() => this.attachedSession(cookie));
    } else {
      await this.ensurePipeline();
      await this.reconcile();
    }
    this.emit("primary");
  }

  /** Attached: the switch's cookie when the session was last decided, and that session. */
  private attached: { cookie: bigint; session: number } | undefined;

  /** Reads the switch's P4Info and cookie; throws unless the P4Info is ours. */
  private async attachPipeline(): Promise<bigint> {
    const none = "the switch has no pipeline to attach to (pipeline.push is false): waiting for one to be loaded";
    const have = await this.client.getPipeline(GetForwardingPipelineConfigRequest_ResponseType.P4INFO_AND_COOKIE, this.abort.signal).catch((err: unknown) => {
      if (err instanceof P4RuntimeError && err.code === "FAILED_PRECONDITION") throw new P4RuntimeError(none, "FAILED_PRECONDITION", true);
      throw err;
    });
    const p4info = have.config?.p4info;
    if (!p4info) throw new P4RuntimeError(none, "FAILED_PRECONDITION", true);
    const diff = p4infoDifferences(this.options.pipeline.p4info, p4info);
    if (diff.length > 0) {
      throw new P4RuntimeError(`refusing to attach: the switch's pipeline is not the one in pipeline.p4info: ${diff.slice(0, 3).join("; ")}${diff.length > 3 ? ` (and ${diff.length - 3} more)` : ""}`, "FAILED_PRECONDITION", false);
    }
    return have.config?.cookie?.cookie ?? 0n;
  }

  /**
   * Attached: the session, once the switch's entries are read. The first is
   * the cookie folded to 32 bits (so a controller restarted on a running
   * switch finds the same one); a new one when the cookie changed, or when
   * the switch no longer holds any entry written here (restarted and loaded
   * again with the same cookie).
   */
  private attachedSession(cookie: bigint): void {
    const folded = Number((cookie ^ (cookie >> 32n)) & SESSION_MASK) || 1;
    const was = this.attached;
    let session = folded;
    let reloaded = false;
    if (was !== undefined) {
      const lost = !this.options.state.holdsAny();
      if (was.cookie !== cookie || lost) {
        reloaded = true;
        session = was.cookie !== cookie && folded !== was.session ? folded : (was.session % 0xffffffff) + 1;
      } else {
        session = was.session;
      }
    }
    this.attached = { cookie, session };
    if (reloaded) this.log.info("the switch's pipeline was loaded anew", { cookie: cookie.toString(), session });
    this.emit("session", { session, pushed: false, reloaded });
  }

  private async ensurePipeline(): Promise<void> {
    const { pipeline, state } = this.options;
    // BMv2 answers FAILED_PRECONDITION while it has no pipeline.
    const have = await this.client.getPipeline(GetForwardingPipelineConfigRequest_ResponseType.COOKIE_ONLY, this.abort.signal).catch((err: unknown) => {
      if (err instanceof P4RuntimeError && err.code === "FAILED_PRECONDITION") return undefined;
      throw err;
    });
    const cookie_ = have?.config?.cookie?.cookie;
    if (cookie_ !== undefined && (cookie_ & PROGRAM_MASK) === (pipeline.cookie & PROGRAM_MASK) && (cookie_ & SESSION_MASK) !== 0n) {
      this.log.debug("pipeline already on the switch", { cookie: cookie_.toString() });
      this.emit("session", { session: Number(cookie_ & SESSION_MASK), pushed: false });
      return;
    }
    const cookie = (pipeline.cookie & PROGRAM_MASK) | newSession();
    await this.client.setPipeline({
      role: this.options.role ?? "",
      electionId: toUint128(this.options.electionId),
      action: SetForwardingPipelineConfigRequest_Action.VERIFY_AND_COMMIT,
      config: { p4info: pipeline.p4info, p4DeviceConfig: pipeline.deviceConfig ?? Buffer.alloc(0), cookie: { cookie } },
    }, this.abort.signal);
    state.resetInstalled();
    this.log.info("pipeline pushed", { cookie: cookie.toString() });
    this.emit("pipeline-pushed", { cookie });
    this.emit("session", { session: Number(cookie & SESSION_MASK), pushed: true });
  }

  /** Reads what the switch has and writes the difference to the desired state. */
  async reconcile(observed?: () => void): Promise<number> {
    return this.serial(async () => {
      const state = this.options.state;
      const entities = await this.client.readAll([
        { entity: { $case: "tableEntry", value: { tableId: 0, match: [], priority: 0, isDefaultAction: false } as never } },
      ], { signal: this.abort.signal });
      const defaults = await this.client.readAll(
        [...new Set([...state.entries()].filter((te) => te.isDefaultAction).map((te) => te.tableId))].map((tableId) => ({
          entity: { $case: "tableEntry" as const, value: { tableId, match: [], priority: 0, isDefaultAction: true } as never },
        })),
        { signal: this.abort.signal },
      );
      // One read per digest: BMv2 does not take a wildcard DigestEntry read.
      const digestEntities = [];
      for (const digestId of state.digestIds()) {
        try {
          digestEntities.push(...(await this.client.readAll([{ entity: { $case: "digestEntry", value: { digestId, config: undefined } } }], { signal: this.abort.signal })));
        } catch (err) {
          if (!(err instanceof P4RuntimeError) || err.code !== "NOT_FOUND") throw err;
        }
      }
      // One read per clone session wanted (NOT_FOUND: not there yet).
      const cloneEntities = [];
      for (const sessionId of state.cloneSessions().keys()) {
        try {
          cloneEntities.push(...(await this.client.readAll([{ entity: { $case: "packetReplicationEngineEntry", value: { type: { $case: "cloneSessionEntry", value: { sessionId, replicas: [], classOfService: 0, packetLengthBytes: 0 } } } } }], { signal: this.abort.signal })));
        } catch (err) {
          if (!(err instanceof P4RuntimeError) || err.code !== "NOT_FOUND") throw err;
        }
      }
      const tables = [...entities, ...defaults].flatMap((e) => (e.entity?.$case === "tableEntry" ? [e.entity.value] : []));
      const digests = digestEntities.flatMap((e) => (e.entity?.$case === "digestEntry" ? [e.entity.value] : []));
      const clones = cloneEntities.flatMap((e) => (e.entity?.$case === "packetReplicationEngineEntry" && e.entity.value.type?.$case === "cloneSessionEntry" ? [e.entity.value.type.value] : []));
      state.observe(tables, digests, clones);
      observed?.();
      const n = await this.writeDiff();
      this.emit("reconciled", { updates: n });
      return n;
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.writeChain.then(fn, fn);
    this.writeChain = next.catch(() => undefined);
    return next;
  }

  /** Writes the difference between desired and installed state; returns the number of updates. */
  private async writeDiff(): Promise<number> {
    const updates = this.options.state.diff();
    if (updates.length === 0) return 0;
    await this.writeBatched(updates);
    return updates.length;
  }

  private async writeBatched(updates: Update[], batch = 1000): Promise<void> {
    for (let i = 0; i < updates.length; i += batch) {
      const chunk = updates.slice(i, i + batch);
      try {
        await this.client.write(chunk, this.options.electionId, { role: this.options.role, signal: this.abort.signal });
        this.options.state.applied(chunk);
      } catch (err) {
        if (err instanceof P4WriteError) this.options.state.appliedSome(chunk, (idx) => err.updates[idx]?.code === "OK");
        throw err;
      }
    }
  }

  /** Applies the desired state now (after the owner changed it). Only the primary writes. */
  async sync(): Promise<number> {
    if (!this.isPrimary) return 0;
    // Taking the switch: its set-up writes the whole difference once it has read what the switch holds; what
    // changed since is written after it.
    const setUp = this.settingUp;
    if (setUp && !(await setUp)) return 0;
    if (!this.isPrimary || this.settingUp !== setUp) return this.sync();
    return this.serial(() => this.writeDiff());
  }

  ackDigest(digestId: number, listId: bigint): void {
    this.channel?.send({ update: { $case: "digestAck", value: { digestId, listId } } });
  }
}
