// How cells' bare imports resolve (kernel/executor/modules.ts): in process, against package layouts
// written to a temporary directory; no kernel, no Python.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolvePackage } from "../../kernel/executor/modules.ts";

let root: string;
let nb: string;
const pkg = (name: string, json: object, files: string[] = []) => {
  const dir = join(root, "node_modules", name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, ...json }));
  for (const f of files) {
    mkdirSync(join(dir, f, ".."), { recursive: true });
    writeFileSync(join(dir, f), "export default 1;\n");
  }
  return dir;
};

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "gradlab-modules-"));
  nb = join(root, "course", "week1"); // packages are found in node_modules above the notebook
  mkdirSync(nb, { recursive: true });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("packages with an exports map resolve as Node's import does", () => {
  test("an ESM-only package (import condition only)", () => {
    const dir = pkg("esm-only", { type: "module", exports: { ".": { import: "./index.js" } } }, ["index.js"]);
    expect(resolvePackage("esm-only", nb)).toBe(join(dir, "index.js"));
  });

  test("a dual package gets its import build, not its require build", () => {
    const dir = pkg("dual", { exports: { ".": { require: "./cjs/index.cjs", import: "./esm/index.mjs" } } }, ["cjs/index.cjs", "esm/index.mjs"]);
    expect(resolvePackage("dual", nb)).toBe(join(dir, "esm/index.mjs"));
  });

  test("conditions are taken in the map's own order, and a browser-only branch is skipped", () => {
    const dir = pkg("ordered", { exports: { browser: "./browser.js", node: { import: "./node.mjs", default: "./node.cjs" }, default: "./any.js" } }, [
      "node.mjs",
    ]);
    expect(resolvePackage("ordered", nb)).toBe(join(dir, "node.mjs"));
  });

  test("a string exports, subpaths and subpath patterns", () => {
    const a = pkg("plain-exports", { exports: "./main.js" }, ["main.js"]);
    expect(resolvePackage("plain-exports", nb)).toBe(join(a, "main.js"));
    const b = pkg("subpaths", { exports: { ".": "./index.js", "./utils": { import: "./lib/utils.mjs" }, "./features/*": "./src/features/*.js" } });
    expect(resolvePackage("subpaths/utils", nb)).toBe(join(b, "lib/utils.mjs"));
    expect(resolvePackage("subpaths/features/x", nb)).toBe(join(b, "src/features/x.js"));
  });

  test("a scoped package", () => {
    const dir = pkg("@scope/lib", { exports: { ".": { default: "./dist/index.js" }, "./extra": "./dist/extra.js" } });
    expect(resolvePackage("@scope/lib", nb)).toBe(join(dir, "dist/index.js"));
    expect(resolvePackage("@scope/lib/extra", nb)).toBe(join(dir, "dist/extra.js"));
  });

  test("a subpath the package does not export is an error that names it", () => {
    pkg("closed", { exports: { ".": "./index.js" } });
    expect(() => resolvePackage("closed/internal", nb)).toThrow(/closed\/internal|\.\/internal/);
  });
});

describe("packages without exports resolve as require does", () => {
  test("main, then index.js, and files by subpath", () => {
    const a = pkg("cjs-main", { main: "lib/main.js" }, ["lib/main.js"]);
    expect(resolvePackage("cjs-main", nb)).toBe(join(a, "lib/main.js"));
    const b = pkg("cjs-index", {}, ["index.js", "fp.js"]);
    expect(resolvePackage("cjs-index", nb)).toBe(join(b, "index.js"));
    expect(resolvePackage("cjs-index/fp", nb)).toBe(join(b, "fp.js"));
  });

  test("a package not installed above the notebook gives null (the kernel's own packages are tried next)", () => {
    expect(resolvePackage("no-such-package-here", nb)).toBeNull();
  });
});
