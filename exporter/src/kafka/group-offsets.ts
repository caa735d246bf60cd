// A consumer group's offsets for a reader that fetches partitions itself
// (committed-reader.ts) rather than as a member of the group.
import type { Admin } from "@platformatic/kafka";
import { platformaticKafka, saslOptions, tlsOptions } from "./platformatic-options.js";
import type { KafkaSecurity } from "./security.js";

/**
 * A consumer group's offsets, for a reader that is not a member of it: read
 * when it starts, and committed as it goes (OffsetCommit without a member, as
 * the Java consumer does with assigned partitions), so that the group's
 * offsets and lag show where it stands and a reader of the same group starts
 * again there.
 */
export class GroupOffsets {
  private readonly admin: Promise<Admin>;
  private last = new Map<string, bigint>();
  private inFlight: Promise<void> | undefined;

  constructor(o: KafkaSecurity & { brokers: string[]; clientId: string; readonly groupId: string }, private readonly groupId = o.groupId) {
    const options = { clientId: o.clientId, bootstrapBrokers: o.brokers, tls: tlsOptions(o.ssl), sasl: saslOptions(o.sasl), connectTimeout: 5000, retries: 3, retryDelay: 300 };
    this.admin = platformaticKafka().then(({ Admin }) => new Admin(options));
  }

  /** A commit under way (a caller committing now and then skips a turn). */
  get busy(): boolean {
    return this.inFlight !== undefined;
  }

  /** The group's committed offset of each partition of `topic` that has one. */
  async committed(topic: string): Promise<Map<number, bigint>> {
    const [group] = await (await this.admin).listConsumerGroupOffsets({ groups: [this.groupId] });
    const out = new Map<number, bigint>();
    for (const t of group?.topics ?? []) {
      if (t.name !== topic) continue;
      for (const p of t.partitions) if (p.committedOffset >= 0n) out.set(p.partitionIndex, p.committedOffset);
    }
    return out;
  }

  /** Commits the positions that moved since the last commit; one commit at a time (a commit asked for meanwhile waits for it, then commits what moved). */
  async commit(positions: readonly { topic: string; partition: number; offset: bigint }[]): Promise<void> {
    const previous = this.inFlight;
    const next = (async () => {
      await previous?.catch(() => undefined);
      const moved = positions.filter((p) => this.last.get(`${p.topic}|${p.partition}`) !== p.offset);
      if (moved.length === 0) return;
      const topics = new Map<string, { partition: number; offset: bigint }[]>();
      for (const p of moved) topics.set(p.topic, [...(topics.get(p.topic) ?? []), { partition: p.partition, offset: p.offset }]);
      await (await this.admin).alterConsumerGroupOffsets({ groupId: this.groupId, topics: [...topics].map(([name, partitionOffsets]) => ({ name, partitionOffsets })) });
      for (const p of moved) this.last.set(`${p.topic}|${p.partition}`, p.offset);
    })();
    this.inFlight = next;
    try {
      await next;
    } finally {
      if (this.inFlight === next) this.inFlight = undefined;
    }
  }

  async close(): Promise<void> {
    await (await this.admin).close().catch(() => undefined);
  }
}
