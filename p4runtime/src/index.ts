// @rdma-telemetry/p4runtime: a P4Runtime client library for Node.js, and the
// core it shares with servers (schema, values, errors, and the protobuf wire
// helpers of the hand-written codecs). The generated P4Runtime messages are
// at @rdma-telemetry/p4runtime/proto/<path>.
export * from "./backoff.js";
export * from "./batch-status.js";
export * from "./client.js";
export * from "./desired-state.js";
export * from "./digest-decoding.js";
export * from "./entities.js";
export * from "./errors.js";
export * from "./logger.js";
export * from "./p4info-compare.js";
export * from "./schema.js";
export * from "./switch-connection.js";
export * from "./values.js";
export * from "./wire.js";
export * from "./write-encoding.js";
