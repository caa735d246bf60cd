// The controller's endpoint registry: which endpoint key (240.0.0.0/4) stands
// for which IPv6 address on this switch (docs/architecture.md, "Endpoint
// keys"). Keys are given from 240.0.0.1 up and never given to another address
// while their entry exists; a controller that takes over a running switch
// reads the switch's endpoint tables back, so that keys stay what they were.
import { FIRST_ENDPOINT_KEY, LAST_ENDPOINT_KEY, type EndpointEntry } from "@rdma-telemetry/contract";

export class EndpointRegistry {
  private readonly byAddress = new Map<string, number>();
  private readonly byKey = new Map<number, string>();
  private next = FIRST_ENDPOINT_KEY;

  get size(): number {
    return this.byKey.size;
  }

  keyOf(address: string): number | undefined {
    return this.byAddress.get(address);
  }

  addressOf(key: number): string | undefined {
    return this.byKey.get(key >>> 0);
  }

  /** The key of an address (RFC 5952 text), given now if it has none; undefined when every key is taken. */
  assign(address: string): { key: number; added: boolean } | undefined {
    const have = this.byAddress.get(address);
    if (have !== undefined) return { key: have, added: false };
    while (this.next <= LAST_ENDPOINT_KEY && this.byKey.has(this.next)) this.next++;
    if (this.next > LAST_ENDPOINT_KEY) return undefined;
    const key = this.next++;
    this.set(address, key);
    return { key, added: true };
  }

  private set(address: string, key: number): void {
    this.byAddress.set(address, key);
    this.byKey.set(key, address);
  }

  /**
   * What a switch holds (its endpoint tables read back): those entries win,
   * so that keys the switch's digests already carry keep their meaning. An
   * address of this registry whose key the switch gives another address gets
   * a new key. Returns the addresses whose key changed or is new.
   */
  adopt(entries: Iterable<EndpointEntry>): string[] {
    const changed: string[] = [];
    const taken = new Map<number, string>();
    const named = new Set<string>();
    for (const e of entries) {
      // (Both tables hold each entry; a key or an address held twice with different partners: the first holds.)
      const key = e.key >>> 0;
      if (taken.has(key) || named.has(e.address)) continue;
      taken.set(key, e.address);
      named.add(e.address);
    }
    const displaced: string[] = [];
    for (const [key, address] of taken) {
      const was = this.byAddress.get(address);
      const holder = this.byKey.get(key);
      if (was === key) continue;
      if (was !== undefined) this.byKey.delete(was);
      if (holder !== undefined && holder !== address) {
        this.byAddress.delete(holder);
        displaced.push(holder);
      }
      this.set(address, key);
      changed.push(address);
    }
    for (const key of taken.keys()) if (key >= this.next) this.next = key + 1;
    for (const address of displaced) if (!this.byAddress.has(address) && this.assign(address)) changed.push(address);
    return changed;
  }

  /** Forgets an address whose entry the switch refused (its key may be given again). */
  remove(address: string): void {
    const key = this.byAddress.get(address);
    if (key === undefined) return;
    this.byAddress.delete(address);
    this.byKey.delete(key);
    if (key < this.next) this.next = key;
  }

  entries(): EndpointEntry[] {
    return [...this.byKey].map(([key, address]) => ({ key, address }));
  }
}
