// zeromq v6 allows one send in flight per socket: queue frames and drain them in order, never dropping.
import type * as zmq from "zeromq";
import { isUtf8 } from "node:buffer";
import { setTimeout as sleep } from "node:timers/promises";
import { log } from "../log.ts";

/** zeromq.js copies a frame of up to 128 bytes. A longer Buffer it sends by reference: once its I/O
 *  thread has written the frame, it hands the buffer back to the addon state of the thread that sent it
 *  (zmq::OutgoingMsg::Reference::Recycle). If that thread has ended meanwhile (the socket thread at
 *  shutdown, while iopub lingers) that state is freed memory: the kernel aborted at exit with glibc's
 *  "corrupted double-linked list", about 1 restart in 400 under load; a core dump taken with glibc's
 *  malloc checks caught Recycle on zeromq's I/O thread while the process exited. */
const COPIED_UP_TO = 128;

/** binary frames this thread handed to zeromq by reference that it may still hold */
let byReference = 0;
// zeromq's reference to a sent buffer is dropped on this thread's event loop once the frame is out;
// the buffer is collected after that
const released = new FinalizationRegistry<null>(() => byReference--);

/** A string is copied into zeromq's own memory and freed there, with nothing of the sending thread.
 *  Every frame that is UTF-8 text (all of Jupyter's JSON parts, the delimiter, the signature) therefore
 *  goes as a string; the bytes on the wire are the same. A binary frame over 128 bytes (a comm's or a
 *  display's buffers) still goes by reference, and is counted until zeromq lets go of it (whenReleased). */
function onWire(f: Buffer): Buffer | string {
  if (f.byteLength <= COPIED_UP_TO) return f;
  if (isUtf8(f)) return f.toString("utf8");
  byReference++;
  released.register(f, null);
  return f;
}

export function toWire(frames: Buffer[]): (Buffer | string)[] {
  return frames.map(onWire);
}

/** Resolves once zeromq holds no buffer this thread sent by reference, or after `boundMs` (false):
 *  what the socket thread waits for before it ends. A frame still queued when its socket closes is held
 *  until the socket's linger runs out, so the bound is the longest linger and a margin. Needs the gc()
 *  the kernel exposes (--expose-gc); without it, it waits the bound out when anything is held. */
export async function whenReleased(boundMs: number): Promise<boolean> {
  const until = Date.now() + boundMs;
  const gc = (globalThis as { gc?: () => void }).gc;
  while (byReference > 0 && Date.now() < until) {
    gc?.();
    // finalisers run as tasks after the collection; zeromq's release runs on this loop's next turns
    await sleep(gc ? 5 : 50);
  }
  return byReference === 0;
}

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
          await this.sock.send(toWire(frames));
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
