// One cell's run, from the executor's begin() to its end(): the code, its display.on_cell_end
// callbacks, the displays it started, and its value's display bundle. The server kernel's
// execute_request (handlers/execute.ts) and GradLab Lite's Worker (lite/src/worker.ts) run cells with
// it; they differ only in how they publish, reply and remember.
import { toBundle, type Bundle } from "../display/bundle.ts";
import type { DisplayHost } from "../display/globals.ts";
import { errorContent, type ErrorContent } from "./errors.ts";
import type { Executor } from "./executor.ts";
import type { CellContext, OutputCapture } from "./output.ts";

export interface CellHost extends Pick<DisplayHost, "cellEndHooks" | "pendingDisplays"> {
  readonly executor: Executor;
  readonly capture: OutputCapture;
}

export interface CellRun {
  code: string;
  /** the cell's name in tracebacks: `Cell [n]` */
  label: string;
  ctx: CellContext;
  /** a silent cell's value is not shown */
  silent: boolean;
  /** the request's date (µs) and session hash: what the executor seeds the cell's randomness from */
  requestedUs?: number;
  sessionHash?: number;
  /** called once the cell's displays are published, before its value is */
  afterDisplays?: () => Promise<void>;
  /** publishes the cell's value (execute_result) */
  result(b: Bundle): void;
  /** replies, with the cell's error or null; called before the executor ends the cell */
  finish(error: ErrorContent | null): Promise<void> | void;
}

export async function runCell(host: CellHost, r: CellRun): Promise<void> {
  host.executor.begin(r.requestedUs, r.sessionHash);
  host.cellEndHooks = [];
  host.pendingDisplays = [];
  let interrupted = false;
  try {
    let outcome = await host.executor.run(r.code, r.label, r.ctx);
    runCellEndHooks(host, r.ctx);
    try {
      await publishedDisplays(host);
    } catch (e) {
      if (outcome.status === "ok") outcome = { status: "error", error: errorContent(e), interrupted: true }; // interrupted while waiting
    }
    await r.afterDisplays?.();
    let error: ErrorContent | null = outcome.status === "error" ? outcome.error : null;
    if (outcome.status === "ok" && outcome.hasValue && !r.silent) {
      try {
        r.result(await host.executor.guard(toBundle(outcome.value)));
      } catch (e) {
        error = errorContent(e); // the value's display method threw or was interrupted
      }
    }
    interrupted = error?.ename === "KeyboardInterrupt";
    await r.finish(error);
  } finally {
    host.executor.end(interrupted);
  }
}

/** Waits (interruptibly) until every display the cell started is published, including those started
 *  by on_cell_end hooks or by displays that finished meanwhile; a display that failed is the display
 *  promise's own error (the cell may have awaited it), not the cell's. */
async function publishedDisplays(host: CellHost): Promise<void> {
  while (host.pendingDisplays.length) {
    const pending = host.pendingDisplays;
    host.pendingDisplays = [];
    await host.executor.guard(Promise.allSettled(pending));
  }
}

/** display.on_cell_end callbacks, in the cell's output context; an error in one goes to stderr. */
function runCellEndHooks(host: CellHost, ctx: CellContext): void {
  const hooks = host.cellEndHooks;
  host.cellEndHooks = [];
  for (const fn of hooks) {
    host.capture.als.run(ctx, () => {
      try {
        fn();
      } catch (e) {
        host.capture.write("stderr", `Error in display.on_cell_end callback: ${errorContent(e).traceback.join("\n")}\n`);
      }
    });
  }
}
