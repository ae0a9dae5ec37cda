// GradLab Lite's browser tier (npm run test:lite): the static site in Debian's Chromium on its WebGPU.
// Not part of `npm test` (it builds the site and runs the course in a software GPU: minutes).
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    root: new URL("../..", import.meta.url).pathname,
    include: ["test/lite/**/*.browser.ts"],
    fileParallelism: false,
    pool: "forks",
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
});
