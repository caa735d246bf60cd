// The exporter writes to the same structured logger as the P4Runtime library.
export { silentLogger, type Logger } from "@rdma-telemetry/p4runtime";
