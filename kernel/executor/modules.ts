// Resolving `import` in cells: npm packages and relative files against the notebook's directory,
// `node:` builtins, "gradlab" as the runtime this kernel belongs to, and "tslab" as tslab's display API.
import { builtinModules, createRequire } from "node:module";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { exports as resolveExports } from "resolve.exports";
import { RUNTIME_MODULE } from "../repo.ts";
import { ensureTsx } from "../sockets/ts-worker.ts";
import { tslabModule } from "../display/tslab.ts";

let tslab: ReturnType<typeof tslabModule> | undefined;

/** The runtime preloaded as `torch` (GRADLAB_RUNTIME overrides it, for tests). */
const RUNTIME_ENTRY = process.env.GRADLAB_RUNTIME ? resolve(process.env.GRADLAB_RUNTIME) : RUNTIME_MODULE;

const torchState: { promise?: Promise<unknown>; mod?: unknown; error?: unknown } = {};

/** Starts (once) and awaits the runtime import; never throws. */
export async function loadTorch(): Promise<void> {
  torchState.promise ??= importFile(RUNTIME_ENTRY).then(
    (m) => (torchState.mod = m),
    (e) => (torchState.error = e),
  );
  await torchState.promise;
}

/** Whether a cell's source may reach the runtime: it names `torch` or "gradlab", or something that
 *  reaches globals or modules by a computed name (globalThis, eval, Function, a constructor's
 *  constructor, import, require, process...). A cell that names none of these cannot get to the
 *  runtime, nor can a function an earlier cell declared without naming them, so it need not wait for
 *  the runtime's import and WebGPU device (the warm-up starts them at the first kernel_info_reply):
 *  after a restart, `1 + 1` answers at once (issue 22). A cell that does reach `torch` by a name built
 *  at run time before the import ended gets torchOrThrow's error, which says what to do. */
const MAY_REACH_RUNTIME =
  /torch|gradlab|global|eval|Function|constructor|Reflect|\bthis\b|import|require|process|getOwnProperty|\bwindow\b|\bself\b|\bmodule\b|\bvm\b/;

export function mayReachRuntime(source: string): boolean {
  return MAY_REACH_RUNTIME.test(source);
}

/** The runtime module once loaded, else null. */
export function loadedTorch(): unknown {
  return torchState.mod ?? null;
}

export function torchOrThrow(): unknown {
  if (torchState.mod) return torchState.mod;
  if (torchState.error) {
    const e = torchState.error as Error;
    throw new Error(`torch is unavailable: importing ${RUNTIME_ENTRY} failed: ${e?.message ?? e}`);
  }
  throw new Error("torch is unavailable: the runtime has not been loaded yet (run a cell that mentions torch)");
}

export async function importForCell(spec: string, baseDir: string): Promise<any> {
  if (spec === "gradlab") {
    await loadTorch();
    return torchOrThrow();
  }
  // tslab's notebooks import its display API; here it is built on this kernel's display()
  if (spec === "tslab") return (tslab ??= tslabModule());
  if (spec.startsWith("node:") || builtinModules.includes(spec)) return import(spec);
  if (spec.startsWith("./") || spec.startsWith("../") || spec.startsWith("/")) return importFile(resolve(baseDir, spec));
  if (/^[a-z]+:/.test(spec)) return import(spec);
  const path = resolvePackage(spec, baseDir);
  return path ? importFile(path) : import(spec); // not under the notebook: the kernel's own packages
}

/** Files Node imports by itself; anything else (`.ts`, `.mts`, `.tsx`, no extension, which tsx resolves
 *  to a `.ts` file, or `.json`, which tsx imports without an import attribute) goes through tsx,
 *  registered on first use so that the kernel starts without it. */
const PLAIN_JS = /\.[cm]?js$/;

function importFile(path: string): Promise<any> {
  const load = () => import(pathToFileURL(path).href);
  return PLAIN_JS.test(path) ? load() : ensureTsx().then(load);
}

/**
 * The file a bare specifier (`pkg`, `pkg/sub`, `@scope/pkg/sub`) names from `baseDir`, or null when no
 * `node_modules` above baseDir holds the package. A package with an `exports` map is resolved as Node's
 * `import` does (conditions "node", "import", "default", in the map's own order; a subpath it does not
 * export is an error naming it); one without is resolved as `require` would (main, index.js, files).
 */
export function resolvePackage(spec: string, baseDir: string): string | null {
  const parts = spec.split("/");
  const name = spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  for (let dir = resolve(baseDir); ; dir = dirname(dir)) {
    const pkgDir = join(dir, "node_modules", name);
    const pkgJson = join(pkgDir, "package.json");
    if (existsSync(pkgJson)) {
      const pkg = JSON.parse(readFileSync(pkgJson, "utf8"));
      if (pkg.exports == null) return createRequire(join(dir, "noop.js")).resolve(spec);
      const target = resolveExports(pkg, `.${spec.slice(name.length)}`)?.[0];
      if (!target) throw new Error(`Cannot resolve "${spec}": ${pkgJson} exports no match for it`);
      return join(pkgDir, target);
    }
    if (dirname(dir) === dir) return null;
  }
}
