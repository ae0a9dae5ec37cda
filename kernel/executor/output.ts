// Captures process.stdout / process.stderr (and so `console`) while cells run. Text is attributed to
// the cell that started the work (AsyncLocalStorage follows timers and promises) and handed at once to
// the sink, which posts it to the socket thread: there it is coalesced into few `stream` messages and
// published even while this thread is still busy in synchronous cell code. Nothing is dropped.
import { AsyncLocalStorage } from "node:async_hooks";

export interface CellContext {
  /** header of the execute_request, used as parent_header of every output */
  parent: object;
  identities: Buffer[];
  executionCount: number;
  allowStdin: boolean;
}

export type StreamName = "stdout" | "stderr";
type Sink = (ctx: CellContext, name: StreamName, text: string) => void;

export class OutputCapture {
  readonly als = new AsyncLocalStorage<CellContext>();
  /** the most recent cell: output from work started outside any cell lands here */
  last: CellContext | null = null;
  private realWrites: Record<StreamName, (s: string) => boolean>;

  constructor(private readonly sink: Sink) {
    this.realWrites = {
      stdout: process.stdout.write.bind(process.stdout) as any,
      stderr: process.stderr.write.bind(process.stderr) as any,
    };
  }

  install(): void {
    for (const name of ["stdout", "stderr"] as const) {
      const stream = process[name];
      (stream as any).write = (chunk: unknown, enc?: unknown, cb?: unknown): boolean => {
        const callback = typeof enc === "function" ? enc : typeof cb === "function" ? cb : null;
        let text: string;
        if (typeof chunk === "string") text = chunk;
        else if (chunk instanceof Uint8Array)
          text = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString(typeof enc === "string" ? (enc as BufferEncoding) : "utf8");
        else text = String(chunk);
        this.write(name, text);
        if (callback) queueMicrotask(callback as () => void);
        return true;
      };
    }
  }

  write(name: StreamName, text: string): void {
    if (!text) return;
    const ctx = this.als.getStore() ?? this.last;
    if (!ctx) {
      this.realWrites[name](text);
      return;
    }
    this.sink(ctx, name, text);
  }
}
