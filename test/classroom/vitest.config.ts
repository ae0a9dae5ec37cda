// The classroom tier (`npm run test:classroom`, also run by .ci/run after .ci/setup has run deploy/setup):
// a real JupyterHub with two students. It must run as root (the hub creates Unix accounts and starts each
// server as its student), and it starts servers and kernels on 2 cores, so it stays out of `npm test` by
// its file suffix.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/classroom/**/*.tier.ts"],
    fileParallelism: false,
    pool: "forks",
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
