// Runs transformed cells in the main realm: persistent globals, top-level await, interrupts, output
// attributed to the cell.
//
// Interrupts never terminate the thread: every loop body and function entry in a cell polls a shared
// flag (set by the socket thread) and throws KeyboardInterrupt, so `finally` blocks run and the
// runtime's modes and scopes unwind as they would for any error; a pending `await` is raced against
// the interrupt. Each execute request gets a number; an interrupt names the cell it was requested
// for, so one that arrives between cells, or lands late, never stops a later cell. Work a cell leaves
// behind when interrupted in an `await` can still hold runtime state (a `no_grad` callback that never
// resumes, say): the runtime's state from before the cell is put back after an interrupted cell.
import { runInThisContext } from "node:vm";
import { transformCell, CellSyntaxError, IRQ, LAST, RT } from "./transform.ts";
import { errorContent, installUserStackFormatter, InterruptError, registerCell, syntaxErrorContent, type ErrorContent } from "./errors.ts";
import { importForCell, loadTorch, torchOrThrow, loadedTorch, mayReachRuntime } from "./modules.ts";
import { saveRuntimeState, type RestoreRuntimeState } from "./runtime-state.ts";
import { bindOwnership, ownershipUntilLoaded } from "./ownership.ts";
import type { CellContext, OutputCapture } from "./output.ts";

export type Outcome = { status: "ok"; value: unknown; hasValue: boolean } | { status: "error"; error: ErrorContent; interrupted: boolean };

export class Executor {
  private fileCounter = 0;
  private cellCounter = 0;
  /** number of the cell running now (0: none) */
  private current = 0;
  private restore: RestoreRuntimeState | null = null;
  private rejectRunning: ((e: unknown) => void) | null = null;

  constructor(
    private readonly irq: Int32Array,
    private readonly cellNo: Int32Array,
    private readonly cellTimes: Float64Array,
    private readonly cellSession: Int32Array,
    private readonly capture: OutputCapture,
    private readonly baseDir: string,
  ) {
    const g = globalThis as any;
    installUserStackFormatter();
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
      ...ownershipUntilLoaded(),
      /** a loop or function entry saw the flag set */
      interrupted: () => {
        const v = Atomics.load(this.irq, 0);
        if (v !== 0 && v === this.current) throw new InterruptError();
        Atomics.compareExchange(this.irq, 0, v, 0); // stale: for a cell that has ended
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

  /** Starts an execute request: interrupts from now until end() stop it. Returns its number. */
  begin(requestedUs = NaN, sessionHash = 0): number {
    this.cellCounter = this.cellCounter >= 0x7fffffff ? 1 : this.cellCounter + 1;
    this.current = this.cellCounter;
    this.restore = null;
    Atomics.store(this.irq, 0, 0);
    this.cellTimes[0] = requestedUs;
    this.cellTimes[1] = Date.now() * 1000;
    Atomics.store(this.cellSession, 0, sessionHash);
    Atomics.store(this.cellNo, 0, this.current);
    return this.current;
  }

  /** Ends the request; after an interrupt, puts the runtime's state back as it was before the cell. */
  end(interrupted: boolean): void {
    Atomics.store(this.cellNo, 0, 0);
    Atomics.store(this.irq, 0, 0);
    this.current = 0;
    this.rejectRunning = null;
    const restore = this.restore;
    this.restore = null;
    if (interrupted && restore) {
      try {
        restore();
      } catch {
        // the runtime refused: nothing better to do than carry on
      }
    }
  }

  /** True once an interrupt was requested for the running request. */
  get interruptRequested(): boolean {
    return this.current !== 0 && Atomics.load(this.irq, 0) === this.current;
  }

  /** Called for interrupt_request (from the socket thread) or SIGINT: stops the running request
   *  `cell` (default: whichever runs now); dropped when that request is no longer running. */
  interrupt(cell = this.current): void {
    if (cell === 0 || cell !== this.current) return;
    Atomics.store(this.irq, 0, cell);
    this.rejectRunning?.(new InterruptError());
  }

  /** Awaits work a cell left behind (e.g. an async display method), still interruptible. */
  async guard<T>(work: T | Promise<T>): Promise<T> {
    if (!(work instanceof Promise)) return work;
    if (this.interruptRequested) throw new InterruptError();
    const interrupted = new Promise<never>((_, reject) => (this.rejectRunning = reject));
    interrupted.catch(() => {});
    try {
      return await Promise.race([work, interrupted]);
    } finally {
      this.rejectRunning = null;
    }
  }

  async run(source: string, label: string, ctx: CellContext, opts: { lastValue?: boolean } = {}): Promise<Outcome> {
    const filename = `gradlab-cell-${++this.fileCounter}.js`;
    let t: ReturnType<typeof transformCell>;
    try {
      t = transformCell(source, label, opts);
    } catch (e) {
      if (e instanceof CellSyntaxError) return { status: "error", error: syntaxErrorContent(e.errors, label, source), interrupted: false };
      return { status: "error", error: errorContent(e), interrupted: false };
    }
    registerCell(filename, label, source, t.map, t.code, t.jsPosition);
    const g = globalThis as any;
    for (const n of t.names) if (!(n in g)) g[n] = undefined;
    const cell = this.current;
    try {
      // only a cell that can reach the runtime waits for it (and starts its import if the warm-up has not)
      if (mayReachRuntime(source)) await this.guard(loadTorch());
    } catch (e) {
      return { status: "error", error: errorContent(e), interrupted: true };
    }
    if (cell !== 0 && this.current === cell && !this.restore) this.restore = saveRuntimeState(loadedTorch());
    bindOwnership(g[RT], loadedTorch());

    const interrupted = new Promise<never>((_, reject) => (this.rejectRunning = reject));
    interrupted.catch(() => {});
    this.capture.last = ctx;
    try {
      if (this.interruptRequested) throw new InterruptError();
      const value = await this.capture.als.run(ctx, () => {
        const p = runInThisContext(t.code, { filename, displayErrors: false }) as Promise<unknown>;
        return Promise.race([p, interrupted]);
      });
      // the kernel shows the cell's value and may keep it: it is no longer the cell's alone
      g[RT].e(value);
      return { status: "ok", value, hasValue: t.hasTopLevelValue && value !== undefined };
    } catch (e) {
      const isInterrupt = e instanceof InterruptError || (this.interruptRequested && wrapsInterrupt(e));
      return { status: "error", error: errorContent(isInterrupt ? new InterruptError() : e), interrupted: isInterrupt };
    } finally {
      this.rejectRunning = null;
    }
  }
}

/** An interrupt thrown deep in a callback may surface wrapped (e.g. as a cause); treat those as interrupts. */
function wrapsInterrupt(e: unknown): boolean {
  return (e as { cause?: unknown })?.cause instanceof InterruptError || (e as Error)?.name === "KeyboardInterrupt";
}
