// zeromq v6 allows one send in flight per socket: queue frames and drain them in order, never dropping.
import type * as zmq from "zeromq";
import { log } from "../log.ts";

export class SendQueue {
  private q: Buffer[][] = [];
  private draining = false;
  private idleWaiters: (() => void)[] = [];
  /** `ready` has resolved: a send then starts in the caller's turn (zeromq sends at once when it can),
   *  not a microtask later, after whatever synchronous work follows it (issue 22: a reply waited for
   *  the history file to be read) */
  private open = false;
  /** `ready`: nothing is sent before it resolves (iopub waits for its first subscriber). */
  constructor(
    private readonly sock: zmq.Writable & { closed: boolean },
    private readonly ready: Promise<void> = Promise.resolve(),
  ) {
    void ready.then(() => (this.open = true));
  }

  send(frames: Buffer[]): void {
    this.q.push(frames);
    if (!this.draining) void this.drain();
  }

  /** Resolves once everything queued so far has been handed to zeromq. */
  flushed(): Promise<void> {
    if (!this.draining && this.q.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      if (!this.open) await this.ready;
      while (this.q.length) {
        const frames = this.q.shift()!;
        if (this.sock.closed) continue;
        try {
          await this.sock.send(frames);
        } catch (e) {
          if (!this.sock.closed) log(`send failed: ${(e as Error).message}`);
        }
      }
    } finally {
      this.draining = false;
      const w = this.idleWaiters;
      this.idleWaiters = [];
      for (const r of w) r();
    }
  }
}
