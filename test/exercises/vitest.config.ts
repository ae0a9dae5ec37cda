// The exercises tier (`npm run test:exercises`, also run by .ci/run): every exercise notebook run twice,
// untouched (its checks must fail) and solved (they must pass). Kept out of `npm test`, whose include is
// test/**/*.test.ts, by its file suffix: it takes minutes (30 notebook runs), and `npm test` must stay
// well under 10.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/exercises/**/*.tier.ts"],
    fileParallelism: false,
    pool: "forks",
    testTimeout: 300_000,
    hookTimeout: 120_000,
  },
});
