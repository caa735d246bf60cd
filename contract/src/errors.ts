// The one error root of @rdma-telemetry/contract, in the kafkajs way: every error it throws is
// a ContractError with a stable `code` to branch on and `retriable` (whether the
// same call may succeed later by itself), and its cause where it wraps one.

export class ContractError extends Error {
  override readonly name: string = "ContractError";
  constructor(
    message: string,
    readonly code: string,
    readonly retriable = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
