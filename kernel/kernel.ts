// The kernel process: shell on the main thread; everything that must work while a cell runs
// (control, heartbeat, stdin, and iopub, so output streams during synchronous code) on the socket
// thread; requests dispatched to handlers.
import { InterruptError } from "./executor/errors.ts";
import type { Worker } from "node:worker_threads";
import { startWorker } from "./sockets/ts-worker.ts";
import { randomUUID } from "node:crypto";
import * as zmq from "zeromq";
import { makeHeader, parse, serialize, Signer, type Message } from "./wire/message.ts";
import { endpoint, type ConnectionInfo } from "./sockets/connection.ts";
import { SendQueue } from "./sockets/queue.ts";
import { createShared, type FromWorker, type SharedState, type ToWorker } from "./sockets/shared.ts";
import { OutputCapture, type CellContext } from "./executor/output.ts";
import { Executor } from "./executor/executor.ts";
import { errorContent } from "./executor/errors.ts";
import { History, defaultHistoryFile } from "./history.ts";
import { CommManager } from "./comms.ts";
import { installGlobals } from "./display/globals.ts";
import { installPromiseInspect, PROMISE_HINT } from "./display/bundle.ts";
import { kernelInfo } from "./info.ts";
import { handlers } from "./handlers/index.ts";
import { log } from "./log.ts";
import { languageService } from "./language/client.ts";
import { loadTorch, loadedTorch } from "./executor/modules.ts";

const realExit = process.exit.bind(process);

export class Kernel {
  readonly session = randomUUID();
  readonly signer: Signer;
  readonly shared: SharedState;
  readonly capture: OutputCapture;
  readonly executor: Executor;
  readonly history = new History(defaultHistoryFile());
  readonly comms = new CommManager();
  readonly kernelInfo = kernelInfo();
  executionCount = 0;
  /** display.on_cell_end callbacks for the running cell */
  cellEndHooks: (() => void)[] = [];
  /** after an error with stop_on_error: execute_requests that arrived up to this sequence number are aborted */
  abortThrough = 0;
  private seq = 0;
  /** sequence number of the request being handled */
  currentSeq = 0;
  /** the shell request being handled now */
  current: Message | null = null;

  private shell = new zmq.Router({ linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 });
  private shellOut = new SendQueue(this.shell);
  /** parent headers in JSON, per request (streams carry them with every write) */
  private parentJson = new WeakMap<object, string>();
  private worker: Worker;
  private queue: { msg: Message; channel: "shell" | "control"; seq: number }[] = [];
  private processing = false;
  private workerReady: Promise<void>;
  private workerClosed: (() => void) | null = null;
  private shuttingDown = false;

  constructor(private readonly conn: ConnectionInfo, readonly baseDir = process.cwd()) {
    this.signer = new Signer(conn.key, conn.signature_scheme);
    const { sab, state } = createShared();
    this.shared = state;
    this.capture = new OutputCapture((ctx, name, text) => this.toWorker({ type: "stream", name, text, parent: this.jsonOf(ctx.parent) }));
    this.executor = new Executor(state.irq, state.cell, state.cellTimes, state.cellSession, this.capture, baseDir);
    this.comms.publisher = () => (type, content, metadata = {}, buffers = []) =>
      this.publish(type, content, this.currentParent(), metadata, buffers);
    this.worker = startWorker("control-worker", {
      workerData: { conn, session: this.session, sab, kernelInfo: this.kernelInfo },
    });
    this.workerReady = new Promise((resolve) => {
      this.worker.on("message", (m: FromWorker) => {
        if (m.type === "ready") resolve();
        else if (m.type === "closed") this.workerClosed?.();
        else this.onWorker(m);
      });
    });
    this.worker.on("error", (e: Error) => log(`socket thread died: ${e.stack ?? e}`));
    this.worker.unref();
  }

  async start(): Promise<void> {
    await this.shell.bind(endpoint(this.conn, this.conn.shell_port));
    this.capture.install();
    installGlobals(this);
    // a cell's value is awaited (the cell returns it), but a promise inside a value or passed to
    // console.log prints as such: say once per cell how to get its value
    let hinted = -1;
    installPromiseInspect(() => {
      const cell = this.executionCount;
      if (hinted === cell || !(this.capture.als.getStore() ?? this.current)) return;
      hinted = cell;
      this.capture.write("stderr", PROMISE_HINT);
    });
    // SIGINT (a terminal's Ctrl-C, or a client's signal to the kernel's process group) never ends the
    // kernel: this listener stays installed for good. It runs only when this thread is free (a cell
    // awaiting); a cell in synchronous code is reached through the socket thread's signal helper.
    process.on("SIGINT", () => {
      // the helper, when running, also got this signal (clients signal the process group) and knows
      // when it arrived; this listener may run late, after the cell it was meant for
      if (Atomics.load(this.shared.helper, 0) !== 1) this.executor.interrupt();
    });
    // code pasted from a script may end with process.exit(): that must not end the session
    process.exit = ((code?: number) => {
      throw new Error(`process.exit(${code ?? ""}) would end the kernel and lose every variable; restart the kernel from the notebook instead`);
    }) as typeof process.exit;
    // an error thrown by a timer or a forgotten promise must not kill the session: show it, in
    // the cell that started the work
    process.on("uncaughtException", (e) => this.reportAsync("Uncaught", e));
    process.on("unhandledRejection", (e) => this.reportAsync("Unhandled promise rejection", e));
    process.on("SIGTERM", () => this.shutdown(false));
    void this.shellLoop();
    await this.workerReady;
    // warm up even if no client asks for kernel_info first
    setTimeout(() => this.warmUp(), 1500).unref();
    log(`kernel ${this.session} ready (${endpoint(this.conn, this.conn.shell_port)})`);
  }

  private warmed = false;
  /** Loads the runtime (and its WebGPU device) and the language service in the background, once: the
   *  first cell and the first Tab then wait for neither. Started after the first kernel_info_reply
   *  (what a client waits for at start-up), so it does not delay that. */
  warmUp(): void {
    if (this.warmed || process.env.GRADLAB_WARMUP === "0") return;
    this.warmed = true;
    const t0 = Date.now();
    setImmediate(() => {
      languageService(this).warm();
      void loadTorch().then(async () => {
        const t = loadedTorch() as { webgpu?: { init?: () => unknown } } | null;
        try {
          await t?.webgpu?.init?.();
        } catch (e) {
          log(`warm-up: WebGPU initialisation failed (${(e as Error)?.message ?? e}); cells will report it`);
        }
        log(`warm-up: runtime ready in ${Date.now() - t0} ms`);
      });
    });
  }

  private onWorker(m: FromWorker): void {
    if (m.type === "interrupt") this.executor.interrupt(m.cell);
    else if (m.type === "shutdown") void this.shutdown(m.restart);
    else if (m.type === "control") {
      const r = parse(m.frames.map((f) => Buffer.from(f)), this.signer);
      if (r.ok) this.enqueue(r.msg, "control");
    }
  }

  private async shellLoop(): Promise<void> {
    try {
      for await (const frames of this.shell) {
        const r = parse(frames, this.signer);
        if (!r.ok) {
          log(`shell: dropped message: ${r.reason}`);
          continue;
        }
        this.enqueue(r.msg, "shell");
      }
    } catch (e) {
      if (!this.shell.closed) log(`shell loop: ${(e as Error).stack}`);
    }
  }

  /** the channel each request came on: its reply goes back there */
  private channels = new WeakMap<Message, "shell" | "control">();

  private enqueue(msg: Message, channel: "shell" | "control"): void {
    this.channels.set(msg, channel);
    this.queue.push({ msg, channel, seq: ++this.seq });
    if (!this.processing) void this.process();
  }

  private async process(): Promise<void> {
    this.processing = true;
    try {
      while (this.queue.length) {
        const { msg, channel, seq } = this.queue.shift()!;
        this.currentSeq = seq;
        await this.handle(msg, channel);
      }
    } finally {
      this.processing = false;
    }
  }

  private async handle(msg: Message, channel: "shell" | "control"): Promise<void> {
    const type = msg.header.msg_type;
    this.current = msg;
    try {
      this.publish("status", { execution_state: "busy" }, msg.header);
      // own properties only: "constructor" or "__proto__" are unknown types, not Object's methods
      const h = Object.hasOwn(handlers, type) ? handlers[type] : undefined;
      if (h) await h(this, msg, channel);
      else {
        log(`unknown message type ${JSON.stringify(type).slice(0, 200)} on ${channel}`);
        if (!/^comm_|_reply$/.test(type)) {
          const replyType = `${type.replace(/_request$/, "")}_reply`;
          this.reply(msg, replyType, { status: "error", ename: "UnknownMessageType", evalue: `unknown message type ${type.slice(0, 200)}`, traceback: [] }, channel);
        }
      }
    } catch (e) {
      log(`handler ${String(type).slice(0, 200)} failed: ${(e as Error)?.stack ?? e}`);
    } finally {
      try {
        this.publish("status", { execution_state: "idle" }, msg.header);
      } catch (e) {
        log(`cannot publish idle: ${(e as Error)?.message ?? e}`);
      }
      this.current = null;
    }
  }

  private reportAsync(what: string, e: unknown): void {
    const { traceback } = errorContent(e);
    const text = `${what}: ${traceback.join("\n")}\n`;
    if (this.capture.als.getStore() ?? this.capture.last) this.capture.write("stderr", text);
    else log(text);
  }

  currentParent(): object {
    return this.capture.als.getStore()?.parent ?? this.current?.header ?? this.capture.last?.parent ?? {};
  }

  reply(req: Message, type: string, content: object, channel: "shell" | "control" = this.channels.get(req) ?? "shell", metadata: object = {}): void {
    let frames: Buffer[];
    try {
      frames = serialize(this.signer, makeHeader(type, this.session), req.header, metadata, content, req.identities);
    } catch (e) {
      // content that cannot be serialized (a user's cyclic value, a BigInt): say so rather than go silent
      log(`cannot serialize ${type}: ${(e as Error)?.message ?? e}`);
      frames = serialize(this.signer, makeHeader(type, this.session), req.header, {}, { status: "error", ename: "SerializationError", evalue: String((e as Error)?.message ?? e), traceback: [] }, req.identities);
    }
    if (channel === "shell") this.shellOut.send(frames);
    else this.toWorker({ type: "control-send", frames });
  }

  /** Publishes on iopub (through the socket thread, after everything posted before it). */
  publish(type: string, content: object, parent: object, metadata: object = {}, buffers: Buffer[] = []): void {
    const topic = Buffer.from(`kernel.${this.session}.${type}`);
    const frames = serialize(this.signer, makeHeader(type, this.session), parent, metadata, content, [topic], buffers);
    this.toWorker({ type: "iopub", frames });
  }

  private jsonOf(parent: object): string {
    let j = this.parentJson.get(parent);
    if (j === undefined) this.parentJson.set(parent, (j = JSON.stringify(parent)));
    return j;
  }

  get aborting(): boolean {
    return this.currentSeq <= this.abortThrough;
  }

  /** stop_on_error: abort every request already sent to us. Reads what zeromq has buffered first,
   *  so call it before sending the error reply (nothing after the reply can be "queued"). */
  async abortQueued(): Promise<void> {
    let n = -1;
    for (let i = 0; i < 50 && n !== this.seq; i++) {
      n = this.seq;
      await new Promise((r) => setImmediate(r));
    }
    this.abortThrough = this.seq;
  }

  toWorker(m: ToWorker): void {
    try {
      this.worker.postMessage(m);
    } catch (e) {
      log(`cannot post to the socket thread: ${(e as Error)?.message ?? e}`);
    }
  }

  /** input_request on stdin, blocking this thread until the reply (or an interrupt) arrives. */
  prompt(ctx: CellContext | null, prompt: string, password: boolean): string | null {
    const req = ctx ?? this.capture.last;
    if (!req || !(req as any).allowStdin) throw new Error("stdin is not available: this frontend does not support input requests");
    if (this.executor.interruptRequested) throw new InterruptError();
    const ctl = this.shared.stdinCtl;
    Atomics.store(ctl, 0, 0);
    this.toWorker({ type: "input_request", prompt, password, parent: req.parent, identities: req.identities });
    while (Atomics.load(ctl, 0) === 0) Atomics.wait(ctl, 0, 0, 1000);
    const state = Atomics.load(ctl, 0);
    Atomics.store(ctl, 0, 1);
    if (state === 2) {
      // Interrupted while waiting: raise at once, so the cell stops here whatever runs after prompt().
      throw new InterruptError();
    }
    if (state !== 1) return null;
    return Buffer.from(this.shared.stdinData.subarray(0, Atomics.load(ctl, 1))).toString("utf8");
  }

  async shutdown(restart: boolean): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    log(`shutting down${restart ? " for restart" : ""}`);
    this.publish("shutdown_reply", { status: "ok", restart }, this.current?.header ?? {});
    await Promise.race([this.shellOut.flushed(), new Promise((r) => setTimeout(r, 500))]);
    // close every zeromq socket, in both threads, before exiting: exiting with sockets open aborts.
    // The socket thread sends what is queued on iopub and control first.
    const closed = new Promise<void>((r) => (this.workerClosed = r));
    this.toWorker({ type: "close" });
    await Promise.race([closed, new Promise((r) => setTimeout(r, 1500))]);
    await this.worker.terminate();
    this.shell.close();
    realExit(0);
  }
}
