// STF names and values made concrete against a BMv2 JSON, as p4c's
// bmv2stf.py does before it drives simple_switch_CLI: a table or action
// named by a suffix of its full name, key fields by a suffix (`x$0` for
// `x[0]`, `h.valid` for `h.$valid$`), ternary values with `*` nibbles,
// LPM prefixes from the number of digits, STF priorities (higher wins).
import type { Bmv2Json } from "../bmv2/json.js";
import type { StfAction, StfKey } from "./parse.js";

/** An STF command that does not fit the program (unknown table, missing argument). */
export class StfCommandError extends Error {
  override readonly name = "StfCommandError";
}

export type ResolvedMatch =
  | { kind: "exact"; value: bigint }
  | { kind: "lpm"; value: bigint; prefixLen: number }
  | { kind: "ternary"; value: bigint; mask: bigint };

export interface ResolvedKeyField {
  name: string;
  matchType: string;
  width: number;
}

export interface ResolvedTable {
  name: string;
  matchType: string;
  keys: ResolvedKeyField[];
  actions: Array<{ id: number; name: string; params: Array<{ name: string; width: number }> }>;
}

export interface ResolvedAction {
  id: number;
  name: string;
  args: bigint[];
}

/** The tables and actions of a program as STF names them. */
export class StfNames {
  private readonly tables: ResolvedTable[] = [];

  constructor(json: Bmv2Json) {
    const actions = new Map(json.actions.map((a) => [a.id, a]));
    const headers = new Map(json.headers.map((h) => [h.name, h]));
    const types = new Map(json.header_types.map((t) => [t.name, t]));
    const widthOf = (target: [string, string] | string): number => {
      if (!Array.isArray(target)) return 0;
      const [h, f] = target;
      if (f === "$valid$") return 1;
      const t = types.get(headers.get(h)?.header_type ?? "");
      const w = t?.fields.find((x) => x[0] === f)?.[1];
      return typeof w === "number" ? w : 0;
    };
    for (const p of json.pipelines) {
      for (const t of p.tables) {
        this.tables.push({
          name: t.name,
          matchType: t.match_type,
          keys: t.key.map((k) => ({ name: k.name ?? (Array.isArray(k.target) ? k.target.join(".") : String(k.target)), matchType: k.match_type, width: widthOf(k.target) })),
          actions: t.action_ids.map((id) => {
            const a = actions.get(id);
            return { id, name: a?.name ?? String(id), params: (a?.runtime_data ?? []).map((r) => ({ name: r.name, width: r.bitwidth })) };
          }),
        });
      }
    }
  }

  /** A table by its full name or the one table whose name ends with `name`. */
  table(name: string): ResolvedTable {
    const exact = this.tables.find((t) => t.name === name);
    if (exact) return exact;
    const cands = this.tables.filter((t) => t.name.endsWith(name));
    if (cands.length > 1) throw new StfCommandError(`table name '${name}' is ambiguous: ${cands.map((t) => t.name).join(", ")}`);
    if (!cands.length) throw new StfCommandError(`no table named '${name}'`);
    return cands[0]!;
  }

  /** An action of `table` by its name or the one that ends with it, with its arguments in order. */
  action(table: ResolvedTable, call: StfAction): ResolvedAction {
    let a = table.actions.find((x) => x.name === call.name);
    if (!a) {
      const cands = table.actions.filter((x) => x.name.endsWith(call.name));
      if (cands.length > 1) throw new StfCommandError(`action name '${call.name}' is ambiguous in table '${table.name}'`);
      a = cands[0];
    }
    if (!a) throw new StfCommandError(`table '${table.name}' has no action '${call.name}' (it has ${table.actions.map((x) => x.name).join(", ")})`);
    for (const arg of call.args) if (!a.params.some((p) => p.name === arg.name)) throw new StfCommandError(`action '${a.name}' has no parameter '${arg.name}'`);
    const args = a.params.map((p) => {
      const v = call.args.find((x) => x.name === p.name);
      if (!v) throw new StfCommandError(`action '${a.name}': no value for parameter '${p.name}'`);
      return BigInt(v.value);
    });
    return { id: a.id, name: a.name, args };
  }

  /** The match of every key field of `table`; fields the test leaves out match anything (exact: 0). */
  keys(table: ResolvedTable, given: readonly StfKey[]): ResolvedMatch[] {
    const values = new Map<number, string>();
    for (const k of given) values.set(keyIndex(table, k.name), k.value);
    return table.keys.map((k, i) => {
      const v = values.get(i);
      switch (k.matchType) {
        case "ternary":
          return v === undefined ? { kind: "ternary", value: 0n, mask: 0n } : ternary(v, k);
        case "lpm":
          return v === undefined ? { kind: "lpm", value: 0n, prefixLen: 0 } : lpm(v, k);
        case "exact":
        case "valid":
        case "optional":
          if (v !== undefined && v.includes("*")) throw new StfCommandError(`key field '${k.name}' is ${k.matchType}: '*' digits are for ternary keys`);
          return { kind: "exact", value: v === undefined ? 0n : BigInt(v.split("/")[0]!) };
        default:
          throw new StfCommandError(`key field '${k.name}': STF has no syntax for ${k.matchType} matches`);
      }
    });
  }
}

function keyIndex(table: ResolvedTable, raw: string): number {
  // `x$0.f` names the stack element `x[0].f`.
  const key = raw.replace(/^(.*?)\$(\d+)(.*)$/, "$1[$2]$3");
  const names = table.keys.map((k) => k.name);
  const direct = [key, `${key}$`, `${key}.$valid$`];
  if (key.endsWith(".valid")) direct.push(`${key.slice(0, -5)}$valid$`);
  for (const d of direct) {
    const i = names.indexOf(d);
    if (i >= 0) return i;
  }
  let found = -1;
  names.forEach((n, i) => {
    if (n.endsWith(`.${key}`) || n.endsWith(`.${key}$`) || (key === "valid" && n.endsWith(".$valid$"))) found = i;
  });
  if (found < 0 && key === "valid") found = names.indexOf("$valid$");
  if (found < 0) throw new StfCommandError(`table '${table.name}' has no key field '${raw}' (its keys: ${names.join(", ") || "none"})`);
  return found;
}

const widthMask = (w: number) => (1n << BigInt(w)) - 1n;

function ternary(v: string, k: ResolvedKeyField): ResolvedMatch {
  const m = /^0([xXbB])([0-9a-fA-F*]+)$/.exec(v);
  if (!m) {
    if (/^\d+$/.test(v)) throw new StfCommandError(`ternary key field '${k.name}': a decimal value ('${v}') has no mask; write it in hex or binary`);
    throw new StfCommandError(`ternary key field '${k.name}': bad value '${v}'`);
  }
  const hex = m[1]!.toLowerCase() === "x";
  const digits = m[2]!;
  const value = BigInt(`0${m[1]}${digits.replace(/\*/g, "0")}`);
  const mask = BigInt(`0${m[1]}${digits.replace(/[0-9a-fA-F]/g, hex ? "f" : "1").replace(/\*/g, "0")}`);
  const w = widthMask(k.width);
  return { kind: "ternary", value: value & mask & w, mask: mask & w };
}

function lpm(v: string, k: ResolvedKeyField): ResolvedMatch {
  const slash = v.indexOf("/");
  if (slash >= 0) return prefixMatch(BigInt(v.slice(0, slash)), Number(BigInt(v.slice(slash + 1))), k);
  let digits: number;
  let bitsPerDigit: number;
  if (/^0[xX]/.test(v)) [digits, bitsPerDigit] = [v.length - 2 - (v.match(/\*/g)?.length ?? 0), 4];
  else if (/^0[bB]/.test(v)) [digits, bitsPerDigit] = [v.length - 2 - (v.match(/\*/g)?.length ?? 0), 1];
  else [digits, bitsPerDigit] = [BigInt(v).toString(16).length, 4];
  return prefixMatch(BigInt(v.replace(/\*/g, "0")), Math.min(k.width, digits * bitsPerDigit), k);
}

/** The bits beyond the prefix are cleared, as simple_switch does. */
function prefixMatch(value: bigint, prefixLen: number, k: ResolvedKeyField): ResolvedMatch {
  const w = widthMask(k.width);
  const keep = w & ~widthMask(k.width - Math.min(prefixLen, k.width));
  return { kind: "lpm", value: value & keep, prefixLen };
}
