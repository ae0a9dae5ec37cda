// The kernel process: the top layer, wiring the others together. The socket server owns the sockets
// (shell here; control, heartbeat, stdin and iopub on the socket thread, so output streams and
// interrupts arrive during synchronous code); the session signs, replies and publishes; requests are
// queued and dispatched to handlers, which see this class only as a HandlerContext.
import { errorContent } from "./executor/errors.ts";
import { waitForStdin } from "./executor/stdin.ts";
import { randomUUID } from "node:crypto";
import { Signer, type Message } from "./wire/message.ts";
import type { Channel, ErrorReply, IOPub, IOPubType, Replies, ReplyType } from "./wire/protocol.ts";
import { endpoint, type ConnectionInfo } from "./sockets/connection.ts";
import { SocketServer } from "./sockets/server.ts";
import { Session } from "./session.ts";
import { OutputCapture } from "./executor/output.ts";
import { Executor } from "./executor/executor.ts";
import { History, defaultHistoryFile } from "./history.ts";
import { CommManager } from "./comms.ts";
import { installGlobals } from "./display/globals.ts";
import { installPromiseInspect, PROMISE_HINT } from "./display/bundle.ts";
import { kernelInfo } from "./info.ts";
import { dispatch } from "./handlers/index.ts";
import type { HandlerContext } from "./handlers/context.ts";
import { log } from "./log.ts";
import { languageService } from "./language/client.ts";
import { loadTorch, loadedTorch } from "./executor/modules.ts";

const realExit = process.exit.bind(process);
/** How long the main thread must have been free before the runtime's warm-up starts (see warmUp). */
const RUNTIME_WARM_IDLE_MS = Number(process.env.GRADLAB_WARMUP_IDLE_MS ?? 500);

export class Kernel implements HandlerContext {
  readonly capture: OutputCapture;
  readonly executor: Executor;
  readonly history = new History(defaultHistoryFile());
  readonly comms = new CommManager();
  readonly kernelInfo: ReturnType<typeof kernelInfo>;
  executionCount = 0;
  cellEndHooks: (() => void)[] = [];
  pendingDisplays: Promise<unknown>[] = [];
  /** after an error with stop_on_error: execute_requests that arrived up to this sequence number are aborted */
  private abortThrough = 0;
  private seq = 0;
  /** sequence number of the request being handled */
  private currentSeq = 0;

  private readonly server: SocketServer;
  private readonly session: Session;
  private queue: { msg: Message; seq: number }[] = [];
  private processing = false;
  private shuttingDown = false;

  /** `server`: the socket server, when the entry started it already (see SocketServer). */
  constructor(
    private readonly conn: ConnectionInfo,
    server?: SocketServer,
    readonly baseDir = process.cwd(),
  ) {
    this.server = server ?? new SocketServer(conn, { session: randomUUID(), signer: new Signer(conn.key, conn.signature_scheme), kernelInfo: kernelInfo() });
    this.kernelInfo = this.server.opts.kernelInfo;
    const { session: id, signer } = this.server.opts;
    this.session = new Session(id, signer, this.server);
    const shared = this.server.shared;
    this.capture = new OutputCapture((ctx, name, text) => this.session.stream(ctx.parent, name, text));
    this.executor = new Executor(shared.irq, shared.cell, shared.cellTimes, shared.cellSession, this.capture, baseDir);
    // the parent is read at each send: a comm a cell opened may send later, from a timer of another cell
    this.comms.publisher =
      () =>
      (type, content, metadata = {}, buffers = []) =>
        this.publish(type, content, this.currentParent(), metadata, buffers);
    // last: what the socket thread forwarded before now is handled at once
    this.server.listen({
      request: (msg, channel) => this.enqueue(msg, channel),
      interrupt: (cell) => this.executor.interrupt(cell),
      shutdown: (restart) => void this.shutdown(restart),
    });
  }

  async start(): Promise<void> {
    this.capture.install();
    installGlobals(this);
    // a cell's value is awaited (the cell returns it), but a promise inside a value or passed to
    // console.log prints as such: say once per cell how to get its value
    let hinted = -1;
    installPromiseInspect(() => {
      const cell = this.executionCount;
      if (hinted === cell || !(this.capture.als.getStore() ?? this.session.current)) return;
      hinted = cell;
      this.capture.write("stderr", PROMISE_HINT);
    });
    // SIGINT (a terminal's Ctrl-C, or a client's signal to the kernel's process group) never ends the
    // kernel: this listener stays installed for good. It runs only when this thread is free (a cell
    // awaiting); a cell in synchronous code is reached through the socket thread's signal helper.
    process.on("SIGINT", () => {
      // the helper, when running, also got this signal (clients signal the process group) and knows
      // when it arrived; this listener may run late, after the cell it was meant for
      if (Atomics.load(this.server.shared.helper, 0) !== 1) this.executor.interrupt();
    });
    // code pasted from a script may end with process.exit(): that must not end the session
    process.exit = ((code?: number) => {
      throw new Error(`process.exit(${code ?? ""}) would end the kernel and lose every variable; restart the kernel from the notebook instead`);
    }) as typeof process.exit;
    // an error thrown by a timer or a forgotten promise must not kill the session: show it, in
    // the cell that started the work
    process.on("uncaughtException", (e) => this.reportAsync("Uncaught", e));
    process.on("unhandledRejection", (e) => this.reportAsync("Unhandled promise rejection", e));
    process.on("SIGTERM", this.onSigterm);
    await this.server.start();
    // warm up even if no client asks for kernel_info first
    setTimeout(() => this.warmUp(), 1500).unref();
    log(`kernel ${this.session.id} ready (${endpoint(this.conn, this.conn.shell_port)})`);
  }

  private warmed = false;
  private runtimeWarm: ReturnType<typeof setTimeout> | null = null;
  /** Loads the language service at once (a worker thread) and, once the main thread has been free for
   *  RUNTIME_WARM_IDLE_MS (counted from when iopub is up), the runtime and its WebGPU device; once. The first cell and the first Tab
   *  then wait for neither. Started after the first kernel_info_reply (what a client waits for at
   *  start-up), so it does not delay that. The runtime's import runs on this thread (module evaluation,
   *  Dawn's device), so it waits for a quiet moment: the cell a client sends right after start-up
   *  (after a restart, say) is answered first, rather than queued behind up to a second of import under
   *  load (issue 22); a cell that uses `torch` before then starts the import itself. */
  warmUp(): void {
    if (this.warmed || process.env.GRADLAB_WARMUP === "0") return;
    this.warmed = true;
    setImmediate(() => languageService().warm());
    // clients wait for iopub (wait_for_ready) before they send a cell: count from when it is up
    void this.server.workerReady.then(
      () => this.warmRuntimeWhenIdle(),
      () => {},
    );
  }

  private warmRuntimeWhenIdle(): void {
    if (this.runtimeWarm) clearTimeout(this.runtimeWarm);
    this.runtimeWarm = setTimeout(() => {
      if (this.processing) return this.warmRuntimeWhenIdle();
      this.runtimeWarm = null;
      const t0 = Date.now();
      void this.history.prepare();
      void loadTorch().then(async () => {
        const t = loadedTorch() as { webgpu?: { init?: () => unknown } } | null;
        try {
          await t?.webgpu?.init?.();
        } catch (e) {
          log(`warm-up: WebGPU initialisation failed (${(e as Error)?.message ?? e}); cells will report it`);
        }
        log(`warm-up: runtime ready in ${Date.now() - t0} ms`);
      });
    }, RUNTIME_WARM_IDLE_MS);
    this.runtimeWarm.unref();
  }

  private enqueue(msg: Message, channel: Channel): void {
    // the runtime's warm-up waits for a quiet moment: a request that comes first pushes it back
    if (this.runtimeWarm) this.warmRuntimeWhenIdle();
    this.session.received(msg, channel);
    this.queue.push({ msg, seq: ++this.seq });
    if (!this.processing) void this.process();
  }

  /** One request at a time, in arrival order (shell and the control requests the socket thread
   *  leaves to this thread share the queue). */
  private async process(): Promise<void> {
    this.processing = true;
    try {
      while (this.queue.length) {
        const { msg, seq } = this.queue.shift()!;
        this.currentSeq = seq;
        await this.handle(msg);
      }
    } finally {
      this.processing = false;
    }
  }

  /** SIGTERM while idle: close the sockets and exit 0. While a cell runs (it may spin in synchronous
   *  code, and a listener runs only when this thread is free) there is no listener, so SIGTERM's
   *  default action ends the process at once, as it ends ipykernel's. */
  private readonly onSigterm = () => void this.shutdown(false);

  private async handle(msg: Message): Promise<void> {
    this.session.current = msg;
    const cell = msg.header.msg_type === "execute_request";
    if (cell) process.off("SIGTERM", this.onSigterm);
    try {
      this.publish("status", { execution_state: "busy" }, msg.header);
      await dispatch(this, msg, this.session.channelOf(msg));
    } catch (e) {
      log(`handler ${String(msg.header.msg_type).slice(0, 200)} failed: ${(e as Error)?.stack ?? e}`);
    } finally {
      // The listener is back before "idle" leaves: a client that sees idle and sends SIGTERM at once
      // (a culler, a test) must find it, not SIGTERM's default action (a flaky exit -15 under load).
      if (cell && !this.shuttingDown) process.on("SIGTERM", this.onSigterm);
      try {
        this.publish("status", { execution_state: "idle" }, msg.header);
      } catch (e) {
        log(`cannot publish idle: ${(e as Error)?.message ?? e}`);
      }
      this.session.current = null;
    }
  }

  private reportAsync(what: string, e: unknown): void {
    const { traceback } = errorContent(e);
    const text = `${what}: ${traceback.join("\n")}\n`;
    if (this.capture.als.getStore() ?? this.capture.last) this.capture.write("stderr", text);
    else log(text);
  }

  currentParent(): object {
    return this.capture.als.getStore()?.parent ?? this.session.current?.header ?? this.capture.last?.parent ?? {};
  }

  reply<T extends ReplyType>(req: Message, type: T, content: Replies[T], metadata: object = {}): void {
    this.session.reply(req, type, content, metadata);
  }

  replyError(req: Message, type: string, content: ErrorReply): void {
    this.session.replyError(req, type, content);
  }

  publish<T extends IOPubType>(type: T, content: IOPub[T], parent: object, metadata: object = {}, buffers: Buffer[] = []): void {
    this.session.publish(type, content, parent, metadata, buffers);
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

  /** input_request on stdin for the running cell (or the last one), blocking this thread until the
   *  reply (or an interrupt) arrives. */
  prompt(prompt: string, password: boolean): string | null {
    const req = this.capture.als.getStore() ?? this.capture.last;
    if (!req?.allowStdin) throw new Error("stdin is not available: this frontend does not support input requests");
    const shared = this.server.shared;
    return waitForStdin(
      shared.stdinCtl,
      shared.stdinData,
      () => this.executor.interruptRequested,
      () => this.server.inputRequest(prompt, password, req.parent, req.identities),
    );
  }

  async shutdown(restart: boolean): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    log(`shutting down${restart ? " for restart" : ""}`);
    this.publish("shutdown_reply", { status: "ok", restart }, this.session.current?.header ?? {});
    // every worker thread is ended and joined before exit, the language service's first (bounded)
    await Promise.race([languageService().stop(), new Promise((r) => setTimeout(r, 1000))]);
    await this.server.close();
    realExit(0);
  }
}
