// What a build manifest and the tree disagree on: sources new, changed or
// removed since the last compile, and outputs missing or edited. Shared by
// the BMv2 build (p4-build.mjs) and the TNA build (p4-build-tna.mjs).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * `now`: the sources' hashes as they are; `buildDir` (relative to `base`)
 * holds the outputs; `hash(name, bytes)` hashes an output as the manifest did.
 */
export function manifestProblems(manifest, now, base, buildDir, hash) {
  const problems = [];
  for (const [f, h] of Object.entries(now)) {
    if (!(f in manifest.sources)) problems.push(`${f} is new since the last compile`);
    else if (manifest.sources[f] !== h) problems.push(`${f} changed since the last compile`);
  }
  for (const f of Object.keys(manifest.sources)) {
    if (!(f in now)) problems.push(`${f} was removed since the last compile`);
  }
  for (const [name, h] of Object.entries(manifest.outputs)) {
    const p = join(base, buildDir, name);
    if (!existsSync(p)) problems.push(`${buildDir}/${name} is missing`);
    else if (hash(name, readFileSync(p)) !== h) problems.push(`${buildDir}/${name} does not match the manifest (edited by hand?)`);
  }
  return problems;
}
