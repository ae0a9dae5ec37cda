// The stream ring between the main thread and the socket thread (kernel/sockets/ring.ts): records
// come out as they went in (kinds, parents, UTF-8), across the ring's end, with messages in their place
// among them (marks), and a writer that fills the ring waits for a reader in another thread instead of
// losing text.
import { describe, expect, it } from "vitest";
import { Worker } from "node:worker_threads";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { createRing, RingReader, RingWriter, STDERR, STDOUT } from "../../kernel/sockets/ring.ts";

type Got = [number, string, string];
/** A reader's onMark: the next message that arrived goes out (into `out`), or there is none yet. */
const takeFrom = (messages: string[], out: string[]) => (): boolean => {
  const m = messages.shift();
  if (m === undefined) return false;
  out.push(m);
  return true;
};
const drain = (r: RingReader) => {
  const got: Got[] = [];
  r.read((k, t, p) => got.push([k, t, p]));
  return got;
};

describe("stream ring", () => {
  it("gives back texts with their stream and parent, in order; wakes the reader only when it had drained", () => {
    const sab = createRing(1024);
    let wakes = 0;
    const w = new RingWriter(sab, () => wakes++);
    const r = new RingReader(sab);
    w.write(STDOUT, "a\n", "P1");
    w.write(STDERR, "é😀\n", "P1");
    w.write(STDOUT, "b", "P2");
    expect(wakes).toBe(1); // the first write found the ring empty; the others did not
    expect(r.pending).toBe(true);
    expect(drain(r)).toEqual([
      [STDOUT, "a\n", "P1"],
      [STDERR, "é😀\n", "P1"],
      [STDOUT, "b", "P2"],
    ]);
    expect(r.pending).toBe(false);
    w.write(STDOUT, "c", "P2");
    expect(wakes).toBe(2);
    expect(drain(r)).toEqual([[STDOUT, "c", "P2"]]);
  });

  it("stops at a mark until the message posted with it is there, then goes on after it", () => {
    // the display posted after "before" must leave before "after", however late it reaches the reader
    const sab = createRing(1024);
    let wakes = 0;
    const w = new RingWriter(sab, () => wakes++);
    const r = new RingReader(sab);
    w.write(STDOUT, "before", "P");
    expect(w.mark()).toBe(true);
    w.write(STDOUT, "after", "P");
    expect(wakes).toBe(1); // the mark's message, not a wake-up, makes the reader go on
    const out: string[] = [];
    const messages: string[] = [];
    const read = () => r.read((_k, t) => out.push(t), takeFrom(messages, out));
    expect(read()).toBe(true); // blocked at the mark: its message has not arrived
    expect(out).toEqual(["before"]);
    expect(read()).toBe(true); // still blocked: nothing after the mark leaks out
    expect(out).toEqual(["before"]);
    messages.push("display");
    expect(read()).toBe(false);
    expect(out).toEqual(["before", "display", "after"]);
    expect(r.pending).toBe(false);
  });

  it("messages whose marks come first leave first, and one that arrived early waits for its mark", () => {
    const sab = createRing(1024);
    const w = new RingWriter(sab, () => {});
    const r = new RingReader(sab);
    const messages = ["m1", "m2"]; // both already arrived
    w.write(STDOUT, "a", "P");
    w.mark();
    w.write(STDOUT, "b", "P");
    w.mark();
    w.write(STDOUT, "c", "P");
    const out: string[] = [];
    r.read((_k, t) => out.push(t), takeFrom(messages, out));
    expect(out).toEqual(["a", "m1", "b", "m2", "c"]);
  });

  it("wraps around the ring's end many times without losing or reordering a character", () => {
    const sab = createRing(256);
    const w = new RingWriter(sab, () => {});
    const r = new RingReader(sab);
    let sent = "";
    let got = "";
    for (let i = 0; i < 500; i++) {
      const t = `${i}:${"ü".repeat(i % 13)}\n`;
      w.write(STDOUT, t, "P");
      sent += t;
      if (i % 3 === 2)
        got += drain(r)
          .map((g) => g[1])
          .join("");
    }
    got += drain(r)
      .map((g) => g[1])
      .join("");
    expect(got).toBe(sent);
  });

  it("a write longer than the ring is cut into pieces, never inside a surrogate pair, and a full ring waits for the reader thread", async () => {
    const sab = createRing(4096);
    const text = "x😀".repeat(20_000); // 60,000 UTF-16 units, 100,000 bytes of UTF-8: 25 rings' worth
    const reader = readerThread(sab, text.length);
    await reader.ready;
    const w = new RingWriter(sab, () => reader.worker.postMessage("wake"));
    w.write(STDOUT, text, "P");
    const { joined, pieces, lone } = await reader.done;
    expect(joined).toBe(text);
    expect(pieces).toBeGreaterThan(1);
    expect(lone).toBe(0); // no piece starts or ends with half a pair
  });

  it("gives a write up when nothing reads the ring (a dead socket thread), and says how much; the next write after a read carries its parent again", () => {
    const sab = createRing(256);
    const dropped: number[] = [];
    const w = new RingWriter(
      sab,
      () => {},
      (n) => dropped.push(n),
      20,
    );
    const r = new RingReader(sab);
    let sent = "";
    for (let i = 0; !dropped.length; i++) {
      const t = `line ${i}\n`;
      w.write(STDOUT, t, "P1");
      sent += t;
    }
    const got = drain(r);
    expect(got.every(([k, , p]) => k === STDOUT && p === "P1")).toBe(true);
    const text = got.map((g) => g[1]).join("");
    expect(text + sent.slice(sent.length - dropped[0])).toBe(sent); // all but the last write's dropped part
    w.write(STDOUT, "again", "P1");
    expect(drain(r)).toEqual([[STDOUT, "again", "P1"]]);
  });
});

/** A RingReader in a worker thread (TypeScript through tsx, as the kernel's workers run from sources):
 *  it drains when woken and stops once `expected` UTF-16 units have arrived. */
function readerThread(sab: SharedArrayBuffer, expected: number) {
  const require = createRequire(import.meta.url);
  const tsx = pathToFileURL(join(dirname(require.resolve("tsx/package.json")), "dist/esm/api/index.mjs")).href;
  const ring = pathToFileURL(join(import.meta.dirname, "../../kernel/sockets/ring.ts")).href;
  const src = `
    const { parentPort, workerData } = require("node:worker_threads");
    import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(ring)}); }).then(({ RingReader }) => {
      const r = new RingReader(workerData);
      const texts = [];
      let n = 0;
      const pair = (c) => (c & 0xfc00) === 0xd800 || (c & 0xfc00) === 0xdc00;
      parentPort.on("message", () => {
        // drain, then drain again while the writer (blocked on a full ring) refills it
        for (;;) {
          r.read((k, t) => { texts.push(t); n += t.length; });
          if (n >= ${expected}) {
            const lone = texts.filter((t) => (t.charCodeAt(0) & 0xfc00) === 0xdc00 || (t.charCodeAt(t.length - 1) & 0xfc00) === 0xd800).length;
            parentPort.postMessage({ joined: texts.join(""), pieces: texts.length, lone });
            parentPort.close();
            return;
          }
          if (!r.pending) Atomics.wait(new Int32Array(workerData, 0, 2), 0, Atomics.load(new Int32Array(workerData, 0, 2), 0), 20);
        }
      });
      parentPort.postMessage("ready");
    });`;
  const worker = new Worker(src, { eval: true, workerData: sab });
  let readyResolve!: () => void;
  const ready = new Promise<void>((r) => (readyResolve = r));
  const done = new Promise<{ joined: string; pieces: number; lone: number }>((resolve, reject) => {
    worker.on("message", (m) => (m === "ready" ? readyResolve() : resolve(m)));
    worker.on("error", reject);
  });
  return { worker, ready, done };
}
