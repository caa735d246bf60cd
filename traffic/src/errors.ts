// The one error root of @rdma-telemetry/traffic: a code and whether a retry may help (see
// TelemetryError in @rdma-telemetry/contract).
import { TelemetryError } from "@rdma-telemetry/contract";

export class TrafficError extends TelemetryError {
  override readonly name: string = "TrafficError";
}
