// Resolving `import` in cells: npm packages and relative files against the notebook's directory,
// `node:` builtins, and "gradlab" as the runtime in this repository.
import { builtinModules, createRequire } from "node:module";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { REPO } from "../repo.ts";
import { ensureTsx } from "../sockets/ts-worker.ts";

/** The runtime preloaded as `torch` (GRADLAB_RUNTIME overrides it, for tests). */
export const RUNTIME_ENTRY = process.env.GRADLAB_RUNTIME
  ? resolve(process.env.GRADLAB_RUNTIME)
  : join(REPO, "src", "index.ts");

let torchState: { promise?: Promise<unknown>; mod?: unknown; error?: unknown } = {};

/** Starts (once) and awaits the runtime import; never throws. */
export async function loadTorch(): Promise<void> {
  torchState.promise ??= ensureTsx().then(() => import(pathToFileURL(RUNTIME_ENTRY).href)).then(
    (m) => (torchState.mod = m),
    (e) => (torchState.error = e),
  );
  await torchState.promise;
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
  await ensureTsx(); // a package or file may be TypeScript
  if (spec === "gradlab") {
    await loadTorch();
    return torchOrThrow();
  }
  if (spec.startsWith("node:") || builtinModules.includes(spec)) return import(spec);
  if (spec.startsWith("./") || spec.startsWith("../") || spec.startsWith("/")) {
    return import(pathToFileURL(resolve(baseDir, spec)).href);
  }
  if (/^[a-z]+:/.test(spec)) return import(spec);
  const path = resolveBare(spec, baseDir);
  return import(path ? pathToFileURL(path).href : spec);
}

function resolveBare(spec: string, baseDir: string): string | null {
  try {
    return createRequire(join(baseDir, "noop.js")).resolve(spec);
  } catch {
    // ESM-only packages: read the "exports" map by hand
  }
  const parts = spec.split("/");
  const pkgName = spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  const sub = "." + spec.slice(pkgName.length);
  for (let dir = baseDir; ; dir = dirname(dir)) {
    const pkgDir = join(dir, "node_modules", pkgName);
    if (existsSync(join(pkgDir, "package.json"))) {
      const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
      const target = pickExport(pkg.exports, sub) ?? (sub === "." ? pkg.module ?? pkg.main ?? "index.js" : sub);
      return join(pkgDir, target);
    }
    if (dirname(dir) === dir) return null;
  }
}

function pickExport(exp: any, sub: string): string | null {
  if (exp == null) return null;
  if (typeof exp === "string") return sub === "." ? exp : null;
  const entry = Object.keys(exp).some((k) => k.startsWith(".")) ? exp[sub] : sub === "." ? exp : null;
  const cond = (e: any): string | null => {
    if (e == null) return null;
    if (typeof e === "string") return e;
    if (Array.isArray(e)) return e.map(cond).find((x) => x) ?? null;
    for (const k of ["node", "import", "module", "default"]) if (k in e) { const r = cond(e[k]); if (r) return r; }
    return null;
  };
  return cond(entry);
}
