// Main-thread side of the language service. The TypeScript compiler is loaded in a worker thread the
// first time it is needed, so it never delays kernel start or a cell.
import type { Worker } from "node:worker_threads";
import { startWorker } from "../sockets/ts-worker.ts";
import { log } from "../log.ts";

interface TsCompletion {
  entries: { name: string; kind: string }[];
}
interface TsInspection {
  signature: string;
  docs: string;
}
export interface TsDiagnostic {
  line: number;
  col: number;
  code: number;
  text: string;
}

const TIMEOUT_MS = Number(process.env.GRADLAB_LS_TIMEOUT_MS ?? 10_000);
const HEAP_MB = Number(process.env.GRADLAB_LS_HEAP_MB ?? 192);

class LanguageClient {
  private worker: Worker | null = null;
  private seq = 0;
  private pending = new Map<number, (v: any) => void>();
  private cells: string[] = [];
  /** TypeScript is loaded in the worker and answering */
  loaded = false;
  /** whenLoaded()'s callers, told when the worker says it is loaded */
  private waiters = new Set<() => void>();

  private ensure(): Worker {
    if (this.worker) return this.worker;
    // A bounded heap: TypeScript makes a new program for every request, and V8 grows a worker's heap
    // lazily (measured: +230 MB RSS over 300 checked cells, none of it live); near the limit it collects.
    const w = startWorker("service-worker", { workerData: { cells: this.cells }, resourceLimits: { maxOldGenerationSizeMb: HEAP_MB } });
    w.unref();
    w.on("message", (m: { id: number; result: unknown }) => {
      if (m.id === -1) {
        this.loaded = true;
        for (const w of this.waiters) w();
        this.waiters.clear();
        return;
      }
      const r = this.pending.get(m.id);
      this.pending.delete(m.id);
      r?.(m.result);
    });
    w.on("error", (e: Error) => {
      log(`language service failed: ${e.stack ?? e}`);
      for (const r of this.pending.values()) r(null);
      this.pending.clear();
      this.worker = null;
      this.loaded = false;
    });
    return (this.worker = w);
  }

  private call<T>(op: string, args: object): Promise<T | null> {
    const w = this.ensure();
    const id = ++this.seq;
    return new Promise<T | null>((resolve) => {
      const t = setTimeout(() => {
        this.pending.delete(id);
        resolve(null);
      }, TIMEOUT_MS);
      this.pending.set(id, (v) => {
        clearTimeout(t);
        resolve(v);
      });
      w.postMessage({ id, op, ...args });
    });
  }

  /** Remember a cell that ran, so later completions know its declarations. */
  addCell(code: string): void {
    // for a restarted worker: the recent cells (the worker keeps its own bounded window, see service-worker.ts)
    this.cells.push(code);
    while (this.cells.length > 1 && this.cells.reduce((n, c) => n + c.length, 0) > 256 * 1024) this.cells.shift();
    this.worker?.postMessage({ id: 0, op: "addCell", code });
  }

  complete(code: string, cursor: number) {
    return this.call<TsCompletion>("complete", { code, cursor });
  }
  inspect(code: string, cursor: number) {
    return this.call<TsInspection>("inspect", { code, cursor });
  }
  diagnostics(code: string) {
    return this.call<TsDiagnostic[]>("diagnostics", { code });
  }
  /** Start loading TypeScript in the background. */
  warm(): void {
    this.ensure();
  }

  /** True as soon as TypeScript is loaded and the notebook compiled (starting the worker if needed), or
   *  false after `ms`: for a request that has something else to answer with meanwhile. */
  whenLoaded(ms: number): Promise<boolean> {
    this.ensure();
    if (this.loaded) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(t);
        resolve(true);
      };
      const t = setTimeout(() => {
        this.waiters.delete(done);
        resolve(false);
      }, ms);
      this.waiters.add(done);
    });
  }

  /** Ends the worker thread (at shutdown): a worker still running when the process exits is torn
   *  down by the exit path itself, concurrently with the rest of the process's teardown, and that is
   *  where the kernel's rare aborts at exit were caught (a core dump: glibc's "free(): corrupted
   *  unsorted chunks" in a worker isolate's deinit, called from process.exit's join of sub-workers). */
  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    this.loaded = false;
    if (w) await w.terminate();
  }
}

let client: LanguageClient | null = null;
export function languageService(): LanguageClient {
  return (client ??= new LanguageClient());
}
