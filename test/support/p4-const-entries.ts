// Const entries of the Tofino program's decision tables, read from the P4
// source, so that a model of a tracker runs the tables as compiled (the
// registers' actions are written in the model, as in the P4).
import { readFileSync } from "node:fs";

/** `const bit<N> NAME = value;` of the given P4 files (paths relative to the repository). */
export function p4Constants(...files: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const f of files) {
    const src = readFileSync(new URL(`../../${f}`, import.meta.url), "utf8");
    for (const c of src.matchAll(/const bit<\d+> (\w+) = (0x[0-9A-Fa-f]+|\d+);/g)) m.set(c[1]!, Number(c[2]));
  }
  return m;
}

/**
 * The source with `#ifdef`/`#ifndef`/`#else`/`#endif` resolved for the
 * defined names, and `#if __TARGET_TOFINO__ == N` (or `!=`) for the chip
 * when one is given (any other `#if` is taken as true).
 */
export function preprocess(src: string, defined: ReadonlySet<string>, tofino?: 1 | 2): string {
  const out: string[] = [];
  const stack: boolean[] = [];
  const on = () => stack.every(Boolean);
  for (const line of src.split("\n")) {
    const t = line.trim();
    let m: RegExpMatchArray | null;
    if ((m = t.match(/^#ifdef\s+(\w+)/))) stack.push(defined.has(m[1]!));
    else if ((m = t.match(/^#ifndef\s+(\w+)/))) stack.push(!defined.has(m[1]!));
    else if ((m = t.match(/^#if\s+__TARGET_TOFINO__\s*(==|!=)\s*(\d+)/)) && tofino !== undefined) stack.push((tofino === Number(m[2])) === (m[1] === "=="));
    else if (t.startsWith("#if")) stack.push(true);
    else if (t.startsWith("#else")) stack.push(!stack.pop()!);
    else if (t.startsWith("#endif")) stack.pop();
    else if (on() && !t.startsWith("#")) out.push(line);
  }
  return out.join("\n");
}

export interface Entry {
  keys: Array<{ value: number; mask: number } | undefined>;
  action: string;
  args: number[];
}

export interface ConstTable {
  keys: string[];
  entries: Entry[];
}

/**
 * A table's key names (a key's `@name`, else its last field name; a slice
 * `f[a:b]` keeps its field name) and const entries. `rewrite` adjusts the
 * key block and each entry line before they are read (macros).
 */
export function constTable(src: string, name: string, constants: ReadonlyMap<string, number>, rewrite: { keys?: (s: string) => string; entry?: (s: string) => string } = {}): ConstTable {
  const num = (s: string): number => {
    const v = s.trim().replace(/^\d+w/, "");
    const n = v === "true" ? 1 : v === "false" ? 0 : constants.get(v) ?? Number(v);
    if (!Number.isFinite(n)) throw new Error(`not a number: '${s}'`);
    return n >>> 0;
  };
  const at = src.indexOf(`table ${name} {`);
  if (at < 0) throw new Error(`table ${name} not in the P4`);
  const body = src.slice(at, src.indexOf("\n    }\n", at));
  const keyAt = body.indexOf("key = {");
  const keyBlock = (rewrite.keys ?? ((s) => s))(body.slice(keyAt, body.indexOf("}", keyAt)));
  const keys = [...keyBlock.matchAll(/(\S+):\s*(?:ternary|exact)(?:\s*@name\("(\w+)"\))?;/g)].map((m) => m[2] ?? m[1]!.replace(/\[.*$/, "").split(".").pop()!);
  const entryBlock = body.slice(body.indexOf("const entries = {"));
  const entries: Entry[] = [];
  for (const raw of entryBlock.split("\n")) {
    const line = (rewrite.entry ?? ((s) => s))(raw.replace(/\/\/.*$/, "")).trim();
    const m = line.match(/^(?:\((.*)\)|([^:(]+)):\s*(\w+)\((.*)\);$/);
    if (!m) continue;
    const values = (m[1] ?? m[2]!).split(",").map((v) => v.trim());
    entries.push({
      keys: values.map((v) => {
        if (v === "_") return undefined;
        const [val, mask] = v.split("&&&");
        return { value: num(val!), mask: mask === undefined ? 0xffffffff : num(mask) };
      }),
      action: m[3]!,
      args: m[4]!.trim() ? m[4]!.split(",").map(num) : [],
    });
  }
  if (!entries.length) throw new Error(`table ${name}: no const entries read`);
  for (const e of entries) if (e.keys.length !== keys.length) throw new Error(`table ${name}: an entry of ${e.keys.length} keys, the table has ${keys.length}`);
  return { keys, entries };
}

/** The first entry that matches (const entries: in order of priority), or undefined (the default, NoAction). */
export function lookup(t: ConstTable, key: Record<string, number>): Entry | undefined {
  return t.entries.find((e) => e.keys.every((k, i) => k === undefined || ((key[t.keys[i]!]! ^ k.value) & k.mask) >>> 0 === 0));
}
