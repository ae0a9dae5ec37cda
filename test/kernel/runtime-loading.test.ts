// While the runtime still loads (issue 22: after a restart, the warm-up imports it and acquires the
// WebGPU device; the first cell used to wait for that whatever it was): a cell that cannot reach the
// runtime is answered at once, one that uses torch waits and gets it. The runtime here is a fixture
// whose import ends only when the driver opens a gate, so no timing is involved.
import { afterAll, beforeAll, expect, test } from "vitest";
import { join } from "node:path";
import { installedKernel, run, PYTHON, REPO, type Env } from "./helpers.ts";

let e: Env;
let r: any;
beforeAll(async () => {
  e = await installedKernel({
    GRADLAB_RUNTIME: join(REPO, "test", "kernel", "fixtures", "gated-runtime.ts"),
    GRADLAB_WARMUP_IDLE_MS: "0",
  });
  const env = { ...e.env, GRADLAB_TEST_RUNTIME_GATE: join(e.dir, "gate") };
  const out = await run(PYTHON, [join(REPO, "test", "kernel", "runtime_gate.py")], { env, cwd: join(REPO, "test", "kernel") });
  if (out.code !== 0) throw new Error(`runtime_gate.py failed (${out.code}):\n${out.stderr}`);
  r = JSON.parse(out.stdout.trim().split("\n").pop()!);
}, 120_000);
afterAll(() => e?.cleanup());

test("a cell that cannot reach the runtime is answered while the runtime is still loading", () => {
  expect(r.plain).toEqual(["ok", "2", false]);
});

test("and what it prints streams as usual", () => {
  expect(r.print).toEqual(["ok", ["sum 6\n"], "3"]);
});

test("a cell that uses torch waits for the import and gets the runtime", () => {
  expect(r.torch).toEqual(["ok", "'loaded'"]);
});
