// A switch's clock on the wall clock: its 48-bit ns timestamps unwrapped and
// offset, exactly where the start is known, else calibrated on a list.

import { unwrapTimestamp } from "@rdma-telemetry/contract";

/**
 * Maps a switch's 48-bit ns clock to the wall clock, unwrapping it. The
 * offset is exact where the owner knows when the switch's clock started (a
 * replayed capture: its first packet); otherwise it is calibrated on the
 * first digest list, whose timestamp is the time of its newest sample.
 */
export class SwitchClock {
  private offset: bigint | undefined;
  /** the newest absolute (unwrapped) time seen */
  private lastAbs: bigint | undefined;

  constructor(private readonly exactStart?: () => bigint | undefined) {}

  calibrate(listTimestampNs: bigint, newestTs: number): void {
    if (this.offset !== undefined) return;
    const exact = this.exactStart?.();
    this.offset = exact ?? listTimestampNs - this.unwrap(newestTs);
  }

  /**
   * The absolute time of a 48-bit sample: of the three candidates around the
   * newest time seen (one wrap before, the same, one wrap after), the nearest,
   * so that a sample arriving out of order across a wrap lands right.
   */
  unwrap(ts: number): bigint {
    const best = unwrapTimestamp(ts, this.lastAbs);
    if (this.lastAbs === undefined || best > this.lastAbs) this.lastAbs = best;
    return best;
  }

  /** The wall-clock time at which the switch's clock read 0, once placed. */
  get start(): bigint | undefined {
    return this.offset;
  }

  toUnix(ts: number): bigint {
    return (this.offset ?? 0n) + this.unwrap(ts);
  }
}
