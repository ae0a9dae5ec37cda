// Node's module customization hooks that kernel/register.ts registers (they run on Node's hooks thread):
// each ES module of the script's own, JavaScript or TypeScript, goes through transformModule. Left as they
// are: modules under node_modules, the runtime and kernel themselves (the package's src/, kernel/ and
// dist/: the runtime marks what it keeps on its own), CommonJS, and anything not a file.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CellSyntaxError, IRQ, RT, transformModule } from "./transform.ts";
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
  g[IRQ] ??= new Int32Array(1);
  g[RT] ??= { ...ownershipUntilLoaded(), interrupted: () => {} };
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
  // tsx prints a TypeScript module on one line: stripped here instead, it keeps a line per line, so that a
  // stack trace's line stays right after the transform's inserts (they shift columns only)
  const source = typescript ? await readFile(path, "utf8") : text(loaded.source);
  try {
    return { format: "module", source: transformModule(source, path, typescript), shortCircuit: true };
  } catch (e) {
    if (e instanceof CellSyntaxError) {
      const at = e.errors[0]?.location;
      throw new SyntaxError(`${e.message} (${path}${at ? `:${at.line}:${at.column + 1}` : ""})`);
    }
    throw e;
  }
}
