// Starting the kernel's worker threads. From the bundle, each worker is a bundled JavaScript file
// beside it. From TypeScript sources, workers do not inherit the tsx loader registered by `--import`:
// register it in the worker first, then import the TypeScript entry.
import { Worker, type WorkerOptions } from "node:worker_threads";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { dirname, join } from "node:path";
import { BUNDLED, REPO } from "../repo.ts";

const require = createRequire(join(REPO, "package.json"));
/** the ESM build of tsx's API (require.resolve would pick the CommonJS one) */
const TSX_DIR = dirname(require.resolve("tsx/package.json"));
export const TSX_API = pathToFileURL(join(TSX_DIR, "dist/esm/api/index.mjs")).href;
const TSX_CJS_API = pathToFileURL(join(TSX_DIR, "dist/cjs/api/index.mjs")).href;

export type WorkerName = "control-worker" | "service-worker";
const SOURCES: Record<WorkerName, string> = {
  "control-worker": "kernel/sockets/control-worker.ts",
  "service-worker": "kernel/language/service-worker.ts",
};

export function startWorker(name: WorkerName, options: WorkerOptions = {}): Worker {
  if (BUNDLED) return new Worker(new URL(`./${name}.js`, import.meta.url), options);
  const entry = pathToFileURL(join(REPO, SOURCES[name])).href;
  const src = `import(${JSON.stringify(TSX_API)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(src, { ...options, eval: true });
}

let tsx: Promise<void> | null = null;
/** Makes TypeScript importable in this thread (the bundle starts without tsx, to start fast), as
 *  `--import tsx` would: ESM hooks, and CommonJS hooks for .ts files outside "type": "module" packages. */
export function ensureTsx(): Promise<void> {
  if (!BUNDLED) return Promise.resolve();
  return (tsx ??= Promise.all([import(TSX_API), import(TSX_CJS_API)]).then((mods: { register: () => void }[]) => {
    for (const m of mods) m.register();
  }));
}
