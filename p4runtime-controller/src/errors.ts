// The one error root of @rdma-telemetry/controller, in the kafkajs way: every error it throws is
// a ControllerError with a stable `code` to branch on and `retriable` (whether the
// same call may succeed later by itself), and its cause where it wraps one.

export class ControllerError extends Error {
  override readonly name: string = "ControllerError";
  constructor(
    message: string,
    readonly code: string,
    readonly retriable = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
