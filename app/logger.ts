// Structured logs: one JSON object a line on stderr, namespaced, filtered by level.
import type { Logger } from "@rdma-telemetry/p4runtime";

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export function isLogLevel(v: string): v is LogLevel {
  return v in ORDER;
}

export function createLogger(level: LogLevel, namespace = "rdma-telemetry", out: (line: string) => void = (l) => process.stderr.write(l + "\n")): Logger & { child(ns: string): Logger } {
  const make = (ns: string): Logger & { child(ns: string): Logger } => {
    const log = (lvl: Exclude<LogLevel, "silent">) => (msg: string, fields?: Record<string, unknown>) => {
      if (ORDER[lvl] < ORDER[level]) return;
      out(JSON.stringify({ time: new Date().toISOString(), level: lvl, ns, msg, ...fields }, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)));
    };
    return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error"), child: (sub: string) => make(`${ns}:${sub}`) };
  };
  return make(namespace);
}
