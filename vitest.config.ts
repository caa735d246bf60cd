import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineConfig } from "vitest/config";
import LongestFirst from "./test/support/sequencer.js";

export default defineConfig({
  // The workspace packages resolve to their sources (the "source" export
  // condition), as in the typecheck; built code resolves to their dist/.
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["node_modules/**", "dist/**"],
    // The build first: the tests run the built `rdma-telemetry` command (test/setup/build.ts).
    globalSetup: ["test/setup/build.ts", "test/setup/kafka.ts"],
    // The default report, then one line counting the tests skipped for want of BMv2 and p4c.
    reporters: ["default", "./test/support/toolchain-reporter.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: one worker for the pipeline-heavy tests, one for the rest. (Three made `.ci/run` 1,120 s instead of
    // about 1,200, with the CPU then 90 % busy, and live switches replaying captures at their pace fell behind it.)
    maxWorkers: 2,
    // The longest files start first (test/support/sequencer.ts).
    sequence: { sequencer: LongestFirst },
    // Controllers started by tests keep their control token here, not in the user's state directory.
    env: { XDG_STATE_HOME: join(tmpdir(), `rdma-telemetry-test-state-${process.pid}`) },
  },
});
