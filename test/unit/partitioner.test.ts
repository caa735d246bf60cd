import { createRequire } from "node:module";
import { expect, test } from "vitest";
import { murmur2, partitionOf } from "../../exporter/src/kafka/partitioner.js";

const require = createRequire(import.meta.url);
// kafkajs's own murmur2 (Java-compatible, 64-bit Long arithmetic): the reference.
const reference = require("kafkajs/src/producer/partitioners/default/murmur2.js") as (key: string | Buffer) => number;

test("murmur2 equals kafkajs's (Java's) on keys of every length and on non-ASCII keys", () => {
  let seed = 11;
  const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 16;
  for (let n = 0; n < 300; n++) {
    const b = Buffer.from(Array.from({ length: n % 37 }, () => rnd() & 255));
    expect(murmur2(b)).toBe(reference(b));
  }
  for (const key of ["10.0.1.7|10.0.2.1", "10.0.1.7|10.0.2.1|4097", "", "é|ü", "x".repeat(300)]) {
    expect(partitionOf(key, 6)).toBe((reference(key) & 0x7fffffff) % 6);
  }
  // Known Java values (Utils.murmur2 of the UTF-8 bytes).
  expect(murmur2(Buffer.from("21"))).toBe(-973932308);
  expect(murmur2(Buffer.from("foobar"))).toBe(-790332482);
});
