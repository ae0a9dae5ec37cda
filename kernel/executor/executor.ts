// Runs transformed cells in the main realm: persistent globals, top-level await, interrupts
// (loop polling + vm breakOnSigint + racing pending awaits), output attributed to the cell.
import { runInThisContext } from "node:vm";
import { transformCell, CellSyntaxError, IRQ, LAST, RT } from "./transform.ts";
import { errorContent, InterruptError, registerCell, syntaxErrorContent, type ErrorContent } from "./errors.ts";
import { importForCell, loadTorch, torchOrThrow } from "./modules.ts";
import type { CellContext, OutputCapture } from "./output.ts";

export type Outcome =
  | { status: "ok"; value: unknown; hasValue: boolean }
  | { status: "error"; error: ErrorContent; interrupted: boolean };

export class Executor {
  private fileCounter = 0;
  private rejectRunning: ((e: unknown) => void) | null = null;

  constructor(
    private readonly irq: Int32Array,
    private readonly capture: OutputCapture,
    private readonly baseDir: string,
  ) {
    const g = globalThis as any;
    g[IRQ] = irq;
    g[LAST] = undefined;
    g[RT] = {
      import: (spec: string) => importForCell(spec, this.baseDir),
      defaultExport: (m: any) => (m && "default" in m ? m.default : m),
      namedExport: (m: any, name: string) => {
        if (m && name in m) return m[name];
        const d = m?.default;
        return d != null && (typeof d === "object" || typeof d === "function") ? d[name] : undefined;
      },
      interrupted: () => {
        throw new InterruptError();
      },
    };
    Object.defineProperty(g, "torch", {
      configurable: true,
      enumerable: false,
      get: torchOrThrow,
      set(v) {
        Object.defineProperty(g, "torch", { value: v, writable: true, configurable: true, enumerable: false });
      },
    });
  }

  /** Called from the socket thread's message or SIGINT: stop the running cell, keep state. */
  interrupt(): void {
    Atomics.store(this.irq, 0, 1);
    this.rejectRunning?.(new InterruptError());
  }

  /** Awaits work a cell left behind (e.g. an async display method), still interruptible. */
  async guard<T>(work: T | Promise<T>): Promise<T> {
    if (!(work instanceof Promise)) return work;
    const interrupted = new Promise<never>((_, reject) => (this.rejectRunning = reject));
    interrupted.catch(() => {});
    try {
      return await Promise.race([work, interrupted]);
    } finally {
      this.rejectRunning = null;
    }
  }

  async run(source: string, label: string, ctx: CellContext, opts: { lastValue?: boolean } = {}): Promise<Outcome> {
    Atomics.store(this.irq, 0, 0);
    const filename = `gradlab-cell-${++this.fileCounter}.js`;
    let t;
    try {
      t = transformCell(source, label, opts);
    } catch (e) {
      if (e instanceof CellSyntaxError) return { status: "error", error: syntaxErrorContent(e.errors, label, source), interrupted: false };
      return { status: "error", error: errorContent(e), interrupted: false };
    }
    registerCell(filename, label, source, t.map, t.code);
    const g = globalThis as any;
    for (const n of t.names) if (!(n in g)) g[n] = undefined;
    await loadTorch();

    const interrupted = new Promise<never>((_, reject) => (this.rejectRunning = reject));
    interrupted.catch(() => {});
    this.capture.last = ctx;
    try {
      const value = await this.capture.als.run(ctx, () => {
        const p = runInThisContext(t.code, { filename, breakOnSigint: true, displayErrors: false }) as Promise<unknown>;
        return Promise.race([p, interrupted]);
      });
      return { status: "ok", value, hasValue: t.hasTopLevelValue && value !== undefined };
    } catch (e) {
      const isInterrupt = e instanceof InterruptError || /interrupted by `?SIGINT/i.test(String((e as Error)?.message));
      return { status: "error", error: errorContent(isInterrupt ? new InterruptError() : e), interrupted: isInterrupt };
    } finally {
      this.rejectRunning = null;
    }
  }
}
