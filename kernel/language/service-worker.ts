// Worker thread hosting the server kernel's language service (service.ts) over Node's file system:
// the runtime's typings beside the kernel, TypeScript's lib files and @types/node from node_modules.
import { parentPort, workerData } from "node:worker_threads";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import type * as TS from "typescript";
import { REPO, RUNTIME_MODULE } from "../repo.ts";
import { notebookService, type NotebookFiles } from "./service.ts";

// Loaded with require, not `import ts from "typescript"`: an ESM import of the 9 MB CommonJS file makes
// Node scan it for named exports first (measured: 0.75-0.82 s of CPU at every kernel start, against
// 0.23-0.24 s for require), and the service starts with every kernel.
const ts: typeof TS = createRequire(import.meta.url)("typescript");

/** Where npm put @types/node: the checkout's node_modules, or the one an installed gradlab sits in. */
function typesDir(): string {
  try {
    return dirname(dirname(createRequire(join(REPO, "package.json")).resolve("@types/node/package.json")));
  } catch {
    return join(REPO, "node_modules/@types"); // not installed: cells then see no Node types
  }
}

const files: NotebookFiles = {
  baseDir: process.cwd(),
  runtimeModule: RUNTIME_MODULE,
  readFile: (f) => ts.sys.readFile(f),
  fileExists: (f) => ts.sys.fileExists(f),
  directoryExists: ts.sys.directoryExists,
  getDirectories: ts.sys.getDirectories,
  readDirectory: ts.sys.readDirectory,
  defaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  types: ["node"],
  typeRoots: [typesDir()],
  historyBytes: Number(process.env.GRADLAB_LS_HISTORY_BYTES ?? 64 * 1024),
};

const service = notebookService(ts, files, (workerData?.cells as string[]) ?? []);
parentPort!.postMessage({ id: -1 }); // loaded and the notebook compiled, so the first request is fast
parentPort!.on("message", (m) => {
  const result = service.handle(m);
  if (m.id) parentPort!.postMessage({ id: m.id, result });
});
