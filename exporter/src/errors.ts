// The one error root of @rdma-telemetry/exporter, in the kafkajs way: every error it throws is
// a ExporterError with a stable `code` to branch on and `retriable` (whether the
// same call may succeed later by itself), and its cause where it wraps one.

export class ExporterError extends Error {
  override readonly name: string = "ExporterError";
  constructor(
    message: string,
    readonly code: string,
    readonly retriable = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
