// The controller SIGKILLed mid-traffic and restarted on its journal while
// publishing to a real broker: every I/O whose digests the switch delivered
// before the kill is on Kafka after the recovery, and none is there twice
// (the restarted controller reads back what its predecessor published).
import { inject, test } from "vitest";
import { checkRestartRecords, killAndRestartController } from "../support/controller-restart.js";
import { readAllRecords } from "../support/kafka-tools.js";
import { scratch } from "../support/scratch.js";

const brokers = inject("kafkaBrokers");
const { dir, children } = scratch("controller-restart-kafka-");

test("SIGKILL of the controller mid-traffic: after a restart on its journal, every delivered I/O is on Kafka once, the gap counted", async () => {
  const switchId = `tor-restart-${Date.now()}`;
  await killAndRestartController({ dir, switchId, children, env: { KAFKA_BROKERS: brokers }, args: () => [] });
  const records = (await readAllRecords(brokers, ["rdma.io.v1", "rdma.alert.v1"])).filter((r) =>
    r.type === "io" ? r.c_switch_id === switchId || r.s_switch_id === switchId : "switch_id" in r && r.switch_id === switchId);
  checkRestartRecords(records);
}, 90_000);
