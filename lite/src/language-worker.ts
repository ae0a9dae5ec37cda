// GradLab Lite's language Worker: the server kernel's language service (kernel/language/service.ts),
// with TypeScript bundled in and the files it reads from typings.json, which `gradlab lite build`
// collects from the files the service reads in Node (TypeScript's lib files and the runtime's .d.ts):
// nothing is requested from another origin. Spoken to by the kernel's Worker (worker.ts) through
// kernel/language/service-client.ts, as the server kernel speaks to its worker thread.
import * as ts from "typescript";
import { notebookService, type NotebookFiles, type NotebookRequest } from "../../kernel/language/service.ts";

/** typings.json, as kernel/cli/lite.ts writes it: paths relative to the checkout the site was built from */
interface Typings {
  runtimeModule: string;
  defaultLib: string;
  files: Record<string, string>;
}

/** Where the checkout's files sit in the service's virtual file system. */
const ROOT = "/gradlab";

const service = (async () => {
  const res = await fetch(new URL("typings.json", self.location.href));
  if (!res.ok) throw new Error(`typings.json answered ${res.status}`);
  const typings = (await res.json()) as Typings;
  const files = new Map(Object.entries(typings.files).map(([p, text]) => [`${ROOT}/${p}`, text]));
  const dirs = new Set<string>();
  for (const p of files.keys()) for (let d = p.slice(0, p.lastIndexOf("/")); d; d = d.slice(0, d.lastIndexOf("/"))) dirs.add(d);
  const notebook: NotebookFiles = {
    baseDir: ROOT,
    runtimeModule: `${ROOT}/${typings.runtimeModule}`,
    readFile: (p) => files.get(p),
    fileExists: (p) => files.has(p),
    directoryExists: (p) => dirs.has(p.replace(/\/$/, "")),
    getDirectories: () => [],
    defaultLibFileName: () => `${ROOT}/${typings.defaultLib}`,
    // no @types/node: there is no Node in a browser
    types: [],
    typeRoots: [],
    historyBytes: 64 * 1024,
  };
  return notebookService(ts, notebook);
})();

const post = (m: { id: number; result?: unknown }) => (self as unknown as Worker).postMessage(m);
service.then(
  () => post({ id: -1 }), // loaded and the notebook compiled, so the first request is fast
  (e) =>
    // thrown from a timer, so that the kernel's Worker gets it as this Worker's error event (a
    // rejected promise would only be logged) and answers from live values
    setTimeout(() => {
      throw e;
    }),
);

// requests are answered in the order they came, those sent while loading once loaded
self.onmessage = async (ev: MessageEvent<{ id: number } & NotebookRequest>) => {
  const m = ev.data;
  const result = (await service).handle(m);
  if (m.id) post({ id: m.id, result });
};
