// Header stacks on the software switch, against a p4c-compiled fixture.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { Pipeline } from "../../switch/src/bmv2/pipeline.js";
import { CompiledProgram } from "../../switch/src/bmv2/program.js";

const json = JSON.parse(readFileSync(new URL("../fixtures/stack/stack.json", import.meta.url), "utf8"));

function frame(vids: number[]): Buffer {
  const parts = [Buffer.alloc(12, 0xaa)];
  for (const vid of vids) {
    const tag = Buffer.alloc(4);
    tag.writeUInt16BE(0x8100, 0);
    tag.writeUInt16BE(vid, 2);
    parts.push(tag);
  }
  const end = Buffer.alloc(2 + 8);
  end.writeUInt16BE(0x0800, 0);
  parts.push(end);
  return Buffer.concat(parts);
}

describe("header stacks", () => {
  const program = new CompiledProgram(json);
  const pl = new Pipeline(program);
  const outer = program.layout.find("scalars.meta_t.outer")!;
  const inner = program.layout.find("scalars.meta_t.inner")!;

  test("extract into next, select on last: tags land in order, fields read by index", () => {
    const r = pl.process({ port: 1, data: frame([5, 7]), timestampNs: 0 });
    expect(r.parserError).toBe(0);
    expect(r.output?.port).toBe(5);
    expect(program.N[outer.slot]).toBe(5);
    expect(program.N[inner.slot]).toBe(7);
    expect(Buffer.compare(r.output!.data, frame([5, 7]))).toBe(0);
  });

  test("pop_front shifts the stack: the outer of three tags leaves the packet", () => {
    const r = pl.process({ port: 1, data: frame([3, 4, 9]), timestampNs: 0 });
    expect(r.output?.port).toBe(3);
    expect(Buffer.compare(r.output!.data, frame([4, 9]))).toBe(0);
  });

  test("a fourth tag is StackOutOfBounds; the packet still goes, the three tags kept", () => {
    const r = pl.process({ port: 1, data: frame([2, 4, 6, 8]), timestampNs: 0 });
    expect(r.parserError).toBe(program.errorCodes.get("StackOutOfBounds"));
    expect(r.output?.port).toBe(2);
  });
});
