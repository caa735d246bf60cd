// @rdma-telemetry/contract: what the P4 program, the controller, the exporter
// and the traffic generator agree on. The names and constants are generated
// from the compiled P4 (npm run p4:build); nothing else copies them.
export * from "./errors.js";
export * from "./digest-batch.js";
export * from "./digests.js";
export * from "./ipv4.js";
export * from "./address.js";
export * from "./records.js";
export * from "./switch-counters.js";
export * from "./topology.js";
export * from "./generated/telemetry-names.js";
export * from "./histogram.js";
