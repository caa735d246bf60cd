import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["node_modules/**", "dist/**"],
    globalSetup: ["test/setup/kafka.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: one worker for the pipeline-heavy tests, one for the rest.
    maxWorkers: 2,
  },
});
