// Node's module customization hooks that kernel/register.ts registers (they run on Node's hooks thread):
// each ES module of the script's own, JavaScript or TypeScript, goes through transformModule. Left as they
// are: modules under node_modules, the runtime and kernel themselves (the package's src/, kernel/ and
// dist/: the runtime marks what it keeps on its own), CommonJS (with a warning), and anything not a file.
import { dirname, join, resolve as resolvePath } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync, type BuildFailure } from "esbuild";
import { RT, transformModule } from "./transform.ts";
import { withSourceMap } from "./source-map.ts";
import { ownershipUntilLoaded } from "./ownership.ts";

type Loaded = { format?: string | null; source?: string | ArrayBuffer | ArrayBufferView | null; shortCircuit?: boolean };
type NextLoad = (url: string, context: object) => Promise<Loaded>;

let skipped: string[] = [];
let runtime = "";
export function initialize(data: { root: string; runtime: string }): void {
  skipped = ["src", "kernel", "dist", "lite"].map((d) => join(data.root, d, "/"));
  runtime = data.runtime;
  // hooks that a script registers after these are loaded through them on this thread, which has no
  // runtime: their marks do nothing here (what register.ts sets up before any tensor exists)
  const g = globalThis as Record<string, unknown>;
  g[RT] ??= ownershipUntilLoaded();
}

type NextResolve = (specifier: string, context: object) => Promise<{ url: string }>;
/** `import "gradlab"` gives the runtime register.ts bound the marks to: one instance, whichever copy of the
 *  package the script's directory would resolve (another copy's tensors would take no marks). */
export async function resolve(specifier: string, context: object, nextResolve: NextResolve): Promise<{ url: string; shortCircuit?: boolean }> {
  return specifier === "gradlab" ? { url: runtime, shortCircuit: true } : nextResolve(specifier, context);
}

const TYPESCRIPT = /\.m?ts$/;
const text = (s: Loaded["source"]) => (typeof s === "string" ? s : Buffer.from(s as ArrayBuffer).toString("utf8"));

export async function load(url: string, context: object, nextLoad: NextLoad): Promise<Loaded> {
  if (!url.startsWith("file:") || url.includes("/node_modules/")) return nextLoad(url, context);
  const path = fileURLToPath(url);
  if (skipped.some((d) => path.startsWith(d)) || !/\.m?[jt]s$/.test(path)) return nextLoad(url, context);
  const typescript = TYPESCRIPT.test(path);
  let loaded: Loaded;
  try {
    loaded = await nextLoad(url, context);
  } catch (e) {
    // Node 20 without a TypeScript loader knows no .ts, and tsx's own syntax errors name a .mts file .ts:
    // the hooks strip the types themselves (and report a syntax error with the file's name)
    if (!typescript) throw e;
    loaded = { format: "module" };
  }
  // (Node 22.6+ calls a TypeScript file's format "module-typescript" or "commonjs-typescript")
  if (loaded.format === "commonjs" || loaded.format === "commonjs-typescript") {
    // require() and module.exports cannot become a module's: say so, rather than run it as a plain script
    process.emitWarning(
      `${path} is loaded as CommonJS, which gradlab/register leaves as it is (its tensors are freed only by the collector): name it .mts or .mjs, or set "type": "module" in its package.json`,
      { code: "GRADLAB_REGISTER_COMMONJS" },
    );
    return loaded;
  }
  if (loaded.format !== "module" && loaded.format !== "module-typescript") return loaded;
  const js = typescript ? stripTypes(path) : text(loaded.source);
  try {
    const { out, copied } = transformModule(js);
    return { format: "module", source: withSourceMap(js, out, copied, path), shortCircuit: true };
  } catch (e) {
    // acorn's syntax error names a line and column of the file (TypeScript's were found by esbuild)
    const at = (e as { loc?: { line: number; column: number } }).loc;
    if (e instanceof SyntaxError && at) throw new SyntaxError(`${e.message.replace(/ \(\d+:\d+\)$/, "")} (${path}:${at.line}:${at.column + 1})`);
    throw e;
  }
}

/**
 * A TypeScript module as JavaScript for this Node, with the options of the tsconfig.json that governs it
 * (esbuild finds it, `extends` included, as tsc and tsx would: `useDefineForClassFields`, legacy
 * decorators), and its source map inline. tsx, where it is also registered, prints a module on one line;
 * this keeps a line per line, so that a stack trace's line stays right after the transform's inserts.
 */
function stripTypes(path: string): string {
  try {
    const out = buildSync({
      entryPoints: [path],
      bundle: false,
      write: false,
      format: "esm",
      platform: "node",
      target: `node${process.versions.node}`,
      sourcemap: "inline",
      outdir: dirname(path), // never written (write: false): the map names the file relative to it
      logLevel: "silent",
    });
    return out.outputFiles[0].text;
  } catch (e) {
    const first = (e as BuildFailure).errors?.[0];
    if (!first) throw e;
    const at = first.location;
    // esbuild names the file relative to the working directory
    throw new SyntaxError(`${first.text} (${at ? `${resolvePath(at.file)}:${at.line}:${at.column + 1}` : path})`);
  }
}
