/** A BMv2 JSON construct that the software switch does not execute. */
export class UnsupportedProgramError extends Error {
  override readonly name = "UnsupportedProgramError";
}

/** A P4 program that is malformed (dangling names, bad widths). */
export class InvalidProgramError extends Error {
  override readonly name = "InvalidProgramError";
}
