// STF, the packet test format of p4c's BMv2 tests (p4c tools/stf and
// backends/bmv2/bmv2stf.py): one command a line, `#` starts a comment.
//
//   add TABLE [PRIORITY] KEY:VALUE... ACTION(ARG:VALUE, ...) [= ID]
//   setdefault TABLE ACTION(ARG:VALUE, ...)
//   packet PORT HEX...          expect PORT [HEX with * nibbles, $ = exact length]
//   wait                        check_counter COUNTER(INDEX) [packets|bytes OP N]
//   mirroring_add SESSION PORT  mc_mgrp_create GROUP
//   mc_node_create RID PORT...  mc_node_associate GROUP NODE
//   register_write REG INDEX VALUE, register_read REG INDEX, register_reset REG,
//   counter_write COUNTER INDEX PACKETS BYTES, counter_read COUNTER INDEX

export interface StfKey {
  /** the key field as the test names it ("h.f", "data.f1", "extra$0.h") */
  name: string;
  /** "0x12", "0x1*2*", "0b1*", "10"; lpm "0x0a000000/8" */
  value: string;
}

export interface StfAction {
  name: string;
  args: Array<{ name: string; value: string }>;
}

export type StfCommand = { line: number } & (
  | { kind: "add"; table: string; priority: number | undefined; keys: StfKey[]; action: StfAction; id?: string }
  | { kind: "setdefault"; table: string; action: StfAction }
  | { kind: "packet"; port: number; data: string }
  /** `data` undefined: one packet whose bytes do not matter */
  | { kind: "expect"; port: number; data: string | undefined }
  | { kind: "wait" }
  | { kind: "remove_all" }
  | { kind: "check_counter"; counter: string; index: string; check: { type: "packets" | "bytes" | undefined; op: string; value: bigint } }
  | { kind: "mirroring_add"; session: number; port: number }
  | { kind: "mirroring_delete"; session: number }
  | { kind: "mc_mgrp_create"; group: number }
  | { kind: "mc_node_create"; rid: number; ports: number[] }
  | { kind: "mc_node_update"; node: number; ports: number[] }
  | { kind: "mc_node_associate"; group: number; node: number }
  | { kind: "register_write"; register: string; index: bigint; value: bigint }
  | { kind: "register_read"; register: string; index: bigint }
  | { kind: "register_reset"; register: string }
  | { kind: "counter_write"; counter: string; index: bigint; packets: bigint; bytes: bigint }
  | { kind: "counter_read"; counter: string; index: bigint }
);

/** An STF file that does not parse: names the line and what was wrong. */
export class StfSyntaxError extends Error {
  override readonly name = "StfSyntaxError";
  constructor(readonly line: number, message: string) {
    super(`STF line ${line}: ${message}`);
  }
}

const NAME = /^(?:[A-Za-z_$][A-Za-z0-9_$]*|"[^"]+")(?:\[\d+\])?(?:\.(?:[A-Za-z_$][A-Za-z0-9_$]*|"[^"]+")(?:\[\d+\])?)*$/;
const NUMBER = /^(?:0[xX][0-9a-fA-F*]+|0[bB][01*]+|\d+)$/;

/** Parses the text of an STF file; throws StfSyntaxError on the first bad line. */
export function parseStf(text: string): StfCommand[] {
  const out: StfCommand[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    const src = raw.replace(/#.*$/, "").trim();
    if (!src) return;
    const word = /^\S+/.exec(src)![0];
    const rest = src.slice(word.length).trim();
    const cmd = parseCommand(word.toLowerCase(), rest, line);
    out.push({ line, ...cmd } as StfCommand);
  });
  return out;
}

type Body = StfCommand extends infer C ? (C extends { line: number } ? Omit<C, "line"> : never) : never;

function parseCommand(word: string, rest: string, line: number): Body {
  const fail = (msg: string): never => {
    throw new StfSyntaxError(line, msg);
  };
  const num = (s: string | undefined, what: string): number => {
    if (s === undefined || !/^(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)$/.test(s)) return fail(`${word}: expected ${what}, got '${s ?? ""}'`);
    return Number(BigInt(s));
  };
  const big = (s: string | undefined, what: string): bigint => {
    if (s === undefined || !/^(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)$/.test(s)) return fail(`${word}: expected ${what}, got '${s ?? ""}'`);
    return BigInt(s);
  };
  const words = rest ? rest.split(/\s+/) : [];
  const arity = (n: number) => {
    if (words.length !== n) fail(`${word} takes ${n} argument${n === 1 ? "" : "s"}, got ${words.length}`);
  };
  switch (word) {
    case "packet":
    case "expect": {
      const m = /^(\d+)(.*)$/s.exec(rest);
      if (!m) return fail(`${word}: expected a port number`);
      const data = m[2]!.replace(/\s+/g, "");
      if (data && !/^[0-9a-fA-F*]*\$?$/.test(data)) return fail(`${word}: packet data may hold hex digits, '*' and a final '$', got '${data}'`);
      if (word === "packet") {
        if (!data || /[*$]/.test(data)) return fail("packet: expected the packet's bytes in hex");
        if (data.length % 2) return fail("packet: an odd number of hex digits");
        return { kind: "packet", port: Number(m[1]), data };
      }
      return { kind: "expect", port: Number(m[1]), data: data || undefined };
    }
    case "wait":
      arity(0);
      return { kind: "wait" };
    case "remove":
      if (rest.toLowerCase() !== "all") return fail("remove: only 'remove all' is supported");
      return { kind: "remove_all" };
    case "add":
    case "setdefault":
      return parseTableCommand(word, rest, fail);
    case "check_counter": {
      const m = /^(\S+?)\s*\(\s*([^)\s]+)\s*\)\s*(?:(packets|bytes)\s*(==|!=|<=|>=|<|>)\s*(\S+))?$/i.exec(rest);
      if (!m) return fail("check_counter: expected COUNTER(INDEX) [packets|bytes OP VALUE]");
      const type = m[3]?.toLowerCase() as "packets" | "bytes" | undefined;
      return { kind: "check_counter", counter: m[1]!, index: m[2]!, check: { type, op: m[4] ?? "==", value: m[5] === undefined ? 0n : big(m[5], "a count") } };
    }
    case "mirroring_add":
      arity(2);
      return { kind: "mirroring_add", session: num(words[0], "a session id"), port: num(words[1], "a port") };
    case "mirroring_delete":
      arity(1);
      return { kind: "mirroring_delete", session: num(words[0], "a session id") };
    case "mc_mgrp_create":
      arity(1);
      return { kind: "mc_mgrp_create", group: num(words[0], "a group id") };
    case "mc_node_create":
    case "mc_node_update":
      if (words.length < 2) return fail(`${word}: expected ${word === "mc_node_create" ? "RID" : "NODE"} PORT...`);
      return word === "mc_node_create"
        ? { kind: "mc_node_create", rid: num(words[0], "a replication id"), ports: words.slice(1).map((w) => num(w, "a port")) }
        : { kind: "mc_node_update", node: num(words[0], "a node handle"), ports: words.slice(1).map((w) => num(w, "a port")) };
    case "mc_node_associate":
      arity(2);
      return { kind: "mc_node_associate", group: num(words[0], "a group id"), node: num(words[1], "a node handle") };
    case "register_write":
      arity(3);
      return { kind: "register_write", register: words[0]!, index: big(words[1], "an index"), value: big(words[2], "a value") };
    case "register_read":
      arity(2);
      return { kind: "register_read", register: words[0]!, index: big(words[1], "an index") };
    case "register_reset":
      arity(1);
      return { kind: "register_reset", register: words[0]! };
    case "counter_write":
      arity(4);
      return { kind: "counter_write", counter: words[0]!, index: big(words[1], "an index"), packets: big(words[2], "a packet count"), bytes: big(words[3], "a byte count") };
    case "counter_read":
      arity(2);
      return { kind: "counter_read", counter: words[0]!, index: big(words[1], "an index") };
    default:
      return fail(`unknown command '${word}'`);
  }
}

function parseTableCommand(word: "add" | "setdefault", rest: string, fail: (m: string) => never): Body {
  // Spaces around the punctuation do not matter.
  const norm = rest.replace(/\s*([:/(),=])\s*/g, "$1");
  const open = norm.indexOf("(");
  const close = norm.lastIndexOf(")");
  if (open < 0 || close < open) return fail(`${word}: expected an action call ACTION(ARG:VALUE, ...)`);
  const before = norm.slice(0, open).split(/\s+/).filter(Boolean);
  const actionName = before.pop();
  if (!actionName || !NAME.test(actionName)) return fail(`${word}: bad action name '${actionName ?? ""}'`);
  const argText = norm.slice(open + 1, close);
  const args = argText ? argText.split(",").map((a) => {
    const [n, v, extra] = a.split(":");
    if (!n || !v || extra !== undefined || !NAME.test(n) || !/^(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)$/.test(v)) return fail(`${word}: bad action argument '${a}' (expected NAME:VALUE)`);
    return { name: n, value: v };
  }) : [];
  const after = norm.slice(close + 1).trim();
  let id: string | undefined;
  if (after) {
    const m = /^=(\S+)$/.exec(after);
    if (!m || word !== "add") return fail(`${word}: unexpected '${after}' after the action call`);
    id = m[1];
  }
  const table = before.shift();
  if (!table || !NAME.test(table)) return fail(`${word}: expected a table name`);
  const action = { name: actionName.replace(/"/g, ""), args };
  if (word === "setdefault") {
    if (before.length) return fail(`setdefault: unexpected '${before.join(" ")}' before the action`);
    return { kind: "setdefault", table: table.replace(/"/g, ""), action };
  }
  let priority: number | undefined;
  if (before.length && /^\d+$/.test(before[0]!)) priority = Number(before.shift());
  const keys = before.map((k) => {
    const colon = k.lastIndexOf(":");
    const name = k.slice(0, colon);
    const value = k.slice(colon + 1);
    const [v, len, extra] = value.split("/");
    if (colon < 0 || !NAME.test(name) || !v || !NUMBER.test(v) || extra !== undefined || (len !== undefined && !NUMBER.test(len))) return fail(`add: bad key '${k}' (expected FIELD:VALUE or FIELD:VALUE/LENGTH)`);
    return { name: name.replace(/"/g, ""), value };
  });
  return { kind: "add", table: table.replace(/"/g, ""), priority, keys, action, ...(id !== undefined ? { id } : {}) };
}
