// `gradlab run` (our own TypeScript client, no Python needed) and nbclient executing notebooks.
import { afterAll, beforeAll, expect, test } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { installedKernel, run, GRADLAB, PYTHON, REPO, type Env } from "./helpers.ts";

let e: Env;
beforeAll(async () => {
  e = await installedKernel();
});
afterAll(() => e?.cleanup());

const SMOKE = join(REPO, "notebooks", "smoke.ipynb");
const outputsOf = (nb: any) => nb.cells.filter((c: any) => c.cell_type === "code").map((c: any) => c.outputs);
const joinText = (t: string | string[]) => (Array.isArray(t) ? t.join("") : t);

/** Only node's own directory on PATH: no python3, no jupyter. */
const noPythonEnv = () => ({ ...e.env, PATH: dirname(process.execPath) });

test("gradlab run executes a notebook without Python and writes nbformat outputs", async () => {
  const out = join(e.dir, "smoke-out.ipynb");
  const r = await run(process.execPath, [GRADLAB, "run", SMOKE, "-o", out], { env: noPythonEnv(), cwd: e.dir });
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toContain("hypot 5");
  expect(r.stdout).toContain("Out[2]: 42");
  expect(r.stderr).toMatch(/\[4\/4\]/);
  const nb = JSON.parse(readFileSync(out, "utf8"));
  const [c1, c2, c3, c4] = outputsOf(nb);
  expect(c1).toEqual([{ output_type: "stream", name: "stdout", text: ["hypot 5\n"] }]);
  expect(c2).toEqual([{ output_type: "execute_result", execution_count: 2, data: { "text/plain": ["42"] }, metadata: {} }]);
  // the display was updated in place through its display_id, in its cell and from a later one
  expect(joinText(c3[0].data["text/html"])).toBe("<b>third</b>");
  expect(joinText(c3[1].data["text/plain"])).toBe("'a/b'");
  expect(joinText(c4[0].data["text/plain"])).toBe("'updated'");
  expect(nb.cells.filter((c: any) => c.cell_type === "code").map((c: any) => c.execution_count)).toEqual([1, 2, 3, 4]);
  expect(nb.metadata.language_info.name).toBe("typescript");
  const v = await run(PYTHON, [join(REPO, "test", "kernel", "validate_nb.py"), out], { env: e.env });
  expect(v.stdout + v.stderr).toContain("valid");
  expect(v.code).toBe(0);
}, 60_000);

test("gradlab run stops at a failing cell with its traceback and a non-zero exit", async () => {
  const nbPath = join(e.dir, "failing.ipynb");
  const cell = (source: string) => ({ cell_type: "code", metadata: {}, execution_count: null, outputs: [], source });
  writeFileSync(
    nbPath,
    JSON.stringify({
      cells: [
        cell("const n = 2"),
        cell("function check(x: number) {\n  if (x > 1) throw new RangeError(`too big: ${x}`)\n}\ncheck(n)"),
        cell("console.log('never')"),
      ],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5,
    }),
  );
  const out = join(e.dir, "failing-out.ipynb");
  const r = await run(process.execPath, [GRADLAB, "run", nbPath, "-o", out], { env: noPythonEnv(), cwd: e.dir });
  expect(r.code).toBe(1);
  const err = r.stderr.replace(/\x1b\[[0-9;]*m/g, "");
  expect(err).toContain("RangeError: too big: 2");
  expect(err).toMatch(/--> 2\s+if \(x > 1\) throw/);
  expect(err).toMatch(/cell 2 of 3 failed/);
  expect(r.stdout).not.toContain("never");
  const [o1, o2, o3] = outputsOf(JSON.parse(readFileSync(out, "utf8")));
  expect(o1).toEqual([]);
  expect(o2).toHaveLength(1);
  expect(o2[0]).toMatchObject({ output_type: "error", ename: "RangeError", evalue: "too big: 2" });
  expect(o3).toEqual([]);
}, 60_000);

test("nbclient executes the smoke notebook on the installed kernelspec", async () => {
  const out = join(e.dir, "nbclient-out.ipynb");
  const r = await run(PYTHON, [join(REPO, "test", "kernel", "nbclient_run.py"), SMOKE, out], { env: e.env, cwd: e.dir });
  expect(r.code, r.stderr).toBe(0);
  const [c1, c2, c3] = outputsOf(JSON.parse(readFileSync(out, "utf8")));
  expect(joinText(c1[0].text)).toBe("hypot 5\n");
  expect(joinText(c2[0].data["text/plain"])).toBe("42");
  expect(joinText(c3[0].data["text/html"])).toBe("<b>third</b>");
}, 60_000);

test("gradlab install writes the kernelspec for --user, --sys-prefix and --prefix", async () => {
  const env = { ...e.env, JUPYTER_DATA_DIR: join(e.dir, "user-data"), VIRTUAL_ENV: join(e.dir, "venv") };
  const cases: [string[], string][] = [
    [["--user"], join(e.dir, "user-data", "kernels", "gradlab", "kernel.json")],
    [["--sys-prefix"], join(e.dir, "venv", "share", "jupyter", "kernels", "gradlab", "kernel.json")],
    [["--prefix", join(e.dir, "p2")], join(e.dir, "p2", "share", "jupyter", "kernels", "gradlab", "kernel.json")],
  ];
  for (const [args, path] of cases) {
    const r = await run(process.execPath, [GRADLAB, "install", ...args], { env });
    expect(r.code, r.stderr).toBe(0);
    const spec = JSON.parse(readFileSync(path, "utf8"));
    expect(spec.display_name).toBe("GradLab (TypeScript · WebGPU)");
    expect(spec.language).toBe("typescript");
    expect(spec.interrupt_mode).toBe("message");
    expect(spec.argv[0]).toBe(process.execPath);
    expect(spec.argv).toContain("--expose-gc");
    expect(spec.argv).toContain("--harmony-weak-refs-with-cleanup-some");
    expect(spec.argv.slice(-2)).toEqual(["-f", "{connection_file}"]);
  }
  const bad = await run(process.execPath, [GRADLAB, "install", "--bogus"], { env });
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toMatch(/unknown option --bogus/);
}, 60_000);

test("gradlab run fails when its kernel is killed by a signal at shutdown, even after every cell was ok", async () => {
  const nbPath = join(e.dir, "abort-at-exit.ipynb");
  const cell = (source: string) => ({ cell_type: "code", metadata: {}, execution_count: null, outputs: [], source });
  // the kernel's own exit (after shutdown_request) ends in SIGABRT, as glibc's abort does on a corrupted heap
  writeFileSync(
    nbPath,
    JSON.stringify({
      cells: [cell('process.on("exit", () => process.kill(process.pid, "SIGABRT"));\n"armed"')],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5,
    }),
  );
  const r = await run(process.execPath, [GRADLAB, "run", nbPath], { env: noPythonEnv(), cwd: e.dir });
  expect(r.stdout).toContain("armed");
  expect(r.stderr).toContain("the kernel was killed by SIGABRT at shutdown");
  expect(r.stderr).not.toContain("cells ok");
  expect(r.code).toBe(1);
}, 60_000);

test("a kernel that exits before it is ready over tcp is started again on fresh ports; over ipc the failure is reported", async () => {
  const { startKernel } = await import("../../kernel/cli/client.ts");
  const { kernelArgv } = await import("../../kernel/cli/paths.ts");
  const marker = join(e.dir, "failed-once");
  // the first start fails as a kernel that lost its port does (exits before binding); later ones run the kernel
  const argv = ["/bin/sh", "-c", `if [ ! -e ${marker} ]; then : > ${marker}; exit 1; fi; exec "$@"`, "sh", ...kernelArgv()];
  const { client, info } = await startKernel(argv, { env: e.env, transport: "tcp", stderr: "ignore" });
  expect(info.content.implementation).toBe("gradlab");
  await client.shutdown();
  expect(await client.exited).toEqual({ code: 0, signal: null });
  const failing = ["/bin/sh", "-c", "exit 3"];
  await expect(startKernel(failing, { env: e.env, transport: "ipc" })).rejects.toThrow("the kernel exited with status 3 before it was ready");
}, 120_000);

test("the runtime's warnings show in the cell that caused them, before what it prints next, as PyTorch's do", async () => {
  const nbPath = join(e.dir, "warning.ipynb");
  const cell = (source: string) => ({ cell_type: "code", metadata: {}, execution_count: null, outputs: [], source });
  writeFileSync(
    nbPath,
    JSON.stringify({
      cells: [cell('torch.autograd.set_detect_anomaly(true);\nconsole.log("after");'), cell('console.log("next");')],
      metadata: { kernelspec: { name: "gradlab", display_name: "GradLab", language: "typescript" } },
      nbformat: 4,
      nbformat_minor: 5,
    }),
  );
  const out = join(e.dir, "warning-out.ipynb");
  // the real runtime (the tier's kernels use a stand-in unless told)
  const r = await run(process.execPath, [GRADLAB, "run", nbPath, "-o", out], { env: { ...noPythonEnv(), GRADLAB_RUNTIME: "" }, cwd: e.dir });
  expect(r.code, r.stderr).toBe(0);
  const [c1, c2] = outputsOf(JSON.parse(readFileSync(out, "utf8")));
  expect(c1.map((o: any) => [o.name, joinText(o.text)])).toEqual([
    ["stderr", "UserWarning: Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled for debugging.\n"],
    ["stdout", "after\n"],
  ]);
  expect(c2.map((o: any) => joinText(o.text))).toEqual(["next\n"]);
}, 60_000);
