// Digest list timestamps as Unix time. P4Runtime stamps a DigestList with ns
// since the epoch, but PI's server (behind simple_switch_grpc) uses
// steady_clock, time since boot. A timestamp before 2001-09-09 (1e18 ns) is
// taken for such a clock and mapped to this host's clock once, at the first
// list: the switch's own clock still orders and spaces the lists.

/** 1e18 ns since the epoch: 2001-09-09. No real list is older; no host is up for 31 years. */
export const PLAUSIBLE_UNIX_NS = 1_000_000_000_000_000_000n;

export class ListClock {
  /** added to a non-Unix timestamp; set at the first one */
  offsetNs: bigint | undefined;

  constructor(private readonly nowUnixNs: () => bigint = () => BigInt(Date.now()) * 1_000_000n) {}

  /** The list timestamp as Unix ns; `onMapped` is called once, when a non-Unix clock is first seen. */
  toUnix(timestampNs: bigint, onMapped?: (offsetNs: bigint) => void): bigint {
    if (timestampNs >= PLAUSIBLE_UNIX_NS) return timestampNs;
    if (this.offsetNs === undefined) {
      this.offsetNs = this.nowUnixNs() - timestampNs;
      onMapped?.(this.offsetNs);
    }
    return timestampNs + this.offsetNs;
  }
}
