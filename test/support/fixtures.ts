// A compiled test program under test/fixtures/NAME: its P4Info (as a schema
// and as the message a pipeline push carries) and its BMv2 JSON.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { P4Info } from "../../p4runtime/src/generated/p4/config/v1/p4info.js";
import { P4Schema } from "../../p4runtime/src/index.js";

export function loadFixture(name: string): { schema: P4Schema; p4info: P4Info; deviceConfig: Buffer } {
  const dir = new URL(`../fixtures/${name}/`, import.meta.url).pathname;
  const text = readFileSync(join(dir, `${name}.p4info.json`), "utf8");
  return { schema: P4Schema.fromJson(text), p4info: P4Info.fromJSON(JSON.parse(text)), deviceConfig: readFileSync(join(dir, `${name}.json`)) };
}
