// Whether the P4Info a switch runs is the one a controller was built for:
// the same tables (and their match fields and actions), actions (and their
// parameters), digests, counters, registers and meters, by id and by name.
// Annotations, documentation and source locations are not compared.
import type { P4Info, Preamble } from "./generated/p4/config/v1/p4info.js";

type Named = { preamble?: Preamble | undefined };

/** What differs between `want` (the controller's P4Info) and `have` (the switch's); empty when they match. */
export function p4infoDifferences(want: P4Info, have: P4Info): string[] {
  const out: string[] = [];
  const kinds: Array<[string, Named[], Named[], (a: never, b: never) => string | undefined]> = [
    ["table", want.tables, have.tables, (a: P4Info["tables"][number], b: P4Info["tables"][number]) =>
      fields("match field", a.matchFields, b.matchFields) ?? sameList("actions", a.actionRefs.map((r) => r.id), b.actionRefs.map((r) => r.id))],
    ["action", want.actions, have.actions, (a: P4Info["actions"][number], b: P4Info["actions"][number]) => fields("parameter", a.params, b.params)],
    ["digest", want.digests, have.digests, (a: P4Info["digests"][number], b: P4Info["digests"][number]) =>
      memberDifference(digestType(want, a.typeSpec), digestType(have, b.typeSpec))],
    ["counter", want.counters, have.counters, () => undefined],
    ["direct counter", want.directCounters, have.directCounters, () => undefined],
    ["register", want.registers, have.registers, () => undefined],
    ["meter", want.meters, have.meters, () => undefined],
  ];
  for (const [kind, a, b, inner] of kinds) {
    const byId = new Map(b.map((x) => [x.preamble?.id ?? 0, x]));
    for (const x of a) {
      const id = x.preamble?.id ?? 0;
      const name = x.preamble?.name ?? "";
      const y = byId.get(id);
      byId.delete(id);
      if (!y) {
        const other = b.find((z) => z.preamble?.name === name);
        out.push(other ? `${kind} '${name}' has id ${other.preamble?.id} on the switch, ${id} here` : `${kind} '${name}' (id ${id}) is not on the switch`);
      } else if (y.preamble?.name !== name) {
        out.push(`${kind} id ${id} is '${y.preamble?.name}' on the switch, '${name}' here`);
      } else {
        const why = inner(x as never, y as never);
        if (why) out.push(`${kind} '${name}': ${why}`);
      }
    }
    for (const y of byId.values()) {
      if (!a.some((x) => x.preamble?.name === y.preamble?.name)) out.push(`${kind} '${y.preamble?.name}' (id ${y.preamble?.id}) is on the switch only`);
    }
  }
  return out;
}

/** The first member of a digest's type that differs, said briefly. */
function memberDifference(want: string[], have: string[]): string | undefined {
  for (let i = 0; i < Math.max(want.length, have.length); i++) {
    const [wn, ww] = (want[i] ?? "(none):").split(":");
    const [hn, hw] = (have[i] ?? "(none):").split(":");
    if (wn !== hn) return `field ${i + 1} is '${hn}' on the switch, '${wn}' here`;
    if (ww !== hw) return `field '${wn}' is ${hw} bits on the switch, ${ww} here`;
  }
  return undefined;
}

/** A digest's type as its members (name:width), or the type itself. */
function digestType(p4info: P4Info, t: P4Info["digests"][number]["typeSpec"]): string[] {
  const spec = t?.typeSpec;
  if (spec?.$case !== "struct") return [`type:${JSON.stringify(t ?? null)}`];
  const members = p4info.typeInfo?.structs?.[spec.value.name]?.members ?? [];
  return members.map((m) => {
    const b = m.typeSpec?.typeSpec;
    const width = b?.$case === "bitstring" ? (b.value.typeSpec?.$case === "varbit" ? `varbit<${b.value.typeSpec.value.maxBitwidth}>` : String(b.value.typeSpec?.value.bitwidth ?? "?")) : (b?.$case ?? "?");
    return `${m.name}:${width}`;
  });
}

function fields(what: string, a: ReadonlyArray<{ id: number; name: string; bitwidth: number }>, b: ReadonlyArray<{ id: number; name: string; bitwidth: number }>): string | undefined {
  const key = (f: { id: number; name: string; bitwidth: number }) => `${f.id}:${f.name}:${f.bitwidth}`;
  for (const f of a) {
    const g = b.find((x) => x.id === f.id);
    if (!g) return `${what} '${f.name}' (id ${f.id}) is not on the switch`;
    if (key(f) !== key(g)) return `${what} id ${f.id} is '${g.name}' (${g.bitwidth} bits) on the switch, '${f.name}' (${f.bitwidth} bits) here`;
  }
  const extra = b.find((g) => !a.some((f) => f.id === g.id));
  return extra ? `${what} '${extra.name}' (id ${extra.id}) is on the switch only` : undefined;
}

function sameList(what: string, a: number[], b: number[]): string | undefined {
  const s = (l: number[]) => [...l].sort((x, y) => x - y).join(",");
  return s(a) === s(b) ? undefined : `its ${what} differ (ids ${s(b)} on the switch, ${s(a)} here)`;
}
