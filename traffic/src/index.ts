// @rdma-telemetry/traffic: generated RoCEv2 traffic with its ground truth,
// and pcap/pcapng captures.
export * from "./errors.js";
export * from "./generator.js";
export * from "./ip.js";
export * from "./pcap.js";
export * from "./roce.js";
