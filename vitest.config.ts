import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // GPU work on lavapipe and real kernels over sockets are slow on 2 cores; run files one at a time.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // torch.gc() (the GC fallback for dropped handles) needs it, as the kernel passes it.
    execArgv: ["--expose-gc"],
  },
});
