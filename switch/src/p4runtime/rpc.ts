// What the P4Runtime server's parts share: an error that carries its gRPC
// code (and, for a failed Write, the per-update details), and the logger.
import * as grpc from "@grpc/grpc-js";
import { GRPC_CODE, P4RuntimeError, type ErrorCode } from "@rdma-telemetry/p4runtime";
import { SwitchError } from "../bmv2/errors.js";
import { TableError } from "../bmv2/table.js";

export type ServerLogger = (level: "debug" | "info" | "warn", msg: string, fields?: Record<string, unknown>) => void;

/** An error a call answers with: its gRPC code (and, for a failed Write, the per-update details). */
export class RpcError extends SwitchError {
  override readonly name = "RpcError";
  constructor(override readonly code: ErrorCode, message: string, readonly details?: Buffer) {
    super(message, code, code === "UNAVAILABLE" || code === "RESOURCE_EXHAUSTED");
  }
}

/** Any error thrown while serving a call, as the status it returns. */
export function toRpc(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  if (err instanceof P4RuntimeError) return new RpcError(err.code, err.message);
  if (err instanceof TableError) return new RpcError(err.code, err.message);
  return new RpcError("INTERNAL", (err as Error)?.message ?? String(err));
}

export function grpcError(e: RpcError): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  if (e.details) metadata.set("grpc-status-details-bin", e.details);
  return { code: GRPC_CODE[e.code], details: e.message, metadata };
}
