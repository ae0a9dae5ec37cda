// The socket server: owns all five sockets. Shell lives on the main thread (its requests run cells);
// control, heartbeat, stdin and iopub live on the socket thread (control-worker.ts), so they keep
// working while a cell holds the main thread, even in `while (true) {}`. Above this layer nothing
// sees zeromq or the worker: requests come in as verified messages, and frames go out by channel.
import type { Worker } from "node:worker_threads";
import * as zmq from "zeromq";
import { parse, type Message, type Signer } from "../wire/message.ts";
import type { Channel } from "../wire/protocol.ts";
import { endpoint, restrictChannel, type ConnectionInfo } from "./connection.ts";
import { SendQueue } from "./queue.ts";
import { createShared, packFrames, type FromWorker, type SharedState, type ToWorker } from "./shared.ts";
import { startWorker } from "./ts-worker.ts";
import { createRing, RingWriter, STDERR, STDOUT } from "./ring.ts";
import { log } from "../log.ts";
import type { KernelInfo } from "../info.ts";

export interface ServerEvents {
  /** a verified request from shell, or a control request the socket thread leaves to the main thread */
  request(msg: Message, channel: Channel): void;
  /** the socket thread set the interrupt flag for cell `cell` (interrupt_request or SIGINT) */
  interrupt(cell: number): void;
  /** a shutdown_request on control (already answered there) */
  shutdown(restart: boolean): void;
}

export interface ServerOptions {
  session: string;
  signer: Signer;
  /** kernel_info_reply content: the socket thread answers it on control while a cell runs */
  kernelInfo: KernelInfo;
}

export class SocketServer {
  /** memory shared with the socket thread: interrupt flag, running cell, stdin hand-off */
  readonly shared: SharedState;
  private readonly shell = new zmq.Router({ linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 });
  private readonly shellOut = new SendQueue(this.shell);
  private readonly worker: Worker;
  /** what cells print, read by the socket thread (ring.ts) */
  private readonly ring: RingWriter;
  /** resolves once the socket thread has bound its channels (a client can then see iopub) */
  readonly workerReady: Promise<void>;
  private workerClosed: (() => void) | null = null;
  private events: ServerEvents | null = null;
  /** what the socket thread sent before listen() */
  private early: Exclude<FromWorker, { type: "ready" | "closed" }>[] = [];

  /** Starts the socket thread at once: the kernel's entry creates this before it imports the rest of
   *  the kernel, so that the thread loads zeromq and binds its channels meanwhile (clients wait for
   *  iopub; a restart's first cell waited for this thread, issue 22). */
  constructor(
    private readonly conn: ConnectionInfo,
    readonly opts: ServerOptions,
  ) {
    const { sab, state } = createShared();
    this.shared = state;
    const ring = createRing();
    this.ring = new RingWriter(
      ring,
      () => this.post({ type: "streams" }),
      (n) => log(`dropped ${n} characters of output: the socket thread has not read its stream ring for 5 s`),
    );
    this.worker = startWorker("control-worker", {
      workerData: { conn, session: opts.session, sab, ring, kernelInfo: opts.kernelInfo },
    });
    this.workerReady = new Promise((resolve, reject) => {
      this.worker.on("message", (m: FromWorker) => {
        if (m.type === "ready") resolve();
        else if (m.type === "closed") this.workerClosed?.();
        else this.fromWorker(m);
      });
      // a channel that cannot be bound (address in use, a path too long for a Unix socket) ends the
      // socket thread: the kernel must then fail to start, not wait forever
      this.worker.once("error", reject);
      this.worker.once("exit", (code) => reject(new Error(`the socket thread exited (status ${code}) before its channels were bound`)));
    });
    this.workerReady.catch(() => {}); // awaited in start()
    this.worker.on("error", (e: Error) => log(`socket thread died: ${e.stack ?? e}`));
    this.worker.unref();
  }

  /** Where requests, interrupts and shutdowns go from now on (and those that came before). */
  listen(events: ServerEvents): void {
    this.events = events;
    const early = this.early;
    this.early = [];
    for (const m of early) this.fromWorker(m);
  }

  /** Binds shell and waits for the socket thread to bind the other four. */
  async start(): Promise<void> {
    try {
      await this.shell.bind(endpoint(this.conn, this.conn.shell_port));
      restrictChannel(this.conn, this.conn.shell_port);
    } catch (e) {
      // the socket thread's sockets must be closed too before the process exits, or it aborts
      await this.close();
      throw e;
    }
    void this.shellLoop();
    await this.workerReady;
  }

  private fromWorker(m: Exclude<FromWorker, { type: "ready" | "closed" }>): void {
    if (!this.events) {
      this.early.push(m);
      return;
    }
    if (m.type === "interrupt") this.events.interrupt(m.cell);
    else if (m.type === "shutdown") this.events.shutdown(m.restart);
    else if (m.type === "control") {
      const r = parse(
        m.frames.map((f) => Buffer.from(f)),
        this.opts.signer,
      );
      if (r.ok) this.events.request(r.msg, "control");
    }
  }

  private async shellLoop(): Promise<void> {
    try {
      for await (const frames of this.shell) {
        const r = parse(frames, this.opts.signer);
        if (!r.ok) {
          log(`shell: dropped message: ${r.reason}`);
          continue;
        }
        this.events?.request(r.msg, "shell");
      }
    } catch (e) {
      if (!this.shell.closed) log(`shell loop: ${(e as Error).stack}`);
    }
  }

  /** Sends a signed reply on the channel its request came on. */
  send(channel: Channel, frames: Buffer[]): void {
    if (channel === "shell") this.shellOut.send(frames);
    else {
      const packed = packFrames(frames);
      this.post({ type: "control-send", frames: packed }, [packed.bytes]);
    }
  }

  /** Publishes signed frames on iopub, after everything posted before them. */
  iopub(frames: Buffer[]): void {
    const packed = packFrames(frames);
    this.post({ type: "iopub", frames: packed, marked: this.ring.mark() }, [packed.bytes]);
  }

  /** Text a cell wrote; the socket thread coalesces it into stream messages (parent: header JSON). */
  stream(name: "stdout" | "stderr", text: string, parent: string): void {
    this.ring.write(name === "stderr" ? STDERR : STDOUT, text, parent);
  }

  /** Asks the client on stdin; the reply arrives in `shared.stdinData` (see Kernel.prompt). */
  inputRequest(prompt: string, password: boolean, parent: object, identities: Uint8Array[]): void {
    this.post({ type: "input_request", prompt, password, parent, identities, marked: this.ring.mark() });
  }

  /** Closes every socket in both threads (exiting with zeromq sockets open aborts). What is queued
   *  on shell, control and iopub is sent first, within bounds, so a stuck client cannot hold us. */
  async close(): Promise<void> {
    await Promise.race([this.shellOut.flushed(), delay(500)]);
    const closed = new Promise<void>((r) => (this.workerClosed = r));
    const exited = new Promise<void>((r) => this.worker.once("exit", () => r()));
    this.post({ type: "close", marked: this.ring.mark() });
    await Promise.race([closed, delay(1500)]);
    // With its sockets closed and its port closed, the socket thread ends by itself once zeromq has
    // let go of them; terminate() only if it does not (terminating it while zeromq still closed its
    // sockets is where the rare heap corruptions at exit came from, zeromq/zeromq.js#411). It may wait
    // up to 2 s for zeromq to let go of binary frames it sent (queue.ts, whenReleased).
    if (!(await Promise.race([exited.then(() => true), delay(2500).then(() => false)]))) await this.worker.terminate();
    this.shell.close();
  }

  private post(m: ToWorker, transfer: ArrayBuffer[] = []): void {
    try {
      this.worker.postMessage(m, transfer);
    } catch (e) {
      log(`cannot post to the socket thread: ${(e as Error)?.message ?? e}`);
    }
  }
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
