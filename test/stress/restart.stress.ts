// Restarts in quick succession (issue 22): jupyter_client's restart_kernel sends shutdown_request with
// restart=true to a kernel that has only just become ready; every old kernel must act on it and exit
// with status 0 (not be SIGTERMed or SIGKILLed by the client, nor abort at exit).
import { afterAll, beforeAll, expect, test } from "vitest";
import { join } from "node:path";
import { installedKernel, PYTHON, REPO, run, type Env } from "../kernel/helpers.ts";

let e: Env;
beforeAll(async () => {
  e = await installedKernel({ GRADLAB_RUNTIME: "" });
});
afterAll(() => e?.cleanup());

test("20 restarts, each as soon as the new kernel is ready: every old kernel exits cleanly", async () => {
  const r = await run(PYTHON, [join(REPO, "bench", "restart.py"), "20", "--no-cell", "--gradlab-only"], { env: e.env, timeout: 600_000 });
  expect(r.code, r.stderr).toBe(0);
  const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
  // the kernels' own diagnostics (they inherit python's stderr) say how an unclean one ended
  expect(out.gradlab.exits, r.stderr).toEqual({ "0": 20 });
}, 600_000);
