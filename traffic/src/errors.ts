// The one error root of @rdma-telemetry/traffic: a code and whether a retry may help (see
// TelemetryError in @rdma-telemetry/contract).
import { TelemetryError } from "@rdma-telemetry/contract";

export class TrafficError extends TelemetryError {
  override readonly name: string = "TrafficError";
}

/** A file that cannot be written (a full disk, a read-only place): the message names it and why. */
export class WriteError extends TrafficError {
  override readonly name = "WriteError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "CANNOT_WRITE", false, options);
  }
}
