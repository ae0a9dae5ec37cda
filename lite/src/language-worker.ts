// GradLab Lite's language Worker: the server kernel's language service (kernel/language/service.ts),
// with TypeScript bundled in and the files it reads from typings.json, which `gradlab lite build`
// collects from the files the service reads in Node (TypeScript's lib files and the runtime's .d.ts):
// nothing is requested from another origin. Spoken to by the kernel's Worker (worker.ts) through
// kernel/language/service-client.ts, as the server kernel speaks to its worker thread.
import * as ts from "typescript";
import { notebookService, typingsFiles, type NotebookRequest, type Typings } from "../../kernel/language/service.ts";

const service = (async () => {
  const res = await fetch(new URL("typings.json", self.location.href));
  if (!res.ok) throw new Error(`typings.json answered ${res.status}`);
  return notebookService(ts, typingsFiles((await res.json()) as Typings));
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
