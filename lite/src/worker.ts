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
import { waitForStdin } from "../../kernel/executor/stdin.ts";
import { installPromiseInspect, PROMISE_HINT } from "../../kernel/display/bundle.ts";
import { runCell } from "../../kernel/executor/cell.ts";
import { installGlobals } from "../../kernel/display/globals.ts";
import { CommManager } from "../../kernel/comms.ts";
import { completeAnswer, inspectAnswer } from "../../kernel/language/answers.ts";
import { LanguageClient } from "../../kernel/language/service-client.ts";
import { reportTypeErrors, typeCheck } from "../../kernel/language/type-warnings.ts";
import { format } from "./shims/inspect.ts";
import { initialize, prestrip } from "./shims/esbuild.ts";
import { fileRead, setNotebookDir, writeDriveFile } from "./modules.ts";
import { setFileSink } from "../../src/platform/browser.ts";
import type { FromWorker, Shared, ToWorker } from "./protocol.ts";

// The runtime's frames come first in a stack and are hidden from tracebacks; Chrome keeps 10 frames by
// default, which an error raised deep in an op (a matmul's shape check) fills before the cell's own.
Error.stackTraceLimit = 50;

/** How long a completion or inspection waits for the language service: TypeScript (3.5 MB) and the
 *  site's typings load and compile in a few seconds on a laptop, longer on a busy one. */
const LANGUAGE_TIMEOUT_MS = 60_000;

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

// The executor starts with the page's first message ("init"): its interrupt flag and cell number are
// memory shared with the page where the page is cross-origin isolated (the site's service worker makes
// it so), so an interrupt reaches a synchronous loop as in the server kernel; elsewhere they are this
// Worker's own, set between two awaits of the running cell.
let executor!: Executor;
let shared: Shared | null = null;
let initialised!: () => void;
const init = new Promise<void>((r) => (initialised = r));

const comms = new CommManager();
const host = {
  publish: (msgType: any, content: any, parent: object) => post({ type: "iopub", msgType, content, parent }),
  currentParent: () => current?.parent ?? {},
  prompt: (prompt: string, password: boolean) => ask(prompt, password),
  comms,
  get executor() {
    return executor;
  },
  capture,
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

/** input() and prompt(): an input_request through the page, then this Worker waits (Atomics.wait) until
 *  the page writes the answer into shared memory, as the server kernel's main thread waits. */
function ask(prompt: string, password: boolean): string | null {
  if (!current?.allowStdin) throw new Error("stdin is not available: this frontend does not support input requests");
  if (!shared) {
    throw new Error(
      "input() cannot wait for an answer on this page yet: it is not cross-origin isolated (no SharedArrayBuffer), which the site's service worker makes it from the next load on: reload the page once",
    );
  }
  return waitForStdin(
    shared.stdinCtl,
    shared.stdinData,
    () => executor.interruptRequested,
    () => post({ type: "input", prompt, password, parent: current!.parent }),
  );
}

/** Whether the browser gives a WebGPU adapter, and its name; said once, in the first cell's output. */
const gpuProbe: Promise<{ device: string | null; problem: string | null }> = (async () => {
  const adapter = await platform.requestAdapter("browser");
  if (!adapter) return { device: null, problem: platform.noAdapterHint() };
  const info = adapter.info;
  return { device: [info.vendor, info.architecture, info.description].filter(Boolean).join(" ") || "WebGPU adapter", problem: null };
})();
let toldProblem = false;

/** The server kernel's language service (kernel/language/service.ts) in a Worker of its own
 *  (language-worker.ts), so that loading TypeScript never holds up a cell; `cells`: the recent ones,
 *  for a language Worker started again after it failed. */
const language = new LanguageClient((cells) => {
  const w = new Worker(new URL("language.js", self.location.href), { type: "module", name: "gradlab-language" });
  for (const code of cells) w.postMessage({ id: 0, op: "addCell", code });
  return {
    post: (m) => w.postMessage(m),
    onMessage: (fn) => void (w.onmessage = (ev) => fn(ev.data)),
    onError: (fn) =>
      void (w.onerror = (ev) => {
        ev.preventDefault();
        console.warn(`GradLab's language service failed: ${ev.message}`);
        fn(new Error(ev.message));
      }),
    terminate: async () => w.terminate(),
  };
}, LANGUAGE_TIMEOUT_MS);

const ready = Promise.all([initialize(new URL("esbuild.wasm", self.location.href).href), gpuProbe, init]).then(([, gpu]) => {
  post({ type: "ready", ...gpu });
  language.warm(); // as the server kernel does once started: the first Tab finds TypeScript loaded
});

async function execute(m: Extract<ToWorker, { type: "execute" }>): Promise<void> {
  await ready;
  const ctx: CellContext = { parent: m.parent, identities: [], executionCount: m.count, allowStdin: m.allowStdin };
  current = ctx;
  const label = m.storeHistory ? `Cell [${m.count}]` : "Cell";
  const gpu = await gpuProbe;
  if (gpu.problem && !toldProblem) {
    toldProblem = true;
    post({ type: "iopub", msgType: "stream", content: { name: "stderr", text: `GradLab needs WebGPU. ${gpu.problem}\n` }, parent: m.parent });
  }
  await prestrip(m.code, label);
  // checked by the language Worker while the cell runs; its warnings print under the cell, as the server's
  const diagnostics = m.silent ? null : typeCheck(language, m.code);
  await runCell(host, {
    code: m.code,
    label,
    ctx,
    silent: m.silent,
    afterDisplays: async () => {
      if (diagnostics) {
        const write = (text: string) => post({ type: "iopub", msgType: "stream", content: { name: "stderr", text }, parent: m.parent });
        await reportTypeErrors(write, diagnostics, label);
      }
    },
    result: (b) =>
      post({ type: "iopub", msgType: "execute_result", content: { execution_count: m.count, data: b.data, metadata: b.metadata }, parent: m.parent }),
    finish: (error) => {
      if (error && !m.silent) post({ type: "iopub", msgType: "error", content: error, parent: m.parent });
      post({ type: "reply", id: m.id, content: error ? { status: "error", ...error } : { status: "ok" } });
      if (!error && !m.silent) language.cellRan(m.code);
    },
  });
}

// requests run one after another, as the server kernel's shell queue runs them
let queue: Promise<void> = Promise.resolve();
self.onmessage = (ev: MessageEvent<ToWorker>) => {
  const m = ev.data;
  if (m.type === "interrupt") {
    executor?.interrupt();
    post({ type: "interrupted" });
  }
  // completion and inspection as the server kernel answers them (its language service, in a Worker of
  // its own, and live values), answered even while a cell awaits
  else if (m.type === "complete") void completeAnswer(language, m.code, m.cursor).then((content) => post({ type: "completed", id: m.id, content }));
  else if (m.type === "inspect") void inspectAnswer(language, m.code, m.cursor).then((text) => post({ type: "inspected", id: m.id, text }));
  else if (m.type === "file") fileRead(m);
  else if (m.type === "init") {
    setNotebookDir(m.dir);
    setFileSink(writeDriveFile);
    shared = m.shared;
    const own = (n: number) => new Int32Array(n);
    executor = new Executor(shared?.irq ?? own(1), shared?.cellNo ?? own(1), new Float64Array(2), own(1), capture, "/");
    initialised();
  }
  // from the page's widget manager: handled at once, as the server kernel's control of comms is
  else if (m.type === "comm") {
    if (m.msgType === "comm_open") {
      if (!comms.open(m.content, m.metadata, m.buffers)) comms.publisher()("comm_close", { comm_id: m.content.comm_id, data: {} });
    } else if (m.msgType === "comm_msg") comms.msg(m.content, m.metadata, m.buffers);
    else comms.close(m.content);
  } else queue = queue.then(() => execute(m)).catch((e) => console.error(e));
};
// the page posts nothing before this (see send() in extension.ts)
post({ type: "listening" });
// an error thrown by a timer or a forgotten promise shows in the cell that runs now
self.addEventListener("unhandledrejection", (ev) => {
  ev.preventDefault();
  capture.write("stderr", `Unhandled promise rejection: ${errorContent(ev.reason).traceback.join("\n")}\n`);
});
