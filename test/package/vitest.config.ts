// The package tier (`npm run test:package`, also run by .ci/run): `npm pack` of this checkout installed
// into an empty folder with plain `npm install ./gradlab-*.tgz`, then used as a user would (Node ESM,
// TypeScript, `npx gradlab install` / `npx gradlab run`). Kept out of `npm test` (whose include is
// test/**/*.test.ts) by its file suffix: it builds and installs, which takes a minute or two.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/package/**/*.tier.ts"],
    fileParallelism: false,
    pool: "forks",
    testTimeout: 300_000,
    hookTimeout: 600_000,
  },
});
