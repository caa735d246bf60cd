// Runs one STF test (p4c's BMv2 test format) on the software switch, and
// with --bmv2 on simple_switch too, and prints what each did.
//
//   npm run stf -- PROGRAM.json TEST.stf [--bmv2] [-v]
//
// Exit status: 0 passed, 1 failed (wrong output, or BMv2 failed), 2 the
// program or test was refused or could not be read.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { CompiledProgram, runStf, StfCommandError, StfSyntaxError, StfUnsupportedError, SwitchError, type Bmv2Json } from "@rdma-telemetry/switch";
import { bmv2StfUnavailable, runStfOnBmv2 } from "./stf-bmv2.js";

const { values: opts, positionals } = parseArgs({
  options: { bmv2: { type: "boolean", default: false }, verbose: { type: "boolean", short: "v", default: false } },
  allowPositionals: true,
});
if (positionals.length !== 2) {
  console.error("usage: npm run stf -- PROGRAM.json TEST.stf [--bmv2] [-v]");
  process.exit(2);
}
const [jsonFile, stfFile] = positionals as [string, string];

let program: CompiledProgram;
let stf: string;
try {
  stf = readFileSync(stfFile, "utf8");
  program = new CompiledProgram(JSON.parse(readFileSync(jsonFile, "utf8")) as Bmv2Json);
} catch (err) {
  console.error(err instanceof SwitchError ? `${jsonFile}: refused: ${err.message}` : `${(err as Error).message}`);
  process.exit(2);
}

let status = 0;
try {
  const r = runStf(program, stf);
  if (opts.verbose) for (const p of r.received) console.log(`  out port ${p.port} (from packet ${p.input}): ${p.hex}`);
  for (const e of r.errors) console.log(`  pipeline error: ${e}`);
  for (const f of r.failures) console.log(`  ${f}`);
  const extra = r.unobserved ? `; ${r.unobserved} to ports the test does not name` : "";
  console.log(`software switch: ${r.passed ? "pass" : "FAIL"} (${r.packetsIn} packets in, ${r.received.length} out on the test's ports${extra})`);
  if (!r.passed) status = 1;
} catch (err) {
  if (err instanceof StfSyntaxError || err instanceof StfCommandError || err instanceof StfUnsupportedError) {
    console.log(`software switch: refused: ${err.message}`);
    status = 2;
  } else throw err;
}

if (opts.bmv2) {
  const why = bmv2StfUnavailable();
  if (why) console.log(`BMv2: not run (${why})`);
  else {
    const r = await runStfOnBmv2(jsonFile, stf);
    for (const f of r.failures) console.log(`  ${f}`);
    console.log(`BMv2 simple_switch: ${r.passed ? "pass" : "FAIL"}`);
    if (!r.passed && status === 0) status = 1;
  }
}
process.exitCode = status;
