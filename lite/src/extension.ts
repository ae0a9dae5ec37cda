// The GradLab Lite kernel as a JupyterLite plugin: "GradLab (TypeScript · WebGPU)" in the launcher and
// the kernel picker. Each kernel is a Web Worker (worker.ts) running the runtime and the server kernel's
// executor; this side speaks Jupyter's messages to JupyterLab through @jupyterlite/services' BaseKernel.
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { PageConfig, URLExt } from "@jupyterlab/coreutils";
import type { Contents, KernelMessage } from "@jupyterlab/services";
import { BaseKernel, IKernelClient, IKernelSpecs, type IKernel } from "@jupyterlite/services";
import type { FromWorker, Shared, ToWorker } from "./protocol.ts";

const workerUrl = () => URLExt.join(PageConfig.getBaseUrl(), "gradlab/dist/worker.js");
/** The running GradLab kernels by id (for interrupts, which JupyterLite's client does not forward). */
const running = new Map<string, GradLabKernel>();
/** A drive path as JupyterLite's contents take it: they decode each path as a URI (a file named
 *  `snap_100%.pickle` would fail, `a%20b` become `a b`), so each segment is encoded first. */
const driveUri = (path: string) => path.split("/").map(encodeURIComponent).join("/");

/** JupyterLite's contents (the browser's storage over the site's files), where cells' imports are read. */
let drive: Contents.IManager | null = null;
/** The application's commands (JupyterLab's notifications), once the plugin is activated. */
let commands: JupyterFrontEnd["commands"] | null = null;

/** Whether this page may share memory with its Workers (served with COOP and COEP: by the site's
 *  service worker, from the second visit on). */
const crossOriginIsolated = () => (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;

/** Room for one answer to input(). */
const STDIN_BYTES = 1 << 16;
function sharedMemory(): Shared {
  const ints = (n: number) => new Int32Array(new SharedArrayBuffer(4 * n));
  return { irq: ints(1), cellNo: ints(1), stdinCtl: ints(2), stdinData: new Uint8Array(new SharedArrayBuffer(STDIN_BYTES)) };
}

class GradLabKernel extends BaseKernel {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly waiting = new Map<number, (m: any) => void>();
  private readonly started: Promise<FromWorker & { type: "ready" }>;
  private readonly shared: Shared | null = crossOriginIsolated() ? sharedMemory() : null;
  /** Messages for the Worker until it says it listens (then null): see send(). */
  private outbox: ToWorker[] | null = [];
  /** The notification an interrupt raised on a page without shared memory, until the Worker acknowledges. */
  private unreachable: Promise<unknown> | null = null;

  constructor(options: IKernel.IOptions) {
    super(options);
    this.worker = new Worker(workerUrl(), { type: "module", name: `gradlab-${options.id}` });
    let ready!: (m: FromWorker & { type: "ready" }) => void;
    this.started = new Promise((r) => (ready = r));
    this.worker.onmessage = (ev: MessageEvent<FromWorker>) => {
      const m = ev.data;
      if (m.type === "listening") {
        for (const queued of this.outbox ?? []) this.worker.postMessage(queued);
        this.outbox = null;
      } else if (m.type === "ready") ready(m);
      else if (m.type === "read") void this.readFile(m.id, m.path);
      else if (m.type === "write") void this.writeFile(m.path, m.base64);
      else if (m.type === "interrupted") this.reached();
      else if (m.type === "input") this.inputRequest({ prompt: m.prompt, password: m.password }, m.parent as never);
      else if (m.type === "reply" || m.type === "completed" || m.type === "inspected") {
        this.waiting.get(m.id)?.(m);
        this.waiting.delete(m.id);
      } else this.iopub(m);
    };
    this.worker.onerror = (ev) => console.error("GradLab worker failed:", ev.message);
    // the notebook's folder (the course's `./check.ts` is read from there), and shared memory where the
    // page is cross-origin isolated
    this.send({ type: "init", dir: options.location ?? "", shared: this.shared });
    running.set(options.id, this);
  }

  /** Answers a cell's import of a drive file with the student's copy (edited, created) or the site's. */
  private async readFile(id: number, path: string): Promise<void> {
    try {
      if (!drive) throw new Error("the file browser's contents are not available");
      const model = await drive.get(driveUri(path), { type: "file", format: "text", content: true });
      if (typeof model.content !== "string") throw new Error(`${path} is not a text file`);
      this.send({ type: "file", id, text: model.content });
    } catch (e) {
      const status = (e as { response?: { status?: number } }).response?.status;
      const why =
        status === 404 || /not found/i.test(String((e as Error).message)) ? `there is no file ${path} in the file browser` : String((e as Error).message ?? e);
      this.send({ type: "file", id, error: why });
    }
  }

  /** Saves a file the runtime wrote (torch.cuda.memory._dump_snapshot) in the drive, beside the student's
   *  notebooks: the file browser lists it and *Download* saves it. A failure (the browser's storage full)
   *  is said in a notification: the cell that wrote it has moved on. */
  private async writeFile(path: string, base64: string): Promise<void> {
    try {
      if (!drive) throw new Error("the file browser's contents are not available");
      const uri = driveUri(path);
      // a folder of that name stays a folder (saving over it would hide the notebooks in it)
      if ((await drive.get(uri, { content: false }).catch(() => null))?.type === "directory") throw new Error(`"${path}" is a folder`);
      await drive.save(uri, { type: "file", format: "base64", content: base64 });
    } catch (e) {
      const why = String((e as Error).message ?? e);
      console.error(`GradLab could not save ${path}:`, e);
      void commands?.execute("apputils:notify", { type: "error", message: `GradLab could not save ${path}: ${why}`, options: { autoClose: false } });
    }
  }

  /** Stops the running cell with KeyboardInterrupt: at its next await, and, where the page shares memory
   *  with the Worker, in a synchronous loop or while input() waits (the server kernel's flags). Without
   *  shared memory a synchronous loop needs a restart. */
  interruptWorker(): void {
    const s = this.shared;
    if (s) {
      Atomics.store(s.irq, 0, Atomics.load(s.cellNo, 0));
      Atomics.store(s.stdinCtl, 0, 2);
      Atomics.notify(s.stdinCtl, 0);
    } else if (!this.unreachable && commands?.hasCommand("apputils:notify")) {
      // Without shared memory the interrupt is a message, which a loop that never awaits never reads:
      // say so until the Worker acknowledges it (a cell that awaits stops, and the note goes away).
      this.unreachable = commands.execute("apputils:notify", {
        type: "warning",
        message: UNREACHABLE,
        options: { autoClose: false, actions: [{ label: "Restart Kernel", commandId: "notebook:restart-kernel" }] },
      });
    }
    this.send({ type: "interrupt" });
  }

  /** The Worker read an interrupt: it is not stuck in a synchronous loop. */
  private reached(): void {
    const note = this.unreachable;
    this.unreachable = null;
    void note?.then((id) => commands?.execute("apputils:dismiss-notification", { id: id as string }));
  }

  /** The student's answer to input(): into the shared memory the Worker waits on. */
  inputReply(content: KernelMessage.IInputReplyMsg["content"]): void {
    const s = this.shared;
    if (!s) return;
    const value = content.status === "ok" ? content.value : "";
    // encodeInto refuses shared memory: encoded into a page-owned buffer (cut at a character), then copied
    const own = new Uint8Array(s.stdinData.length);
    const { written } = new TextEncoder().encodeInto(value, own);
    s.stdinData.set(own.subarray(0, written));
    Atomics.store(s.stdinCtl, 1, written);
    Atomics.store(s.stdinCtl, 0, 1);
    Atomics.notify(s.stdinCtl, 0);
  }

  /** To the Worker, once it listens. Chromium drops a message posted to a new module Worker before its
   *  script runs when a service worker that is still activating intercepts the script's request (a
   *  first visit: the site's service worker claims the page while JupyterLab starts the kernel), so
   *  nothing is posted before the Worker's first message ("listening"). */
  private send(m: ToWorker): void {
    if (this.outbox) this.outbox.push(m);
    else this.worker.postMessage(m);
  }

  private iopub(m: FromWorker & { type: "iopub" }): void {
    const parent = (m.parent ?? undefined) as KernelMessage.IHeader<KernelMessage.MessageType> | undefined;
    const c = m.content;
    const publish = {
      stream: () => this.stream(c, parent),
      display_data: () => this.displayData(c, parent),
      update_display_data: () => this.updateDisplayData(c, parent),
      clear_output: () => this.clearOutput(c, parent),
      execute_result: () => this.publishExecuteResult(c, parent),
      error: () => this.publishExecuteError(c, parent),
      comm_open: () => this.handleComm("comm_open", c, (m.metadata ?? {}) as never, (m.buffers ?? []) as never, parent),
      comm_msg: () => this.handleComm("comm_msg", c, (m.metadata ?? {}) as never, (m.buffers ?? []) as never, parent),
      comm_close: () => this.handleComm("comm_close", c, (m.metadata ?? {}) as never, (m.buffers ?? []) as never, parent),
    };
    publish[m.msgType]();
  }

  dispose(): void {
    if (this.isDisposed) return;
    this.worker.terminate(); // restart and shutdown: the Worker's tensors and GPU device go with it
    this.reached();
    running.delete(this.id);
    super.dispose();
  }

  async kernelInfoRequest(): Promise<KernelMessage.IInfoReplyMsg["content"]> {
    return {
      status: "ok",
      protocol_version: "5.3",
      implementation: "gradlab-lite",
      implementation_version: "0.1.0",
      language_info: { name: "typescript", version: "5", mimetype: "text/typescript", file_extension: ".ts", codemirror_mode: "typescript" },
      banner: "GradLab Lite: a PyTorch-like autograd runtime on this browser's WebGPU",
      help_links: [],
    };
  }

  async executeRequest(content: KernelMessage.IExecuteRequestMsg["content"]): Promise<KernelMessage.IExecuteReplyMsg["content"]> {
    await this.started;
    const storeHistory = content.silent ? false : content.store_history !== false;
    const parent = this.parentHeader ?? {};
    const allowStdin = content.allow_stdin !== false;
    const m = {
      type: "execute",
      id: this.nextId++,
      code: content.code,
      count: this.executionCount,
      silent: !!content.silent,
      storeHistory,
      allowStdin,
      parent,
    } as const;
    const r = (await this.ask<FromWorker & { type: "reply" }>(m)).content;
    if (r.status === "ok") return { status: "ok", execution_count: this.executionCount, user_expressions: {} };
    return { status: "error", execution_count: this.executionCount, ename: r.ename ?? "Error", evalue: r.evalue ?? "", traceback: r.traceback ?? [] };
  }

  /** Sends a request that the Worker answers with a message carrying the same id. */
  private ask<T extends FromWorker>(m: ToWorker & { id: number }): Promise<T> {
    const answer = new Promise<T>((r) => this.waiting.set(m.id, r));
    this.send(m);
    return answer;
  }

  async completeRequest(content: KernelMessage.ICompleteRequestMsg["content"]): Promise<KernelMessage.ICompleteReplyMsg["content"]> {
    await this.started;
    const r = await this.ask<FromWorker & { type: "completed" }>({ type: "complete", id: this.nextId++, code: content.code, cursor: content.cursor_pos });
    return r.content;
  }
  async inspectRequest(content: KernelMessage.IInspectRequestMsg["content"]): Promise<KernelMessage.IInspectReplyMsg["content"]> {
    await this.started;
    const r = await this.ask<FromWorker & { type: "inspected" }>({ type: "inspect", id: this.nextId++, code: content.code, cursor: content.cursor_pos });
    return r.text == null
      ? { status: "ok", found: false, data: {}, metadata: {} }
      : { status: "ok", found: true, data: { "text/plain": r.text }, metadata: {} };
  }
  async isCompleteRequest(): Promise<KernelMessage.IIsCompleteReplyMsg["content"]> {
    return { status: "unknown" };
  }
  async commInfoRequest(): Promise<KernelMessage.ICommInfoReplyMsg["content"]> {
    return { status: "ok", comms: {} };
  }
  // the page's widget manager talks to the Worker's comms (torch.widgets, torch.viz.stepper)
  async commOpen(msg: KernelMessage.ICommOpenMsg): Promise<void> {
    this.send({ type: "comm", msgType: "comm_open", content: msg.content, metadata: msg.metadata, buffers: msg.buffers ?? [] });
  }
  async commMsg(msg: KernelMessage.ICommMsgMsg): Promise<void> {
    this.send({ type: "comm", msgType: "comm_msg", content: msg.content, metadata: msg.metadata, buffers: msg.buffers ?? [] });
  }
  async commClose(msg: KernelMessage.ICommCloseMsg): Promise<void> {
    this.send({ type: "comm", msgType: "comm_close", content: msg.content, metadata: msg.metadata, buffers: msg.buffers ?? [] });
  }
}

/** What the interrupt's notification says (JupyterLab cuts a toast's text at 140 characters): the page
 *  is not cross-origin isolated, which the site's service worker makes it from the next load on. */
const UNREACHABLE = "A loop that never awaits cannot be stopped on this page yet. If the cell runs on: Restart Kernel, then reload the page once.";

const logo = (size: number) => URLExt.join(PageConfig.getBaseUrl(), `gradlab/logo-${size}x${size}.png`);

const kernelPlugin: JupyterFrontEndPlugin<void> = {
  id: "gradlab-lite:kernel",
  description: "The GradLab kernel, in a Web Worker on this browser's WebGPU",
  autoStart: true,
  requires: [IKernelSpecs, IKernelClient],
  activate: (app: JupyterFrontEnd, specs: IKernelSpecs, client: IKernelClient) => {
    drive = app.serviceManager.contents;
    commands = app.commands;
    // JupyterLite 0.8's client answers an interrupt by cancelling the cells queued behind the running
    // one and never tells the kernel: tell ours, so the running cell stops too.
    const interrupt = client.interrupt.bind(client);
    client.interrupt = async (id: string) => {
      running.get(id)?.interruptWorker();
      return interrupt(id);
    };
    specs.register({
      spec: {
        name: "gradlab",
        display_name: "GradLab (TypeScript · WebGPU)",
        language: "typescript",
        argv: [],
        resources: { "logo-32x32": logo(32), "logo-64x64": logo(64) },
      },
      create: async (options: IKernel.IOptions) => new GradLabKernel(options),
    });
  },
};

export default [kernelPlugin];
