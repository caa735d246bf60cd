// Endpoint keys (240.0.0.0/4) to addresses. Each switch's controller gives
// its IPv6 endpoints keys of its own, and its digest lists carry the entries
// of the keys they use (DigestBatch.endpoints). The engine puts every digest
// on keys of its own, one per address whichever switch named it, so that the
// compute-side and storage-side halves of an I/O meet, and writes each as
// its text. An IPv4 address is its own key, untouched.
import { FIRST_ENDPOINT_KEY, LAST_ENDPOINT_KEY, ipv4Text, isEndpointKey, type EndpointEntry, type TelemetryDigest } from "@rdma-telemetry/contract";

export class EndpointNames {
  /** per switch: its keys to their addresses */
  private readonly bySwitch = new Map<string, Map<number, string>>();
  /** the engine's own keys */
  private readonly keyOf = new Map<string, number>();
  private readonly textOf = new Map<number, string>();
  private next = FIRST_ENDPOINT_KEY;

  /** A switch's entries (a key named again with another address: the newer holds). */
  learn(switchId: string, entries: readonly EndpointEntry[]): void {
    let m = this.bySwitch.get(switchId);
    if (!m) this.bySwitch.set(switchId, (m = new Map()));
    for (const e of entries) m.set(e.key >>> 0, e.address);
  }

  /** The engine's key for one of a switch's address fields; undefined for an endpoint key the switch gave no address for. */
  local(switchId: string, v: number): number | undefined {
    if (!isEndpointKey(v)) return v;
    const address = this.bySwitch.get(switchId)?.get(v);
    return address === undefined ? undefined : this.ofAddress(address);
  }

  /** The engine's key for an IPv6 address (undefined when the keys ran out). */
  ofAddress(address: string): number | undefined {
    let k = this.keyOf.get(address);
    if (k === undefined) {
      if (this.next > LAST_ENDPOINT_KEY) return undefined;
      k = this.next++;
      this.keyOf.set(address, k);
      this.textOf.set(k, address);
    }
    return k;
  }

  /** The digest on the engine's keys (itself when it names no IPv6 endpoint), or undefined when a key of it has no address. */
  resolve(switchId: string, d: TelemetryDigest): TelemetryDigest | undefined {
    if (d.kind === "io") {
      if (!isEndpointKey(d.host) && !isEndpointKey(d.target)) return d;
      const host = this.local(switchId, d.host);
      const target = this.local(switchId, d.target);
      return host === undefined || target === undefined ? undefined : { ...d, host, target };
    }
    // (A learn digest makes no record: the controller reads it.)
    if (d.kind === "learn" || (!isEndpointKey(d.src) && !isEndpointKey(d.dst))) return d;
    const src = this.local(switchId, d.src);
    const dst = this.local(switchId, d.dst);
    return src === undefined || dst === undefined ? undefined : { ...d, src, dst };
  }

  /** The text of one of the engine's keys (dotted quad, or the IPv6 address). */
  text(v: number): string {
    return isEndpointKey(v) ? (this.textOf.get(v) ?? ipv4Text(v)) : ipv4Text(v);
  }
}
