// Topics just created: until every partition has a leader, a send fails and
// retries; a broker may even answer a metadata request for a topic it has
// just created with UNKNOWN_TOPIC_OR_PARTITION. Both transports wait here.

/** The clients' answers for a topic the broker does not know (yet). */
export function isUnknownTopic(err: unknown): boolean {
  const e = err as { message?: unknown; type?: unknown } | undefined;
  if (e?.type === "UNKNOWN_TOPIC_OR_PARTITION") return true; // kafkajs
  const message = typeof e?.message === "string" ? e.message : "";
  return /^Unknown topic /.test(message) || /does not host this topic-partition/.test(message); // @platformatic/kafka; kafkajs's text
}

export type TopicLeaders = { topics: Map<string, { partitions: Array<{ leader: number }> }> };

/**
 * Waits (up to 50 looks, 100 ms apart) until every partition of `wanted` has
 * a leader: until then a send would fail and retry. Just after CreateTopics
 * the broker may not know a topic yet and answers UNKNOWN_TOPIC_OR_PARTITION,
 * which is no refusal: it looks again.
 */
export async function waitForLeaders(metadata: (topics: string[]) => Promise<TopicLeaders>, wanted: string[], looks = 50, pauseMs = 100): Promise<void> {
  for (let attempt = 0; attempt < looks; attempt++) {
    const md = await metadata(wanted).catch((err: unknown) => {
      if (attempt < looks - 1 && isUnknownTopic(err)) return undefined;
      throw err;
    });
    if (md && wanted.every((t) => md.topics.get(t)?.partitions.every((p) => p.leader >= 0))) return;
    await new Promise((r) => setTimeout(r, pauseMs));
  }
}
