// One line at the end of a run: how many tests were skipped for want of the
// P4 toolchain (BMv2 simple_switch_grpc / simple_switch, p4c-bm2-ss), and
// what brings it. Those tests name their reason in their suite's title
// ("... (SKIPPED: reason)").
import type { Reporter, TestModule } from "vitest/node";

const TOOLCHAIN = /simple_switch|p4c|BMv2|bmv2/;

export default class ToolchainReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let skipped = 0;
    const reasons = new Set<string>();
    for (const m of modules) {
      for (const t of m.children.allTests()) {
        if (t.result().state !== "skipped") continue;
        const why = /\(SKIPPED: (.*?)\)(?= >|$)/.exec(t.fullName)?.[1];
        if (why === undefined || !TOOLCHAIN.test(t.fullName)) continue;
        skipped++;
        reasons.add(why);
      }
    }
    if (skipped === 0) return;
    process.stdout.write(
      `\n${skipped} tests skipped for want of the P4 toolchain (${[...reasons].join("; ")}): ` +
        "build p4c, PI and BMv2 into $P4_PREFIX (default /opt/p4) as docs/tofino.md says, then run the tests again\n",
    );
  }
}
