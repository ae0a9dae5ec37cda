// Output coalescing in process: what cells print becomes few stream messages, in order, none dropped;
// and the capture attributes text to the cell that started the work.
import { afterEach, describe, expect, it, vi } from "vitest";
import { StreamCoalescer, type StreamChunk } from "../../kernel/sockets/streams.ts";
import { OutputCapture, type CellContext } from "../../kernel/executor/output.ts";

afterEach(() => void vi.useRealTimers());

describe("stream coalescing", () => {
  it("joins consecutive writes to one stream under one parent; splits on stream or parent, keeping order", () => {
    const out: StreamChunk[] = [];
    const c = new StreamCoalescer((x) => out.push(x));
    c.write("stdout", "a", "P1");
    c.write("stdout", "b\n", "P1");
    c.write("stderr", "warn\n", "P1");
    c.write("stdout", "c", "P1");
    c.write("stdout", "d", "P2");
    expect(out).toEqual([]); // nothing leaves before the flush
    c.flush();
    expect(out).toEqual([
      { parent: "P1", name: "stdout", text: "ab\n" },
      { parent: "P1", name: "stderr", text: "warn\n" },
      { parent: "P1", name: "stdout", text: "c" },
      { parent: "P2", name: "stdout", text: "d" },
    ]);
    c.flush();
    expect(out).toHaveLength(4);
  });

  it("sends pending text on a timer flushMs after the first write", () => {
    vi.useFakeTimers();
    const out: StreamChunk[] = [];
    const c = new StreamCoalescer((x) => out.push(x), 8);
    c.write("stdout", "x", "P");
    vi.advanceTimersByTime(7);
    c.write("stdout", "y", "P");
    expect(out).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(out).toEqual([{ parent: "P", name: "stdout", text: "xy" }]);
    vi.advanceTimersByTime(100);
    expect(out).toHaveLength(1);
  });

  it("caps a message near maxChunk and flushes at once when 4 × maxChunk is pending; nothing is lost", () => {
    const out: StreamChunk[] = [];
    const c = new StreamCoalescer((x) => out.push(x), 1000, 10);
    const written: string[] = [];
    for (let i = 0; i < 9; i++) {
      const s = `line ${i}\n`; // 7 characters
      written.push(s);
      c.write("stdout", s, "P");
    }
    // 63 characters pending ≥ 4 × 10: flushed without waiting for the timer
    expect(out.length).toBeGreaterThan(0);
    c.flush();
    expect(out.map((x) => x.text).join("")).toBe(written.join(""));
    for (const x of out) expect(x.text.length).toBeLessThan(10 + 7);
  });
});

describe("output capture", () => {
  const ctx = (n: number): CellContext => ({ parent: { msg_id: `cell-${n}` }, identities: [], executionCount: n, allowStdin: false });

  it("gives text to the cell whose work wrote it (timers and promises included), else to the last cell", async () => {
    const got: [number, string, string][] = [];
    const cap = new OutputCapture((c, name, text) => got.push([c.executionCount, name, text]));
    const a = ctx(1);
    const b = ctx(2);
    let later!: Promise<void>;
    cap.als.run(a, () => {
      cap.write("stdout", "a1");
      later = new Promise<void>((r) =>
        setTimeout(() => {
          cap.write("stderr", "a-late");
          r();
        }, 1),
      );
    });
    cap.last = b;
    cap.als.run(b, () => cap.write("stdout", "b1"));
    await later;
    cap.write("stdout", "outside");
    cap.write("stdout", ""); // nothing to send
    expect(got).toEqual([
      [1, "stdout", "a1"],
      [2, "stdout", "b1"],
      [1, "stderr", "a-late"],
      [2, "stdout", "outside"],
    ]);
  });

  it("install() routes process.stdout writes (strings and bytes) through the sink and calls their callbacks", async () => {
    const real = process.stdout.write;
    const got: string[] = [];
    const cap = new OutputCapture((_c, _n, text) => got.push(text));
    try {
      cap.install();
      cap.last = ctx(3);
      let called = false;
      process.stdout.write("text ");
      process.stdout.write(new TextEncoder().encode("bytes é"), () => (called = true));
      await new Promise((r) => queueMicrotask(() => r(null)));
      expect(called).toBe(true);
    } finally {
      process.stdout.write = real;
    }
    expect(got).toEqual(["text ", "bytes é"]);
  });
});
