// The error root the telemetry packages build theirs on, in the kafkajs way:
// a stable `code` to branch on, `retriable` (whether the same call may
// succeed later by itself), and the cause where it wraps one. Each package
// has its own root (ContractError, ControllerError, ExporterError,
// TrafficError), so that `instanceof` tells whose error it is.

export class TelemetryError extends Error {
  override readonly name: string = "TelemetryError";
  constructor(
    message: string,
    readonly code: string,
    readonly retriable = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The errors of @rdma-telemetry/contract. */
export class ContractError extends TelemetryError {
  override readonly name: string = "ContractError";
}
