// What of a BMv2 JSON the software switch runs: checked before anything is
// built, so that a program it cannot run is refused with the reason.
import { HASH_ALGORITHMS } from "./crc.js";
import { InvalidProgramError, UnsupportedProgramError } from "./errors.js";
import type { Bmv2Json } from "./json.js";

const SUPPORTED_HASHES = new Set(Object.keys(HASH_ALGORITHMS));

/** Throws InvalidProgramError (not a BMv2 JSON) or UnsupportedProgramError (a feature this switch lacks). */
export function checkSupported(json: Bmv2Json): void {
  if (typeof json !== "object" || json === null || !Array.isArray(json.header_types) || !Array.isArray(json.pipelines)) {
    throw new InvalidProgramError("not a BMv2 JSON program (no header_types or pipelines)");
  }
  const major = json.__meta__?.version?.[0];
  if (major === undefined) throw new UnsupportedProgramError("BMv2 JSON without __meta__.version (format 1.x, from p4c-bm): compile the program with p4c");
  if (major !== 2) throw new UnsupportedProgramError(`BMv2 JSON format version ${major}.x (expected 2.x)`);
  for (const m of json.meter_arrays ?? []) {
    if (m.is_direct && (!m.binding || !m.result_target)) throw new UnsupportedProgramError(`meter '${m.name}': a direct meter without a table or a result field`);
    if (m.rate_count !== 2) throw new UnsupportedProgramError(`meter '${m.name}': ${m.rate_count} rates (expected 2)`);
    if (m.type !== "bytes" && m.type !== "packets") throw new UnsupportedProgramError(`meter '${m.name}': type '${m.type}'`);
  }
  if ((json.parse_vsets ?? []).length) throw new UnsupportedProgramError("parser value sets are not supported yet");
  if ((json.extern_instances ?? []).length) throw new UnsupportedProgramError("extern instances are not supported yet");
  for (const p of json.pipelines) {
    for (const ap of p.action_profiles) if (ap.selector) throw new UnsupportedProgramError(`pipeline '${p.name}': action selector '${ap.name}' is not supported yet`);
    if ((p.action_calls ?? []).length) throw new UnsupportedProgramError(`pipeline '${p.name}': action_calls are not supported`);
  }
  if (json.parsers.length !== 1) throw new UnsupportedProgramError(`expected one parser, found ${json.parsers.length}`);
  if (json.deparsers.length !== 1) throw new UnsupportedProgramError(`expected one deparser, found ${json.deparsers.length}`);
  for (const c of json.calculations ?? []) {
    if (!SUPPORTED_HASHES.has(c.algo)) throw new UnsupportedProgramError(`calculation '${c.name}': hash algorithm '${c.algo}'`);
  }
}
