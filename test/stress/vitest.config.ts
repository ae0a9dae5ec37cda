// The stress tier (`npm run test:stress`, also run by .ci/run): long, bounded runs against real kernels.
// Kept out of `npm test` (whose include is test/**/*.test.ts) by its own file suffix.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/stress/**/*.stress.ts"],
    fileParallelism: false,
    pool: "forks",
    testTimeout: 300_000,
    hookTimeout: 120_000,
    execArgv: ["--expose-gc"],
  },
});
