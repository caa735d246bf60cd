// The one error root of @rdma-telemetry/switch: a code to branch on and
// whether the same call may succeed later by itself, as in the other
// packages (see TelemetryError in @rdma-telemetry/contract; the switch does
// not depend on it, so it has its own base of the same shape).

export class SwitchError extends Error {
  override readonly name: string = "SwitchError";
  constructor(
    message: string,
    readonly code: string = "SWITCH_ERROR",
    readonly retriable = false,
  ) {
    super(message);
  }
}

/** A BMv2 JSON construct that the software switch does not execute. */
export class UnsupportedProgramError extends SwitchError {
  override readonly name = "UnsupportedProgramError";
  constructor(message: string) {
    super(message, "UNSUPPORTED_PROGRAM");
  }
}

/** A P4 program that is malformed (dangling names, bad widths). */
export class InvalidProgramError extends SwitchError {
  override readonly name = "InvalidProgramError";
  constructor(message: string) {
    super(message, "INVALID_PROGRAM");
  }
}
