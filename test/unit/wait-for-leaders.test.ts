import { describe, expect, test } from "vitest";
import { isUnknownTopic, waitForLeaders } from "../../exporter/src/kafka/topics-ready.js";

// The broker's answers to a metadata request just after CreateTopics, in order.
function broker(answers: Array<"unknown" | "no-leader" | "ready" | "refused">) {
  let i = 0;
  const asked: number[] = [];
  const metadata = async (topics: string[]) => {
    const a = answers[Math.min(i, answers.length - 1)]!;
    asked.push(i++);
    if (a === "unknown") throw new Error(`Unknown topic ${topics[0]}.`);
    if (a === "refused") throw new Error("Authorization failed");
    return { topics: new Map(topics.map((t) => [t, { partitions: [{ leader: a === "ready" ? 1 : -1 }, { leader: 1 }] }])) };
  };
  return { metadata, asked };
}

describe("waiting for the topics just created", () => {
  test("a topic the broker does not know yet is looked at again, not a failure", async () => {
    const b = broker(["unknown", "unknown", "no-leader", "ready"]);
    await waitForLeaders(b.metadata, ["a.io.v1", "a.alert.v1"], 50, 1);
    expect(b.asked.length).toBe(4);
  });
  test("any other error is the caller's", async () => {
    const b = broker(["unknown", "refused"]);
    await expect(waitForLeaders(b.metadata, ["a.io.v1"], 50, 1)).rejects.toThrow(/Authorization/);
  });
  test("either client's answer for a topic the broker does not know is told from any other", () => {
    expect(isUnknownTopic(new Error("Unknown topic a.io.v1."))).toBe(true);
    expect(isUnknownTopic(Object.assign(new Error("This server does not host this topic-partition"), { type: "UNKNOWN_TOPIC_OR_PARTITION" }))).toBe(true);
    expect(isUnknownTopic(new Error("Connection closed"))).toBe(false);
    expect(isUnknownTopic(undefined)).toBe(false);
  });
  test("a topic still unknown after every look is the caller's too", async () => {
    const b = broker(["unknown"]);
    await expect(waitForLeaders(b.metadata, ["a.io.v1"], 5, 1)).rejects.toThrow(/Unknown topic/);
    expect(b.asked.length).toBe(5);
  });
});
