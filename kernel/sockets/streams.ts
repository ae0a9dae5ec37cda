// Coalescing of what cells print into few `stream` messages: consecutive writes to the same stream
// under the same parent join into one message, sent within `flushMs` of the first write (a timer on
// the socket thread, so text leaves while the main thread is still busy in the cell), or at once when
// much is pending. Nothing is dropped and order is kept, across streams and parents.
export interface StreamChunk {
  /** parent header, as JSON */
  parent: string;
  name: string;
  text: string;
}

export class StreamCoalescer {
  private pending: StreamChunk[] = [];
  private pendingBytes = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  /** `emit` sends one stream message; a message holds at most `maxChunk` characters more than its
   *  last write (writes are never split), and `4 * maxChunk` pending characters flush at once. */
  constructor(
    private readonly emit: (chunk: StreamChunk) => void,
    readonly flushMs = 8,
    readonly maxChunk = 256 * 1024,
  ) {}

  write(name: string, text: string, parent: string): void {
    const tail = this.pending[this.pending.length - 1];
    if (tail && tail.parent === parent && tail.name === name && tail.text.length < this.maxChunk) tail.text += text;
    else this.pending.push({ parent, name, text });
    this.pendingBytes += text.length;
    if (this.pendingBytes >= this.maxChunk * 4) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.flushMs);
  }

  /** Sends everything pending now (before any other iopub message, so order is kept). */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const p = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    for (const chunk of p) this.emit(chunk);
  }
}
