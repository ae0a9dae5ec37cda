// The GradLab Lite kernel's Worker: the runtime (src/, built for the browser: navigator.gpu, inlined
// WGSL) and the server kernel's executor (cell transform, persistent globals, top-level await,
// statement temporaries, display MIME bundles), answering execute requests that the main thread
// (extension.ts) forwards by postMessage. Bundled by kernel/cli/lite.ts with Node's built-ins mapped to
// shims/ and kernel/executor/modules.ts to ./modules.ts.
import "./shims/process.ts";
import * as torch from "../../src/index.ts";
import { platform } from "../../src/platform/current.ts";
import { Executor } from "../../kernel/executor/executor.ts";
import { OutputCapture, type CellContext } from "../../kernel/executor/output.ts";
import { errorContent } from "../../kernel/executor/errors.ts";
import { installPromiseInspect, PROMISE_HINT, toBundle } from "../../kernel/display/bundle.ts";
import { installGlobals } from "../../kernel/display/globals.ts";
import { CommManager } from "../../kernel/comms.ts";
import { liveCompletions, liveInspect } from "../../kernel/language/live.ts";
import { format } from "./shims/inspect.ts";
import { initialize, prestrip } from "./shims/esbuild.ts";
import { fileRead, setNotebookDir } from "./modules.ts";
import type { FromWorker, ToWorker } from "./protocol.ts";

// The runtime's frames come first in a stack and are hidden from tracebacks; Chrome keeps 10 frames by
// default, which an error raised deep in an op (a matmul's shape check) fills before the cell's own.
Error.stackTraceLimit = 50;

const post = (m: FromWorker) => (self as unknown as Worker).postMessage(m);

let current: CellContext | null = null;
const capture = new OutputCapture((ctx, name, text) => post({ type: "iopub", msgType: "stream", content: { name, text }, parent: ctx.parent }));
capture.install();
// console writes through process.stdout / process.stderr, as in Node, so the capture sees it
const out =
  (name: "stdout" | "stderr") =>
  (...args: unknown[]) =>
    void (process as any)[name].write(`${format(...args)}\n`);
Object.assign(console, { log: out("stdout"), info: out("stdout"), debug: out("stdout"), warn: out("stderr"), error: out("stderr") });

// No SharedArrayBuffer without cross-origin isolation, which a plain static host does not give: the
// interrupt flag is this Worker's own memory, set between two awaits of the running cell.
const executor = new Executor(new Int32Array(1), new Int32Array(1), new Float64Array(2), new Int32Array(1), capture, "/");

const comms = new CommManager();
const host = {
  publish: (msgType: any, content: any, parent: object) => post({ type: "iopub", msgType, content, parent }),
  currentParent: () => current?.parent ?? {},
  prompt: () => null, // no synchronous stdin in a Worker
  comms,
  cellEndHooks: [] as (() => void)[],
  pendingDisplays: [] as Promise<unknown>[],
};
installGlobals(host);
// comm messages (widgets, the stepper) travel with their metadata and buffers, as the server kernel's do
comms.publisher = () => (type, content, metadata, buffers) =>
  post({ type: "iopub", msgType: type as "comm_msg", content, parent: host.currentParent(), metadata: metadata ?? {}, buffers: buffers ?? [] });
let hinted = -1;
installPromiseInspect(() => {
  if (!current || hinted === current.executionCount) return;
  hinted = current.executionCount;
  capture.write("stderr", PROMISE_HINT);
});
(globalThis as any).torch = torch;

/** Whether the browser gives a WebGPU adapter, and its name; said once, in the first cell's output. */
const gpuProbe: Promise<{ device: string | null; problem: string | null }> = (async () => {
  const adapter = await platform.requestAdapter("browser");
  if (!adapter) return { device: null, problem: platform.noAdapterHint() };
  const info = adapter.info;
  return { device: [info.vendor, info.architecture, info.description].filter(Boolean).join(" ") || "WebGPU adapter", problem: null };
})();
let toldProblem = false;

const ready = Promise.all([initialize(new URL("esbuild.wasm", self.location.href).href), gpuProbe]).then(([, gpu]) => post({ type: "ready", ...gpu }));

async function execute(m: Extract<ToWorker, { type: "execute" }>): Promise<void> {
  await ready;
  const ctx: CellContext = { parent: m.parent, identities: [], executionCount: m.count, allowStdin: false };
  current = ctx;
  const label = m.storeHistory ? `Cell [${m.count}]` : "Cell";
  const gpu = await gpuProbe;
  if (gpu.problem && !toldProblem) {
    toldProblem = true;
    post({ type: "iopub", msgType: "stream", content: { name: "stderr", text: `GradLab needs WebGPU. ${gpu.problem}\n` }, parent: m.parent });
  }
  executor.begin();
  host.cellEndHooks = [];
  host.pendingDisplays = [];
  let interrupted = false;
  try {
    await prestrip(m.code, label);
    let outcome = await executor.run(m.code, label, ctx);
    for (const fn of host.cellEndHooks.splice(0)) {
      try {
        fn();
      } catch (e) {
        capture.write("stderr", `Error in display.on_cell_end callback: ${errorContent(e).traceback.join("\n")}\n`);
      }
    }
    try {
      while (host.pendingDisplays.length) await executor.guard(Promise.allSettled(host.pendingDisplays.splice(0)));
    } catch (e) {
      if (outcome.status === "ok") outcome = { status: "error", error: errorContent(e), interrupted: true };
    }
    let error = outcome.status === "error" ? outcome.error : null;
    if (outcome.status === "ok" && outcome.hasValue && !m.silent) {
      try {
        const b = await executor.guard(toBundle(outcome.value));
        post({ type: "iopub", msgType: "execute_result", content: { execution_count: m.count, data: b.data, metadata: b.metadata }, parent: m.parent });
      } catch (e) {
        error = errorContent(e);
      }
    }
    interrupted = error?.ename === "KeyboardInterrupt";
    if (error && !m.silent) post({ type: "iopub", msgType: "error", content: error, parent: m.parent });
    post({ type: "reply", id: m.id, content: error ? { status: "error", ...error } : { status: "ok" } });
  } finally {
    executor.end(interrupted);
  }
}

// requests run one after another, as the server kernel's shell queue runs them
let queue: Promise<void> = Promise.resolve();
self.onmessage = (ev: MessageEvent<ToWorker>) => {
  const m = ev.data;
  if (m.type === "interrupt") executor.interrupt();
  // completion and inspection from live values (the server kernel's, without its TypeScript language
  // service, which is too large to load in a browser): answered at once, even while a cell awaits
  else if (m.type === "complete") post({ type: "completed", id: m.id, ...liveCompletions(m.code, m.cursor) });
  else if (m.type === "inspect") post({ type: "inspected", id: m.id, text: liveInspect(m.code, m.cursor)?.text ?? null });
  else if (m.type === "location") setNotebookDir(m.dir);
  else if (m.type === "file") fileRead(m);
  // from the page's widget manager: handled at once, as the server kernel's control of comms is
  else if (m.type === "comm") {
    if (m.msgType === "comm_open") {
      if (!comms.open(m.content, m.metadata, m.buffers)) comms.publisher()("comm_close", { comm_id: m.content.comm_id, data: {} });
    } else if (m.msgType === "comm_msg") comms.msg(m.content, m.metadata, m.buffers);
    else comms.close(m.content);
  } else queue = queue.then(() => execute(m)).catch((e) => console.error(e));
};
// an error thrown by a timer or a forgotten promise shows in the cell that runs now
self.addEventListener("unhandledrejection", (ev) => {
  ev.preventDefault();
  capture.write("stderr", `Unhandled promise rejection: ${errorContent(ev.reason).traceback.join("\n")}\n`);
});
