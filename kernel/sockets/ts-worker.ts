// Starting the kernel's worker threads. In the built kernel each worker is a JavaScript file beside
// this module's directory. From TypeScript sources (the test suites), workers do not inherit a loader
// registered in the main thread: register tsx in the worker first, then import the TypeScript entry.
import { Worker, type WorkerOptions } from "node:worker_threads";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { dirname, join } from "node:path";
import { FROM_SOURCE, REPO } from "../repo.ts";

const require = createRequire(join(REPO, "package.json"));
/** the ESM build of tsx's API (require.resolve would pick the CommonJS one) */
const TSX_DIR = dirname(require.resolve("tsx/package.json"));
const TSX_API = pathToFileURL(join(TSX_DIR, "dist/esm/api/index.mjs")).href;
const TSX_CJS_API = pathToFileURL(join(TSX_DIR, "dist/cjs/api/index.mjs")).href;

export type WorkerName = "control-worker" | "service-worker";
/** each worker's entry, relative to this module's directory (kernel/sockets or dist/kernel/sockets) */
const ENTRIES: Record<WorkerName, string> = {
  "control-worker": "./control-worker",
  "service-worker": "../language/service-worker",
};

export function startWorker(name: WorkerName, options: WorkerOptions = {}): Worker {
  if (!FROM_SOURCE) return new Worker(new URL(`${ENTRIES[name]}.js`, import.meta.url), options);
  const entry = new URL(`${ENTRIES[name]}.ts`, import.meta.url).href;
  const src = `import(${JSON.stringify(TSX_API)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(src, { ...options, eval: true });
}

let tsx: Promise<void> | null = null;
/** Makes TypeScript importable in this thread, as `--import tsx` would: ESM hooks, and CommonJS hooks
 *  for .ts files outside "type": "module" packages. The built kernel starts without tsx (it costs
 *  ~0.6 s) and calls this only when a cell imports a TypeScript file. From sources, the test runner
 *  already compiles TypeScript. */
export function ensureTsx(): Promise<void> {
  if (FROM_SOURCE) return Promise.resolve();
  return (tsx ??= Promise.all([import(TSX_API), import(TSX_CJS_API)]).then((mods: { register: () => void }[]) => {
    for (const m of mods) m.register();
  }));
}
