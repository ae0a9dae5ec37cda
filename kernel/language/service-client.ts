// The kernel's side of the language service (service.ts), which runs in a worker of its own so that
// loading TypeScript never delays kernel start or a cell. Knows nothing of how the worker is made:
// the server kernel starts a Node worker thread (client.ts), GradLab Lite a Web Worker
// (lite/src/worker.ts), and both speak the same messages.
import type { NotebookRequest } from "./service.ts";

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

/** A started worker hosting service.ts: it posts {id: -1} once loaded, then {id, result} per request. */
export interface ServicePort {
  post(m: { id: number } & NotebookRequest): void;
  onMessage(fn: (m: { id: number; result: unknown }) => void): void;
  onError(fn: (e: Error) => void): void;
  terminate(): Promise<unknown>;
}

const DECLARES =
  /^\s*(?:export\s+)?(?:declare\s+)?(?:const|let|var|function|async\s+function|class|abstract\s+class|interface|type|enum|namespace|module|import)\b/m;

export class LanguageClient {
  private worker: ServicePort | null = null;
  private seq = 0;
  private pending = new Map<number, (v: any) => void>();
  private cells: string[] = [];
  /** TypeScript is loaded in the worker and answering */
  loaded = false;
  /** whenLoaded()'s callers, told when the worker says it is loaded */
  private waiters = new Set<() => void>();

  /** `start` makes the worker, given the recent cells (for a worker restarted after a failure);
   *  a request unanswered after `timeoutMs` gets null. */
  constructor(
    private readonly start: (cells: string[]) => ServicePort,
    private readonly timeoutMs: number,
  ) {}

  private ensure(): ServicePort {
    if (this.worker) return this.worker;
    const w = this.start(this.cells);
    w.onMessage((m) => {
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
    w.onError(() => {
      for (const r of this.pending.values()) r(null);
      this.pending.clear();
      this.worker = null;
      this.loaded = false;
    });
    return (this.worker = w);
  }

  private call<T>(m: NotebookRequest): Promise<T | null> {
    const w = this.ensure();
    const id = ++this.seq;
    return new Promise<T | null>((resolve) => {
      const t = setTimeout(() => {
        this.pending.delete(id);
        resolve(null);
      }, this.timeoutMs);
      this.pending.set(id, (v) => {
        clearTimeout(t);
        resolve(v);
      });
      w.post({ id, ...m });
    });
  }

  /** Remember a cell that ran, so later completions know its declarations. */
  addCell(code: string): void {
    // for a restarted worker: the recent cells (the worker keeps its own bounded window, see service.ts)
    this.cells.push(code);
    while (this.cells.length > 1 && this.cells.reduce((n, c) => n + c.length, 0) > 256 * 1024) this.cells.shift();
    this.worker?.post({ id: 0, op: "addCell", code });
  }

  /** Forget every cell: what a fresh notebook's first cell is checked against. */
  forget(): void {
    this.cells.length = 0;
    this.worker?.post({ id: 0, op: "forget" });
  }

  /** A cell ran without an error: later cells see its declarations (a cell that declares nothing
   *  adds nothing to check). */
  cellRan(code: string): void {
    if (DECLARES.test(code)) this.addCell(code);
  }

  complete(code: string, cursor: number) {
    return this.call<TsCompletion>({ op: "complete", code, cursor });
  }
  inspect(code: string, cursor: number) {
    return this.call<TsInspection>({ op: "inspect", code, cursor });
  }
  diagnostics(code: string) {
    return this.call<TsDiagnostic[]>({ op: "diagnostics", code });
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
