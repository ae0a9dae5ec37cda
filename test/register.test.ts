// Plain scripts run with `node --import gradlab/register` (or `gradlab run SCRIPT.ts`) let go of tensors
// where a notebook cell does (kernel/register.ts): issue 20's op chain runs no full collection per op, a
// training loop's figures are PyTorch's (V8 no longer keeps a finished statement's temporary in a
// register), and what the script keeps stays usable. Each script runs in a Node of its own, from the
// sources (tsx, then register.ts), as `gradlab run` runs one from a checkout.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { transformSync } from "esbuild";
import { describe, expect, it, onTestFinished } from "vitest";
import * as torch from "../src/index.ts";
import { runCell } from "./helpers/cells.ts";

const ROOT = join(import.meta.dirname, "..");
const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const REGISTER = pathToFileURL(join(ROOT, "kernel", "register.ts")).href;

function node(args: string[], cwd = ROOT) {
  const r = spawnSync(process.execPath, ["--import", TSX, ...args], { cwd, encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" }, timeout: 120_000 });
  // Dawn's native warnings reach a pipe's stderr (a file's or a terminal's is spared: test/dawn-stderr.test.ts)
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.replace(/^Warning: \w+ artificially reduced .*\n/gm, "") };
}
/** Runs a script under the hooks; its last line of output, parsed. */
function registered(script: string): any {
  const r = node(["--import", REGISTER, script]);
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!);
}
const scratch = () => mkdtempSync(join(tmpdir(), "gradlab-register-"));

describe("a plain script with gradlab/register frees tensors as a cell does", () => {
  it("the op chain y = y.add(1) runs no full collection per op, with PyTorch's peak", () => {
    const r = registered("test/scripts/op-chain.ts");
    // without the hooks each add that would set a new peak runs one (1,000 in 1,000 ops)
    expect(r.collections).toBeLessThanOrEqual(1);
    expect(r).toMatchObject({ peak: 3 * 1024, allocated: 2 * 1024, first: 1001 });
  });

  it("the same chain as a plain script is told once, after its first collections, how to run without them", () => {
    const plain = node(["test/scripts/op-chain.ts"]);
    expect(plain.status).toBe(0);
    // a full collection per op, as before; the hint comes once, and names the cure
    expect(JSON.parse(plain.stdout.trim().split("\n").at(-1)!).collections).toBe(1000);
    const lines = plain.stderr.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^GradLabWarning: 20 full garbage collections \(\d+ ms\) have run to find the tensors this program no longer references/);
    expect(lines[0]).toContain("`npx gradlab run SCRIPT` or `node --import gradlab/register SCRIPT`");
  });

  it("the README's training loop prints PyTorch's figure at every step, and a cell's peak", async () => {
    const r = registered("test/scripts/training-loop.ts");
    // weight 256 KiB + bias 1 KiB and their grads, x and x.grad (128 KiB each), loss (512 B): model(x)
    // and its square died with their statement, as in Python (a plain script still counts model(x))
    expect(r.figures).toEqual(Array(8).fill(2 * (262144 + 1024) + 2 * 131072 + 512));
    const source = readFileSync(join(ROOT, "test/scripts/training-loop.ts"), "utf8")
      .replace(/^import .*$/m, "")
      .replace(
        "console.log(JSON.stringify({ figures, peak: torch.cuda.max_memory_allocated() - base }));",
        "cellPeak = torch.cuda.max_memory_allocated() - base;",
      );
    torch.cuda.reset_peak_memory_stats();
    await runCell(source, { torch });
    expect(r.peak).toBe((globalThis as { cellPeak?: number }).cellPeak);
  });

  it("a gradient taken before zero_grad, a destructured one and a stored activation stay readable", () => {
    // across two modules of the script's, with TypeScript's enums, interfaces and type-only imports
    expect(registered("test/scripts/kept.ts")).toEqual({ step: 1, grad: 256, bias: 32, h: 128 });
  });

  it("a syntax error names the file, line and column; a stack trace names the TypeScript lines", () => {
    const dir = scratch();
    writeFileSync(join(dir, "broken.mts"), "const a: number = 1;\nconst b: number = ;\n");
    const bad = node(["--import", REGISTER, join(dir, "broken.mts")]);
    expect(bad.status).toBe(1);
    // tsx, loaded first here, reports it (its column counts from 0); without tsx the hooks do (from 1)
    expect(bad.stderr).toContain(`Unexpected ";"`);
    expect(bad.stderr).toMatch(new RegExp(`${join(dir, "broken.mts")}:2:1[89]`));
    writeFileSync(
      join(dir, "throws.mts"),
      "interface P {\n  a: number;\n}\nconst p: P = { a: 1 };\nfunction f(x: number): number {\n  throw new Error(`boom ${x}`);\n}\nf(p.a);\n",
    );
    const thrown = node(["--import", REGISTER, join(dir, "throws.mts")]);
    expect(thrown.status).toBe(1);
    expect(thrown.stderr).toMatch(new RegExp(`at f \\(${join(dir, "throws.mts")}:6:\\d+\\)`));
  });

  it("a stack trace names the line and column of the script, after the transform's inserts on that line", () => {
    const dir = scratch();
    // the statements before the throw have temporaries the transform wraps on the same line
    const line = "const y = f(torch.ones(2).add(1)).mul(2);   const w = f(torch.ones(2).add(1)).mul((null as any).boom);";
    const ts = ['import * as torch from "gradlab";', "function f(a: torch.Tensor) { return a; }", line, "console.log(y, w);", ""].join("\n");
    writeFileSync(join(dir, "throws.mts"), ts);
    writeFileSync(join(dir, "throws.mjs"), ts.replace(": torch.Tensor", "").replace("(null as any)", "(null)"));
    // V8 names the property read: `boom`, column 97 of the TypeScript line and 90 of the JavaScript one
    for (const [file, column] of [
      ["throws.mts", 97],
      ["throws.mjs", 90],
    ] as const) {
      const r = node(["--import", REGISTER, join(dir, file)], dir);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain("Cannot read properties of null (reading 'boom')");
      expect(r.stderr).toContain(`(${join(dir, file)}:3:${column})`);
    }
    // a compiled module with its map in a file beside it (tsc's sourceMap): the trace names the TypeScript
    mkdirSync(join(dir, "src"));
    mkdirSync(join(dir, "out"));
    writeFileSync(join(dir, "src", "throws.ts"), ts);
    const built = transformSync(ts, { loader: "ts", format: "esm", sourcemap: "external", sourcefile: "../src/throws.ts" });
    writeFileSync(join(dir, "out", "throws.mjs"), `${built.code}//# sourceMappingURL=throws.mjs.map\n`);
    writeFileSync(join(dir, "out", "throws.mjs.map"), built.map);
    const compiled = node(["--import", REGISTER, join(dir, "out", "throws.mjs")], dir);
    expect(compiled.status).toBe(1);
    expect(compiled.stderr).toContain(`(${join(dir, "src", "throws.ts")}:3:97)`);
  });

  it("TypeScript is compiled as the tsconfig.json over the script says, and JSON import attributes stay", () => {
    const dir = scratch();
    // target ES2020: a declared field is no class field (useDefineForClassFields is false), as tsc and tsx do it
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { target: "ES2020", experimentalDecorators: true } }));
    writeFileSync(join(dir, "d.json"), '{ "n": 3 }');
    writeFileSync(
      join(dir, "main.mts"),
      [
        'import data from "./d.json" with { type: "json" };',
        "class Base { constructor() { this.init(); } init() {} }",
        "class Derived extends Base { value!: number; override init() { this.value = 42; } }",
        "console.log(new Derived().value, data.n);",
      ].join("\n"),
    );
    const r = node(["--import", REGISTER, join(dir, "main.mts")], dir);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("42 3\n");
  });

  it("a syntax error in a JavaScript module names the file, line and column", () => {
    const dir = scratch();
    writeFileSync(join(dir, "broken.mjs"), "const a = 1;\nconst b = ;\n");
    const r = node(["--import", REGISTER, join(dir, "broken.mjs")], dir);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`Unexpected token (${join(dir, "broken.mjs")}:2:11)`);
  });

  it("a tensor an importer hands out of another module's variable stays readable when that module rebinds it", () => {
    const dir = scratch();
    writeFileSync(join(dir, "package.json"), '{ "type": "module" }');
    writeFileSync(
      join(dir, "a.js"),
      'import * as torch from "gradlab";\nexport let w = torch.ones(2);\nexport function reset() { w = torch.zeros(2); }\nexport default w;\n',
    );
    writeFileSync(
      join(dir, "b.js"),
      'import first, { reset, w } from "./a.js";\nconst snaps = [0].map(() => w);\nreset();\nconsole.log(JSON.stringify([await snaps[0].tolist(), await first.tolist(), await w.tolist()]));\n',
    );
    const r = node(["--import", REGISTER, join(dir, "b.js")], dir);
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual([
      [1, 1],
      [1, 1],
      [0, 0],
    ]);
  });

  it("hooks a script registers after gradlab/register load through it and still run", () => {
    const dir = scratch();
    writeFileSync(
      join(dir, "hooks.mjs"),
      'export async function load(url, context, next) { const r = await next(url, context); return url.endsWith("main.mjs") ? { ...r, source: `${r.source}\\nconsole.log("hooked");` } : r; }\n',
    );
    writeFileSync(join(dir, "register-hooks.mjs"), 'import { register } from "node:module";\nregister("./hooks.mjs", import.meta.url);\n');
    writeFileSync(join(dir, "main.mjs"), 'const xs = [1, 2].map((v) => v * 2);\nconsole.log(xs.join(","));\n');
    const r = node(["--import", REGISTER, "--import", join(dir, "register-hooks.mjs"), join(dir, "main.mjs")], dir);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("2,4\nhooked\n");
  });

  it("a CommonJS script is left as it is, with a warning that says how to make it a module", () => {
    const dir = scratch();
    writeFileSync(join(dir, "old.ts"), 'const n: number = require("node:os").cpus().length;\nconsole.log(n > 0);\n');
    const r = node(["--import", REGISTER, join(dir, "old.ts")], dir);
    expect(r.stdout).toBe("true\n");
    expect(r.stderr).toMatch(/old\.ts is loaded as CommonJS, which gradlab\/register leaves as it is .*name it \.mts or \.mjs/);
  });

  it("gradlab run SCRIPT.ts passes on a SIGINT sent to it (not from a terminal) to the script", async () => {
    const dir = scratch();
    // the script says when its handler is in place, then waits; SIGINT ends it with status 7
    writeFileSync(
      join(dir, "wait.mts"),
      'process.on("SIGINT", () => { console.log("interrupted"); process.exit(7); });\nconsole.log("waiting");\nsetInterval(() => {}, 1000);\n',
    );
    // a process group of its own, so that whatever happens both processes are ended after the test
    const child = spawn(process.execPath, ["--import", TSX, join(ROOT, "kernel/cli/main.ts"), "run", join(dir, "wait.mts")], {
      cwd: dir,
      env: { ...process.env, NODE_OPTIONS: "" },
      detached: true,
    });
    onTestFinished(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {}
    });
    let out = "";
    const status = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes("waiting")) child.kill("SIGINT"); // to `gradlab run` only, as `kill -INT PID` does
    });
    expect(await status).toBe(7);
    expect(out).toBe("waiting\ninterrupted\n");
  }, 120_000);

  it("gradlab run SCRIPT.ts passes the arguments and gives the script's exit status", () => {
    const dir = scratch();
    writeFileSync(join(dir, "args.mts"), 'const args: string[] = process.argv.slice(2);\nconsole.log(args.join("|"));\nprocess.exitCode = 3;\n');
    const r = node([join(ROOT, "kernel/cli/main.ts"), "run", join(dir, "args.mts"), "a b", "--c"], dir);
    expect(r.stdout).toBe("a b|--c\n");
    expect(r.status).toBe(3);
  });
});
