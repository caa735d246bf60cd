// One error base for the P4Runtime library: a gRPC-style code, whether a
// retry may help, and the cause. Foreign errors are wrapped once, where they
// enter (the gRPC adapter).

export type ErrorCode =
  | "INVALID_ARGUMENT"
  | "NOT_FOUND"
  | "ALREADY_EXISTS"
  | "PERMISSION_DENIED"
  | "RESOURCE_EXHAUSTED"
  | "FAILED_PRECONDITION"
  | "OUT_OF_RANGE"
  | "UNIMPLEMENTED"
  | "UNAVAILABLE"
  | "DEADLINE_EXCEEDED"
  | "CANCELLED"
  | "ABORTED"
  | "INTERNAL"
  | "UNKNOWN"
  | "UNAUTHENTICATED";

/** gRPC status codes by name. */
export const GRPC_CODE: Readonly<Record<ErrorCode | "OK", number>> = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
};

export function codeName(code: number): ErrorCode | "OK" {
  const hit = Object.entries(GRPC_CODE).find(([, v]) => v === code);
  return (hit?.[0] as ErrorCode | "OK" | undefined) ?? "UNKNOWN";
}

export class P4RuntimeError extends Error {
  override readonly name: string = "P4RuntimeError";
  constructor(
    message: string,
    readonly code: ErrorCode = "UNKNOWN",
    readonly retriable = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A value that does not fit its P4Info type (bit width, format). */
export class P4ValueError extends P4RuntimeError {
  override readonly name = "P4ValueError";
  constructor(message: string) {
    super(message, "INVALID_ARGUMENT", false);
  }
}

/** A name or id that the P4Info does not have. */
export class P4SchemaError extends P4RuntimeError {
  override readonly name = "P4SchemaError";
  constructor(message: string) {
    super(message, "NOT_FOUND", false);
  }
}
