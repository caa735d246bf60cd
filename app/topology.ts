// Where each address sits (SPEC §7): ports with roles and prefixes of either
// family; the longest matching prefix wins. Replay uses it to give each packet its
// ingress port; the controller uses the same file for routes and roles.
import { readFileSync } from "node:fs";
import { parsePrefix, prefixContains, type IpAddress, type IpPrefix, type PortSpec } from "@rdma-telemetry/contract";
import { ConfigError, parsePorts } from "@rdma-telemetry/controller";

interface Route {
  prefix: IpPrefix;
  port: number;
}

export class Topology {
  private readonly routes: Route[];

  constructor(readonly ports: readonly PortSpec[]) {
    this.routes = ports
      .flatMap((p) => p.prefixes.map((pre) => ({ prefix: parsePrefix(pre), port: p.port })))
      .sort((a, b) => b.prefix.len - a.prefix.len);
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

  /** The port behind which `ip` (either family) sits, or undefined. */
  portOf(ip: IpAddress): number | undefined {
    for (const r of this.routes) if (prefixContains(r.prefix, ip)) return r.port;
    return undefined;
  }

  toJSON(): { ports: PortSpec[] } {
    return { ports: [...this.ports] };
  }
}

/** The source address of an Ethernet frame (IPv4 or IPv6, 802.1Q allowed), or undefined. */
export function ipSource(frame: Uint8Array): IpAddress | undefined {
  let off = 12;
  let type = (frame[off]! << 8) | frame[off + 1]!;
  if (type === 0x8100 && frame.length >= 18) {
    off += 4;
    type = (frame[off]! << 8) | frame[off + 1]!;
  }
  const ip = off + 2;
  if (type === 0x86dd && frame.length >= ip + 40) {
    let v = 0n;
    for (let i = 8; i < 24; i++) v = (v << 8n) | BigInt(frame[ip + i]!);
    return v;
  }
  if (type !== 0x0800 || frame.length < ip + 20) return undefined;
  return ((frame[ip + 12]! << 24) | (frame[ip + 13]! << 16) | (frame[ip + 14]! << 8) | frame[ip + 15]!) >>> 0;
}
