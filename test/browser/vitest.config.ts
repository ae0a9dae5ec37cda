// The browser tier (npm run test:browser): JupyterLab 4 and Notebook 7 in Debian's Chromium, and
// static exports with Debian's nbconvert 6.5.3 and nbconvert 7. Not part of `npm test`.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    root: new URL("../..", import.meta.url).pathname,
    include: ["test/browser/**/*.browser.ts"],
    fileParallelism: false,
    pool: "forks",
    testTimeout: 300_000,
    hookTimeout: 240_000,
  },
});
