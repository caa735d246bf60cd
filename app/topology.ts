// Where each address sits (SPEC §7): ports with roles and IPv4 prefixes; the
// longest matching prefix wins. Replay uses it to give each packet its
// ingress port; the controller uses the same file for routes and roles.
import { readFileSync } from "node:fs";
import type { PortSpec } from "@rdma-telemetry/contract";
import { ConfigError, parsePorts } from "@rdma-telemetry/controller";

interface Route {
  value: number;
  len: number;
  port: number;
}

export class Topology {
  private readonly routes: Route[];

  constructor(readonly ports: readonly PortSpec[]) {
    this.routes = ports
      .flatMap((p) => p.prefixes.map((pre) => {
        const [addr, len] = pre.split("/") as [string, string];
        const v = addr.split(".").reduce((a, b) => a * 256 + Number(b), 0);
        const l = Number(len);
        const mask = l === 0 ? 0 : Number((0xffffffffn << BigInt(32 - l)) & 0xffffffffn);
        return { value: (v & mask) >>> 0, len: l, port: p.port };
      }))
      .sort((a, b) => b.len - a.len);
  }

  static parse(raw: unknown, source = "topology"): Topology {
    if (typeof raw !== "object" || raw === null || !("ports" in raw)) throw new ConfigError(`${source}: expected {"ports": [...]}`);
    const extra = Object.keys(raw).filter((k) => k !== "ports");
    if (extra.length) throw new ConfigError(`${source}: unknown key '${extra[0]}' (only "ports")`);
    try {
      return new Topology(parsePorts((raw as { ports: unknown }).ports, "ports"));
    } catch (err) {
      throw new ConfigError(`${source}: ${(err as Error).message}`);
    }
  }

  static load(file: string): Topology {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new ConfigError(`cannot read topology ${file}: ${(err as Error).message}`);
    }
    try {
      return Topology.parse(JSON.parse(text), file);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError(`${file} is not valid JSON: ${(err as Error).message}`);
    }
  }

  /** The port behind which `ip` sits, or undefined. */
  portOf(ip: number): number | undefined {
    for (const r of this.routes) {
      const mask = r.len === 0 ? 0 : (0xffffffff << (32 - r.len)) >>> 0;
      if (((ip & mask) >>> 0) === r.value) return r.port;
    }
    return undefined;
  }

  toJSON(): { ports: PortSpec[] } {
    return { ports: [...this.ports] };
  }
}

/** The IPv4 source address of an Ethernet frame (802.1Q allowed), or undefined. */
export function ipv4Source(frame: Uint8Array): number | undefined {
  let off = 12;
  let type = (frame[off]! << 8) | frame[off + 1]!;
  if (type === 0x8100 && frame.length >= 18) {
    off += 4;
    type = (frame[off]! << 8) | frame[off + 1]!;
  }
  if (type !== 0x0800 || frame.length < off + 2 + 20) return undefined;
  const ip = off + 2;
  return ((frame[ip + 12]! << 24) | (frame[ip + 13]! << 16) | (frame[ip + 14]! << 8) | frame[ip + 15]!) >>> 0;
}
