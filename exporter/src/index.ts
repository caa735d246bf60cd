// @rdma-telemetry/exporter: digest lists to metric records, and the sinks
// that write them (JSON lines, Kafka). The record schemas' generated code is
// at @rdma-telemetry/exporter/proto/rdma/telemetry/v1/records.
export * from "./errors.js";
export * from "./alerts.js";
export * from "./exporter.js";
export * from "./jsonl-sink.js";
export * from "./logger.js";
export * from "./metrics.js";
export * from "./sketch.js";
export * from "./kafka/decode.js";
export * from "./kafka/digest-bus.js";
export * from "./kafka/encode.js";
export * from "./kafka/kafka-sink.js";
export * from "./kafka/partitioner.js";
export * from "./kafka/security.js";
export * from "./kafka/tail.js";
export * from "./kafka/committed-reader.js";
export * from "./kafka/group-offsets.js";
export * from "./kafka/transaction-sorter.js";
export * from "./kafka/transport.js";
export { platformaticKafka, saslOptions as platformaticSasl, tlsOptions as platformaticTls } from "./kafka/platformatic-options.js";
export * from "./group/exporter-group.js";
export * from "./group/open-digests.js";
export * from "./group/record-key.js";
