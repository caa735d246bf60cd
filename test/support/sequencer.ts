// The order test files start in: the longest first, so that the workers
// end together rather than one running a minute-long file alone at the end.
// Vitest orders by the durations of earlier runs where it has them; a clean
// clone (CI) has none, and vitest would start the largest files first, which
// are not the longest. SLOWEST is measured (seconds in a clean-clone
// `bash .ci/run`); a file not listed keeps vitest's order after them.
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const SLOWEST: ReadonlyArray<readonly [file: string, seconds: number]> = [
  ["test/bmv2/bmv2.test.ts", 134],
  ["test/kafka/fabric-broker-restart.test.ts", 113],
  ["test/kafka/fabric.test.ts", 100],
  ["test/e2e/demo-replay.test.ts", 74],
  ["test/kafka/exporter-outage.test.ts", 56],
  ["test/kafka/exporter.test.ts", 56],
  ["test/controller/command-line.test.ts", 53],
  ["test/e2e/prometheus-server.test.ts", 46],
  ["test/e2e/wireshark.test.ts", 46],
  ["test/e2e/scale.test.ts", 42],
  ["test/kafka/dashboard-restart.test.ts", 40],
  ["test/e2e/prometheus.test.ts", 39],
  ["test/controller/controller-restart.test.ts", 38],
  ["test/e2e/polling-replay.test.ts", 37],
  ["test/kafka/spill.test.ts", 34],
  ["test/kafka/consume-broker-restart.test.ts", 33],
];

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const seconds = (f: TestSpecification) => SLOWEST.find(([file]) => file === relative(root, f.moduleId))?.[1] ?? 0;
    return sorted.map((f, i) => ({ f, i, s: seconds(f) })).sort((a, b) => b.s - a.s || a.i - b.i).map((x) => x.f);
  }
}
