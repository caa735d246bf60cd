// The telemetry controller's configuration: a JSON file, validated with
// errors that name the field. Options are typed, immutable and defaulted
// here; environment variables are read only by the command line.
import { accessSync, constants, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { ControllerError } from "./errors.js";
import { packageRoot } from "./paths.js";

import { canonicalAddress, parsePrefix, type PortSpec } from "@rdma-telemetry/contract";

export type Mode = "full" | "polling" | "summary";
/** Modes whose digests cover the watchlists only (the polling rotation runs in both). */
export const WATCHLIST_MODES: readonly Mode[] = ["polling", "summary"];

/** A port of the switch, as the topology gives it (see @rdma-telemetry/contract). */
export type PortConfig = PortSpec;

export interface ControllerConfig {
  readonly switch: {
    readonly address: string;
    readonly deviceId: bigint;
    readonly electionId: bigint;
    readonly role: string;
    /** name used in records */
    readonly switchId: string;
    /** ns per tick of the switch's ingress timestamp: 1000 on BMv2 (µs), 1 on the software switch */
    readonly timestampUnitNs: number;
    readonly tls?: { readonly ca?: string; readonly cert?: string; readonly key?: string; readonly serverName?: string };
  };
  readonly pipeline: {
    readonly p4info: string;
    readonly deviceConfig: string;
    /**
     * false: attach to the pipeline already on the switch (loaded by Stratum,
     * an orchestrator or another controller) instead of pushing one; its
     * P4Info must be pipeline.p4info. device_config is then not used.
     */
    readonly push: boolean;
    /**
     * Tofino (a tna or t2na P4Info): the port the flow tracker's report mirror
     * session sends to; by default the chip's recirculation port (68 on Tofino 1, 6 on Tofino 2).
     */
    readonly recirculationPort?: number;
  };
  readonly ports: readonly PortConfig[];
  /**
   * IPv6 endpoints given endpoint keys before any of their packets is seen
   * (RFC 5952 text); the others get theirs when the switch reports them.
   */
  readonly endpoints: readonly string[];
  readonly mode: Mode;
  readonly polling: { readonly rotationPeriodMs: number; readonly flowCapacity: number; readonly ioPairCapacity: number };
  /**
   * The switch's I/O and flow timeouts, and how long the exporter waits for a
   * switch that sends nothing (silentSwitchMs) before its held commands go out
   * without its figures.
   */
  readonly timeouts: { readonly ioTimeoutMs: number; readonly flowTimeoutMs: number; readonly silentSwitchMs: number };
  readonly digest: { readonly maxTimeoutUs: number; readonly maxListSize: number; readonly ackTimeoutMs: number };
  /** The data plane's histograms: a pair's or flow's id goes to a new one when every id is taken and it has counted nothing for idIdleMs. */
  readonly histograms: { readonly idIdleMs: number };
  /** HTTP endpoint for status and run-time mode switches (token required); 0 = off */
  readonly controlPort: number;
  /** where the control endpoint listens: loopback unless TLS is set (or plaintext is explicitly allowed) */
  readonly control: {
    readonly host: string;
    readonly tls?: { readonly cert: string; readonly key: string };
    readonly insecurePlaintext: boolean;
  };
}

/** A configuration that cannot be used: the message names the field and what is wrong. */
export class ConfigError extends ControllerError {
  override readonly name = "ConfigError";
  constructor(message: string) {
    super(message, "BAD_CONFIG");
  }
}

const ROOT = packageRoot();

export const DEFAULTS = {
  address: "127.0.0.1:9559",
  deviceId: 1n,
  electionId: 1n,
  timestampUnitNs: 1000,
  p4info: resolve(ROOT, "p4/build/telemetry.p4info.json"),
  deviceConfig: resolve(ROOT, "p4/build/telemetry.json"),
  mode: "full" as Mode,
  rotationPeriodMs: 1000,
  flowCapacity: 1024,
  ioPairCapacity: 1024,
  ioTimeoutMs: 1000,
  flowTimeoutMs: 1000,
  silentSwitchMs: 60_000,
  maxTimeoutUs: 1000,
  maxListSize: 128,
  ackTimeoutMs: 1000,
} as const;

type Json = Record<string, unknown>;

function obj(v: unknown, path: string): Json {
  if (v === undefined) return {};
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new ConfigError(`${path}: must be an object`);
  return v as Json;
}

function num(v: unknown, path: string, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  if (typeof v !== "number" || !Number.isInteger(v)) throw new ConfigError(`${path}: must be an integer (got ${JSON.stringify(v)})`);
  if (v < min || v > max) throw new ConfigError(`${path}: must be between ${min} and ${max} (got ${v})`);
  return v;
}

function big(v: unknown, path: string, def: bigint, max = (1n << 64n) - 1n): bigint {
  if (v === undefined) return def;
  if ((typeof v === "number" && Number.isSafeInteger(v) && v >= 0) || (typeof v === "string" && /^\d+$/.test(v))) {
    const b = BigInt(v);
    if (b > max) throw new ConfigError(`${path}: at most ${max} (got ${String(v)})`);
    return b;
  }
  throw new ConfigError(`${path}: must be a non-negative integer (got ${JSON.stringify(v)})`);
}

function str(v: unknown, path: string, def?: string): string {
  if (v === undefined && def !== undefined) return def;
  if (typeof v !== "string" || v === "") throw new ConfigError(`${path}: must be a non-empty string`);
  return v;
}

function checkUnknown(o: Json, path: string, known: string[]): void {
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw new ConfigError(`${path ? path + "." : ""}${k}: unknown setting (known: ${known.join(", ")})`);
  }
}

export function parsePorts(v: unknown, path = "ports"): PortConfig[] {
  if (!Array.isArray(v) || v.length === 0) throw new ConfigError(`${path}: must be a non-empty list of {port, role, prefixes}`);
  const seen = new Set<number>();
  const prefixes = new Map<string, number>();
  return v.map((p, i) => {
    const at = `${path}[${i}]`;
    const o = obj(p, at);
    checkUnknown(o, at, ["port", "role", "prefixes"]);
    const port = num(o.port, `${at}.port`, NaN, 0, 511);
    if (Number.isNaN(port)) throw new ConfigError(`${at}.port: required`);
    if (port === CPU_PORT) throw new ConfigError(`${at}.port: ${CPU_PORT} is the CPU port, not a data port`);
    if (seen.has(port)) throw new ConfigError(`${at}.port: port ${port} is listed twice`);
    seen.add(port);
    const role = o.role;
    if (role !== "compute" && role !== "storage" && role !== "fabric") throw new ConfigError(`${at}.role: must be compute, storage or fabric (got ${JSON.stringify(role)})`);
    const list = o.prefixes ?? [];
    if (!Array.isArray(list)) throw new ConfigError(`${at}.prefixes: must be a list of IPv4 or IPv6 prefixes`);
    if (list.length === 0) throw new ConfigError(`${at}.prefixes: port ${port} has no prefixes: no traffic would be routed to it (a fabric uplink takes "0.0.0.0/0", and "::/0" for IPv6)`);
    const pre = list.map((x, j) => {
      if (typeof x !== "string") throw new ConfigError(`${at}.prefixes[${j}]: not a prefix like 10.0.0.0/24 or 2001:db8::/64 (got ${JSON.stringify(x)})`);
      // Compared as networks, not as text: 10.0.1.1/24 is 10.0.1.0/24 with host bits set.
      let canonical: string;
      try {
        canonical = parsePrefix(x).text;
      } catch (err) {
        throw new ConfigError(`${at}.prefixes[${j}]: ${(err as Error).message}`);
      }
      const other = prefixes.get(canonical);
      if (other !== undefined) throw new ConfigError(`${at}.prefixes[${j}]: ${x} is also routed to port ${other}`);
      prefixes.set(canonical, port);
      return x;
    });
    return { port, role, prefixes: pre };
  });
}

/** The IPv6 endpoints to give keys at start (canonical text); refused in one line naming the entry. */
export function parseEndpoints(v: unknown, path = "endpoints"): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new ConfigError(`${path}: must be a list of IPv6 addresses`);
  const seen = new Set<string>();
  return v.flatMap((x, i) => {
    if (typeof x !== "string" || !x.includes(":")) {
      throw new ConfigError(`${path}[${i}]: not an IPv6 address (got ${JSON.stringify(x)})${typeof x === "string" && /^\d+\.\d+\.\d+\.\d+$/.test(x) ? ": an IPv4 address is its own endpoint key" : ""}`);
    }
    let a: string;
    try {
      a = canonicalAddress(x);
    } catch {
      throw new ConfigError(`${path}[${i}]: not an IPv6 address (got ${JSON.stringify(x)})`);
    }
    if (seen.has(a)) return [];
    seen.add(a);
    return [a];
  });
}

/** Validates a parsed config object; relative paths are resolved against `baseDir`. */
export function parseConfig(raw: unknown, baseDir = process.cwd()): ControllerConfig {
  const o = obj(raw, "config");
  checkUnknown(o, "", ["switch", "pipeline", "ports", "endpoints", "mode", "polling", "timeouts", "digest", "histograms", "control_port", "control_host", "control_tls", "control_insecure_plaintext"]);
  const sw = obj(o.switch, "switch");
  checkUnknown(sw, "switch", ["address", "device_id", "election_id", "role", "switch_id", "timestamp_unit_ns", "tls"]);
  const address = str(sw.address, "switch.address", DEFAULTS.address);
  if (!/^[^\s:]+:\d+$|^\[[0-9a-fA-F:]+\]:\d+$|^unix:/.test(address)) throw new ConfigError(`switch.address: expected host:port (got ${JSON.stringify(address)})`);
  const tcpPort = /:(\d+)$/.exec(address);
  if (tcpPort && !address.startsWith("unix:") && (Number(tcpPort[1]) < 1 || Number(tcpPort[1]) > 65535)) throw new ConfigError(`switch.address: port ${tcpPort[1]} is not a TCP port (1-65535)`);
  const tlsRaw = sw.tls === undefined ? undefined : obj(sw.tls, "switch.tls");
  if (tlsRaw) checkUnknown(tlsRaw, "switch.tls", ["ca", "cert", "key", "server_name"]);
  if (tlsRaw && (tlsRaw.cert === undefined) !== (tlsRaw.key === undefined)) throw new ConfigError("switch.tls: cert and key go together (mutual TLS)");
  const pipe = obj(o.pipeline, "pipeline");
  checkUnknown(pipe, "pipeline", ["p4info", "device_config", "push", "recirculation_port"]);
  const push = pipe.push ?? true;
  if (typeof push !== "boolean") throw new ConfigError(`pipeline.push: must be true or false (got ${JSON.stringify(push)})`);
  if (!push && pipe.device_config !== undefined) throw new ConfigError("pipeline.device_config: not used with pipeline.push false (the controller attaches to the pipeline on the switch); remove it");
  const polling = obj(o.polling, "polling");
  checkUnknown(polling, "polling", ["rotation_period_ms", "flow_capacity", "io_pair_capacity"]);
  const timeouts = obj(o.timeouts, "timeouts");
  checkUnknown(timeouts, "timeouts", ["io_timeout_ms", "flow_timeout_ms", "silent_switch_ms"]);
  const digest = obj(o.digest, "digest");
  checkUnknown(digest, "digest", ["max_timeout_us", "max_list_size", "ack_timeout_ms"]);
  const histograms = obj(o.histograms, "histograms");
  checkUnknown(histograms, "histograms", ["id_idle_ms"]);
  const mode = o.mode ?? DEFAULTS.mode;
  if (mode !== "full" && mode !== "polling" && mode !== "summary") throw new ConfigError(`mode: must be full, polling or summary (got ${JSON.stringify(mode)})`);
  const path = (v: unknown, p: string, def: string) => resolve(baseDir, str(v, p, def));
  const tlsPath = (v: unknown, p: string) => (v === undefined ? undefined : path(v, p, ""));
  const controlHost = str(o.control_host, "control_host", "127.0.0.1");
  const controlTlsRaw = o.control_tls === undefined ? undefined : obj(o.control_tls, "control_tls");
  if (controlTlsRaw) checkUnknown(controlTlsRaw, "control_tls", ["cert", "key"]);
  const controlTls = controlTlsRaw && { cert: resolve(baseDir, str(controlTlsRaw.cert, "control_tls.cert")), key: resolve(baseDir, str(controlTlsRaw.key, "control_tls.key")) };
  const insecurePlaintext = o.control_insecure_plaintext ?? false;
  if (typeof insecurePlaintext !== "boolean") throw new ConfigError(`control_insecure_plaintext: must be true or false (got ${JSON.stringify(insecurePlaintext)})`);
  // The token would cross the network in clear: a non-loopback address needs TLS, or to be told.
  if (!isLoopback(controlHost) && !controlTls && !insecurePlaintext) {
    throw new ConfigError(`control_host: ${controlHost} is not a loopback address: set control_tls (cert, key), or control_insecure_plaintext: true to send the control token in clear`);
  }
  return Object.freeze({
    switch: Object.freeze({
      address,
      deviceId: big(sw.device_id, "switch.device_id", DEFAULTS.deviceId),
      electionId: big(sw.election_id, "switch.election_id", DEFAULTS.electionId),
      role: sw.role === undefined ? "" : str(sw.role, "switch.role"),
      switchId: sw.switch_id === undefined ? address : str(sw.switch_id, "switch.switch_id"),
      timestampUnitNs: num(sw.timestamp_unit_ns, "switch.timestamp_unit_ns", DEFAULTS.timestampUnitNs, 1, 1_000_000),
      tls: tlsRaw && {
        ca: tlsPath(tlsRaw.ca, "switch.tls.ca"),
        cert: tlsPath(tlsRaw.cert, "switch.tls.cert"),
        key: tlsPath(tlsRaw.key, "switch.tls.key"),
        serverName: tlsRaw.server_name === undefined ? undefined : str(tlsRaw.server_name, "switch.tls.server_name"),
      },
    }),
    pipeline: Object.freeze({
      p4info: path(pipe.p4info, "pipeline.p4info", DEFAULTS.p4info),
      deviceConfig: path(pipe.device_config, "pipeline.device_config", DEFAULTS.deviceConfig),
      push,
      // A Tofino port number (9 bits); whether the P4Info has a report session is checked with the P4Info.
      ...(pipe.recirculation_port === undefined ? {} : { recirculationPort: num(pipe.recirculation_port, "pipeline.recirculation_port", 0, 0, 511) }),
    }),
    ports: Object.freeze(parsePorts(o.ports)),
    endpoints: Object.freeze(parseEndpoints(o.endpoints)),
    mode,
    polling: Object.freeze({
      rotationPeriodMs: num(polling.rotation_period_ms, "polling.rotation_period_ms", DEFAULTS.rotationPeriodMs, 1, 3_600_000),
      flowCapacity: num(polling.flow_capacity, "polling.flow_capacity", DEFAULTS.flowCapacity, 1, 1024),
      ioPairCapacity: num(polling.io_pair_capacity, "polling.io_pair_capacity", DEFAULTS.ioPairCapacity, 1, 1024),
    }),
    timeouts: Object.freeze({
      ioTimeoutMs: num(timeouts.io_timeout_ms, "timeouts.io_timeout_ms", DEFAULTS.ioTimeoutMs, 1, 3_600_000),
      flowTimeoutMs: num(timeouts.flow_timeout_ms, "timeouts.flow_timeout_ms", DEFAULTS.flowTimeoutMs, 1, 3_600_000),
      // As the commands' --silent-switch-ms: at least a second, at most an hour.
      silentSwitchMs: num(timeouts.silent_switch_ms, "timeouts.silent_switch_ms", DEFAULTS.silentSwitchMs, 1000, 3_600_000),
    }),
    digest: Object.freeze({
      maxTimeoutUs: num(digest.max_timeout_us, "digest.max_timeout_us", DEFAULTS.maxTimeoutUs, 1, 10_000_000),
      maxListSize: num(digest.max_list_size, "digest.max_list_size", DEFAULTS.maxListSize, 1, 65536),
      ackTimeoutMs: num(digest.ack_timeout_ms, "digest.ack_timeout_ms", DEFAULTS.ackTimeoutMs, 1, 3_600_000),
    }),
    histograms: Object.freeze({ idIdleMs: num(histograms.id_idle_ms, "histograms.id_idle_ms", 60_000, 1000, 86_400_000) }),
    controlPort: num(o.control_port, "control_port", 0, 0, 65535),
    control: Object.freeze({ host: controlHost, ...(controlTls ? { tls: Object.freeze(controlTls) } : {}), insecurePlaintext }),
  });
}

/** 127.0.0.0/8, ::1 and localhost: reachable from this host only. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || /^::ffff:127\./.test(h);
}

/** The CPU port of the telemetry program's targets (packet-in/out), never a data port. */
export const CPU_PORT = 510;

/** Files a config names must exist and be readable now, not at the first connection. */
export function checkConfigFiles(c: ControllerConfig): void {
  const files: Array<[string, string | undefined]> = [
    ["pipeline.p4info", c.pipeline.p4info], ["pipeline.device_config", c.pipeline.push ? c.pipeline.deviceConfig : undefined],
    ["switch.tls.ca", c.switch.tls?.ca], ["switch.tls.cert", c.switch.tls?.cert], ["switch.tls.key", c.switch.tls?.key],
    ["control_tls.cert", c.control.tls?.cert], ["control_tls.key", c.control.tls?.key],
  ];
  for (const [what, f] of files) {
    if (f === undefined) continue;
    try {
      accessSync(f, constants.R_OK);
    } catch {
      throw new ConfigError(`${what}: cannot read ${f}`);
    }
  }
  const named: Array<readonly [string, string]> = [["pipeline.p4info", c.pipeline.p4info], ...(c.pipeline.push ? [["pipeline.device_config", c.pipeline.deviceConfig] as const] : [])];
  const kinds = named.map(([what, f]) => {
    try {
      return compiledKind(JSON.parse(readFileSync(f!, "utf8")));
    } catch (err) {
      throw new ConfigError(`${what}: ${f} is not JSON (${(err as Error).message}); it must be p4c's BMv2 JSON and P4Info JSON`);
    }
  });
  const p4infoKind = kinds[0];
  if (p4infoKind === "bmv2" || p4infoKind === "bfrt") {
    throw new ConfigError(`pipeline.p4info: ${c.pipeline.p4info} is ${p4infoKind === "bmv2" ? "a BMv2 JSON" : "a BfRt JSON"} (a device config), not a P4Info; p4c writes the P4Info beside it (*.p4info.json)`);
  }
  if (kinds[1] === "p4info") {
    throw new ConfigError(`pipeline.device_config: ${c.pipeline.deviceConfig} is a P4Info, not a device config (the BMv2 JSON, or bfrt.json on Tofino)`);
  }
}

/** What a file of a compiled program is, by its top-level keys: a P4Info, a BMv2 JSON, a BfRt JSON, or something else. */
function compiledKind(v: unknown): "p4info" | "bmv2" | "bfrt" | "other" {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return "other";
  const o = v as Record<string, unknown>;
  if ("header_types" in o || "pipelines" in o) return "bmv2";
  if ("schema_version" in o && "tables" in o) return "bfrt";
  const hasPreambles = (k: string) => Array.isArray(o[k]) && (o[k] as unknown[]).some((e) => typeof e === "object" && e !== null && "preamble" in e);
  if ("pkgInfo" in o || ["tables", "actions", "digests"].some(hasPreambles)) return "p4info";
  return "other";
}

/**
 * Reads and checks a config file. `checkFiles: false` leaves the files it
 * names unchecked (replay takes a deployment's settings, not its pipeline).
 */
export function loadConfig(file: string, opts: { checkFiles?: boolean } = {}): ControllerConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError(`cannot read config ${file}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  const config = parseConfig(raw, dirname(resolve(file)));
  if (opts.checkFiles !== false) checkConfigFiles(config);
  return config;
}
