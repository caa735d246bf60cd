// Runs an STF test on the software switch, in process, and checks its
// expectations as p4c's BMv2 runner does (bmv2stf.py): on every port the
// test names, the packets that left must be exactly the expected ones, in
// order; `*` nibbles match anything and a final `$` asks for the exact
// length. Packets to ports the test never names are not checked (they are
// counted). Copies of one input packet on one port may come in any order.
import type { Bmv2Json } from "../bmv2/json.js";
import { CompiledProgram } from "../bmv2/program.js";
import type { MatchTable, KeyMatch } from "../bmv2/table.js";
import type { ReplicationApi } from "../replication.js";
import { SoftwareSwitch } from "../software-switch.js";
import { parseStf, type StfCommand } from "./parse.js";
import { StfCommandError, StfNames } from "./resolve.js";

/** A test this switch cannot run: the program or a command needs a feature it lacks. */
export class StfUnsupportedError extends Error {
  override readonly name = "StfUnsupportedError";
}

export interface ReceivedPacket {
  port: number;
  hex: string;
  /** which `packet` command (0-based) it came from */
  input: number;
}

export interface StfResult {
  passed: boolean;
  /** what did not match, one line each */
  failures: string[];
  packetsIn: number;
  received: ReceivedPacket[];
  /** packets to ports the test never names (not checked) */
  unobserved: number;
  /** pipeline faults (a packet that could not be processed) */
  errors: string[];
}

/** Does `hex` (a packet, upper case) match an STF expectation (`*` nibbles, `$` exact length)? */
export function matchesExpectation(expected: string, hex: string): boolean {
  let exp = expected.toUpperCase();
  const exact = exp.endsWith("$");
  if (exact) exp = exp.slice(0, -1);
  if (hex.length < exp.length) return false;
  if (exact && hex.length > exp.length) return false;
  for (let i = 0; i < exp.length; i++) if (exp[i] !== "*" && exp[i] !== hex[i]) return false;
  return true;
}

/** Parses and runs an STF file's text against a BMv2 JSON on a fresh software switch. */
export function runStf(program: Bmv2Json | CompiledProgram, stfText: string): StfResult {
  const commands = parseStf(stfText);
  const sw = new SoftwareSwitch({ clock: "virtual" });
  const compiled = sw.load(program);
  return runStfCommands(sw, compiled, commands);
}

/** Runs parsed STF commands on `sw`, which has `compiled` loaded. */
export function runStfCommands(sw: SoftwareSwitch, compiled: CompiledProgram, commands: readonly StfCommand[]): StfResult {
  const names = new StfNames(compiled.json);
  const observed = new Set<number>();
  for (const c of commands) if (c.kind === "packet" || c.kind === "expect") observed.add(c.port);
  const received: ReceivedPacket[] = [];
  const errors: string[] = [];
  let input = -1;
  let unobserved = 0;
  const onPacket = (p: { port: number; data: Uint8Array }) => {
    if (!observed.has(p.port)) {
      unobserved++;
      return;
    }
    received.push({ port: p.port, hex: Buffer.from(p.data).toString("hex").toUpperCase(), input });
  };
  const onError = (e: string) => errors.push(e);
  sw.on("packet", onPacket);
  sw.on("error", onError);
  const failures: string[] = [];
  const entryIds = new Map<string, { table: MatchTable; match: KeyMatch[]; priority: number }>();
  const mc = new Multicast(sw);
  let clock = 1_000_000_000n;
  try {
    for (const c of commands) {
      const at = `line ${c.line}`;
      try {
        switch (c.kind) {
          case "add": {
            const t = names.table(c.table);
            const table = compiled.tables.get(t.name)!;
            const a = names.action(t, c.action);
            const match: KeyMatch[] = names.keys(t, c.keys).map((m) => (m.kind === "ternary" && m.mask === 0n ? { kind: "any" } : m));
            const priority = table.needsPriority ? (c.priority ?? 0) + 1 : 0;
            const problem = table.validate(match, priority);
            if (problem) throw new StfCommandError(problem);
            table.insert({ match, priority, action: { actionId: a.id, data: compiled.actionData(a.id, a.args, `table '${t.name}'`) }, packets: 0, bytes: 0 });
            if (c.id !== undefined) entryIds.set(c.id, { table, match, priority });
            break;
          }
          case "setdefault": {
            const t = names.table(c.table);
            const table = compiled.tables.get(t.name)!;
            if (table.defaultConst) throw new StfCommandError(`table '${t.name}': its default action is const`);
            const a = names.action(t, c.action);
            table.defaultAction = { actionId: a.id, data: compiled.actionData(a.id, a.args, `table '${t.name}'`) };
            break;
          }
          case "remove_all":
            for (const table of compiled.tables.values()) if (!table.constEntries) table.clear();
            break;
          case "packet":
            input++;
            clock += 1_000n;
            sw.process({ port: c.port, data: Buffer.from(c.data, "hex"), unixNs: clock });
            break;
          case "expect":
          case "wait":
            break;
          case "check_counter":
            checkCounter(compiled, c, entryIds, failures);
            break;
          case "register_write":
          case "register_reset": {
            const r = byName(compiled.registers, c.register, "register array");
            if (c.kind === "register_reset") r.values.fill(typeof r.values[0] === "bigint" ? (0n as never) : (0 as never));
            else if (c.index >= BigInt(r.size)) throw new StfCommandError(`register '${r.name}' has ${r.size} cells, index ${c.index} is out of range`);
            else {
              const v = BigInt.asUintN(r.width, c.value);
              if (r.values instanceof Float64Array) r.values[Number(c.index)] = Number(v);
              else r.values[Number(c.index)] = v;
            }
            break;
          }
          case "counter_write": {
            const ctr = byName(compiled.counters, c.counter, "counter array");
            if (c.index >= BigInt(ctr.size)) throw new StfCommandError(`counter '${ctr.name}' has ${ctr.size} cells, index ${c.index} is out of range`);
            ctr.packets[Number(c.index)] = Number(c.packets);
            ctr.bytes[Number(c.index)] = Number(c.bytes);
            break;
          }
          case "register_read":
          case "counter_read":
            // Reads print in simple_switch_CLI and check nothing; they must name something that exists.
            if (c.kind === "register_read") byName(compiled.registers, c.register, "register array");
            else byName(compiled.counters, c.counter, "counter array");
            break;
          case "mirroring_add":
            mc.api.setCloneSession(c.session, { replicas: [{ egressPort: c.port, instance: 0 }] });
            break;
          case "mirroring_delete":
            mc.api.deleteCloneSession(c.session);
            break;
          case "mc_mgrp_create":
          case "mc_node_create":
          case "mc_node_update":
          case "mc_node_associate":
            mc.apply(c);
            break;
        }
      } catch (err) {
        if (err instanceof StfCommandError) throw new StfCommandError(`${at}: ${err.message}`);
        if (err instanceof StfUnsupportedError) throw new StfUnsupportedError(`${at}: ${err.message}`);
        throw err;
      }
    }
  } finally {
    sw.off("packet", onPacket);
    sw.off("error", onError);
  }
  failures.push(...checkExpectations(commands, received));
  return { passed: failures.length === 0 && errors.length === 0, failures, packetsIn: input + 1, received, unobserved, errors };
}

function byName<T extends { name: string }>(map: ReadonlyMap<string, T>, name: string, what: string): T {
  const exact = map.get(name);
  if (exact) return exact;
  const cands = [...map.values()].filter((x) => x.name.endsWith(name));
  if (cands.length !== 1) throw new StfCommandError(cands.length ? `${what} name '${name}' is ambiguous` : `no ${what} named '${name}'`);
  return cands[0]!;
}

function checkCounter(compiled: CompiledProgram, c: Extract<StfCommand, { kind: "check_counter" }>, entryIds: Map<string, { table: MatchTable; match: KeyMatch[]; priority: number }>, failures: string[]): void {
  let packets: number;
  let bytes: number;
  if (/^\d+$/.test(c.index)) {
    const ctr = byName(compiled.counters, c.counter, "counter array");
    const i = Number(c.index);
    if (i >= ctr.size) throw new StfCommandError(`counter '${ctr.name}' has ${ctr.size} cells, index ${i} is out of range`);
    [packets, bytes] = [ctr.packets[i]!, ctr.bytes[i]!];
  } else {
    const e = entryIds.get(c.index);
    if (!e) throw new StfCommandError(`check_counter: no entry added as '= ${c.index}'`);
    const entry = e.table.get(e.match, e.priority);
    if (!entry) throw new StfCommandError(`check_counter: entry '${c.index}' is gone`);
    [packets, bytes] = [entry.packets, entry.bytes];
  }
  const test = (v: number) => {
    const x = BigInt(v);
    const n = c.check.value;
    switch (c.check.op) {
      case "==": return x === n;
      case "!=": return x !== n;
      case "<": return x < n;
      case "<=": return x <= n;
      case ">": return x > n;
      case ">=": return x >= n;
      default: return false;
    }
  };
  const checks: Array<["packets" | "bytes", number]> = c.check.type ? [[c.check.type, c.check.type === "packets" ? packets : bytes]] : [["packets", packets], ["bytes", bytes]];
  for (const [type, v] of checks) if (!test(v)) failures.push(`line ${c.line}: counter ${c.counter}(${c.index}) ${type} is ${v}, expected ${c.check.op} ${c.check.value}`);
}

/** simple_switch_CLI's multicast commands: nodes (a rid and ports) by handle, groups of nodes. */
class Multicast {
  private readonly nodes: Array<{ rid: number; ports: number[] }> = [];
  private readonly groups = new Map<number, number[]>();

  constructor(private readonly sw: SoftwareSwitch) {}

  get api(): ReplicationApi {
    return this.sw.replication;
  }

  apply(c: Extract<StfCommand, { kind: "mc_mgrp_create" | "mc_node_create" | "mc_node_update" | "mc_node_associate" }>): void {
    const api = this.api;
    switch (c.kind) {
      case "mc_mgrp_create":
        if (this.groups.has(c.group)) throw new StfCommandError(`multicast group ${c.group} exists`);
        this.groups.set(c.group, []);
        break;
      case "mc_node_create":
        this.nodes.push({ rid: c.rid, ports: c.ports });
        return;
      case "mc_node_update": {
        const n = this.nodes[c.node];
        if (!n) throw new StfCommandError(`no multicast node ${c.node}`);
        n.ports = c.ports;
        for (const [g, members] of this.groups) if (members.includes(c.node)) this.push(api, g);
        return;
      }
      case "mc_node_associate": {
        const g = this.groups.get(c.group);
        if (!g) throw new StfCommandError(`no multicast group ${c.group}`);
        if (!this.nodes[c.node]) throw new StfCommandError(`no multicast node ${c.node}`);
        g.push(c.node);
        break;
      }
    }
    this.push(api, c.group);
  }

  private push(api: ReplicationApi, group: number): void {
    const replicas = (this.groups.get(group) ?? []).flatMap((h) => this.nodes[h]!.ports.map((p) => ({ egressPort: p, instance: this.nodes[h]!.rid })));
    api.setMulticastGroup(group, replicas);
  }
}

/**
 * What of the test's `expect`s the received packets fail, one line each:
 * on every port the test names, the count and each packet in order (copies
 * of one input packet, same `input`, in any order).
 */
export function checkExpectations(commands: readonly StfCommand[], received: readonly ReceivedPacket[]): string[] {
  const failures: string[] = [];
  const observed = new Set<number>();
  const expected = new Map<number, Array<{ data: string | undefined; line: number }>>();
  for (const c of commands) {
    if (c.kind === "packet") observed.add(c.port);
    if (c.kind !== "expect") continue;
    observed.add(c.port);
    const list = expected.get(c.port) ?? [];
    list.push({ data: c.data, line: c.line });
    expected.set(c.port, list);
  }
  for (const port of [...observed].sort((a, b) => a - b)) {
    const exp = expected.get(port) ?? [];
    const got = received.filter((r) => r.port === port);
    if (exp.length !== got.length) {
      failures.push(`port ${port}: expected ${exp.length} packet${exp.length === 1 ? "" : "s"}, got ${got.length}`);
    }
    const used = new Set<number>();
    for (let i = 0; i < Math.min(exp.length, got.length); i++) {
      const e = exp[i]!;
      // In order; a copy of the same input packet may stand in for another.
      let j = i;
      if (used.has(j) || (e.data !== undefined && !matchesExpectation(e.data, got[j]!.hex))) {
        j = got.findIndex((g, k) => !used.has(k) && g.input === got[i]!.input && (e.data === undefined || matchesExpectation(e.data, g.hex)));
      }
      if (j < 0) {
        failures.push(`port ${port}, packet ${i} (expect at line ${e.line}): expected ${e.data}, got ${got[i]!.hex}`);
        used.add(i);
      } else {
        used.add(j);
      }
    }
  }
  return failures;
}
