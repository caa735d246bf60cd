// @rdma-telemetry/controller: the telemetry controller of one switch.
export * from "./errors.js";
export * from "./config.js";
export * from "./controller.js";
export * from "./paths.js";
export * from "./window-gate.js";
