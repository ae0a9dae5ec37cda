// Worker threads do not inherit the tsx loader registered by `--import`: register it in the worker
// first, then import the TypeScript entry.
import { Worker, type WorkerOptions } from "node:worker_threads";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
// the ESM build of tsx's API (require.resolve would pick the CommonJS one)
const tsxApi = pathToFileURL(join(dirname(require.resolve("tsx/package.json")), "dist/esm/api/index.mjs")).href;

export function startTsWorker(entry: URL, options: WorkerOptions = {}): Worker {
  const src = `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(src, { ...options, eval: true });
}
