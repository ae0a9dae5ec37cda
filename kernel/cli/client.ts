// A Jupyter client in TypeScript (what nbclient does, without Python): starts a kernel process,
// talks to it over zeromq, and collects each request's outputs until its idle status.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as zmq from "zeromq";
import { makeHeader, parse, serialize, Signer, type Message } from "../wire/message.ts";
import { endpoint, freePort, type ConnectionInfo } from "../sockets/connection.ts";
import { SendQueue } from "../sockets/queue.ts";

export interface Pending {
  reply: Promise<Message>;
  /** resolves when the kernel reports idle for this request */
  idle: Promise<void>;
  msgId: string;
}

export class KernelClient {
  readonly session = randomBytes(16).toString("hex");
  conn!: ConnectionInfo;
  proc: ChildProcess | null = null;
  private dir = "";
  private signer!: Signer;
  private shell = new zmq.Dealer({ linger: 0 });
  private control = new zmq.Dealer({ linger: 0 });
  private iopub = new zmq.Subscriber({ linger: 0 });
  private shellOut = new SendQueue(this.shell);
  private controlOut = new SendQueue(this.control);
  private replies = new Map<string, (m: Message) => void>();
  private listeners = new Map<string, (m: Message) => void>();
  private idles = new Map<string, () => void>();
  /** how the kernel process ended: a status, or the signal that killed it */
  exited: Promise<KernelExit> = Promise.resolve({ code: null, signal: null });

  /** Start `argv` (with {connection_file} replaced) in `cwd` and connect to it. The channels are Unix
   *  sockets (ZeroMQ's ipc transport) in a fresh private directory: no other account can connect, and
   *  no port chosen here can be taken by someone else before the kernel binds it. Over `tcp` (Windows,
   *  or a temporary directory whose path is too long for a Unix socket) the ports are chosen here and
   *  bound by the kernel; the caller retries a kernel that lost that race (see `startKernel`). */
  async start(argv: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; stderr?: "inherit" | "ignore"; transport?: "ipc" | "tcp" } = {}): Promise<void> {
    this.dir = mkdtempSync(join(tmpdir(), "gradlab-run-"));
    const ipcBase = join(this.dir, "k");
    // sun_path holds 108 bytes with its terminating NUL
    const transport = opts.transport ?? (process.platform !== "win32" && Buffer.byteLength(`${ipcBase}-5`) < 100 ? "ipc" : "tcp");
    const ports = transport === "ipc" ? [1, 2, 3, 4, 5] : await Promise.all([1, 2, 3, 4, 5].map(freePort));
    this.conn = {
      transport,
      ip: transport === "ipc" ? ipcBase : "127.0.0.1",
      key: randomBytes(32).toString("hex"),
      signature_scheme: "hmac-sha256",
      shell_port: ports[0],
      iopub_port: ports[1],
      stdin_port: ports[2],
      control_port: ports[3],
      hb_port: ports[4],
    };
    this.signer = new Signer(this.conn.key, this.conn.signature_scheme);
    const file = join(this.dir, "kernel.json");
    writeFileSync(file, JSON.stringify(this.conn), { mode: 0o600 });
    const args = argv.map((a) => a.replace("{connection_file}", file));
    this.proc = spawn(args[0], args.slice(1), {
      cwd: opts.cwd,
      env: { ...(opts.env ?? process.env), JPY_PARENT_PID: String(process.pid) },
      stdio: ["ignore", "inherit", opts.stderr ?? "inherit"],
    });
    this.exited = new Promise((r) => this.proc!.on("exit", (code, signal) => r({ code, signal })));
    this.shell.connect(endpoint(this.conn, this.conn.shell_port));
    this.control.connect(endpoint(this.conn, this.conn.control_port));
    this.iopub.connect(endpoint(this.conn, this.conn.iopub_port));
    this.iopub.subscribe();
    void this.readLoop(this.shell, (m) => this.replies.get(String(m.parent_header.msg_id))?.(m));
    void this.readLoop(this.control, (m) => this.replies.get(String(m.parent_header.msg_id))?.(m));
    void this.readLoop(this.iopub, (m) => this.onIopub(m));
  }

  private async readLoop(sock: zmq.Dealer | zmq.Subscriber, on: (m: Message) => void): Promise<void> {
    try {
      for await (const frames of sock) {
        const r = parse(frames, this.signer);
        if (r.ok) on(r.msg);
      }
    } catch {
      // socket closed
    }
  }

  private onIopub(m: Message): void {
    const parent = String(m.parent_header?.msg_id ?? "");
    this.listeners.get(parent)?.(m);
    if (m.header.msg_type === "status" && m.content.execution_state === "idle") this.idles.get(parent)?.();
  }

  request(channel: "shell" | "control", type: string, content: object, onIopub?: (m: Message) => void): Pending {
    const header = makeHeader(type, this.session, "gradlab-run");
    const reply = new Promise<Message>((r) =>
      this.replies.set(header.msg_id, (m) => {
        this.replies.delete(header.msg_id);
        r(m);
      }),
    );
    const idle = new Promise<void>((r) =>
      this.idles.set(header.msg_id, () => {
        this.idles.delete(header.msg_id);
        this.listeners.delete(header.msg_id);
        r();
      }),
    );
    if (onIopub) this.listeners.set(header.msg_id, onIopub);
    const frames = serialize(this.signer, header, {}, {}, content);
    (channel === "shell" ? this.shellOut : this.controlOut).send(frames);
    return { reply, idle, msgId: header.msg_id };
  }

  /** Wait until the kernel answers kernel_info and its iopub messages reach us. */
  async ready(timeoutMs = 30_000): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const p = this.request("shell", "kernel_info_request", {});
      const exited = this.exited.then((e) => {
        throw new KernelExitedError(`the kernel ${describeExit(e)} before it was ready`, e);
      });
      const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 1000));
      const reply = await Promise.race([p.reply, timeout, exited]);
      if (reply === "timeout") continue;
      const idle = await Promise.race([p.idle.then(() => "idle"), timeout]);
      if (idle === "idle") return reply;
    }
    throw new Error("kernel did not become ready in time");
  }

  execute(code: string, onIopub: (m: Message) => void, opts: { allow_stdin?: boolean; stop_on_error?: boolean } = {}) {
    return this.request(
      "shell",
      "execute_request",
      {
        code,
        silent: false,
        store_history: true,
        user_expressions: {},
        allow_stdin: opts.allow_stdin ?? false,
        stop_on_error: opts.stop_on_error ?? true,
      },
      onIopub,
    );
  }

  interrupt(): Pending {
    return this.request("control", "interrupt_request", {});
  }

  async shutdown(timeoutMs = 5000): Promise<void> {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      const p = this.request("control", "shutdown_request", { restart: false });
      const t = setTimeout(() => this.proc?.kill("SIGKILL"), timeoutMs);
      await Promise.race([p.reply.then(() => this.exited), this.exited]);
      clearTimeout(t);
    }
    this.close();
  }

  close(): void {
    for (const s of [this.shell, this.control, this.iopub]) if (!s.closed) s.close();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface KernelExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** "exited with status 1", "was killed by SIGABRT" */
export function describeExit(e: KernelExit): string {
  return e.signal ? `was killed by ${e.signal}` : `exited with status ${e.code}`;
}

/** A clean end: status 0, no signal. */
export const exitedCleanly = (e: KernelExit) => e.code === 0 && e.signal === null;

class KernelExitedError extends Error {
  constructor(
    message: string,
    readonly exit: KernelExit,
  ) {
    super(message);
  }
}

/** Starts a kernel and waits until it is ready. Over tcp a kernel that exits before it is ready may have
 *  lost its ports to another process between our choosing and its binding them: it is started again,
 *  on fresh ports, up to `attempts` times. Over ipc there is no such race, and a failure is final. */
export async function startKernel(
  argv: string[],
  opts: Parameters<KernelClient["start"]>[1] = {},
  attempts = 3,
): Promise<{ client: KernelClient; info: Message }> {
  for (let i = 1; ; i++) {
    const client = new KernelClient();
    try {
      await client.start(argv, opts);
      return { client, info: await client.ready() };
    } catch (e) {
      client.close();
      if (client.conn?.transport !== "tcp" || !(e instanceof KernelExitedError) || i >= attempts) throw e;
    }
  }
}
