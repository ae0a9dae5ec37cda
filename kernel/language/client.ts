// The server kernel's language service: service.ts in a Node worker thread, started the first time it
// is needed (service-client.ts speaks to it).
import { startWorker } from "../sockets/ts-worker.ts";
import { log } from "../log.ts";
import { LanguageClient, type ServicePort } from "./service-client.ts";

const TIMEOUT_MS = Number(process.env.GRADLAB_LS_TIMEOUT_MS ?? 10_000);
const HEAP_MB = Number(process.env.GRADLAB_LS_HEAP_MB ?? 192);

function nodeWorker(cells: string[]): ServicePort {
  // A bounded heap: TypeScript makes a new program for every request, and V8 grows a worker's heap
  // lazily (measured: +230 MB RSS over 300 checked cells, none of it live); near the limit it collects.
  const w = startWorker("service-worker", { workerData: { cells }, resourceLimits: { maxOldGenerationSizeMb: HEAP_MB } });
  w.unref();
  return {
    post: (m) => w.postMessage(m),
    onMessage: (fn) => void w.on("message", fn),
    onError: (fn) =>
      void w.on("error", (e: Error) => {
        log(`language service failed: ${e.stack ?? e}`);
        fn(e);
      }),
    terminate: () => w.terminate(),
  };
}

let client: LanguageClient | null = null;
export function languageService(): LanguageClient {
  return (client ??= new LanguageClient(nodeWorker, TIMEOUT_MS));
}
