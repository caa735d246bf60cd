// The telemetry control loop on one switch: pipeline and forwarding state,
// port roles, measurement mode, digest configuration and draining, flow
// learning and the polling-mode rotation. Everything is a table write: the
// mode switches at run time without a pipeline reload. Digests come in the
// full layout (BMv2) or the compact one (Tofino) and leave in the full one;
// on Tofino the controller also sets up the flow tracker's report mirror session.
import { createHash, randomInt } from "node:crypto";
import { readFileSync } from "node:fs";
import { EventEmitter } from "node:events";
import { P4Info } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4info";
import type { P4BitstringLikeTypeSpec } from "@rdma-telemetry/p4runtime/proto/p4/config/v1/p4types";
import type { DigestList } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { compactContext, decodeCompactDigest, decodeDigest, digestLayoutOf, fullDigestValues, ipv6, ipv6FromBytes, ipv6Text, isEndpointKey, IO_EVENT_QUEUE_PAIR, LEARN_ENDPOINT, LEARN_FLOW, LEARN_IO_PAIR, P4_NAMES, type EndpointEntry, SWITCH_COUNTER_NAMES, switchCounters, type DigestBatch, type SwitchCounters, type DigestLayout, type DigestSchema, type TelemetryDigest } from "@rdma-telemetry/contract";
import { isFastDigestList, type DigestMember } from "@rdma-telemetry/p4runtime";
import { buildTableEntry, digestValues } from "@rdma-telemetry/p4runtime";
import { DesiredState } from "@rdma-telemetry/p4runtime";
import { P4Schema } from "@rdma-telemetry/p4runtime";
import { SwitchConnection, silentLogger, type Logger } from "@rdma-telemetry/p4runtime";
import type { TableEntry } from "@rdma-telemetry/p4runtime/proto/p4/v1/p4runtime";
import { ConfigError, WATCHLIST_MODES, type ControllerConfig, type Mode } from "./config.js";
import { EndpointRegistry } from "./endpoints.js";
import { HistogramTables } from "./histograms.js";
import type { HistogramRead } from "@rdma-telemetry/contract";
import { ListClock } from "./list-clock.js";
import { Rotation, type WatchedFlow, type WatchedPair } from "./rotation.js";

const T = P4_NAMES.tables;
const A = P4_NAMES.actions;

/** Summary mode counts in the data plane's histograms, which only the v1model build has. */
const NO_SUMMARY = (p4info: string) => `mode summary: the program in pipeline.p4info ${p4info} has no data-plane histograms (the Tofino 1 build has none)`;

const ROLE_CODE = { compute: 1, storage: 2, fabric: 3 } as const;
const MODE_CODE = { full: 1, polling: 2, summary: 3 } as const;
/** The number the switch and the digests give a mode (MODE_* in the P4 program). */
export const modeCode = (mode: Mode): number => MODE_CODE[mode];

/**
 * Tofino: the flow tracker's reports are mirrored in egress to the
 * recirculation port, through this mirror session (TNA_REPORT_SESSION in
 * p4/tna/include/define_tna.p4), truncated to this many bytes.
 */
export const REPORT_SESSION_ID = 1;
export const REPORT_PACKET_LENGTH_BYTES = 64;
/** The recirculation port by P4Info architecture (TNA_RECIRC_PORT): port 68 on Tofino 1, 6 on Tofino 2. */
export const RECIRCULATION_PORT: Readonly<Record<string, number>> = { tna: 68, t2na: 6 };

export interface ControllerEvents {
  primary: [];
  /** another controller is primary (its election id, when the switch says) */
  backup: [{ primaryElectionId: bigint | undefined }];
  digests: [DigestBatch];
  "mode-changed": [{ mode: Mode; epoch: number }];
  /** the data plane's histograms read: how long it took and how many counter cells it read */
  "histograms-read": [{ durationMs: number; cells: number; wrapped: number; decreased: number }];
  /** a polling rotation written; `durationMs` from the window's move to the switch's acknowledgement */
  rotated: [{ window: number; flows: number; pairs: number; knownFlows: number; knownPairs: number; durationMs: number; leftPairs: WatchedPair[]; joinedPairs: WatchedPair[]; sentNs: bigint }];
  "bad-digest": [{ message: string }];
  /**
   * Taking the switch (a restart, a takeover, a reconnection), its read found
   * watchlist entries of pairs outside this controller's window (an earlier
   * controller's): they are deleted by the write about to go out, `sentNs`
   * (this host's monotonic clock) before it, as a rotation's leaves are.
   */
  "watch-left": [{ pairs: WatchedPair[]; sentNs: bigint }];
  /** the switch's watchlist as read when this controller took the switch on (every observe: connection, takeover, restart) */
  "watch-observed": [{ pairs: WatchedPair[] }];
  /**
   * Pairs learned while the polling window had room joined it, each with
   * the occurrence it is watched in (`gen`), told before their watchlist
   * entries are written, as a rotation's joins are: an exporter that holds
   * that occurrence as ended (an earlier controller's window left it)
   * takes the pairs' commands from here on as watched.
   */
  "watch-joined": [{ pairs: WatchedPair[]; sentNs: bigint }];
}

/** An io_watchlist entry's pair (its two exact match fields, in field id order: host, target) and occurrence (its action's one parameter; 0 when it has none). */
function pairOfEntry(te: TableEntry): WatchedPair {
  const [host = -1, target = -1] = [...te.match].sort((a, b) => a.fieldId - b.fieldId).map((m) => (m.fieldMatchType?.$case === "exact" ? m.fieldMatchType.value.value.reduce((x, b) => x * 256 + b, 0) : -1));
  const action = te.action?.type?.$case === "action" ? te.action.type.value : undefined;
  const gen = action?.params[0]?.value.reduce((x, b) => x * 256 + b, 0) ?? 0;
  return { host, target, gen };
}

/** The switch's statistics events (STAT_* in p4/include/define.p4, generated). */
export const SWITCH_COUNTERS = SWITCH_COUNTER_NAMES;
export type { SwitchCounters };

/** Each digest of a P4Info with its members' names and widths. */
function digestSchemas(p4info: P4Schema["p4info"]): DigestSchema[] {
  const structs = p4info.typeInfo?.structs ?? {};
  return p4info.digests.map((d) => {
    const struct = d.typeSpec?.typeSpec?.$case === "struct" ? d.typeSpec.typeSpec.value.name : "";
    const members = structs[struct]?.members ?? [];
    return {
      name: d.preamble!.name,
      fields: members.map((m) => ({ name: m.name, bitwidth: m.typeSpec?.typeSpec?.$case === "bitstring" ? Number(bitwidthOf(m.typeSpec.typeSpec.value)) : m.typeSpec?.typeSpec?.$case === "bool" ? 1 : 0 })),
    };
  });
}

function bitwidthOf(b: P4BitstringLikeTypeSpec): number {
  const t = b.typeSpec;
  return t?.$case === "varbit" ? t.value.maxBitwidth : (t?.value.bitwidth ?? 0);
}

export type ControllerRole = "primary" | "backup" | "disconnected";

export interface ControllerStats {
  digestLists: number;
  digests: number;
  badDigests: number;
  learnedFlows: number;
  learnedPairs: number;
  rotations: number;
  /** rotation periods that passed while the last rotation's write was still under way: no rotation for them */
  rotationsSkipped: number;
  /** rotations whose write failed (the next one writes the window) */
  rotationsFailed: number;
  mode: Mode;
  epoch: number;
  primary: boolean;
  /** the StreamChannel is up (arbitrated), as primary or backup */
  connected: boolean;
  /** primary (set up and writing), backup (another controller is primary), or disconnected */
  role: ControllerRole;
  /** switch sessions seen (1 + pipeline pushes after the first) */
  sessions: number;
  /** IPv6 endpoints with a key (written to both endpoint tables) */
  endpoints: number;
  /** IPv6 endpoints given a key because the switch reported them (LEARN_ENDPOINT) */
  learnedEndpoints: number;
  /** IPv6 endpoints the switch reported that got no key (every key taken, or the tables refused the entry): their packets stay unmeasured */
  endpointsRefused: number;
}

export class TelemetryController extends EventEmitter<ControllerEvents> {
  readonly schema: P4Schema;
  /** the switch's session number (written with its pipeline); 0 before the first arbitration */
  private session = 0;
  readonly state = new DesiredState();
  readonly connection: SwitchConnection;
  private mode: Mode;
  /**
   * Tags flow state and the switch's learn filters. It starts at a random
   * value and moves on every time this controller becomes primary, so that a
   * controller taking over a running switch (restart, failover) never shares
   * an epoch with the one before it: the switch reports every flow and pair
   * again (SPEC §5).
   */
  private epoch = randomInt(1, 0x10000);
  private primaryOnce = false;
  private readonly rotation: Rotation;
  private rotationTimer: NodeJS.Timeout | undefined;
  private readonly digestNames = new Map<number, string>();
  private readonly listClock: ListClock | undefined;
  private readonly log: Logger;
  readonly stats: ControllerStats;
  /** the layout the switch sends digests in (its P4Info says); decoded into the full one */
  readonly digestLayout: DigestLayout;
  /** the port the report mirror session sends to (Tofino); undefined for a program without one */
  readonly reportPort: number | undefined;
  /** IPv6 endpoints and their keys on this switch (docs/architecture.md, "Endpoint keys") */
  readonly endpoints = new EndpointRegistry();
  /** the program's endpoint tables (a program without IPv6 has none) */
  private readonly endpointTables: { src: number; dst: number } | undefined;

  private readonly rotationTimerEnabled: boolean;
  /** the data plane's latency histograms (the v1model program has them) */
  readonly histograms: HistogramTables | undefined;
  /** a pair or flow got a histogram id: its entry waits for the next sync */
  private histogramIdsPending = false;
  /** the time by which histogram ids go idle (replay: the capture's) */
  private readonly histogramClockMs: () => number;
  /** attached to a running switch: its counts from before are the baseline, not deltas */
  private histogramBaselineDue = false;

  /**
   * `rotationTimer: false` leaves rotation to the owner (replay rotates in the
   * capture's time by calling rotate()). `listClock: "switch"` takes digest
   * list timestamps as they are (replay: the capture's clock, whatever its
   * epoch); by default a clock since boot is mapped to Unix time (list-clock.ts).
   */
  private readonly deferAck: boolean;
  /** "on-demand": histogram ids are written only by applyHistogramIds() (replay writes them at fixed capture times, so that it is deterministic) */
  private readonly histogramIdWrites: "on-learn" | "on-demand";
  /** "on-demand": learned IPv6 endpoints are written only by applyLearnedEndpoints() (replay writes them at fixed capture times, so that it is deterministic) */
  private readonly endpointWrites: "on-learn" | "on-demand";
  /** on-demand: the addresses the switch reported (LEARN_ENDPOINT) since the last applyLearnedEndpoints(), in the order reported */
  private readonly pendingEndpoints = new Set<string>();
  /** "on-demand": flows and pairs that join the polling window as they are learned are written only by applyWatchJoins() (replay: at fixed capture times) */
  private readonly watchJoinWrites: "on-learn" | "on-demand";
  /** on-demand: watchlist entries of flows and pairs that joined the window wait for applyWatchJoins() */
  private watchJoinsPending = false;

  constructor(readonly config: ControllerConfig, opts: { logger?: Logger; rotationTimer?: boolean; listClock?: "unix" | "switch"; deferAck?: boolean; histogramIds?: "on-learn" | "on-demand"; endpoints?: "on-learn" | "on-demand"; watchJoins?: "on-learn" | "on-demand"; histogramClockMs?: () => number } = {}) {
    super();
    this.watchJoinWrites = opts.watchJoins ?? "on-learn";
    this.histogramIdWrites = opts.histogramIds ?? "on-learn";
    this.endpointWrites = opts.endpoints ?? "on-learn";
    this.histogramClockMs = opts.histogramClockMs ?? Date.now;
    this.log = opts.logger ?? silentLogger;
    this.rotationTimerEnabled = opts.rotationTimer ?? true;
    this.deferAck = opts.deferAck ?? false;
    this.listClock = opts.listClock === "switch" ? undefined : new ListClock();
    const p4infoText = readFileSync(config.pipeline.p4info, "utf8");
    // Attached (pipeline.push false), the switch's own pipeline is used: no device config.
    const deviceConfig = config.pipeline.push ? readFileSync(config.pipeline.deviceConfig) : undefined;
    try {
      this.schema = P4Schema.fromJson(p4infoText);
    } catch (err) {
      throw new ConfigError(`pipeline.p4info: ${config.pipeline.p4info} is not a usable P4Info: ${(err as Error).message}`);
    }
    const p4info = P4Info.fromJSON(JSON.parse(p4infoText));
    const cookie = createHash("sha256").update(deviceConfig ?? "").update(p4infoText).digest().readBigUInt64BE(0);
    for (const d of this.schema.p4info.digests) this.digestNames.set(d.preamble!.id, d.preamble!.name);
    // A P4Info from another build of the program would be decoded wrongly: refuse it now.
    const layout = digestLayoutOf(digestSchemas(this.schema.p4info));
    const problems = layout.problems;
    if (layout.layout === undefined) throw new ConfigError(`pipeline.p4info ${config.pipeline.p4info} does not match this controller's digests: ${problems.slice(0, 3).join("; ")}${problems.length > 3 ? ` (and ${problems.length - 3} more)` : ""}`);
    this.digestLayout = layout.layout;
    const arch = this.schema.p4info.pkgInfo?.arch ?? "";
    const defaultPort = RECIRCULATION_PORT[arch];
    if (config.pipeline.recirculationPort !== undefined && defaultPort === undefined) {
      throw new ConfigError(`pipeline.recirculation_port: set, but pipeline.p4info ${config.pipeline.p4info} is for architecture '${arch || "(none)"}', which has no report mirror session (only tna and t2na have one)`);
    }
    this.reportPort = defaultPort === undefined ? undefined : (config.pipeline.recirculationPort ?? defaultPort);
    this.mode = config.mode;
    // Pair occurrences start at random, as the epoch: a controller taking over does not give its predecessor's again at once.
    this.rotation = new Rotation(config.polling.flowCapacity, config.polling.ioPairCapacity, randomInt(1, 256));
    this.stats = { digestLists: 0, digests: 0, badDigests: 0, learnedFlows: 0, learnedPairs: 0, rotations: 0, rotationsSkipped: 0, rotationsFailed: 0, mode: this.mode, epoch: this.epoch, primary: false, connected: false, role: "disconnected", sessions: 0, endpoints: 0, learnedEndpoints: 0, endpointsRefused: 0 };
    const tables = this.schema.tables;
    this.endpointTables = tables.has(T.endpoints_src_v6.name) && tables.has(T.endpoints_dst_v6.name)
      ? { src: tables.get(T.endpoints_src_v6.name).preamble!.id, dst: tables.get(T.endpoints_dst_v6.name).preamble!.id }
      : undefined;
    if (!this.endpointTables && config.endpoints.length) throw new ConfigError(`endpoints: listed, but the program in pipeline.p4info ${config.pipeline.p4info} has no endpoint tables (no IPv6)`);
    const capacity = Number(tables.has(T.endpoints_src_v6.name) ? tables.get(T.endpoints_src_v6.name).size : 0n);
    if (this.endpointTables && capacity > 0 && config.endpoints.length > capacity) throw new ConfigError(`endpoints: ${config.endpoints.length} listed, and the switch's endpoint tables hold ${capacity}`);
    this.histograms = HistogramTables.of(this.schema, config.histograms.idIdleMs);
    if (config.mode === "summary" && !this.histograms) throw new ConfigError(NO_SUMMARY(config.pipeline.p4info));
    // The id tables are this controller's: ids an earlier controller gave (a switch it attaches to, a takeover) are removed, and pairs get new ones as they are learned.
    if (this.histograms) for (const id of this.histograms.tableIds) this.state.managedTables.add(id);
    this.buildStaticState();
    // The watchlists are this controller's: what an earlier controller's window left on the switch is deleted when
    // this one takes it, and the pairs it held are told as having left (watch-left).
    const ioWatchlist = tables.get(T.io_tracker_io_watchlist.name).preamble!.id;
    this.state.managedTables.add(ioWatchlist);
    this.state.managedTables.add(tables.get(T.flow_tracker_flow_watchlist.name).preamble!.id);
    // A switch read back (reconnection, takeover, restart): the keys it holds are the keys.
    this.state.onObserve = (entries) => {
      if (this.endpointTables) this.adoptEndpoints(entries);
      this.watchlistObserved(ioWatchlist, entries);
    };
    this.connection = new SwitchConnection({
      address: config.switch.address,
      deviceId: config.switch.deviceId,
      electionId: config.switch.electionId,
      role: config.switch.role,
      tls: config.switch.tls && {
        ca: config.switch.tls.ca ? readFileSync(config.switch.tls.ca) : undefined,
        cert: config.switch.tls.cert ? readFileSync(config.switch.tls.cert) : undefined,
        key: config.switch.tls.key ? readFileSync(config.switch.tls.key) : undefined,
        serverName: config.switch.tls.serverName,
      },
      pipeline: { p4info, deviceConfig, cookie },
      attach: !config.pipeline.push,
      state: this.state,
      logger: this.log,
    });
    this.connection.on("session", ({ session, pushed, reloaded }) => {
      // A push means a switch without our pipeline: new, restarted, or
      // reloaded (attached: a new cookie, or the switch lost our entries).
      // Its clock, digest sequence and registers start anew.
      if (session !== this.session) this.stats.sessions++;
      if ((pushed || reloaded) && this.stats.sessions > 1) this.log.warn("switch session restarted: the switch lost its pipeline (restart or reload); clock and digest sequence start anew", { switch: config.switch.switchId, session });
      this.session = session;
      // A pushed pipeline starts with every counter at 0; one attached to may hold counts from before.
      if (pushed || reloaded) {
        this.histograms?.resetBaselines();
        this.histogramBaselineDue = false;
      } else this.histogramBaselineDue = true;
    });
    this.connection.on("primary", () => {
      this.stats.primary = true;
      this.stats.role = "primary";
      if (this.primaryOnce) {
        // Taking over again (reconnection, failover back): what this
        // controller learned before may be stale, and a switch that kept
        // running must report its flows again.
        this.bumpEpoch();
        this.connection.sync().catch((err: unknown) => this.log.warn("epoch write failed", { error: (err as Error).message }));
      }
      this.primaryOnce = true;
      this.emit("primary");
      if (WATCHLIST_MODES.includes(this.mode)) this.startRotation();
    });
    this.connection.on("backup", (info) => {
      this.stats.primary = false;
      this.stats.role = "backup";
      this.stopRotation();
      this.emit("backup", info);
    });
    this.connection.on("channel-up", () => {
      this.stats.connected = true;
    });
    this.connection.on("stream-error", () => {
      this.stats.connected = false;
      this.stats.primary = false;
      this.stats.role = "disconnected";
      this.stopRotation();
    });
    this.connection.on("digest", (list) => this.onDigestList(list));
  }

  private entry(spec: Parameters<typeof buildTableEntry>[1]) {
    return buildTableEntry(this.schema, spec);
  }

  private buildStaticState(): void {
    const c = this.config;
    const v6Routes = this.schema.tables.has(T.forwarding_ipv6_routes.name);
    c.ports.forEach((p, i) => {
      p.prefixes.forEach((prefix, j) => {
        const v6 = prefix.includes(":");
        if (v6 && !v6Routes) throw new ConfigError(`ports[${i}].prefixes[${j}]: ${prefix} is IPv6, and the program in pipeline.p4info has no IPv6 routes`);
        // (A /0 prefix is the table's wildcard: the client omits its match field.)
        this.state.set(this.entry({ table: (v6 ? T.forwarding_ipv6_routes : T.forwarding_ipv4_routes).name, match: { dst_addr: prefix }, action: { name: A.forwarding_route.name, params: { port: p.port } } }));
      });
      for (const [table, action] of [[T.ingress_port_role_port_roles, A.ingress_port_role_set_role], [T.egress_port_role_port_roles, A.egress_port_role_set_role]] as const) {
        this.state.set(this.entry({ table: table.name, match: { port: p.port }, action: { name: action.name, params: { r: ROLE_CODE[p.role] } } }));
      }
    });
    for (const address of c.endpoints) this.addEndpoint(address);
    this.setConfigEntry();
    if (this.reportPort !== undefined) {
      // Tofino: the flow tracker's reports reach the ingress (and become
      // digests) through this mirror session; without it they are lost.
      this.state.setCloneSession({
        sessionId: REPORT_SESSION_ID,
        replicas: [{ portKind: { $case: "egressPort", value: this.reportPort }, instance: 0, backupReplicas: [] }],
        classOfService: 0,
        packetLengthBytes: REPORT_PACKET_LENGTH_BYTES,
      });
    }
    for (const d of this.schema.p4info.digests) {
      this.state.setDigest(d.preamble!.id, {
        maxTimeoutNs: BigInt(c.digest.maxTimeoutUs) * 1000n,
        maxListSize: c.digest.maxListSize,
        ackTimeoutNs: BigInt(c.digest.ackTimeoutMs) * 1_000_000n,
      });
    }
  }

  private setConfigEntry(): void {
    const c = this.config;
    this.state.set(this.entry({
      table: T.config_telemetry_config.name,
      isDefault: true,
      action: {
        name: A.config_set_config.name,
        params: {
          mode: MODE_CODE[this.mode],
          epoch: this.epoch & 0xffff,
          ts_scale: c.switch.timestampUnitNs,
          io_timeout_ns: BigInt(c.timeouts.ioTimeoutMs) * 1_000_000n,
          flow_timeout_ns: BigInt(c.timeouts.flowTimeoutMs) * 1_000_000n,
        },
      },
    }));
  }

  /** Gives an IPv6 address (RFC 5952 text) a key, and wants it in both endpoint tables; undefined when none is left. */
  private addEndpoint(address: string): number | undefined {
    const r = this.endpoints.assign(address);
    if (!r) {
      this.stats.endpointsRefused++;
      this.log.warn("IPv6 endpoint not measured: every endpoint key is taken", { address });
      return undefined;
    }
    if (r.added) this.writeEndpoint(address, r.key);
    return r.key;
  }

  private writeEndpoint(address: string, key: number): void {
    for (const table of [T.endpoints_src_v6, T.endpoints_dst_v6]) {
      this.state.set(this.entry({ table: table.name, match: { addr: address }, action: { name: A.endpoints_set_key.name, params: { key } } }));
    }
    this.stats.endpoints = this.endpoints.size;
  }

  /** The pairs of the switch's watchlist entries (as read) that this controller's window does not hold: about to be deleted. */
  private watchlistObserved(tableId: number, entries: readonly TableEntry[]): void {
    const sentNs = process.hrtime.bigint();
    const key = (p: { host: number; target: number }) => `${p.host}|${p.target}`;
    const wanted = new Map<string, number>();
    for (const te of this.state.entries()) {
      if (te.tableId !== tableId) continue;
      const p = pairOfEntry(te);
      wanted.set(key(p), p.gen);
    }
    const observed = entries.filter((te) => te.tableId === tableId).map(pairOfEntry);
    this.emit("watch-observed", { pairs: observed.map(({ host, target, gen }) => ({ host, target, gen })) });
    // A pair of this window the switch watches already keeps the occurrence it has there.
    const kept = observed.filter((p) => wanted.has(key(p)) && p.gen !== wanted.get(key(p)) && this.rotation.adoptGen(p.host, p.target, p.gen));
    if (kept.length) this.setWatched([], kept);
    const pairs = observed.filter((p) => !wanted.has(key(p)));
    if (!pairs.length) return;
    for (const p of pairs) this.rotation.leftByEarlier(p.host, p.target, p.gen);
    this.log.info("the switch's watchlist held pairs outside this controller's window: taken out", { pairs: pairs.length });
    this.emit("watch-left", { pairs, sentNs });
  }

  /** The endpoint entries a read of the switch found: the keys they hold stay (see EndpointRegistry.adopt). */
  private adoptEndpoints(entries: readonly TableEntry[]): void {
    const found: EndpointEntry[] = [];
    for (const te of entries) {
      if (te.tableId !== this.endpointTables!.src && te.tableId !== this.endpointTables!.dst) continue;
      const m = te.match[0]?.fieldMatchType;
      const a = te.action?.type;
      if (m?.$case !== "exact" || a?.$case !== "action" || !a.value.params[0]) continue;
      const key = Number(ipv6FromBytes(a.value.params[0].value));
      if (!isEndpointKey(key)) continue;
      found.push({ key, address: ipv6Text(ipv6FromBytes(m.value.value)) });
    }
    const changed = this.endpoints.adopt(found);
    for (const address of changed) this.writeEndpoint(address, this.endpoints.keyOf(address)!);
    if (found.length) this.log.info("endpoint keys read back from the switch", { entries: found.length, changed: changed.length });
  }

  /** The entries of the endpoint keys `digests` use (what the exporter needs to write their addresses). */
  private endpointsOf(digests: readonly TelemetryDigest[]): EndpointEntry[] | undefined {
    if (!this.endpointTables || this.endpoints.size === 0) return undefined;
    let out: Map<number, string> | undefined;
    const add = (v: number) => {
      if (!isEndpointKey(v) || out?.has(v)) return;
      const address = this.endpoints.addressOf(v);
      if (address !== undefined) (out ??= new Map()).set(v, address);
    };
    for (const d of digests) {
      if (d.kind === "io") {
        add(d.host);
        add(d.target);
      } else {
        add(d.src);
        add(d.dst);
      }
    }
    return out && [...out].map(([key, address]) => ({ key, address }));
  }

  /** An IPv6 address the switch has no key for (LEARN_ENDPOINT): one now, written at once (on-demand: at the next applyLearnedEndpoints). */
  private learnEndpoint(addr: bigint): void {
    const address = ipv6Text(addr);
    if (this.endpoints.keyOf(address) !== undefined) return; // (reported again before the entry was written: one key)
    if (this.endpointWrites === "on-demand") this.pendingEndpoints.add(address);
    else void this.writeLearnedEndpoint(address);
  }

  /** Gives `address` a key and writes it; resolves when the write is through or refused. */
  private writeLearnedEndpoint(address: string): Promise<void> {
    if (this.endpoints.keyOf(address) !== undefined) return Promise.resolve();
    if (this.addEndpoint(address) === undefined) return Promise.resolve();
    this.stats.learnedEndpoints++;
    const key = this.endpoints.keyOf(address)!;
    return this.connection.sync().then(() => undefined, (err: unknown) => {
      // Refused (e.g. the tables are full): given up, so that it is not written again at every sync; the switch reports it again later.
      const entries = [T.endpoints_src_v6, T.endpoints_dst_v6].map((table) => this.entry({ table: table.name, match: { addr: address }, action: { name: A.endpoints_set_key.name, params: { key } } }));
      if (entries.every((e) => this.state.isInstalled(e))) return;
      for (const e of entries) this.state.remove(e);
      this.endpoints.remove(address);
      this.stats.endpoints = this.endpoints.size;
      this.stats.endpointsRefused++;
      this.log.warn("endpoint entry not written: its packets stay unmeasured", { address, error: (err as Error).message });
    });
  }

  /** Writes the endpoints the switch reported since the last call (endpoints "on-demand"), in the order reported. */
  async applyLearnedEndpoints(): Promise<void> {
    if (this.pendingEndpoints.size === 0) return;
    const pending = [...this.pendingEndpoints];
    this.pendingEndpoints.clear();
    await Promise.all(pending.map((a) => this.writeLearnedEndpoint(a)));
  }

  /** The key of an IPv6 address on this switch (for tests and tools), given if it has none. */
  endpointKey(address: string): number | undefined {
    return this.endpoints.keyOf(ipv6Text(ipv6(address)));
  }

  start(): void {
    this.connection.start();
  }

  async stop(): Promise<void> {
    this.stopRotation();
    await this.connection.stop();
  }

  /** Resolves when this controller is primary and the switch holds the desired state. */
  ready(timeoutMs = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.stats.primary) {
        resolve();
        return;
      }
      const t = setTimeout(() => reject(new Error(`not primary on ${this.config.switch.address} after ${timeoutMs} ms`)), timeoutMs);
      this.once("primary", () => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  get currentMode(): Mode {
    return this.mode;
  }

  /** Switches the measurement mode by table writes only. */
  /** The next epoch (16 bits, never 0), written to the switch with the configuration. */
  private bumpEpoch(): void {
    this.epoch = (this.epoch % 0xffff) + 1;
    this.stats.epoch = this.epoch;
    this.setConfigEntry();
  }

  async setMode(mode: Mode): Promise<void> {
    if (mode === this.mode) return;
    if (mode === "summary" && !this.histograms) throw new ConfigError(NO_SUMMARY(this.config.pipeline.p4info));
    this.mode = mode;
    this.stats.mode = mode;
    if (mode === "full") {
      this.stopRotation();
      this.clearWatchlists();
    }
    this.bumpEpoch();
    if (WATCHLIST_MODES.includes(mode)) {
      this.applyWindow();
      await this.connection.sync();
      this.startRotation();
    } else {
      await this.connection.sync();
    }
    this.log.info("mode switched", { mode, epoch: this.epoch });
    this.emit("mode-changed", { mode, epoch: this.epoch });
  }

  private clearWatchlists(): void {
    this.state.removeWhere(this.schema.tables.get(T.flow_tracker_flow_watchlist.name).preamble!.id, () => true);
    this.state.removeWhere(this.schema.tables.get(T.io_tracker_io_watchlist.name).preamble!.id, () => true);
  }

  /** Installs the rotation's current window in the desired state. */
  private applyWindow(): void {
    this.clearWatchlists();
    const w = this.rotation.current();
    this.rotation.takeJoined(); // in the window written now
    this.watchJoinsPending = false;
    this.setWatched(w.flows, w.pairs);
  }

  /** Puts watchlist entries of flows and pairs in the desired state. */
  private setWatched(flows: readonly WatchedFlow[], pairs: readonly WatchedPair[]): void {
    for (const f of flows) {
      this.state.set(this.entry({
        table: T.flow_tracker_flow_watchlist.name,
        match: { src: f.src, dst: f.dst, dest_qp: f.destQp },
        action: { name: A.flow_tracker_watch.name, params: { flow_slot: f.slot, flow_epoch: f.epoch & 0xffff } },
      }));
    }
    for (const p of pairs) {
      this.state.set(this.entry({ table: T.io_tracker_io_watchlist.name, match: { host: p.host, target: p.target }, action: { name: A.io_tracker_watch.name, params: { gen: p.gen } } }));
    }
  }

  /**
   * Flows and pairs learned while the polling window had room joined it
   * (rotation.ts): their watchlist entries are written now (on-demand: by
   * the next applyWatchJoins()), not at the next rotation, so that they are
   * measured from then on and the window's coverage is what the switch
   * watches.
   */
  private watchJoined(): void {
    const j = this.rotation.takeJoined();
    if (!WATCHLIST_MODES.includes(this.mode) || (j.flows.length === 0 && j.pairs.length === 0)) return;
    if (j.pairs.length) this.emit("watch-joined", { pairs: j.pairs.map(({ host, target, gen }) => ({ host, target, gen })), sentNs: process.hrtime.bigint() });
    this.setWatched(j.flows, j.pairs);
    if (this.watchJoinWrites === "on-demand") this.watchJoinsPending = true;
    else this.connection.sync().catch((err: unknown) => this.log.warn("writing the watchlist entries of new flows failed; they are written at the next rotation", { error: (err as Error).message }));
  }

  /** Writes the watchlist entries of flows and pairs that joined the window since the last write (with `watchJoins: "on-demand"`). */
  async applyWatchJoins(): Promise<void> {
    if (!this.watchJoinsPending) return;
    this.watchJoinsPending = false;
    await this.connection.sync();
  }

  /** The rotation under way (rotate()), which the next one waits for. */
  private rotating: Promise<void> | undefined;

  /**
   * Moves the polling window to the next flows (round robin) and writes it;
   * one rotation at a time: a call while one is under way starts once it
   * has ended.
   */
  async rotate(): Promise<void> {
    const run = (this.rotating ?? Promise.resolve()).catch(() => undefined).then(() => this.rotateOnce());
    this.rotating = run;
    try {
      await run;
    } finally {
      if (this.rotating === run) this.rotating = undefined;
    }
  }

  private async rotateOnce(): Promise<void> {
    const t0 = performance.now();
    // This host's monotonic clock before the write goes out: the switch applies it later (window-gate.ts).
    const sentNs = process.hrtime.bigint();
    const before = this.rotation.current().pairs;
    this.rotation.advance();
    this.applyWindow();
    // The pairs this rotation takes out and puts in, from the window it writes (not the one current when its write
    // is through: a rotation asked for meanwhile may have moved it on).
    const w = this.rotation.current();
    const kept = new Set(w.pairs.map((p) => `${p.host}|${p.target}`));
    const leftPairs = before.filter((p) => !kept.has(`${p.host}|${p.target}`)).map(({ host, target, gen }) => ({ host, target, gen }));
    const had = new Set(before.map((p) => `${p.host}|${p.target}`));
    const joinedPairs = w.pairs.filter((p) => !had.has(`${p.host}|${p.target}`)).map(({ host, target, gen }) => ({ host, target, gen }));
    try {
      await this.connection.sync();
      this.stats.rotations++;
    } catch (err) {
      this.stats.rotationsFailed++;
      throw err;
    } finally {
      // Told whether the write went through or failed (some of it may have been applied: a pair told as left when it
      // was not says less of its I/Os; the next write puts the window in place).
      this.emit("rotated", { window: w.index, flows: w.flows.length, pairs: w.pairs.length, knownFlows: this.rotation.knownFlows, knownPairs: this.rotation.knownPairs, durationMs: performance.now() - t0, leftPairs, joinedPairs, sentNs });
    }
  }

  /**
   * Reads the switch's statistics: packets counted per event, from the
   * packet_events and flow_events counters (each entry a set of events).
   */
  async readCounters(): Promise<SwitchCounters> {
    const packetId = this.schema.counters.get(P4_NAMES.counters.stats_packet_events.name).preamble!.id;
    const flowId = this.schema.counters.get(P4_NAMES.counters.stats_flow_events.name).preamble!.id;
    const entries = new Map<number, Array<[number, number]>>([[packetId, []], [flowId, []]]);
    const read = this.connection.client.read([packetId, flowId].map((counterId) => ({ entity: { $case: "counterEntry" as const, value: { counterId, index: undefined, data: undefined } } })));
    for await (const e of read) {
      if (e.entity?.$case !== "counterEntry") continue;
      entries.get(e.entity.value.counterId)?.push([Number(e.entity.value.index?.index ?? -1), Number(e.entity.value.data?.packetCount ?? 0n)]);
    }
    return switchCounters(entries.get(packetId)!, entries.get(flowId)!);
  }

  /**
   * Reads the data plane's histograms: what each pair, op and figure (and
   * each flow's FCT) counted since the last read. Undefined for a program
   * without histograms.
   */
  async readHistograms(): Promise<HistogramRead | undefined> {
    const h = this.histograms;
    if (!h) return undefined;
    const read = (entities: Parameters<typeof this.connection.client.read>[0]) => this.connection.client.read(entities);
    if (this.histogramBaselineDue) {
      this.histogramBaselineDue = false;
      await h.baseline(read);
    }
    const t0 = performance.now();
    const [cells, wrapped, decreased] = [h.cellsRead, h.cellsWrapped, h.cellsDecreased];
    const r = await h.read(read, this.histogramClockMs());
    this.emit("histograms-read", { durationMs: performance.now() - t0, cells: h.cellsRead - cells, wrapped: h.cellsWrapped - wrapped, decreased: h.cellsDecreased - decreased });
    return r;
  }

  /** Writes the histogram ids given since the last write (with `histogramIds: "on-demand"`). */
  async applyHistogramIds(): Promise<void> {
    if (!this.histogramIdsPending) return;
    this.histogramIdsPending = false;
    await this.syncHistogramIds();
  }

  /** Writes the id tables' changes; removals of idle holders' entries, once written, let their ids be read out and freed. */
  private async syncHistogramIds(): Promise<void> {
    const releases = this.histograms?.releasesPending() ?? [];
    await this.connection.sync();
    this.histograms?.releasesWritten(releases);
  }

  /** Gives a pair (and a flow) a histogram id as it is learned; written with the next sync. */
  private histogramId(kind: "pair" | "flow", a: number, b: number, qp = 0): void {
    const h = this.histograms;
    if (!h) return;
    const now = this.histogramClockMs();
    const e = kind === "pair" ? h.pairEntry(a, b, now) : h.flowEntry(a, b, qp, now);
    if (!e) return;
    if (e.release) this.state.remove(this.entry({ table: e.table, match: e.release }));
    else this.state.set(this.entry(e));
    this.histogramIdsPending = true;
  }

  /** Measured / known flows in the current polling window (1 in full mode). */
  coverage(): { measured_flows: number; known_flows: number; ratio: number } {
    if (this.mode === "full") return { measured_flows: this.rotation.knownFlows, known_flows: this.rotation.knownFlows, ratio: 1 };
    const w = this.rotation.current();
    const known = this.rotation.knownFlows;
    return { measured_flows: w.flows.length, known_flows: known, ratio: known === 0 ? 1 : w.flows.length / known };
  }

  /** The host-target pairs measured over those known (polling: the window's; full: all of them). */
  pairCoverage(): { measured_pairs: number; known_pairs: number; ratio: number } {
    const known = this.rotation.knownPairs;
    if (this.mode === "full") return { measured_pairs: known, known_pairs: known, ratio: 1 };
    const w = this.rotation.current();
    return { measured_pairs: w.pairs.length, known_pairs: known, ratio: known === 0 ? 1 : w.pairs.length / known };
  }

  private startRotation(): void {
    this.stopRotation();
    if (!this.rotationTimerEnabled) return;
    this.rotationTimer = setInterval(() => {
      // The last rotation's write not through yet (a slow switch, a busy host): this period's is skipped, not queued.
      if (this.rotating) {
        this.stats.rotationsSkipped++;
        return;
      }
      this.rotate().catch((err: unknown) => this.log.warn("rotation failed", { error: (err as Error).message }));
    }, this.config.polling.rotationPeriodMs);
    this.rotationTimer.unref();
  }

  private stopRotation(): void {
    if (this.rotationTimer) clearInterval(this.rotationTimer);
    this.rotationTimer = undefined;
  }

  private onDigestList(list: DigestList): void {
    // Acknowledge first (the switch may then send the next list at once),
    // unless the owner acknowledges once the digests are safe.
    const ack = () => this.connection.ackDigest(list.digestId, list.listId);
    if (!this.deferAck) ack();
    this.stats.digestLists++;
    const name = this.digestNames.get(list.digestId);
    if (!name) {
      const n = isFastDigestList(list) ? list.samples.length : list.data.length;
      this.stats.badDigests += n;
      this.emit("bad-digest", { message: `digest list for unknown digest id ${list.digestId} (${n} samples)` });
      if (this.deferAck) ack();
      this.emit("digests", { switchId: this.config.switch.switchId, listTimestampNs: list.timestamp, digests: [], badDigests: n, session: this.session, raw: { digest: "", samples: [] } });
      return;
    }
    const digests: TelemetryDigest[] = [];
    const raw: DigestMember[][] = [];
    let bad = 0;
    const samples = isFastDigestList(list) ? list.samples : list.data;
    // The compact layout is normalised here, into the full one: what it lacks
    // comes from this list (its timestamp as the switch sent it) and the mode.
    const compact = this.digestLayout === "compact" ? compactContext(MODE_CODE[this.mode], list.timestamp) : undefined;
    for (const sample of samples) {
      try {
        const values = Array.isArray(sample) ? sample : digestValues(sample);
        const d = compact ? decodeCompactDigest(name, values, compact) : decodeDigest(name, values);
        digests.push(d);
        raw.push(compact ? fullDigestValues(name, d) : values);
        this.learn(d);
      } catch (err) {
        bad++;
        this.stats.badDigests++;
        this.emit("bad-digest", { message: (err as Error).message });
      }
    }
    this.stats.digests += digests.length;
    this.watchJoined();
    if (this.histogramIdsPending && this.histogramIdWrites === "on-learn") {
      this.histogramIdsPending = false;
      this.syncHistogramIds().catch((err: unknown) => this.log.warn("writing histogram ids failed", { error: (err as Error).message }));
    }
    const listTimestampNs = this.listClock
      ? this.listClock.toUnix(list.timestamp, (offsetNs) => {
          this.log.warn("the switch stamps digest lists with a clock that is not Unix time (PI's P4Runtime server counts from boot); mapped to this host's clock", { offsetNs: String(offsetNs) });
        })
      : list.timestamp;
    const endpoints = this.endpointsOf(digests);
    this.emit("digests", { switchId: this.config.switch.switchId, listTimestampNs, digests, badDigests: bad, session: this.session, raw: { digest: name, samples: raw }, ack: this.deferAck ? ack : undefined, ...(endpoints ? { endpoints } : {}) });
  }

  private learn(d: TelemetryDigest): void {
    if (d.kind === "learn") {
      if (d.learn === LEARN_FLOW) this.histogramId("flow", d.src, d.dst, d.dest_qp);
      if (d.learn === LEARN_IO_PAIR) this.histogramId("pair", d.src, d.dst);
    } else if (d.kind === "msg") this.histogramId("flow", d.src, d.dst, d.dest_qp);
    else if (d.event !== IO_EVENT_QUEUE_PAIR) this.histogramId("pair", d.host, d.target);
    if (d.kind === "learn") {
      if (d.learn === LEARN_ENDPOINT && this.endpointTables && d.addr) this.learnEndpoint(d.addr);
      if (d.learn === LEARN_FLOW && this.rotation.addFlow(d.src, d.dst, d.dest_qp)) this.stats.learnedFlows++;
      if (d.learn === LEARN_IO_PAIR && this.rotation.addPair(d.src, d.dst)) this.stats.learnedPairs++;
    } else if (d.kind === "msg") {
      if (this.rotation.addFlow(d.src, d.dst, d.dest_qp)) this.stats.learnedFlows++;
    } else if (d.event !== IO_EVENT_QUEUE_PAIR && this.rotation.addPair(d.host, d.target)) {
      // (A queue pairing is not an I/O: its pair is learned from the I/Os' own digests.)
      this.stats.learnedPairs++;
    }
  }
}
