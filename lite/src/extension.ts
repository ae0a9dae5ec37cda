// The GradLab Lite kernel as a JupyterLite plugin: "GradLab (TypeScript · WebGPU)" in the launcher and
// the kernel picker. Each kernel is a Web Worker (worker.ts) running the runtime and the server kernel's
// executor; this side speaks Jupyter's messages to JupyterLab through @jupyterlite/services' BaseKernel.
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { PageConfig, URLExt } from "@jupyterlab/coreutils";
import type { Contents, KernelMessage } from "@jupyterlab/services";
import { BaseKernel, IKernelClient, IKernelSpecs, type IKernel } from "@jupyterlite/services";
import type { FromWorker, ToWorker } from "./protocol.ts";

const workerUrl = () => URLExt.join(PageConfig.getBaseUrl(), "gradlab/dist/worker.js");
/** The running GradLab kernels by id (for interrupts, which JupyterLite's client does not forward). */
const running = new Map<string, GradLabKernel>();
/** JupyterLite's contents (the browser's storage over the site's files), where cells' imports are read. */
let drive: Contents.IManager | null = null;

class GradLabKernel extends BaseKernel {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly waiting = new Map<number, (m: any) => void>();
  private readonly started: Promise<FromWorker & { type: "ready" }>;

  constructor(options: IKernel.IOptions) {
    super(options);
    this.worker = new Worker(workerUrl(), { type: "module", name: `gradlab-${options.id}` });
    let ready!: (m: FromWorker & { type: "ready" }) => void;
    this.started = new Promise((r) => (ready = r));
    this.worker.onmessage = (ev: MessageEvent<FromWorker>) => {
      const m = ev.data;
      if (m.type === "ready") ready(m);
      else if (m.type === "read") void this.readFile(m.id, m.path);
      else if (m.type === "reply" || m.type === "completed" || m.type === "inspected") {
        this.waiting.get(m.id)?.(m);
        this.waiting.delete(m.id);
      } else this.iopub(m);
    };
    this.worker.onerror = (ev) => console.error("GradLab worker failed:", ev.message);
    // the notebook's folder: the course's `./check.ts` is read from there
    this.send({ type: "location", dir: options.location ?? "" });
    running.set(options.id, this);
  }

  /** Answers a cell's import of a drive file with the student's copy (edited, created) or the site's. */
  private async readFile(id: number, path: string): Promise<void> {
    try {
      if (!drive) throw new Error("the file browser's contents are not available");
      const model = await drive.get(path, { type: "file", format: "text", content: true });
      if (typeof model.content !== "string") throw new Error(`${path} is not a text file`);
      this.send({ type: "file", id, text: model.content });
    } catch (e) {
      const status = (e as { response?: { status?: number } }).response?.status;
      const why =
        status === 404 || /not found/i.test(String((e as Error).message)) ? `there is no file ${path} in the file browser` : String((e as Error).message ?? e);
      this.send({ type: "file", id, error: why });
    }
  }

  /** Stops the running cell at its next await (KeyboardInterrupt); a synchronous loop needs a restart. */
  interruptWorker(): void {
    this.send({ type: "interrupt" });
  }

  private send(m: ToWorker): void {
    this.worker.postMessage(m);
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
    const m = { type: "execute", id: this.nextId++, code: content.code, count: this.executionCount, silent: !!content.silent, storeHistory, parent } as const;
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
  inputReply(): void {}
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

const logo = (size: number) => URLExt.join(PageConfig.getBaseUrl(), `gradlab/logo-${size}x${size}.png`);

const kernelPlugin: JupyterFrontEndPlugin<void> = {
  id: "gradlab-lite:kernel",
  description: "The GradLab kernel, in a Web Worker on this browser's WebGPU",
  autoStart: true,
  requires: [IKernelSpecs, IKernelClient],
  activate: (app: JupyterFrontEnd, specs: IKernelSpecs, client: IKernelClient) => {
    drive = app.serviceManager.contents;
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
