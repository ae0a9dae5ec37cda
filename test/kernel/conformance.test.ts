// The Jupyter kernel conformance suite (Debian's python3-jupyter-kernel-test) over real sockets.
import { afterAll, beforeAll, expect, test } from "vitest";
import { join } from "node:path";
import { installedKernel, run, PYTHON, REPO, type Env } from "./helpers.ts";

let e: Env;
beforeAll(async () => {
  e = await installedKernel();
});
afterAll(() => e?.cleanup());

test("jupyter_kernel_test passes every test, none skipped", async () => {
  const r = await run(PYTHON, [join(REPO, "test", "kernel", "conformance.py")], { env: { ...e.env, GRADLAB_KERNEL_QUIET: "1" } });
  const out = r.stdout + r.stderr;
  expect(out, out).toMatch(/Ran 12 tests/);
  expect(out).not.toMatch(/skipped/);
  expect(r.code, out).toBe(0);
  expect(out).toMatch(/\nOK\s*$/);
}, 120_000);
