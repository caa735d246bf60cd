// @rdma-telemetry/switch: the software switch (BMv2 JSON, v1model) and its
// P4Runtime server.
export * from "./software-switch.js";
export * from "./p4runtime/server.js";
export { CompiledProgram } from "./bmv2/program.js";
export { Pipeline, InstanceType, MAX_INGRESS_PASSES, MAX_EGRESS_PASSES, ProcessResult, type PacketOut } from "./bmv2/pipeline.js";
export { ReplicationEngine, ReplicationError, type Replica, type CloneSession, type ReplicationApi } from "./replication.js";
export type { Bmv2Json } from "./bmv2/json.js";
export * from "./bmv2/errors.js";
export { TableError } from "./bmv2/table.js";
export { parseStf, StfSyntaxError, type StfCommand } from "./stf/parse.js";
export { runStf, runStfCommands, matchesExpectation, checkExpectations, StfUnsupportedError, type StfResult, type ReceivedPacket } from "./stf/run.js";
export { StfNames, StfCommandError, type ResolvedMatch } from "./stf/resolve.js";
