// The published package, outside this repository: this checkout's files (tracked and new, as git lists
// them) are copied to a temporary directory and packed there with `npm pack` (which runs the clean,
// type-checked build, prepack), so the working tree's own dist/ is never touched. The tarball is
// installed into an empty folder with plain `npm install ./gradlab-*.tgz` (dependencies from the npm
// registry or its local cache) and used as a user would: imported from plain Node ESM, type-checked
// from TypeScript, run as a script with gradlab/register, and run as a Jupyter kernel through `npx
// gradlab install` and `npx gradlab run`.
import { afterAll, beforeAll, expect, test } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

const REPO = resolve(import.meta.dirname, "../..");
let dir: string;
let checkout: string;
let app: string;
let packed: { filename: string; files: { path: string }[] };

/** Runs a command; fails the test with its output when it exits non-zero. */
function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", env: { ...process.env, ...env }, maxBuffer: 64 << 20, timeout: 540_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "gradlab-package-"));
  // the checkout as git sees it (no dist/, no node_modules), with the checkout's node_modules for the build
  const src = (checkout = join(dir, "src"));
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: REPO, encoding: "utf8" });
  for (const f of listed.split("\0").filter((f) => f && !/^(node_modules|dist)(\/|$)/.test(f))) {
    mkdirSync(dirname(join(src, f)), { recursive: true });
    try {
      cpSync(join(REPO, f), join(src, f));
    } catch (e: any) {
      if (e.code !== "ENOENT") throw e; // deleted in the working tree but not yet in the index
    }
  }
  symlinkSync(join(REPO, "node_modules"), join(src, "node_modules"));
  const out = join(dir, "out");
  mkdirSync(out);
  [packed] = JSON.parse(sh("npm", ["pack", "--json", "--pack-destination", out], src));
  app = join(dir, "app");
  mkdirSync(app);
  // what the issue asks users to run, in an empty folder (only --no-audit/--no-fund: no network calls
  // beyond the registry; the local npm cache is preferred when it has a package)
  sh("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(out, packed.filename)], app);
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the tarball holds the built runtime, kernel, shaders and kernelspec assets, and no sources or tests", () => {
  const files = packed.files.map((f) => f.path);
  for (const f of [
    "package.json",
    "bin/gradlab.js",
    "kernel.json",
    "kernel/assets/logo-64x64.png",
    "dist/src/index.js",
    "dist/index.d.ts",
    "dist/src/index.d.ts",
    "dist/kernel/cli/main.js",
    "dist/kernel/sockets/control-worker.js",
    "dist/kernel/language/service-worker.js",
    "dist/kernel/register.js",
    "dist/kernel/executor/module-hooks.js",
    "dist/kernels-wgsl/elementwise.wgsl",
  ]) {
    expect(files, f).toContain(f);
  }
  expect(files.filter((f) => /^(src|test|bench|notebooks|kernel\/(?!assets\/))\/|\.ts$(?<!\.d\.ts)|tsbuildinfo|sources-stamp/.test(f))).toEqual([]);
  expect(files.filter((f) => f.startsWith("dist/kernel/") && f.endsWith(".d.ts"))).toEqual([]);
});

test("plain Node ESM imports the runtime (namespace and named imports) and computes on the device", () => {
  writeFileSync(
    join(app, "use.mjs"),
    [
      'import * as torch from "gradlab";',
      'import { tensor, Tensor } from "gradlab";',
      "const x = tensor([[1, 2], [3, 4]], { requires_grad: true });",
      "const loss = x.mul(x).sum();",
      "loss.backward();",
      "console.log(JSON.stringify({ grad: await x.grad.tolist(), fn: loss.grad_fn.name(), isTensor: x instanceof Tensor, same: torch.tensor === tensor, allocated: torch.cuda.memory_allocated() > 0 }));",
    ].join("\n"),
  );
  const r = JSON.parse(sh(process.execPath, ["use.mjs"], app).trim().split("\n").pop()!);
  expect(r).toEqual({
    grad: [
      [2, 4],
      [6, 8],
    ],
    fn: "SumBackward0",
    isTensor: true,
    same: true,
    allocated: true,
  });
});

test("TypeScript resolves the package's types (strict, no skipLibCheck)", () => {
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", strict: true, noEmit: true, skipLibCheck: false, types: ["node"] },
      files: ["use.ts"],
    }),
  );
  writeFileSync(
    join(app, "use.ts"),
    [
      'import * as torch from "gradlab";',
      'import type { Tensor } from "gradlab";',
      "const x: Tensor = torch.ones(2, 3);",
      "const rows: number = x.shape[0];",
      "const model = new torch.nn.Linear(3, 4);",
      "const y: Tensor = model.forward(x);",
      "// @ts-expect-error: the types are real, so a method that does not exist is an error",
      "x.no_such_method();",
      "// @ts-expect-error: and a tensor is not a number",
      "const n: number = y;",
      "export { rows, n };",
    ].join("\n"),
  );
  // the TypeScript that came with the package (a dependency of the kernel)
  sh(process.execPath, [join(app, "node_modules", "typescript", "bin", "tsc"), "-p", "."], app);
});

test("a TypeScript script runs with node --import gradlab/register and with npx gradlab run, freeing as a cell does", () => {
  // issue 20's op chain and a kept gradient; the installed package's own hooks strip the types (no tsx)
  writeFileSync(
    join(app, "chain.ts"),
    [
      'import * as torch from "gradlab";',
      "const w = torch.ones(3, { requires_grad: true });",
      "w.mul(2).sum().backward();",
      "const g: torch.Tensor = w.grad!;",
      "w.grad = null;",
      "let y: torch.Tensor = torch.ones(256);",
      "for (let i = 0; i < 200; i++) y = y.add(1);",
      "console.log(JSON.stringify({ g: await g.tolist(), y: (await y.tolist())[0], peak: torch.cuda.max_memory_allocated(), args: process.argv.slice(2) }));",
    ].join("\n"),
  );
  // the peak as in PyTorch: w and g (512 B each) with y and the next y (1 KiB each) during the chain
  const expected = { g: [2, 2, 2], y: 201, peak: 2 * 512 + 2 * 1024, args: ["--x"] };
  const viaImport = JSON.parse(sh(process.execPath, ["--import", "gradlab/register", "chain.ts", "--x"], app).trim().split("\n").pop()!);
  expect(viaImport).toEqual(expected);
  const viaRun = JSON.parse(sh("npx", ["--no-install", "gradlab", "run", "chain.ts", "--x"], app).trim().split("\n").pop()!);
  expect(viaRun).toEqual(expected);
});

test("npx gradlab install writes a kernelspec that runs the installed build, and npx gradlab run executes a notebook with it", () => {
  const prefix = join(dir, "prefix");
  const env = { JUPYTER_PATH: join(prefix, "share", "jupyter"), JUPYTER_DATA_DIR: join(dir, "jupyter-data"), GRADLAB_HISTORY_FILE: join(dir, "history.jsonl") };
  expect(sh("npx", ["--no-install", "gradlab", "install", "--prefix", prefix], app, env)).toMatch(/Installed kernelspec gradlab/);
  const spec = JSON.parse(readFileSync(join(prefix, "share", "jupyter", "kernels", "gradlab", "kernel.json"), "utf8"));
  expect(spec.argv).toEqual([
    process.execPath,
    "--expose-gc",
    "--harmony-weak-refs-with-cleanup-some",
    join(app, "node_modules", "gradlab", "dist", "kernel", "cli", "main.js"),
    "kernel",
    "-f",
    "{connection_file}",
  ]);

  const cell = (source: string) => ({ cell_type: "code", metadata: {}, execution_count: null, outputs: [], source });
  writeFileSync(join(app, "helper.ts"), "export const scale = (n: number): number => n * 10;\n");
  writeFileSync(
    join(app, "nb.ipynb"),
    JSON.stringify({
      cells: [
        cell("const x = torch.tensor([1, 2, 3], {requires_grad: true})\nconst y = x.pow(2).sum()\ny.backward()\nconsole.log(await x.grad.tolist())"),
        cell('import { scale } from "./helper.ts"\nscale((await y.item()))'),
      ],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5,
    }),
  );
  sh("npx", ["--no-install", "gradlab", "run", "nb.ipynb", "-o", "out.ipynb"], app, env);
  const outputs = JSON.parse(readFileSync(join(app, "out.ipynb"), "utf8")).cells.map((c: any) => c.outputs);
  expect(outputs[0]).toEqual([{ output_type: "stream", name: "stdout", text: ["[ 2, 4, 6 ]\n"] }]);
  expect(outputs[1][0].data["text/plain"]).toEqual(["140"]);
});

test("in a checkout, bin/gradlab.js rebuilds dist/ once after a source changes, so it never runs a stale kernel", () => {
  const gradlab = (args: string[]) => spawnSync(process.execPath, [join(checkout, "bin", "gradlab.js"), ...args], { cwd: checkout, encoding: "utf8" });
  const fresh = gradlab(["help"]); // npm pack's build left dist/ current
  expect(fresh.status, fresh.stderr).toBe(0);
  expect(fresh.stderr).not.toMatch(/rebuilding/);
  const main = join(checkout, "kernel", "cli", "main.ts");
  writeFileSync(main, readFileSync(main, "utf8").replace("execute a notebook headlessly", "execute a notebook headlessly (edited)"));
  const edited = gradlab(["help"]);
  expect(edited.status, edited.stderr).toBe(0);
  expect(edited.stderr).toMatch(/sources changed since the last build; rebuilding dist\//);
  expect(edited.stdout).toContain("execute a notebook headlessly (edited)");
  const again = gradlab(["help"]);
  expect(again.stderr).not.toMatch(/rebuilding/);
  expect(again.stdout).toContain("(edited)");
});

test("the installed package does not offer `gradlab classroom` (a checkout's command): not in its help, and asking for it changes nothing", () => {
  const env = { JUPYTER_PATH: join(dir, "classroom-probe", "share", "jupyter"), GRADLAB_CLASS_KERNELS: join(dir, "classroom-probe", "kernels") };
  const gradlab = (args: string[]) =>
    spawnSync("npx", ["--no-install", ...["gradlab", ...args]], { cwd: app, encoding: "utf8", env: { ...process.env, ...env } });
  const help = gradlab(["--help"]);
  expect(help.status, help.stderr).toBe(0);
  expect(help.stdout).toContain("gradlab run");
  expect(help.stdout).not.toContain("classroom");
  // what a teacher who read about the classroom would type, with and without options
  for (const args of [["classroom"], ["classroom", "--users", "3"], ["classroom", "--help"]]) {
    const r = gradlab(args);
    expect(r.status, args.join(" ")).toBe(2);
    expect(r.stderr).toMatch(/"classroom" is not part of the npm package: a classroom server runs from a checkout/);
    expect(r.stdout).not.toMatch(/GradLab classroom: http/);
  }
  // no kernelspec was written anywhere a class would look, and no hub state was made
  expect(existsSync(join(dir, "classroom-probe"))).toBe(false);
  // the checkout (the same build, with deploy/) still offers it
  const inCheckout = spawnSync(process.execPath, [join(checkout, "bin", "gradlab.js"), "--help"], { cwd: checkout, encoding: "utf8" });
  expect(inCheckout.stdout).toContain("gradlab classroom");
});

test("the installed package does not offer `gradlab lite` either (it bundles a checkout's sources)", () => {
  const out = join(dir, "lite-probe");
  const gradlab = (args: string[]) => spawnSync("npx", ["--no-install", ...["gradlab", ...args]], { cwd: app, encoding: "utf8" });
  expect(gradlab(["--help"]).stdout).not.toContain("lite");
  for (const args of [
    ["lite", "build", "--out", out],
    ["lite", "serve", out],
  ]) {
    const r = gradlab(args);
    expect(r.status, args.join(" ")).toBe(2);
    expect(r.stderr).toMatch(/"lite" is not part of the npm package/);
  }
  expect(existsSync(out)).toBe(false);
  const inCheckout = spawnSync(process.execPath, [join(checkout, "bin", "gradlab.js"), "--help"], { cwd: checkout, encoding: "utf8" });
  expect(inCheckout.stdout).toContain("gradlab lite build");
});
